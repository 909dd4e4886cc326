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

/*
 * Exits do not wake user space: they wait for the next exec or drain (waking
 * up was a quarter of profd's time at 10 execs a second, by perf record). An exec must wake it even with an exit still unread before it,
 * which the default (wake only when the reader has caught up) would not.
 */
static __always_inline void emit(__u32 type, __u32 pid, __u64 start_boottime_ns, __u64 start_code,
				 __u32 uid, __u32 nspid, __u64 wake)
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
	e->uid = uid;
	e->nspid = nspid;
	bpf_ringbuf_submit(e, wake);
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
	struct pid *tp = BPF_CORE_READ(p, thread_pid);
	unsigned int level = BPF_CORE_READ(tp, level);
	struct upid up = {};

	__sync_fetch_and_add(&counters[PROFD_PEV_CNT_EXEC], 1);
	/* The pid in the innermost namespace (NSpid's last field): perf maps are named by it. */
	bpf_probe_read_kernel(&up, sizeof(up), &tp->numbers[level & 31]);
	emit(PROFD_PEV_EXEC, bpf_get_current_pid_tgid() >> 32, BPF_CORE_READ(p, start_boottime),
	     BPF_CORE_READ(p, mm, start_code), (__u32)bpf_get_current_uid_gid(), up.nr, BPF_RB_FORCE_WAKEUP);
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
	emit(PROFD_PEV_EXIT, BPF_CORE_READ(p, tgid), 0, 0, 0, 0, BPF_RB_NO_WAKEUP);
	return 0;
}
