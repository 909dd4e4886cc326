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
 * pf's template placed at the file's mapping that starts at vstart,
 * vpgoff pages into the file, for pid's image (start_code): 0, or -1 when
 * no PT_LOAD of the file holds that page. Its epoch has bit 63 set (user
 * space counts from 1) and holds the pid and the time, so it is no other
 * image's.
 */
static __always_inline int py_place(const struct profd_pyfile *pf, __u64 vstart, __u64 vpgoff, __u32 pid,
				    __u64 start_code, struct profd_pyproc *out)
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
