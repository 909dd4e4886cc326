/* pprof export: a filtered profile as gzipped profile.proto (github.com/google/pprof). */
#ifndef PROFD_PPROF_H
#define PROFD_PPROF_H

#include <stdint.h>
#include <stdio.h>

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
 * modules). Frames carry no build-id: the store does not keep one yet.
 */
int pprof__write(const struct query *q, const struct profile *src, FILE *f);

#endif
