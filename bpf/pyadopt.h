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
 * Bumped after every insert into py_procs, user space's and the kernel's:
 * a lookup that found no entry for a pid is still right while this holds
 * the value it had before that lookup. Alone in its cache line: every
 * sample reads it, and the counters beside it are written by all CPUs.
 */
__u32 py_gen SEC(".data.py_gen") = 0;

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
		out->start_code = start_code;
		out->epoch = 1ULL << 63 | (__u64)pid << 32 | (__u32)bpf_ktime_get_ns();
		return 0;
	}
	return -1;
}

#endif
