// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* On-CPU sampling: one perf_event per CPU runs this at the sampling frequency. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "profd.h"
#include "unwind.h" /* DWARF user-stack walker (issue 7) */

#define PF_KTHREAD 0x00200000

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u32 self_tgid = 0; /* when set, profd itself is not profiled */

__u64 counters[PROFD_CNT_MAX] = {};

/*
 * Two generations of counts and stacks maps, chosen by gen. To drain, user
 * space flips gen and then rewrites a slot of a map-in-map: the kernel waits
 * for running programs before that update returns (maybe_wait_bpf_programs),
 * so the generation user space then drains is no longer written. A program
 * reads gen once, so its count and its stacks land in the same generation:
 * every sample is counted exactly once.
 */
__u32 gen = 0;

struct counts_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct profd_key);
	__type(value, __u64);
} counts_a SEC(".maps"), counts_b SEC(".maps");

struct stacks_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u64);
	__type(value, struct profd_stack);
} stacks_a SEC(".maps"), stacks_b SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct counts_map);
} counts SEC(".maps") = {
	.values = { &counts_a, &counts_b },
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct stacks_map);
} stacks SEC(".maps") = {
	.values = { &stacks_a, &stacks_b },
};

/* Two per-CPU buffers: a nested program (NMI over softirq) must not clobber ours. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct profd_stack);
} scratch SEC(".maps");

static __always_inline void count(enum profd_counter c)
{
	__sync_fetch_and_add(&counters[c], 1);
}

static __always_inline __u64 stack_hash(const struct profd_stack *s, __u32 n)
{
	__u64 h = 0xcbf29ce484222325ULL ^ n;

	for (__u32 i = 0; i < PROFD_MAX_DEPTH; i++) {
		if (i >= n)
			break;
		h ^= s->ips[i];
		h *= 0x9e3779b97f4a7c15ULL;
		h ^= h >> 29;
	}
	return h;
}

static __always_inline int same_stack(const struct profd_stack *a, const struct profd_stack *b)
{
	if (a->len != b->len)
		return 0;
	for (__u32 i = 0; i < PROFD_MAX_DEPTH; i++) {
		if (i >= a->len)
			break;
		if (a->ips[i] != b->ips[i])
			return 0;
	}
	return 1;
}

/* Returns the stack id (0 when the stack could not be stored; the reason is counted). */
static __always_inline __u64 store_stack(void *ctx, void *stack_map, __u32 slot, int user,
					 __u32 *flags)
{
	struct profd_stack *buf, *old;
	__u64 id;
	long n;
	int err;

	buf = bpf_map_lookup_elem(&scratch, &slot);
	if (!buf)
		return 0;
	n = user ? user_stack(ctx, buf->ips, sizeof(buf->ips)) : bpf_get_stack(ctx, buf->ips, sizeof(buf->ips), 0);
	if (n < 0)
		count(user ? PROFD_CNT_USTACK_ERR : PROFD_CNT_KSTACK_ERR);
	/* Zero frames is normal: a sample in user mode has no kernel stack. */
	if (n <= 0)
		return 0;
	buf->len = n / sizeof(__u64);
	buf->pad = 0;
	if (buf->len >= PROFD_MAX_DEPTH) {
		count(PROFD_CNT_TRUNCATED);
		*flags |= user ? PROFD_F_USTACK_TRUNC : PROFD_F_KSTACK_TRUNC;
	}
	id = (stack_hash(buf, buf->len) & ~1ULL) | (user ? 0 : 1);
	if (id <= 1)
		id = 2 | (user ? 0 : 1);

	err = bpf_map_update_elem(stack_map, &id, buf, BPF_NOEXIST);
	if (err == 0)
		return id;
	if (err != -17 /* EEXIST */) {
		count(PROFD_CNT_STACKS_FULL);
		return 0;
	}
	old = bpf_map_lookup_elem(stack_map, &id);
	if (old && same_stack(old, buf))
		return id;
	count(PROFD_CNT_HASH_CLASH);
	return 0;
}

static __always_inline int add_count(void *cmap, const struct profd_key *key, __u64 value)
{
	__u64 *v;

	v = bpf_map_lookup_elem(cmap, key);
	if (v) {
		__sync_fetch_and_add(v, value);
		return 0;
	}
	if (bpf_map_update_elem(cmap, key, &value, BPF_NOEXIST) == 0)
		return 0;
	/* Lost the race to another CPU inserting the same key: add to theirs. */
	v = bpf_map_lookup_elem(cmap, key);
	if (v) {
		__sync_fetch_and_add(v, value);
		return 0;
	}
	count(PROFD_CNT_COUNTS_FULL);
	return 0;
}

static __always_inline int record(void *ctx, __u32 kind, __u64 value, __u32 slot)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct profd_key key = {};
	__u32 g = *(volatile __u32 *)&gen & 1;
	void *cmap, *smap;

	key.pid = pid_tgid >> 32;
	key.tid = (__u32)pid_tgid;
	key.kind = kind;

	cmap = bpf_map_lookup_elem(&counts, &g);
	smap = bpf_map_lookup_elem(&stacks, &g);
	if (!cmap || !smap) {
		count(PROFD_CNT_NO_MAP);
		return 0;
	}

	key.cgroup_id = bpf_get_current_cgroup_id();
	bpf_get_current_comm(key.thread, sizeof(key.thread));
	BPF_CORE_READ_STR_INTO(&key.comm, task, group_leader, comm);

	key.kstack = store_stack(ctx, smap, slot, 0, &key.flags);
	if (!(BPF_CORE_READ(task, flags) & PF_KTHREAD))
		key.ustack = store_stack(ctx, smap, slot, 1, &key.flags);

	return add_count(cmap, &key, value);
}

SEC("perf_event")
int on_cpu(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();

	count(PROFD_CNT_SAMPLES);
	if ((__u32)pid_tgid == 0) {
		count(PROFD_CNT_IDLE);
		return 0;
	}
	if (self_tgid && (pid_tgid >> 32) == self_tgid)
		return 0;
	return record(ctx, PROFD_KIND_CPU, 1, 0);
}

/* --- off-CPU (issue 6): blocked and run-queue time from sched_switch --- */

#define TASK_RUNNING 0
#define TASK_DEAD 0x80

const volatile __u64 offcpu_min_ns = 1000;
/*
 * Stack capture is most of the hook's cost (kernel unwind about 2 us, user
 * walk about 1 us on a VM). A thread that blocks again within this interval
 * of its last capture, from the same user pc and sp and for the same reason,
 * is taken to block in the same place: its last stacks are reused. 0: capture
 * every time.
 */
const volatile __u64 offcpu_stack_interval_ns = 0;

/*
 * Per-thread state between switch-out and switch-in. The frames are kept
 * here, not stack ids: the generation may flip while the thread is away,
 * and the count must land with its stacks in the generation current at
 * switch-in, so the stacks are interned only then.
 */
struct offcpu_task {
	__u64 ts;  /* switch-out time; 0: nothing pending */
	__u64 cap_ns, cap_upc, cap_usp; /* when and from where the stacks below were captured */
	struct profd_key key; /* labels at switch-out; stacks and kind filled at switch-in */
	struct profd_stack ustk;
	struct profd_stack kstk;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct offcpu_task);
} offcpu_tasks SEC(".maps");

/* Returns the frame count stored in s (0: none; errors are counted). */
static __always_inline __u32 capture(void *ctx, struct profd_stack *s, int user, __u32 *flags)
{
	long n = user ? user_stack(ctx, s->ips, sizeof(s->ips)) : bpf_get_stack(ctx, s->ips, sizeof(s->ips), 0);

	if (n < 0)
		count(user ? PROFD_CNT_USTACK_ERR : PROFD_CNT_KSTACK_ERR);
	if (n <= 0)
		return s->len = 0;
	s->len = n / sizeof(__u64);
	if (s->len >= PROFD_MAX_DEPTH) {
		count(PROFD_CNT_TRUNCATED);
		*flags |= user ? PROFD_F_USTACK_TRUNC : PROFD_F_KSTACK_TRUNC;
	}
	return s->len;
}

/*
 * Same ids as store_stack, so on-CPU and off-CPU counts share stacks. Looks
 * up first: a thread blocks in few places, so the stack is usually there and
 * the lookup avoids the bucket lock of an update.
 */
static __always_inline __u64 intern_stack(void *smap, struct profd_stack *s, int user)
{
	struct profd_stack *old;
	__u64 id;
	int err;

	if (!s->len)
		return 0;
	s->pad = 0;
	id = (stack_hash(s, s->len) & ~1ULL) | (user ? 0 : 1);
	if (id <= 1)
		id = 2 | (user ? 0 : 1);
	old = bpf_map_lookup_elem(smap, &id);
	if (!old) {
		err = bpf_map_update_elem(smap, &id, s, BPF_NOEXIST);
		if (err == 0)
			return id;
		if (err != -17 /* EEXIST */) {
			count(PROFD_CNT_STACKS_FULL);
			return 0;
		}
		old = bpf_map_lookup_elem(smap, &id);
	}
	if (old && same_stack(old, s))
		return id;
	count(PROFD_CNT_HASH_CLASH);
	return 0;
}

static __always_inline void switch_out(void *ctx, bool preempt, struct task_struct *prev,
				       unsigned int prev_state)
{
	struct offcpu_task *t;
	struct pt_regs *regs;
	__u64 now, upc = 0, usp = 0;
	__u32 flags = 0, kind;
	int kthread;

	/* The idle task never waits; a dead task never comes back. */
	if (prev->pid == 0 || (prev_state & TASK_DEAD))
		return;
	if (self_tgid && prev->tgid == self_tgid)
		return;
	t = bpf_task_storage_get(&offcpu_tasks, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t) {
		count(PROFD_CNT_OFFCPU_NO_STATE);
		return;
	}
	/* A preempted task stays runnable whatever its state said (see __trace_sched_switch_state). */
	kind = preempt || prev_state == TASK_RUNNING ? PROFD_KIND_RUNQ : PROFD_KIND_OFFCPU;
	kthread = prev->flags & PF_KTHREAD;
	now = bpf_ktime_get_ns();
	if (!kthread) {
		regs = (struct pt_regs *)bpf_task_pt_regs(prev);
		upc = BPF_CORE_READ(regs, ip);
		usp = BPF_CORE_READ(regs, sp);
	}
	if (offcpu_stack_interval_ns && now - t->cap_ns < offcpu_stack_interval_ns &&
	    kind == t->key.kind && upc == t->cap_upc && usp == t->cap_usp) {
		t->ts = now;
		return;
	}
	/* prev is current here: its kernel stack is ours, its user registers are in pt_regs. */
	capture(ctx, &t->kstk, 0, &flags);
	if (!kthread)
		capture(ctx, &t->ustk, 1, &flags);
	else
		t->ustk.len = 0;
	t->key.pid = prev->tgid;
	t->key.tid = prev->pid;
	t->key.cgroup_id = bpf_get_current_cgroup_id();
	bpf_get_current_comm(t->key.thread, sizeof(t->key.thread));
	BPF_CORE_READ_STR_INTO(&t->key.comm, prev, group_leader, comm);
	t->key.flags = flags;
	t->key.kind = kind;
	t->cap_ns = now;
	t->cap_upc = upc;
	t->cap_usp = usp;
	/* After the capture: the hook's own run time is not time away. */
	t->ts = bpf_ktime_get_ns();
}

static __always_inline void switch_in(struct task_struct *next)
{
	__u32 g = *(volatile __u32 *)&gen & 1;
	struct offcpu_task *t;
	void *cmap, *smap;
	__u64 delta;

	if (next->pid == 0)
		return;
	/* No state: the task is new or left before we attached. */
	t = bpf_task_storage_get(&offcpu_tasks, next, 0, 0);
	if (!t || !t->ts)
		return;
	delta = bpf_ktime_get_ns() - t->ts;
	t->ts = 0;
	if (delta < offcpu_min_ns) {
		count(PROFD_CNT_OFFCPU_SHORT);
		return;
	}
	cmap = bpf_map_lookup_elem(&counts, &g);
	smap = bpf_map_lookup_elem(&stacks, &g);
	if (!cmap || !smap) {
		count(PROFD_CNT_NO_MAP);
		return;
	}
	t->key.ustack = intern_stack(smap, &t->ustk, 1);
	t->key.kstack = intern_stack(smap, &t->kstk, 0);
	add_count(cmap, &t->key, delta);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(off_cpu, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	switch_out(ctx, preempt, prev, prev_state);
	switch_in(next);
	return 0;
}
