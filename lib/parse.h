/* Strict parsing of the values users type: numbers, durations, sizes, times. */
#ifndef PROFD_PARSE_H
#define PROFD_PARSE_H

#include <stdint.h>

/* Decimal unsigned integer, whole string, no sign, no overflow. */
int parse_u64(const char *s, uint64_t *out);
/*
 * Hex digits (no prefix, at most 16) from *p up to end; *p moves past them.
 * For parsers of /proc and perf-map lines, which are not NUL-terminated.
 */
int parse_hex_span(const char **p, const char *end, uint64_t *v);
/* "90s", "10m", "2h", "7d", "500ms", "250us"; a bare number is seconds. */
int parse_duration_ns(const char *s, int64_t *out);
/* "1G", "512M", "64K", "1000" (bytes); binary units (K = 1024). */
int parse_size(const char *s, uint64_t *out);
/*
 * WHEN: a duration back from now_ns, or a timestamp: RFC 3339 with Z or an
 * offset ("2026-11-30T09:00:00Z", "...+02:00"), or "YYYY-MM-DD HH:MM[:SS]"
 * (also with T) in local time. Result: CLOCK_REALTIME nanoseconds.
 */
int parse_when(const char *s, int64_t now_ns, int64_t *out);
/* Formats a duration like "1h2m3s" / "250ms" into buf. */
void format_duration(int64_t ns, char *buf, unsigned long len);

#endif
