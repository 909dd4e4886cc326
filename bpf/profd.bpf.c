// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* On-CPU sampling: one perf_event per CPU runs this at the sampling frequency. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "profd.h"

/*
 * Benchmark mode (tests/bench/python_cost.sh): the time record() takes for
 * the samples of each of these processes (up to two, timed in the same
 * seconds so that the host's drift enters both alike), summed apart,
 * whatever else the host runs; and of that, the native stack walk's
 * (off-CPU walks of these processes count there too: the benchmark runs
 * with off-CPU off).
 */
const volatile __u32 cost_tgid[2] = {};
__u64 cost_ns[2] = {}, cost_samples[2] = {}, cost_unwind_ns[2] = {};

#include "unwind.h" /* DWARF user-stack walker */
#include "python.h" /* CPython frames */

#define PF_KTHREAD 0x00200000

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/*
 * profd's own waits are its idle loop: not worth a profile, and the walk at
 * each of its switches ran in profd's time (it switches several times per
 * exec on the host).
 */
const volatile __u32 offcpu_self_tgid = 0;

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

static __always_inline __u32 capture(void *ctx, struct profd_stack *s, int user, __u32 slot,
					    __u32 *flags);
static __always_inline __u64 intern_stack(void *smap, struct profd_stack *s, int user, __u32 *ok);

/* Returns the stack id (0 when the stack could not be stored; the reason is counted). */
static __always_inline __u64 store_stack(void *ctx, void *stack_map, __u32 slot, int user,
					 __u32 *flags)
{
	struct profd_stack *buf;
	__u32 ok = 1;

	buf = bpf_map_lookup_elem(&scratch, &slot);
	if (!buf)
		return 0;
	/* Zero frames is normal: a kernel thread has no user stack. */
	if (!capture(ctx, buf, user, slot, flags))
		return 0;
	return intern_stack(stack_map, buf, user, &ok);
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

/*
 * A task name up to its NUL into dst, zeroed before: what
 * bpf_get_current_comm and bpf_probe_read_kernel_str give, by plain loads
 * from a BTF pointer instead of a helper call each.
 */
static __always_inline void copy_comm(char *dst, const char *src)
{
#pragma unroll
	for (int i = 0; i < PROFD_COMM_LEN - 1; i++) {
		char c = src[i];

		if (!c)
			break;
		dst[i] = c;
	}
}

static __always_inline int record(void *ctx, __u32 kind, __u64 value, __u32 slot, int kernel)
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
	copy_comm(key.thread, task->comm);
	copy_comm(key.comm, task->group_leader->comm);

	if (kernel)
		key.kstack = store_stack(ctx, smap, slot, 0, &key.flags);
	if (!(task->flags & PF_KTHREAD))
		key.ustack = store_stack(ctx, smap, slot, 1, &key.flags);

	return add_count(cmap, &key, value);
}

SEC("perf_event")
int on_cpu(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), t0 = 0;
	__u32 c = 0;
	int r;

	count(PROFD_CNT_SAMPLES);
	if ((__u32)pid_tgid == 0) {
		count(PROFD_CNT_IDLE);
		return 0;
	}
	if (cost_tgid[0]) {
		c = pid_tgid >> 32 == cost_tgid[0] ? 1 : pid_tgid >> 32 == cost_tgid[1] ? 2 : 0;
		if (c)
			t0 = bpf_ktime_get_ns();
	}
	/*
	 * A sample taken in user mode has no kernel stack: no call to find that
	 * out. A full-width load of cs: the verifier refuses a narrowed one.
	 */
	r = record(ctx, PROFD_KIND_CPU, 1, 0, (*(volatile __u64 *)&ctx->regs.cs & 3) == 0);
	if (t0) {
		__sync_fetch_and_add(&cost_ns[(c - 1) & 1], bpf_ktime_get_ns() - t0);
		__sync_fetch_and_add(&cost_samples[(c - 1) & 1], 1);
	}
	return r;
}

/* --- off-CPU: blocked and run-queue time from sched_switch --- */

#define TASK_RUNNING 0
#define TASK_DEAD 0x80

const volatile __u64 offcpu_min_ns = 1000;
/*
 * Stack capture is most of the hook's cost (kernel unwind about 2 us, user
 * walk about 1 us on a VM). A thread that switches out again within this
 * interval of its last capture for the same reason, from the same user pc
 * and sp, is taken to wait in the same place: its last stacks are reused.
 * 0: capture every time.
 */
const volatile __u64 offcpu_stack_interval_ns = 0;
/* Unchanged recaptures double a place's interval up to this many times the base (1 ms: 128 ms). */
#define OFFCPU_REUSE_GROWTH 128
/* In-kernel selection where the hook's cost demands it: PROFD_OFFCPU_F_*. */
const volatile __u32 offcpu_filter = 0;
/* Bit L set: some selected cgroup is L levels below the root. */
const volatile __u32 offcpu_cgroup_levels = 0;
/*
 * A run-queue wait gets the preempted task's user stack only when set: that
 * stack is the preempted pc, a new one at nearly every preemption, and where
 * runnable time goes by function is the on-CPU profile's answer already.
 * Kernel frames alone say how the task was preempted, for a fraction of the
 * walk and of the stored stacks.
 */
const volatile __u32 offcpu_runq_ustack = 0;
/* Record 1 in N switch-outs of each thread, its time multiplied by N. */
const volatile __u32 offcpu_sample = 1;
/*
 * Switch-outs per second per CPU recorded exactly (0: no limit). A CPU that
 * switched faster in its last rate window (one jiffy) records a random 1 in
 * N of the switch-outs of its frequent switchers in this one (while no other
 * task waits for the CPU), N = its rate / this limit rounded up, each with
 * its time multiplied by N; the others pay no task-storage lookup and no
 * clock read. A same-CPU pipe ping-pong switches over a hundred thousand
 * times a second, and the exact hook costs about 300 ns per switch.
 */
const volatile __u32 offcpu_max_rate = 0;
/* A longer window (an idle CPU, no tick) tells nothing of the rate now: exact again. */
#define OFFCPU_RATE_GAP_NS 50000000ULL
/*
 * The spread of an estimate grows with N - 1 (a long wait, when recorded,
 * weighs N times). A switch let pass costs about 100 ns on a loaded VM, a
 * recorded wait about 700 over three runs of the hook's dear paths (its
 * switch-out, its switch-in with a clock read, the next switch-out's
 * lookup to end it): N = 8 left three switches in eight on them, 16
 * three in sixteen. At 16
 * a loaded 2 s ping-pong's recorded total spread over 5 % of its time
 * (2.6 % at 8, 1.1 % exact; docs/BENCHMARKS.md); 32 would save about
 * another 10 % of the hook for as much spread again (by the paths' costs),
 * the switches let pass being most of its time by then.
 */
#define OFFCPU_MAX_EVERY 16
/*
 * Only a thread that has switched at least this often over its life is
 * sampled on such a CPU: a thread that sleeps long between short runs keeps
 * every wait exact beside a ping-pong (it would otherwise weigh N times or
 * not at all), and costs little as it switches rarely.
 */
#define OFFCPU_FREQUENT_NS 1000000ULL
#define OFFCPU_FREQUENT_MIN 64
/* Switch-outs let pass, remembered per CPU so that their switch-ins need no lookup. */
#define OFFCPU_LET 4

/*
 * Short waits in the same place are summed in the thread's own storage and
 * added to the counts map together, once they reach this much time (or the
 * place's stacks change, the generation flips, or the thread exits). The
 * counts map update (a hash of the 72-byte key, bucket lock, atomic add) was
 * most of the hook's cost at every switch; a thread ping-ponging over a
 * pipe now pays it once per ~2 ms of waiting instead of every few us. A
 * wait of 2 ms or more is added at once, as before. What a live thread has
 * pending (under 2 ms per place) lands in the next window instead.
 */
#define OFFCPU_BATCH_NS 2000000ULL

/* Selected processes (tgid) and cgroups (id); sized by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u8);
} offcpu_pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u64);
	__type(value, __u8);
} offcpu_cgroups SEC(".maps");

/*
 * Where a thread last switched out for one reason, and the stacks captured
 * there. The frames are kept, not only stack ids: the generation may flip
 * while the thread is away, and the count must land with its stacks in the
 * generation current at switch-in, so the stacks are interned then. Interning
 * hashes and compares every frame, so the ids are kept too, with the
 * generation they were interned in: a thread that waits again in the same
 * place within one generation adds its count without touching the stacks map.
 */
struct offcpu_place {
	__u64 cap_ns;           /* when the stacks were captured */
	__u64 uid, kid;         /* ids of ustk and kstk when ids_ok, interned in generation ids_gen */
	__u64 reuse_ns;         /* how long these stacks may be reused: grows while captures find them unchanged */
	__u64 uhash, khash;     /* stack_hash of ustk and kstk, to see whether a capture changed them */
	__u64 uret;             /* the word at ubp + 8 at capture: the caller check of a grown interval */
	__u32 flags;            /* PROFD_F_*_TRUNC of this capture */
	__u32 pad;
	struct py_place py;     /* the Python frames' place at capture, when hot's py */
	struct profd_stack ustk;
	struct profd_stack kstk;
};

/*
 * What a switch reads and writes of a place, apart from the rest: the two
 * places' share and the thread's own fields fill two cache lines, where the
 * 2 KB places put each on lines of its own (a cache miss each on a loaded
 * host, where the hook's own instructions cost less).
 */
struct offcpu_hot {
	__u64 until;         /* the stacks are reused before this time (capture + reuse interval) */
	__u64 chk_ns;        /* when the caller was last found unchanged (or captured) */
	__u64 upc, usp, ubp; /* user registers at capture */
	__u64 pending;       /* ns waited here, not yet added to the counts map (see OFFCPU_BATCH_NS) */
	__u32 ids_gen;
	__u8 ids_ok;
	__u8 ready;          /* 0: never captured, or a capture was due and did not run */
	__u8 grown;          /* the reuse interval grew past the base: check the caller */
	__u8 py;             /* the capture read Python frames: a reuse checks them (py_place_same) */
};

/*
 * Per-thread state. One place per reason: a thread that alternates between
 * blocking in one call and being preempted in another (a ping-pong over a
 * pipe on one CPU: preempted in write by the woken peer, blocked in read)
 * reuses both.
 */
struct offcpu_task {
	__u64 ts;    /* switch-out time; 0: nothing pending */
	__u32 kind;  /* of the pending wait */
	__u32 weight; /* offcpu_max_rate: the pending wait counts this many times (0 or 1: once) */
	struct offcpu_hot hot[2];     /* [0]: blocked, [1]: run queue */
	__u32 skip;  /* offcpu_sample: switch-outs to let pass before the next recorded one */
	__u32 skip_init;
	struct profd_key key; /* labels, refreshed at every capture; stacks and kind set at switch-in */
	struct offcpu_place place[2]; /* as hot[] */
};

/*
 * A switch-out let pass unrecorded, and so the one wait that the task's
 * next switch-in ends: the task and its CPU time then, which only its own
 * runs change. Both are on cache lines the scheduler has just touched, for
 * the task switched out and for the one switched in: no other line of the
 * task is read on this path.
 */
struct offcpu_let {
	__u64 task; /* 0: free */
	__u64 ran;  /* se.sum_exec_runtime */
};

/*
 * Per CPU: the task running there and when it was switched in; then the
 * switch-outs of the current rate window, and how they are sampled.
 */
struct offcpu_cpu {
	__u64 run_start; /* bpf_ktime_get_ns() at the switch-in of run_task, if run_open */
	__u64 run_task;  /* the task switched in last (0: no switch seen on this CPU yet) */
	__u32 run_open;  /* run_task's last wait may be open still: end it at its switch-out */
	__u32 pad;
	__u64 win;   /* window: jiffies (bpf_ktime_get_coarse_ns is not for tracing programs) */
	__u64 start; /* bpf_ktime_get_ns() at its first switch */
	__u32 n;     /* switch-outs seen in window win */
	__u32 every; /* record 1 in this many in window win (0 or 1: all) */
	__u32 skip;  /* switch-outs to let pass before the next recorded one */
	__u32 let_i; /* next slot of let[] to fill */
	struct offcpu_let let[OFFCPU_LET];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct offcpu_cpu);
} offcpu_cpus SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct offcpu_task);
} offcpu_tasks SEC(".maps");

/* [0]: off_cpu_capture, set by user space after load. */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} offcpu_progs SEC(".maps");

/* Returns the frame count stored in s (0: none; errors are counted). */
/* slot: the Python walker's scratch, one per hook that can interrupt another. */
static __always_inline __u32 capture(void *ctx, struct profd_stack *s, int user, __u32 slot,
				     __u32 *flags)
{
	long n = user ? py_user_stack(ctx, s->ips, slot) : bpf_get_stack(ctx, s->ips, sizeof(s->ips), 0);

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
 * the lookup avoids the bucket lock of an update. *ok is cleared when the
 * stack could not be stored (its id is then 0 and the loss counted).
 */
static __always_inline __u64 intern_stack(void *smap, struct profd_stack *s, int user, __u32 *ok)
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
			*ok = 0;
			return 0;
		}
		old = bpf_map_lookup_elem(smap, &id);
	}
	if (old && same_stack(old, s))
		return id;
	count(PROFD_CNT_HASH_CLASH);
	*ok = 0;
	return 0;
}

/* One user word of the current task; 0 where unreadable (code without frame pointers: rbp is data). */
static __always_inline __u64 user_word(__u64 addr)
{
	__u64 v = 0;

	if (addr > 8 && bpf_probe_read_user(&v, sizeof(v), (void *)addr))
		v = 0;
	return v;
}

/* At switch-out current is prev: its cgroup ancestry is the current task's. */
static __always_inline int selected(struct task_struct *prev)
{
	__u32 tgid = prev->tgid;

	if ((offcpu_filter & PROFD_OFFCPU_F_PIDS) && bpf_map_lookup_elem(&offcpu_pids, &tgid))
		return 1;
	if (offcpu_filter & PROFD_OFFCPU_F_CGROUPS) {
		for (int l = 0; l < 32; l++) {
			__u64 id;

			if (!(offcpu_cgroup_levels & (1u << l)))
				continue;
			id = bpf_get_current_ancestor_cgroup_id(l);
			if (id && bpf_map_lookup_elem(&offcpu_cgroups, &id))
				return 1;
		}
	}
	return 0;
}

/*
 * Adds value ns to the counts of place pl (kind) in generation gv, interning
 * its stacks there first unless their ids are already from gv.
 */
static __always_inline void add_place(struct offcpu_task *t, __u32 kind, __u32 gv, __u64 value)
{
	__u32 g = gv & 1, ok = 1, k = kind == PROFD_KIND_RUNQ;
	struct offcpu_place *pl = &t->place[k];
	struct offcpu_hot *h = &t->hot[k];
	void *cmap, *smap;

	cmap = bpf_map_lookup_elem(&counts, &g);
	if (!cmap) {
		count(PROFD_CNT_NO_MAP);
		return;
	}
	/*
	 * A generation's stacks map is cleared only after gen has moved on and
	 * the drain has waited for running programs: ids interned while gen
	 * read gv are still there while it reads gv.
	 */
	if (!h->ids_ok || h->ids_gen != gv) {
		smap = bpf_map_lookup_elem(&stacks, &g);
		if (!smap) {
			count(PROFD_CNT_NO_MAP);
			return;
		}
		pl->uid = intern_stack(smap, &pl->ustk, 1, &ok);
		pl->kid = intern_stack(smap, &pl->kstk, 0, &ok);
		h->ids_gen = gv;
		h->ids_ok = ok; /* a stack that could not be stored is tried again next time */
	}
	t->key.ustack = pl->uid;
	t->key.kstack = pl->kid;
	t->key.flags = pl->flags;
	t->key.kind = kind;
	add_count(cmap, &t->key, value);
}

/* Pending time of both places into the counts: before their stacks change, at exit. */
static __always_inline void flush_pending(struct offcpu_task *t, __u32 kind)
{
	struct offcpu_hot *h = &t->hot[kind == PROFD_KIND_RUNQ];
	__u64 v = h->pending;

	if (!v)
		return;
	h->pending = 0;
	add_place(t, kind, *(volatile __u32 *)&gen, v);
}

/*
 * offcpu_max_rate: at a new window, the last one's rate sets how many
 * switch-outs this one records (every). The rate of a window sets the next
 * one's: a switch's own length never decides whether it is recorded.
 */
static __always_inline void rate_window(struct offcpu_cpu *c)
{
	__u64 w, now, d, cap;

	if (!offcpu_max_rate)
		return;
	w = bpf_jiffies64();
	if (w == c->win)
		return;
	/* One clock read per window: switches per second = n / d. */
	now = bpf_ktime_get_ns();
	d = now - c->start;
	cap = d * offcpu_max_rate; /* switch-outs allowed in d, x 1e9 */
	c->every = d && d < OFFCPU_RATE_GAP_NS && c->n * 1000000000ULL > cap ?
			   (c->n * 1000000000ULL + cap - 1) / cap : 1;
	if (c->every > OFFCPU_MAX_EVERY)
		c->every = OFFCPU_MAX_EVERY;
	c->win = w;
	c->start = now;
	c->n = 0;
	if (c->every > 1) {
		c->skip = bpf_get_prandom_u32() % c->every;
		count(PROFD_CNT_OFFCPU_RATE_WINDOWS);
	}
}

/*
 * 0 when this switch-out is let pass, else the weight of its wait. Gaps
 * between recorded switch-outs are N-1, N or N+1 at random (as for
 * offcpu_sample), so every switch-out of a pattern is recorded with
 * probability 1/N and N x the recorded time estimates the total without
 * bias.
 */
static __always_inline __u32 cpu_weight(struct offcpu_cpu *c)
{
	if (c->skip) {
		c->skip--;
		return 0;
	}
	c->skip = c->every - 2 + bpf_get_prandom_u32() % 3;
	return c->every;
}

/*
 * Whether p switches often enough over its life to be sampled. Its start
 * time is the monotonic clock's, as the window's start; a thread younger
 * than the window counts as frequent once it has switched enough.
 */
static __always_inline int frequent(struct task_struct *p, struct offcpu_cpu *c)
{
	__u64 n = p->nvcsw + p->nivcsw, born = p->start_time;

	return n >= OFFCPU_FREQUENT_MIN &&
	       (born >= c->start || c->start - born < n * OFFCPU_FREQUENT_NS);
}

/* The run queue p is on, through its scheduling entity; NULL when this kernel has no such path. */
static __always_inline struct rq *task_rq(struct task_struct *p)
{
	struct cfs_rq *cfs;

	if (!bpf_core_field_exists(p->se.cfs_rq) || !bpf_core_field_exists(struct cfs_rq, rq))
		return NULL;
	cfs = p->se.cfs_rq;
	return cfs ? cfs->rq : NULL;
}

/*
 * Whether tasks besides prev and next wait for this CPU (prev counts while
 * runnable; a task whose dequeue is delayed does not wait): a wait that
 * starts then may last their time slices, and such a long tail, sampled,
 * would weigh N times or not at all. Those switch-outs stay exact.
 * Unknown: yes.
 */
static __always_inline int crowded(struct task_struct *prev, int prev_queued)
{
	struct rq *rq = task_rq(prev);
	__s64 n;

	if (!rq)
		return 1;
	n = rq->nr_running;
	if (bpf_core_field_exists(rq->cfs.h_nr_runnable) && bpf_core_field_exists(rq->cfs.h_nr_queued))
		n -= (__s64)rq->cfs.h_nr_queued - rq->cfs.h_nr_runnable;
	return n > 1 + prev_queued;
}

/*
 * py_user_stack for the capture program, a tp_btf program: it gets no
 * private stack, so its frames down any call chain share 512 bytes. There
 * the native walker's frame (pt_regs, unwind state) and the Python walk's
 * frames must not sit on one chain: the native walk runs first, with room
 * for every frame, in a call of its own; the Python frames then take the
 * place of its outermost ones, the same frames a walk with less room
 * would have left out.
 */
static __noinline long offcpu_native(void *ctx, __u64 *ips)
{
	return user_stack(ctx, ips, PROFD_MAX_DEPTH * sizeof(__u64));
}

/* Returns the frame count with the Python frames after the first n native ones. */
static __noinline __u64 offcpu_py_append(__u64 *ips, __u64 n)
{
	struct py_ctx w = {};
	__u32 np = py_frames(&w, 1);

	if (!np || !w.sc)
		return n;
	if (np > PROFD_PY_MAX_DEPTH)
		np = PROFD_PY_MAX_DEPTH;
	if (n > PROFD_MAX_DEPTH - np)
		n = PROFD_MAX_DEPTH - np;
	w.ips = ips;
	w.n = n;
	w.np = np;
	bpf_loop(PROFD_PY_MAX_DEPTH, py_append_step, &w, 0);
	return w.n;
}

/* The current task's stacks into pl, the kernel's only if kernel_only; returns PROFD_F_*_TRUNC. */
static __always_inline __u32 capture_place(void *ctx, struct offcpu_place *pl, int kernel_only)
{
	__u32 flags = 0;
	long n;

	/* prev is current here: its kernel stack is ours, its user registers are in pt_regs. */
	capture(ctx, &pl->kstk, 0, 1, &flags);
	pl->ustk.len = 0;
	if (kernel_only)
		return flags;
	n = offcpu_native(ctx, pl->ustk.ips);
	if (n < 0)
		count(PROFD_CNT_USTACK_ERR);
	if (n <= 0)
		return flags;
	pl->ustk.len = offcpu_py_append(pl->ustk.ips, n / sizeof(__u64));
	if (pl->ustk.len >= PROFD_MAX_DEPTH) {
		count(PROFD_CNT_TRUNCATED);
		flags |= PROFD_F_USTACK_TRUNC;
	}
	return flags;
}

/* A switch-in time the hook did not see: the task's last switch-in on this CPU was another's. */
#define OFFCPU_IN_UNSEEN (~0ULL)

/*
 * When p, whose wait t holds open, was switched in, that switch not seen:
 * the kernel does not trace every switch (on the test VM, those out of one
 * agent's threads: the tracepoint's other programs miss them too), and the
 * thread switched in by such a switch would lose its whole wait. The
 * scheduler stamps every switch-in (last_arrival, its run-queue clock):
 * p has run since, for that long before now. The clock may lag by up to a
 * tick outside a switch (at exit): the wait then ends that much late.
 * 0 (the wait is dropped, and counted) on a kernel without the stamp, or
 * a stamp older than the wait.
 */
static __always_inline __u64 infer_in(const struct offcpu_task *t, struct task_struct *p, __u64 now)
{
	struct rq *rq;
	__u64 ran;

	if (!bpf_core_field_exists(p->sched_info.last_arrival))
		return 0;
	rq = task_rq(p);
	if (!rq)
		return 0;
	ran = rq->clock - p->sched_info.last_arrival;
	if (ran >= now - t->ts)
		return 0;
	count(PROFD_CNT_OFFCPU_INFERRED);
	return now - ran;
}

/*
 * Ends t's wait at in, p's switch-in time: adds it to the place's pending
 * time or to the counts. in OFFCPU_IN_UNSEEN: the switch-in was not seen,
 * it is inferred (now: the time of this call, 0 if not read yet). in 0,
 * or an inference refused: no switch-in time (a switch-in let pass leaves
 * no wait open), the wait is dropped and counted.
 */
static __always_inline void end_wait(struct offcpu_task *t, __u64 in, struct task_struct *p,
				     __u64 now)
{
	__u32 gv = *(volatile __u32 *)&gen;
	struct offcpu_hot *h;
	__u64 delta;

	if (!t->ts)
		return;
	if (in == OFFCPU_IN_UNSEEN)
		in = infer_in(t, p, now ? now : bpf_ktime_get_ns());
	delta = in - t->ts;
	t->ts = 0;
	if (!in) {
		count(PROFD_CNT_OFFCPU_UNSEEN);
		return;
	}
	if (delta < offcpu_min_ns) {
		count(PROFD_CNT_OFFCPU_SHORT);
		return;
	}
	if (offcpu_sample > 1)
		delta *= offcpu_sample;
	if (t->weight > 1)
		delta *= t->weight;
	h = &t->hot[t->kind == PROFD_KIND_RUNQ];
	if (!h->ready) {
		count(PROFD_CNT_OFFCPU_NOT_CAPTURED);
		return;
	}
	delta += h->pending;
	if (delta < OFFCPU_BATCH_NS && h->ids_ok && h->ids_gen == gv) {
		h->pending = delta;
		return;
	}
	h->pending = 0;
	add_place(t, t->kind, gv, delta);
}

/*
 * Whether next may have been away OFFCPU_BATCH_NS or longer: the time
 * since its last run began (the scheduler's own stamp and run-queue clock,
 * no clock read), an upper bound of its wait. Unknown: yes.
 */
static __always_inline int away_long(struct task_struct *next)
{
	struct rq *rq;

	if (!bpf_core_field_exists(next->sched_info.last_arrival))
		return 1;
	rq = task_rq(next);
	if (!rq)
		return 1;
	return rq->clock - next->sched_info.last_arrival >= OFFCPU_BATCH_NS;
}

/*
 * A wait ends at the task's switch-in, but is added at its next
 * switch-out on that CPU (or its exit), from the switch-in time kept per
 * CPU: one task-storage lookup per switch instead of two. A wait that may
 * have been long is ended at the switch-in, so that its time is not held
 * back while the task runs on.
 */
static __always_inline void switch_in(struct task_struct *next, __u64 now)
{
	struct offcpu_task *t;

	if (next->pid == 0 || !away_long(next))
		return;
	/* No state: the task is new, was not selected or left before we attached. */
	t = bpf_task_storage_get(&offcpu_tasks, next, 0, 0);
	if (t)
		end_wait(t, now, next, now);
}

/*
 * Whether next's last switch-out was let pass on this CPU (the entry is
 * used up): then no wait of next is open, and its switch-in needs nothing.
 */
static __always_inline int was_let_pass(struct offcpu_cpu *c, struct task_struct *next)
{
	__u64 ran = next->se.sum_exec_runtime;

	for (int i = 0; i < OFFCPU_LET; i++) {
		if (c->let[i].task == (__u64)next && c->let[i].ran == ran) {
			c->let[i].task = 0;
			return 1;
		}
	}
	return 0;
}

/*
 * in: prev's switch-in time if its last wait may still be open (0: none,
 * or not seen); the switch-out's own time is now (0: not read yet).
 */
static __always_inline void switch_out(void *ctx, bool preempt, struct task_struct *prev,
				       unsigned int prev_state, struct offcpu_cpu *c, __u64 now,
				       __u64 in)
{
	struct offcpu_hot *h;
	struct offcpu_task *t;
	struct pt_regs *regs;
	__u64 upc = 0, usp = 0, ubp = 0;
	__u32 kind, weight = 1, i;
	int kthread;

	/* A dead task never comes back. */
	if (prev_state & TASK_DEAD)
		return;
	if (offcpu_max_rate)
		c->n++;
	/*
	 * First, before the filters below read another line of prev: whether
	 * this wait is let pass (nothing recorded, whoever prev is).
	 */
	if (c->every > 1 && frequent(prev, c) &&
	    !crowded(prev, preempt || prev_state == TASK_RUNNING)) {
		weight = cpu_weight(c);
		if (!weight) {
			/* One that ended at the switch-in still counts. */
			if (in) {
				t = bpf_task_storage_get(&offcpu_tasks, prev, 0, 0);
				if (t)
					end_wait(t, in, prev, now);
			}
			i = c->let_i++ % OFFCPU_LET;
			c->let[i].task = (__u64)prev;
			c->let[i].ran = prev->se.sum_exec_runtime;
			return;
		}
	}
	/* The idle task never waits. */
	if (prev->pid == 0)
		return;
	if (offcpu_self_tgid && prev->tgid == offcpu_self_tgid)
		return;
	if (offcpu_filter && !selected(prev))
		return;
	if (!now)
		now = bpf_ktime_get_ns();
	t = bpf_task_storage_get(&offcpu_tasks, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t) {
		count(PROFD_CNT_OFFCPU_NO_STATE);
		return;
	}
	end_wait(t, in, prev, now);
	t->weight = weight;

	if (offcpu_sample > 1) {
		/*
		 * Gaps of N-1, N or N+1 switch-outs at random, from a random phase:
		 * a fixed gap of N would alias with a thread that alternates long
		 * and short waits; jittered by one, every switch-out is soon
		 * recorded with probability 1/N whatever the pattern, so N x the
		 * recorded time estimates the total without bias, and a thread's
		 * number of records stays within about one of its switch-outs / N
		 * (wider gaps would spread it more).
		 */
		if (!t->skip_init) {
			t->skip_init = 1;
			t->skip = bpf_get_prandom_u32() % offcpu_sample;
		}
		if (t->skip) {
			t->skip--;
			return;
		}
		t->skip = offcpu_sample - 2 + bpf_get_prandom_u32() % 3;
	}
	/* A preempted task stays runnable whatever its state said (see __trace_sched_switch_state). */
	kind = preempt || prev_state == TASK_RUNNING ? PROFD_KIND_RUNQ : PROFD_KIND_OFFCPU;
	h = &t->hot[kind == PROFD_KIND_RUNQ];
	kthread = prev->flags & PF_KTHREAD;
	if (!kthread) {
		/* A BTF pointer: plain loads, not two bpf_probe_read_kernel calls (about 50 ns). */
		regs = (struct pt_regs *)bpf_task_pt_regs(prev);
		upc = regs->ip;
		usp = regs->sp;
		ubp = regs->bp;
	}
	t->kind = kind;
	/*
	 * The caller check reads user memory (about 40 ns): once per base
	 * interval is enough, the same trust a place gets before it grows.
	 */
	if (offcpu_stack_interval_ns && h->ready && now < h->until && upc == h->upc && usp == h->usp &&
	    (!h->grown ||
	     (ubp == h->ubp && (now - h->chk_ns < offcpu_stack_interval_ns ||
				(user_word(ubp + 8) == t->place[kind == PROFD_KIND_RUNQ].uret &&
				 (h->chk_ns = now))))) &&
	    /* Python calls add no native frames: one pc and sp serve every Python function. */
	    (!h->py || py_place_same(&t->place[kind == PROFD_KIND_RUNQ].py))) {
		t->ts = now;
		return;
	}
	/* Time summed under the old stacks goes to them before they are replaced. */
	flush_pending(t, kind);
	h->ids_ok = 0;
	h->ready = 0;
	t->ts = now;
	bpf_tail_call(ctx, &offcpu_progs, 0);
	/* Not loaded: the waits of this place are dropped (and counted) until a capture runs. */
	count(PROFD_CNT_OFFCPU_TAIL_FAILED);
}

/*
 * The stack capture of a switch-out, tail-called by off_cpu when a place's
 * stacks are due (never at a reuse). A program of its own: a tp_btf
 * program gets no private stack, its frames down a call chain share 512
 * bytes, and the walkers' frames fit beside this frame only, not beside
 * the switch hook's as well.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(off_cpu_capture, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	struct offcpu_place *pl;
	struct offcpu_task *t;
	struct offcpu_hot *h;
	struct pt_regs *regs;
	__u64 upc = 0, usp = 0, ubp = 0, uh, kh;
	__u32 flags, same, k;
	int kthread;

	t = bpf_task_storage_get(&offcpu_tasks, prev, 0, 0);
	if (!t) {
		count(PROFD_CNT_OFFCPU_NO_STATE);
		return 0;
	}
	k = t->kind == PROFD_KIND_RUNQ;
	pl = &t->place[k];
	h = &t->hot[k];
	kthread = prev->flags & PF_KTHREAD;
	if (!kthread) {
		regs = (struct pt_regs *)bpf_task_pt_regs(prev);
		upc = regs->ip;
		usp = regs->sp;
		ubp = regs->bp;
	}
	/*
	 * Stored before the walk, and compared first: little stays live across
	 * the walkers' calls, whose frames share the 512 bytes with this one.
	 */
	same = pl->cap_ns && upc == h->upc && usp == h->usp;
	h->upc = upc;
	h->usp = usp;
	h->ubp = ubp;
	pl->cap_ns = t->ts;
	h->chk_ns = t->ts;
	/* Counted here, not on reuse: a shared counter bumped at every switch costs about 250 ns on this VM. */
	count(PROFD_CNT_OFFCPU_CAPTURED);
	py_place_clear();
	flags = capture_place(ctx, pl, kthread || (k && !offcpu_runq_ustack));
	h->py = py_place_take(&pl->py);
	uh = stack_hash(&pl->ustk, pl->ustk.len);
	kh = stack_hash(&pl->kstk, pl->kstk.len);
	/*
	 * A place whose recaptures keep finding the same stacks is trusted for
	 * longer: a thread blocking every few ms in its event loop would
	 * otherwise walk both stacks (about 5 us) at nearly every switch. Any
	 * change, or a different pc or sp, drops it back to the base interval.
	 * Past the base interval a reuse also needs the same rbp and the same
	 * word above it: with frame pointers, the return address of the
	 * innermost frame that keeps one, so two callers reaching one pc at one
	 * sp (a shared wait function) are told apart without walking (one
	 * 8-byte user read, about 40 ns, instead of about 5 us). Code without
	 * frame pointers keeps only the pc and sp check there.
	 */
	if (same && uh == pl->uhash && kh == pl->khash && flags == pl->flags)
		pl->reuse_ns = pl->reuse_ns * 2 < offcpu_stack_interval_ns * OFFCPU_REUSE_GROWTH ?
				       pl->reuse_ns * 2 : offcpu_stack_interval_ns * OFFCPU_REUSE_GROWTH;
	else
		pl->reuse_ns = offcpu_stack_interval_ns;
	pl->uhash = uh;
	pl->khash = kh;
	pl->uret = kthread ? 0 : user_word(h->ubp + 8);
	pl->flags = flags;
	h->until = pl->cap_ns + pl->reuse_ns;
	h->grown = pl->reuse_ns > offcpu_stack_interval_ns;
	t->key.pid = prev->tgid;
	t->key.tid = prev->pid;
	t->key.cgroup_id = bpf_get_current_cgroup_id();
	bpf_get_current_comm(t->key.thread, sizeof(t->key.thread));
	BPF_CORE_READ_STR_INTO(&t->key.comm, prev, group_leader, comm);
	h->ready = 1;
	/* After the capture: the hook's own run time is not time away. */
	t->ts = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(off_cpu, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	struct offcpu_cpu *c;
	__u64 now = 0, in;
	__u32 zero = 0;

	c = bpf_map_lookup_elem(&offcpu_cpus, &zero);
	if (!c)
		return 0;
	rate_window(c);
	/*
	 * prev is the task this CPU switched in last, unless no switch was seen
	 * since attaching, or prev was switched in by a switch not traced.
	 */
	in = c->run_task != (__u64)prev ? OFFCPU_IN_UNSEEN : c->run_open ? c->run_start : 0;
	c->run_task = (__u64)next;
	if (c->every > 1 && was_let_pass(c, next)) {
		c->run_open = 0;
	} else {
		/* One clock read for both halves (about 40 ns on a VM): the switch is one instant. */
		now = bpf_ktime_get_ns();
		c->run_open = 1;
		c->run_start = now;
		switch_in(next, now);
	}
	switch_out(ctx, preempt, prev, prev_state, c, now, in);
	return 0;
}

/*
 * A thread's last waits may still be pending in its storage, which goes
 * with the task: add them now, with the wait that ended when it was last
 * switched in.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(offcpu_exit, struct task_struct *p)
{
	struct offcpu_task *t;

	struct task_struct *cur = bpf_get_current_task_btf();
	struct offcpu_cpu *c;
	__u32 zero = 0;

	t = bpf_task_storage_get(&offcpu_tasks, cur, 0, 0);
	if (!t)
		return 0;
	c = bpf_map_lookup_elem(&offcpu_cpus, &zero);
	end_wait(t, !c || c->run_task != (__u64)cur ? OFFCPU_IN_UNSEEN : c->run_open ? c->run_start : 0,
		 cur, 0);
	flush_pending(t, PROFD_KIND_OFFCPU);
	flush_pending(t, PROFD_KIND_RUNQ);
	return 0;
}
