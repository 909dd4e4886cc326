/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The count of a CPython process's code object frees, for the sample
 * walker's code cache (bpf/python.h): user space (daemon/pyprocs.c)
 * attaches py_code_free at the interpreter file's code_dealloc, the
 * tp_dealloc of PyCode_Type through which every code object is freed
 * (lib/pyinterp.c finds it), as a uprobe_multi link with one process's
 * pid: the kernel puts the breakpoint in that process's memory only, so
 * its threads trap on each free and no other process mapping the file
 * does (a forked child traps once, and the kernel takes the breakpoint
 * out of its memory). A link of its own object: a kernel without
 * uprobe_multi (before 6.6) refuses this object only, and the walker
 * checks code objects by content as before. A uprobe_multi link needs
 * CAP_BPF and CAP_PERFMON, where a perf uprobe event needs CAP_SYS_ADMIN.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "pytypes.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* The sampler's (bpf/python.h), shared at open. */
__u64 py_freegen[PROFD_PY_GEN_SLOTS] SEC(".data.py_freegen") = {};

/*
 * At code_dealloc's entry, before anything of the object is freed: a
 * walker that read the generation before this add may still trust what it
 * checked before it read it; one that read it after sees the new value.
 */
SEC("uprobe")
int py_code_free(struct pt_regs *ctx)
{
	__sync_fetch_and_add(&py_freegen[(bpf_get_current_pid_tgid() >> 32) & (PROFD_PY_GEN_SLOTS - 1)], 1);
	return 0;
}
