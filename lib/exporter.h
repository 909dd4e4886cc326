/*
 * The exporter's bookkeeping: the cursor (the last window a receiver
 * acknowledged) and the counters, in one small file replaced atomically;
 * what an HTTP outcome means; how long to wait before the next attempt.
 */
#ifndef PROFD_EXPORTER_H
#define PROFD_EXPORTER_H

#include <stddef.h>
#include <stdint.h>

struct export_state {
	int64_t cursor_ns;        /* end of the last acknowledged window; INT64_MIN: none */
	uint64_t windows_sent;    /* acknowledged with a 2xx */
	uint64_t series_sent;
	uint64_t bytes_sent;      /* request bodies acknowledged */
	uint64_t requests;        /* every attempt */
	uint64_t retries;         /* attempts after the first for a window */
	uint64_t http_429, http_5xx, http_4xx; /* 4xx: skipped windows */
	uint64_t transport_errors;             /* no HTTP status: refused, timeout, TLS */
	uint64_t windows_skipped;              /* refused with a 4xx, or empty of series */
	int64_t last_ok_ns;       /* CLOCK_REALTIME of the last 2xx */
	int last_status;          /* last HTTP status; 0: transport error */
	char last_error[256];     /* one line; "" when the last attempt succeeded */
};

/* A fresh state: no cursor, zero counters. */
void exporter__state_init(struct export_state *st);
/* Reads path; -ENOENT when it does not exist, -EINVAL when it is not a state file. */
int exporter__load(const char *path, struct export_state *st);
/* Writes path.tmp, fsyncs, renames over path and fsyncs the directory. */
int exporter__save(const char *path, const struct export_state *st);
/* "key\tvalue" lines, as the state file holds them. */
int exporter__format(const struct export_state *st, char *buf, size_t len);

enum export_verdict {
	EXPORT_DONE,  /* 2xx: advance the cursor */
	EXPORT_RETRY, /* 429, 5xx, 408, no response: the same window again, later */
	EXPORT_SKIP,  /* another 4xx: the receiver refuses this window; count it and go on */
	EXPORT_FATAL, /* 401, 403, 404: credentials or URL are wrong; no window can pass */
};
/* status: the HTTP status, 0 when there was none (connection, timeout, TLS). */
enum export_verdict exporter__verdict(long status);

/*
 * The wait before attempt n + 1 (n >= 1 failed attempts): base * 2^(n-1)
 * capped at max, then "equal jitter" (half fixed, half random from rnd) so
 * that a fleet does not retry in step. A Retry-After the server sent
 * (retry_after_ns > 0) is honoured up to max.
 */
int64_t exporter__backoff_ns(unsigned n, int64_t base_ns, int64_t max_ns, int64_t retry_after_ns,
			     uint64_t rnd);

#endif
