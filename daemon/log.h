/* profd's logging: stderr, syslog priority prefixes when journald reads it. */
#ifndef PROFD_LOG_H
#define PROFD_LOG_H

#include <stdint.h>

enum log_level { LOG_LVL_ERR = 3, LOG_LVL_WARN = 4, LOG_LVL_INFO = 6, LOG_LVL_DEBUG = 7 };

void log_init(int level);
int log_parse_level(const char *s, int *level);
void log_set_level(int level);
void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Logs at most once per interval per key (a static int64_t the caller owns). */
void log_ratelimited(int64_t *last_ns, int64_t interval_ns, int level, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/*
 * Logs an error and returns err (a -errno), so that a failure is reported
 * and passed up in one statement: return log_err(-errno, "cannot ...: %m").
 * The arguments are evaluated before anything is written: errno is the
 * caller's.
 */
int log_err(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_warn(...) log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LVL_DEBUG, __VA_ARGS__)

#endif
