/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A py_procs value made in the kernel from an interpreter file's template
 * (py_files), for a process user space has not looked at yet: the sample
 * walker's (bpf/python.h) and the exec and fork hooks' (bpf/events.bpf.c).
 */
#ifndef PROFD_PYADOPT_H
#define PROFD_PYADOPT_H

#include "pytypes.h"

/*
 * Defined in both programs' objects: user space hands the sampler's maps
 * to the process events before they load (events__open), so an exec of an
 * interpreter probed before, or a fork of a CPython process, gets its
 * py_procs value in the kernel before user space has handled the event. A
 * thread that blocks as its process starts (a worker waiting for its first
 * job) has its stacks taken at once, and a busy daemon can be seconds late.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct profd_pyproc);
} py_procs SEC(".maps");

/* Interpreter files probed before, by the kernel's (device, inode): their templates. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, struct profd_pyfile_key);
	__type(value, struct profd_pyfile);
} py_files SEC(".maps");

/*
 * py_gen[pid & (PROFD_PY_GEN_SLOTS - 1)] is bumped after every insert into
 * py_procs for pid, user space's and the kernel's: a lookup that found no
 * entry for a pid is still right while its counter holds the value it had
 * before that lookup. One counter per pid slot, not one for all: a host
 * that starts CPython processes all the time (a Python exec a few ms) then
 * expires only the notes of the pids beside the new one, where a single
 * counter sent 17-30 % of the other processes' samples to a py_procs
 * lookup. In a section of their own: every sample reads one, and the
 * counters beside .bss's are written by all CPUs.
 */
__u32 py_gen[PROFD_PY_GEN_SLOTS] SEC(".data.py_gen") = {};

static __always_inline void py_gen_bump(__u32 pid)
{
	__sync_fetch_and_add(&py_gen[pid & (PROFD_PY_GEN_SLOTS - 1)], 1);
}

/*
 * Per CPU, by pid: pid << 32 | py_gen[pid's slot] + 1 when py_procs had no
 * entry for the pid at that value. Most samples are of processes that are not
 * CPython: one line of this CPU's instead of a py_procs lookup (two cold
 * lines of a shared hash map). One 8-byte store: a sample that
 * interrupts the off-CPU hook cannot tear a slot. The exec hook writes
 * the new image's note on every CPU (py_none_everywhere), so that a new
 * process's first sample on a CPU needs no lookup either.
 */
#define PY_NONE_SLOTS PROFD_PY_GEN_SLOTS

struct py_none {
	__u64 s[PY_NONE_SLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct py_none);
} py_none SEC(".maps");

/*
 * CPUs whose notes an exec writes: each is a store to another CPU's line,
 * paid once per exec, where a missing note costs each CPU that samples the
 * process a py_procs lookup. Past this many CPUs a process's samples find
 * a note after their first on that CPU, as before.
 */
#define PY_NONE_CPUS 16

/*
 * "No py_procs entry for pid at py_gen value g" on every CPU (up to
 * PY_NONE_CPUS): g must have been read before the pid's entry was
 * deleted, so that an insert after the delete has moved the pid's
 * counter past it.
 */
static __always_inline void py_none_everywhere(__u32 pid, __u32 g)
{
	__u64 none = (__u64)pid << 32 | (__u32)(g + 1);
	struct py_none *nc;
	__u32 zero = 0;

	for (__u32 cpu = 0; cpu < PY_NONE_CPUS; cpu++) {
		nc = bpf_map_lookup_percpu_elem(&py_none, &zero, cpu);
		if (!nc)
			break;
		nc->s[pid & (PY_NONE_SLOTS - 1)] = none;
	}
}

/*
 * pf's template placed at the file's mapping that starts at vstart,
 * vpgoff pages into the file, for pid's image (start_code): 0, or -1 when
 * no PT_LOAD of the file holds that page. Its epoch has bit 63 set (user
 * space counts from 1) and holds the pid and the time, so it is no other
 * image's.
 */
static __always_inline int py_from_file(const struct profd_pyfile *pf, __u64 vstart, __u64 vpgoff,
					__u32 pid, __u64 start_code, struct profd_pyproc *out)
{
	__u64 off = vpgoff << 12, bias;

	for (__u32 i = 0; i < PROFD_PY_LOADS; i++) {
		if (i >= pf->nloads)
			break;
		if (off < pf->loads[i].offset || off - pf->loads[i].offset >= pf->loads[i].filesz)
			continue;
		bias = vstart - (off - pf->loads[i].offset + pf->loads[i].vaddr);
		__builtin_memcpy(out, &pf->tmpl, sizeof(*out));
		out->runtime += bias;
		out->code_type += bias;
		if (out->eval_lo) {
			out->eval_lo += bias;
			out->eval_hi += bias;
		}
		if (out->st_hi) {
			out->st_lo += bias;
			out->st_hi += bias;
		}
		out->start_code = start_code;
		out->epoch = 1ULL << 63 | (__u64)pid << 32 | (__u32)bpf_ktime_get_ns();
		return 0;
	}
	return -1;
}

#endif
