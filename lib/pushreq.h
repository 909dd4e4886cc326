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
void pushreq__free(struct pushreq *r);
/* Empties the request; keeps its buffer. */
void pushreq__reset(struct pushreq *r);

/*
 * Adds one series with one raw profile (gzipped or plain profile.proto) and
 * its id (a UUID string; NULL: none). Labels are sent sorted by name, as
 * Pyroscope stores them. -EINVAL: no labels, more than PUSHREQ_MAX_LABELS,
 * a name twice, a name Pyroscope refuses or a value that is not UTF-8 or
 * too long.
 */
int pushreq__add(struct pushreq *r, const struct pushreq_label *labels, size_t n,
		 const char *id, const void *profile, size_t len);
size_t pushreq__nseries(const struct pushreq *r);
/* The encoded request: valid until the next add, reset or free. */
const uint8_t *pushreq__data(const struct pushreq *r, size_t *len);
/* The encoded request gzipped (for Content-Encoding: gzip), valid as above. */
int pushreq__gzip(struct pushreq *r, int level, const uint8_t **data, size_t *len);

/* Label names: [a-zA-Z_][a-zA-Z0-9_]*, at most PUSHREQ_MAX_NAME bytes. */
int pushreq__name_valid(const char *name);
/* Whether s is valid UTF-8 (what a label value must be). */
int pushreq__utf8_valid(const char *s);

#endif
