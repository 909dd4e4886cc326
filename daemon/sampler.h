/* Kernel side set-up: the BPF object, one perf event per CPU, generation flips and drains. */
#ifndef PROFD_SAMPLER_H
#define PROFD_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "profd.h"
#include "tables.h"

struct sampler;

struct sampler_opts {
	unsigned frequency;      /* Hz */
	uint32_t counts_entries; /* per generation */
	uint32_t stacks_entries; /* per generation */
	struct tables_opts unwind; /* DWARF walker: rodata and map sizes (daemon/tables.h) */
	int offcpu;              /* sched_switch hook: blocked and run-queue time */
	uint64_t offcpu_min_ns;  /* shorter blocks and waits are not counted */
	uint64_t offcpu_stack_interval_ns; /* reuse a thread's stacks captured this recently (0: never) */
	/* In-kernel selection (daemon/options.h syntax); a thread is recorded when either list holds it. */
	const char *offcpu_pids;    /* NULL or "": no pid selection */
	const char *offcpu_cgroups; /* NULL or "": no cgroup selection */
	uint32_t offcpu_sample;     /* record 1 in N switch-outs of each thread (0 or 1: all) */
	uint32_t offcpu_max_rate;   /* switch-outs per second per CPU recorded exactly (0: all) */
	int runq_user_stack;        /* run-queue waits: 1 with the user stack, 0 kernel frames only */
};

/* One aggregated entry of a drained generation; stacks are leaf first. */
struct sampler_entry {
	const struct profd_key *key;
	uint64_t value;
	const __u64 *ustack;
	uint32_t nustack;
	const __u64 *kstack;
	uint32_t nkstack;
};

typedef int (*sampler_entry_fn)(const struct sampler_entry *e, void *arg);

/* Errors: -EPERM/-EACCES (no privilege), -ENOENT/-EOPNOTSUPP (kernel lacks a feature). */
int sampler__open(const struct sampler_opts *o, struct sampler **out, char *err, size_t errlen);
void sampler__free(struct sampler *s);
/* Flips the generation, then reads and clears the previous one. */
int sampler__drain(struct sampler *s, sampler_entry_fn fn, void *arg);
void sampler__counters(const struct sampler *s, uint64_t out[PROFD_CNT_MAX]);
/* Entries read from the kernel maps that a failed drain dropped. */
uint64_t sampler__drain_lost(const struct sampler *s);
/* Runs of the sampling and off-CPU programs the kernel skipped (one already running on that CPU). */
uint64_t sampler__prog_misses(const struct sampler *s);
/* Entries the last drain read from the counts and stacks maps. */
void sampler__drained(const struct sampler *s, uint32_t *counts, uint32_t *stacks);
const char *sampler__event(const struct sampler *s);
unsigned sampler__ncpus(const struct sampler *s);
/* The loaded BPF object, for modules that own some of its maps (daemon/tables.c). */
struct profd_bpf *sampler__skel(const struct sampler *s);
/* The DWARF walker's map of process entries (umaps), for the exec hook to write; -1: none. */
int sampler__umaps_fd(const struct sampler *s);
/* Kernel memory held by the maps, in bytes (an estimate from their sizes). */
uint64_t sampler__map_bytes(const struct sampler *s);
/* Off-CPU profiling: 1 attached, 0 turned off, -errno when the kernel refused it. */
int sampler__offcpu(const struct sampler *s);
/* Why off-CPU profiling is unavailable (sampler__offcpu < 0): one line. */
const char *sampler__offcpu_why(const struct sampler *s);
/* Changes the sampling rate of the open events in place; -EINVAL past kernel.perf_event_max_sample_rate. */
int sampler__set_frequency(struct sampler *s, unsigned hz);
/* Re-opens the events of CPUs that came back online; returns how many, or -errno. */
int sampler__refresh_cpus(struct sampler *s);

#endif
