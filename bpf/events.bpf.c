// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Process exec and exit, so user space captures a process's mappings while
 * it still has them (a 40 ms process is gone long before the next drain)
 * and drops them when they go stale.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "pevent.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

__u64 counters[PROFD_PEV_CNT_MAX] = {};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024); /* user space may resize it before load */
} pevents SEC(".maps");

static __always_inline void emit(__u32 type, __u32 pid, __u64 start_boottime_ns, __u64 start_code)
{
	struct profd_pev *e = bpf_ringbuf_reserve(&pevents, sizeof(*e), 0);

	if (!e) {
		__sync_fetch_and_add(&counters[PROFD_PEV_CNT_LOST], 1);
		return;
	}
	e->type = type;
	e->pid = pid;
	e->time_ns = bpf_ktime_get_ns();
	e->start_boottime_ns = start_boottime_ns;
	e->start_code = start_code;
	bpf_ringbuf_submit(e, 0);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	/*
	 * After de_thread the exec'ing thread holds the group's pid, and the
	 * old leader's start time (what /proc/PID/stat shows). With the new
	 * image's start_code, the DWARF tables need not read /proc/PID/stat
	 * for each exec: that read formats every field of the task, and was a
	 * tenth of profd's time on a host exec'ing 50 processes a second.
	 */
	__sync_fetch_and_add(&counters[PROFD_PEV_CNT_EXEC], 1);
	emit(PROFD_PEV_EXEC, bpf_get_current_pid_tgid() >> 32, BPF_CORE_READ(p, start_boottime),
	     BPF_CORE_READ(p, mm, start_code));
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	/*
	 * Fires for every thread; signal->live drops to 0 (before this
	 * tracepoint, on every kernel) only when the last one goes. Read
	 * rather than the group_dead argument, which older kernels lack.
	 */
	if (BPF_CORE_READ(p, signal, live.counter) != 0 || (p->flags & 0x00200000 /* PF_KTHREAD */))
		return 0;
	__sync_fetch_and_add(&counters[PROFD_PEV_CNT_EXIT], 1);
	emit(PROFD_PEV_EXIT, BPF_CORE_READ(p, tgid), 0, 0);
	return 0;
}
