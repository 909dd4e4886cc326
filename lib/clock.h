/* The time, in the one unit every caller counts in. */
#ifndef PROFD_CLOCK_H
#define PROFD_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Nanoseconds on clock id (CLOCK_MONOTONIC, CLOCK_REALTIME, a CPU-time clock). */
int64_t clock__ns(clockid_t id);
/* CLOCK_MONOTONIC in nanoseconds and in milliseconds. */
int64_t clock__mono_ns(void);
int64_t clock__mono_ms(void);

/*
 * A CLOCK_MONOTONIC timerfd that wakes its owner at one planned time.
 * *armed is the time it is set for (0: not set): setting the same time
 * again, and a wake-up by something else before it, cost no system call.
 */
/* Sets tfd to fire at at_ns (0: never). 0 or -errno (*armed as it was). */
int clock__timer_arm(int tfd, int64_t at_ns, int64_t *armed);
/* Takes tfd's expiry once its time (by now_ns) has come: 1, and *armed is 0; else 0. */
int clock__timer_take(int tfd, int64_t now_ns, int64_t *armed);

#endif
