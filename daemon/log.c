#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "textesc.h"

static int cur_level = LOG_LVL_INFO;
static int journal;

void log_init(int level)
{
	cur_level = level;
	/* systemd sets JOURNAL_STREAM when stderr is the journal: it adds its own timestamps. */
	journal = getenv("JOURNAL_STREAM") != NULL;
}

void log_set_level(int level)
{
	cur_level = level;
}

int log_parse_level(const char *s, int *level)
{
	static const struct { const char *n; int l; } names[] = {
		{ "error", LOG_LVL_ERR }, { "warning", LOG_LVL_WARN }, { "warn", LOG_LVL_WARN },
		{ "info", LOG_LVL_INFO }, { "debug", LOG_LVL_DEBUG },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(s, names[i].n)) {
			*level = names[i].l;
			return 0;
		}
	}
	return -1;
}

static void vlog(int level, const char *fmt, va_list ap)
{
	static const char *const tag[8] = { "", "", "", "error: ", "warning: ", "", "", "debug: " };
	char ts[32] = "", msg[2048], out[4096];

	if (level > cur_level)
		return;
	if (journal) {
		fprintf(stderr, "<%d>", level);
	} else {
		struct timespec now;
		struct tm tm;

		clock_gettime(CLOCK_REALTIME, &now);
		localtime_r(&now.tv_sec, &tm);
		strftime(ts, sizeof(ts), "%H:%M:%S", &tm);
		fprintf(stderr, "%s.%03ld profd: %s", ts, now.tv_nsec / 1000000, tag[level & 7]);
	}
	/*
	 * Messages carry file and process names: escaped (textesc.h), so a
	 * newline followed by "<0>" cannot start a line of its own priority.
	 */
	vsnprintf(msg, sizeof(msg), fmt, ap);
	textesc__copy(out, sizeof(out), msg);
	fprintf(stderr, "%s\n", out);
}

void log_msg(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(level, fmt, ap);
	va_end(ap);
}

int log_err(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_LVL_ERR, fmt, ap);
	va_end(ap);
	return err;
}

void log_ratelimited(int64_t *last_ns, int64_t interval_ns, int level, const char *fmt, ...)
{
	struct timespec now;
	int64_t t;
	va_list ap;

	clock_gettime(CLOCK_MONOTONIC, &now);
	t = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
	if (*last_ns && t - *last_ns < interval_ns)
		return;
	*last_ns = t;
	va_start(ap, fmt);
	vlog(level, fmt, ap);
	va_end(ap);
}
