/*
 * A stored window as Pyroscope series: one per service per profile type,
 * each a pprof profile (lib/pprof.c) with the window's time and duration.
 */
#ifndef PROFD_PYSERIES_H
#define PROFD_PYSERIES_H

#include <stddef.h>

#include "pushreq.h"

struct profile;

/* Profile types, by their __name__ label. */
enum {
	PYSERIES_CPU = 1 << 0,    /* process_cpu: samples/count and cpu/nanoseconds */
	PYSERIES_OFFCPU = 1 << 1, /* off_cpu: off_cpu/nanoseconds */
	PYSERIES_WALL = 1 << 2,   /* wall: wall/nanoseconds (on-CPU + off-CPU + run queue) */
	PYSERIES_ALL = 7,
};

struct pyseries_opts {
	unsigned types;                     /* PYSERIES_*; 0: all */
	const struct pushreq_label *labels; /* added to every series ("host" here replaces the window's) */
	size_t nlabels;                     /* at most PUSHREQ_MAX_LABELS - 3 */
};

/* "cpu,offcpu,wall" -> PYSERIES_* bits; -EINVAL names the first bad item in why. */
int pyseries__parse_types(const char *list, unsigned *types);

/*
 * The service_name of a sample: the innermost systemd unit of its cgroup,
 * else its container (the first 12 digits of the id, as `docker ps` shows
 * it), else the process name without a "/N" suffix ("kworker/0:1" ->
 * "kworker"), so that kernel threads do not make a series per CPU.
 * Bytes that are not UTF-8 become '?'.
 */
void pyseries__service(const char *cgroup, const char *comm, char *buf, size_t len);

/*
 * Adds the window's series to req: labels __name__, service_name, host and
 * opts->labels; pprof sample labels pid, tid, comm, thread_name and cgroup.
 * The profiles are plain profile.proto: send the request gzipped
 * (pushreq__gzip, Content-Encoding: gzip).
 * Each sample's id is a UUID derived from host, window start, service and
 * type, so a window sent twice carries the same ids. *nseries: series added.
 */
int pyseries__build(const struct profile *window, const struct pyseries_opts *o,
		    struct pushreq *req, size_t *nseries);

#endif
