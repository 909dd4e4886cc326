/*
 * Pyroscope's push request (push.v1.PushRequest, grafana/pyroscope
 * api/push/v1/push.proto): series of labels, each with raw pprof profiles.
 */
#ifndef PROFD_PUSHREQ_H
#define PROFD_PUSHREQ_H

#include <stddef.h>
#include <stdint.h>

struct pushreq;

struct pushreq_label {
	const char *name, *value;
};

/* Pyroscope's limits: label names and values longer than this are refused. */
#define PUSHREQ_MAX_NAME 1024
#define PUSHREQ_MAX_VALUE 2048
#define PUSHREQ_MAX_LABELS 30

int pushreq__new(struct pushreq **out);
/*
 * A request sent gzipped (Content-Encoding: gzip): each series is
 * compressed as it is added, so the plain request is never held whole.
 */
int pushreq__new_gzip(int level, struct pushreq **out);
void pushreq__free(struct pushreq *r);
/* Empties the request; keeps its buffers. */
void pushreq__reset(struct pushreq *r);

/*
 * Adds one series with one raw profile (gzipped or plain profile.proto) and
 * its id (a UUID string; NULL: none). Labels are sent sorted by name, as
 * Pyroscope stores them. -EINVAL: no labels, more than PUSHREQ_MAX_LABELS,
 * a name twice, a name Pyroscope refuses or a value that is not UTF-8 or
 * too long. -EINVAL too after pushreq__body on a gzip request (reset first).
 */
int pushreq__add(struct pushreq *r, const struct pushreq_label *labels, size_t n,
		 const char *id, const void *profile, size_t len);
size_t pushreq__nseries(const struct pushreq *r);
/* The body to send (plain, or the finished gzip stream): valid until the next add, reset or free. */
int pushreq__body(struct pushreq *r, const uint8_t **data, size_t *len);

/* Label names: [a-zA-Z_][a-zA-Z0-9_]*, at most PUSHREQ_MAX_NAME bytes. */
int pushreq__name_valid(const char *name);
/* Whether s is valid UTF-8 (what a label value must be). */
int pushreq__utf8_valid(const char *s);

#endif
