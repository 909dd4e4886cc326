/* pprof export: a filtered profile as gzipped profile.proto (github.com/google/pprof). */
#ifndef PROFD_PPROF_H
#define PROFD_PPROF_H

#include <stdint.h>
#include <stdio.h>

struct pf_sample;
struct profile;
struct query;

/*
 * Writes the samples of src that q keeps, as a gzipped profile.proto:
 *   cpu:    sample types samples/count, cpu/nanoseconds;
 *   offcpu: off_cpu/nanoseconds; runq: runq/nanoseconds; wall: wall/nanoseconds;
 * period_type cpu/nanoseconds, period 1e9 / frequency, time_nanos and
 * duration_nanos from the window, labels pid, tid, comm, thread_name and
 * cgroup. Every id is its index + 1 and string_table[0] is "".
 * Kernel frames sit in the mapping "[kernel.kallsyms]" ("[module]" for
 * modules).
 */
int pprof__write(const struct query *q, const struct profile *src, FILE *f);

/*
 * The store keeps no build-ids, so the caller may supply them at export
 * time: build_id(file, kernel, hex, len, arg) fills hex with the lowercase
 * build-id of a mapping's file ("/usr/lib/libc.so.6", "[kernel.kallsyms]",
 * "[ext4]"; kernel says which) and returns 0, or nonzero to leave it out.
 * It is asked once per mapping.
 */
struct pprof_opts {
	int (*build_id)(const char *file, int kernel, char *hex, size_t len, void *arg);
	void *arg;
	/* A second filter after the query's (a profile_keep_fn); NULL keeps what q keeps. */
	int (*keep)(const struct profile *src, const struct pf_sample *s, void *arg);
	void *keep_arg;
	/* Plain profile.proto, for a caller that compresses many profiles at once. */
	int plain;
};
int pprof__write_opts(const struct query *q, const struct profile *src,
		      const struct pprof_opts *o, FILE *f);

#endif
