/* systemd's notify protocol over $NOTIFY_SOCKET, by hand (no libsystemd). */
#ifndef PROFD_NOTIFY_H
#define PROFD_NOTIFY_H

#include <stdint.h>

/* Sends "READY=1", "STATUS=...", etc. A no-op without $NOTIFY_SOCKET. */
int notify_send(const char *msg);
int notify_sendf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * The watchdog interval systemd expects pings within ($WATCHDOG_USEC, when
 * $WATCHDOG_PID is unset or ours), in nanoseconds; 0 when there is none.
 */
int64_t notify_watchdog_ns(void);

#endif
