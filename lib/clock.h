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

#endif
