/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The DWARF user-stack walker, included by profd.bpf.c. User space compiles
 * each executable file's .eh_frame into sorted rows (lib/unwind_table.c)
 * stored contiguously in urows, and describes each process's executable
 * mappings in umaps (daemon/tables.c). Per frame: find the mapping of the
 * pc, binary-search the rows of the pc's bucket, compute the CFA, read the
 * return address at CFA - 8 and the caller's rbp; where there is no row,
 * frame pointers.
 * The frame loop runs under bpf_loop, so its cost does not multiply the
 * verifier's work by the depth.
 */
#ifndef PROFD_UNWIND_BPF_H
#define PROFD_UNWIND_BPF_H

const volatile __u32 unwind_dwarf = 0;  /* 0: bpf_get_stack (frame pointers) */
const volatile __u32 snapshot_tgid = 0; /* test mode: snapshots of this process's samples */

__u64 ucounters[PROFD_UCNT_MAX] = {};
/*
 * Set by user space: exec events come at most this long after the exec,
 * and bring the new program's mappings. The first request for an exec'd
 * process younger than that waits for them instead of waking user space
 * a second time.
 */
__u64 uw_quiet_ns = 0;

/* Sized by user space before load; 1 entry when DWARF unwinding is off. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct profd_urow);
} urows SEC(".maps");

#include "umaps.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct profd_umaps);
} umaps_zero SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} uevents SEC(".maps");

/*
 * Bumped by user space before it writes rows (a table loaded, or loaded
 * again into rows another file had): row cache entries of an older value
 * are never used.
 */
__u32 urows_gen = 0;

/*
 * Rows found lately, per CPU, by (table block, address range): a hit reads
 * one 20-byte slot where the search reads the block's header, its bucket
 * index and a row or three, each a cache miss when the frame's function
 * was not walked lately (a Python process's interpreter frames: 500-800 ns
 * a frame on a loaded VM, against about 110 for a frame walked just
 * before). A slot keeps the row's whole range, [its pc, the next row's),
 * and is found by the address's 64-byte granule: a sample's innermost pc
 * lands anywhere in a hot function, and an exact-address key made nearly
 * each of those a search (about 1.1 us each in libpython3.10's table).
 * Direct-mapped: a collision costs a search, never a wrong row: the range
 * is checked on every hit.
 */
#define UW_RC_SLOTS 1024
#define UW_RC_GRAIN 6 /* log2 of the bytes of code that share a slot */

struct uw_rc_slot {
	__u32 first;   /* the table block */
	__u32 lo, hi;  /* the row covers [lo, hi) in the block's addresses */
	__u32 gen;     /* urows_gen when the row was read */
	__u16 cfa_off; /* the row's, as struct profd_urow */
	__u8 kind;
	__s8 rbp_off;
};

struct uw_rcache {
	struct uw_rc_slot s[UW_RC_SLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct uw_rcache);
} uw_rcache SEC(".maps");

#define UW_ROW_STEPS 24 /* binary search over up to 16 M rows (a bucket holds a few) */
#define UW_MAP_STEPS 7  /* over up to 64 mappings */

static __always_inline void ucount(enum profd_ucounter c)
{
	__sync_fetch_and_add(&ucounters[c], 1);
}

struct uw_frames {
	__u64 fp, dwarf, early;
};

/*
 * A walk's scalars. They live in a per-CPU map, not on the BPF stack: the
 * off-CPU program inlines this walker beside the Python one, and with the
 * Python walker's calls its stack would pass the verifier's 512-byte
 * bound. One entry per nesting level: a sample (NMI) can interrupt the
 * off-CPU hook's walk on the same CPU. A map value holds no pointers:
 * those stay on the stack (uw_ref).
 */
struct uw_state {
	__u64 pc, sp, bp;
	/*
	 * Where the caller's rbp was saved, not read yet (0: bp holds it). A
	 * frame without frame pointers (libpython3.10's, gcc's cc1) saves rbp
	 * as a callee-saved register, often lines away from its return
	 * address, and its callers' CFAs are rsp-based: the saved value is
	 * read only when a frame's rule uses rbp, and most never are.
	 */
	__u64 bp_at;
	__u32 n;
	__u32 exact;            /* pc is not a return address (leaf, or after a signal frame) */
	__u32 pid;
	__u32 early;            /* a frame was walked without its table because it was not loaded yet */
	__u64 wake;             /* a first request: 0, or BPF_RB_NO_WAKEUP for a process its exec event will bring */
	__u32 borrowed;         /* um is the parent's: forked, not exec'd */
	__u32 max;              /* frames to walk at most (room left for Python frames) */
	__u32 last_map;         /* 1 + index in um of the last frame's mapping; 0: none */
	__u32 gen;              /* urows_gen at the walk's start */
	/* Frames by kind, added to ucounters once per walk: a shared counter per frame bounces between CPUs. */
	struct uw_frames fc;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct uw_state);
} uw_states SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} uw_nest SEC(".maps");

/* What bpf_loop hands uw_step: its context must be on the stack. */
struct uw_ref {
	struct uw_state *s;
	struct profd_umaps *um; /* NULL: no tables for this process (yet) */
	__u64 *ips;
	struct uw_rcache *rc;   /* this CPU's row cache */
};

static __always_inline void uevent_small(__u32 type, __u32 pid, __u64 wake, __u32 flags)
{
	struct profd_uevent *ev = bpf_ringbuf_reserve(&uevents, offsetof(struct profd_uevent, regs), 0);

	if (!ev) {
		ucount(PROFD_UCNT_EVENTS_LOST);
		return;
	}
	ev->type = type;
	ev->pid = pid;
	ev->tid = 0;
	ev->nframes = 0;
	ev->stack_len = 0;
	ev->flags = flags;
	/* User space drops a request its last read of the mappings came after. */
	ev->time_ns = bpf_ktime_get_ns();
	bpf_ringbuf_submit(ev, wake);
}

/*
 * A first request for a process younger than uw_quiet_ns need not wake user
 * space: if it has exec'd, its exec event is due and brings the mappings;
 * if not (yet), it walks by its parent's tables meanwhile.
 */
static __always_inline __u64 uw_wake(struct task_struct *task)
{
	__u64 quiet = uw_quiet_ns;

	if (quiet && bpf_ktime_get_boot_ns() - BPF_CORE_READ(task, start_boottime) < quiet)
		return BPF_RB_NO_WAKEUP;
	return 0;
}

/*
 * A process's first request. One walked by its parent's tables (a forked
 * child, the parent's image) loses nothing while it waits: it wakes
 * nobody, and user space serves it at a turn it takes anyway. So does a
 * young one that has exec'd (its exec id moved past the one it was forked
 * with): its exec event brings the entry or wakes user space. A young
 * child that has not exec'd and has no parent's tables waits only the
 * grace.
 */
static __always_inline void uw_ask(struct uw_state *s, struct task_struct *task, bool borrow)
{
	__u32 flags = 0;

	s->wake = borrow ? BPF_RB_NO_WAKEUP : uw_wake(task);
	if (borrow)
		flags = PROFD_UEV_F_BORROWS;
	else if (s->wake == BPF_RB_NO_WAKEUP)
		flags = PROFD_UEV_F_EXEC_DUE |
			(task->self_exec_id != task->parent_exec_id ? PROFD_UEV_F_EXECD : 0);
	uevent_small(PROFD_UEV_NEW_PID, s->pid, s->wake, flags);
}

/*
 * The binary searches run under bpf_loop too: as plain bounded loops the
 * verifier walks every lo/hi combination of every frame and gives up.
 */
struct uw_msearch {
	struct profd_umaps *um;
	__u64 pc;
	__u32 lo, hi;
};

static long uw_msearch_step(__u64 index, void *arg)
{
	struct uw_msearch *s = arg;
	__u32 lo = s->lo, hi = s->hi, mid;

	if (lo >= hi)
		return 1;
	mid = (lo + hi) / 2;
	if (s->um->m[mid & (PROFD_MAX_UMAPS - 1)].start <= s->pc)
		s->lo = mid + 1;
	else
		s->hi = mid;
	return 0;
}

/*
 * The mapping holding pc, or NULL; *last is 1 + the index of the mapping
 * the previous frame was in (0: none). Most callers are in the same file
 * as their callee: that mapping is tried before the search.
 */
static __always_inline struct profd_umap *uw_find_map(struct profd_umaps *um, __u64 pc, __u32 *last)
{
	struct uw_msearch s = { .um = um, .pc = pc, .lo = 0, .hi = um->n };
	__u32 i;

	if (*last) {
		i = (*last - 1) & (PROFD_MAX_UMAPS - 1);
		if (um->m[i].start <= pc && pc < um->m[i].end)
			return &um->m[i];
	}
	if (s.hi > PROFD_MAX_UMAPS)
		s.hi = PROFD_MAX_UMAPS;
	bpf_loop(UW_MAP_STEPS, uw_msearch_step, &s, 0);
	if (s.lo == 0)
		return NULL;
	i = (s.lo - 1) & (PROFD_MAX_UMAPS - 1);
	if (pc >= um->m[i].end)
		return NULL;
	*last = i + 1;
	return &um->m[i];
}

struct uw_rsearch {
	__u64 vaddr;
	__u32 lo, hi;
	__u32 bad;
};

static long uw_rsearch_step(__u64 index, void *arg)
{
	struct uw_rsearch *s = arg;
	__u32 lo = s->lo, hi = s->hi, mid;
	struct profd_urow *r;

	if (lo >= hi)
		return 1;
	mid = lo + (hi - lo) / 2;
	r = bpf_map_lookup_elem(&urows, &mid);
	if (!r) {
		s->bad = 1;
		return 1;
	}
	if (r->pc <= s->vaddr)
		s->lo = mid + 1;
	else
		s->hi = mid;
	return 0;
}

/* Entry b of the bucket index of the block at first (struct profd_uindex), or -1. */
static __always_inline __s64 uw_bucket(__u32 first, __u32 b)
{
	__u32 k = first + 1 + b / 2;
	__u32 *e = bpf_map_lookup_elem(&urows, &k);

	return e ? e[b & 1] : -1;
}

/*
 * The row covering vaddr in the block [first, first + count), or NULL,
 * and in *idx its index in urows: the bucket index narrows the search to
 * the rows of vaddr's bucket.
 */
static __always_inline struct profd_urow *uw_find_row(__u32 first, __u32 count, __u64 vaddr, __u32 *idx)
{
	struct profd_uindex *h = bpf_map_lookup_elem(&urows, &first);
	struct uw_rsearch s = { .vaddr = vaddr };
	__u32 nb, skip, i;
	__s64 lo, hi;
	__u64 b;

	if (!h || vaddr < h->base)
		return NULL;
	nb = PROFD_UIDX_NB(h);
	skip = PROFD_UIDX_SLOTS(nb);
	if (!nb || skip >= count)
		return NULL;
	b = (vaddr - h->base) >> (PROFD_UIDX_SHIFT(h) & 63);
	if (b >= nb)
		b = nb - 1;
	lo = uw_bucket(first, b);
	hi = uw_bucket(first, b + 1);
	if (lo < 0 || hi < lo || hi >= count - skip)
		return NULL;
	/* Row lo's pc is at or below the bucket's start: the answer is lo or a later row. */
	s.lo = first + skip + lo + 1;
	s.hi = first + skip + hi + 1;
	bpf_loop(UW_ROW_STEPS, uw_rsearch_step, &s, 0);
	if (s.bad)
		return NULL;
	i = s.lo - 1;
	*idx = i;
	return bpf_map_lookup_elem(&urows, &i);
}

/*
 * The row covering vaddr in m's table, copied into *out; 0 when there is
 * none (frame pointers then). Through this CPU's row cache.
 */
static __always_inline int uw_row(struct uw_ref *w, struct profd_umap *m, __u64 vaddr,
				   struct profd_urow *out)
{
	struct uw_rc_slot *e = NULL;
	struct profd_urow *row, *next;
	__u32 h, i = 0, gen = w->s->gen, v = (__u32)vaddr, lo, hi;

	/* Rows hold 32-bit addresses: a larger one has none, and the search says so. */
	if (w->rc && vaddr <= 0xffffffffULL) {
		h = ((v >> UW_RC_GRAIN) ^ (m->first * 0x9e3779b1u)) * 0x85ebca6bu;
		e = &w->rc->s[(h >> 16) & (UW_RC_SLOTS - 1)];
		if (e->first == m->first && e->gen == gen && e->lo <= v && v < e->hi) {
			out->cfa_off = e->cfa_off;
			out->kind = e->kind;
			out->rbp_off = e->rbp_off;
			return 1;
		}
	}
	row = uw_find_row(m->first, m->count, vaddr, &i);
	if (!row)
		return 0;
	*out = *row;
	if (e) {
		/*
		 * The next row of the block bounds this one (most often in the
		 * same cache line); the block's last row is kept for vaddr alone.
		 */
		lo = v;
		hi = v + 1;
		if (out->pc <= v && i + 1 < m->first + m->count) {
			lo = out->pc;
			i++;
			next = bpf_map_lookup_elem(&urows, &i);
			if (next && next->pc > v)
				hi = next->pc;
			else
				lo = v;
		}
		e->first = m->first;
		e->lo = lo;
		e->hi = hi;
		e->gen = gen;
		e->cfa_off = out->cfa_off;
		e->kind = out->kind;
		e->rbp_off = out->rbp_off;
	}
	return 1;
}

static __always_inline int uw_read(__u64 *dst, __u64 addr)
{
	if (bpf_probe_read_user(dst, sizeof(*dst), (void *)addr)) {
		ucount(PROFD_UCNT_BAD_READ);
		return -1;
	}
	return 0;
}

static long uw_step(__u64 index, void *arg)
{
	struct uw_ref *w = arg;
	struct uw_state *s = w->s;
	struct profd_umap *m = NULL;
	struct profd_urow rbuf, *row = NULL;
	__u64 cfa, ra, bp, sp = s->sp;
	__u32 kind = PROFD_UR_CFA_NONE;

	if (s->n >= PROFD_MAX_DEPTH || s->n >= s->max)
		return 1;
	w->ips[s->n & 127] = s->pc; /* n < 127 checked above; the mask is for the verifier */
	s->n++;

	if (w->um) {
		m = uw_find_map(w->um, s->pc, &s->last_map);
		if (m && m->count) {
			if (uw_row(w, m, s->pc - m->bias - (s->exact ? 0 : 1), &rbuf)) {
				row = &rbuf;
				kind = PROFD_UR_CFA(row->kind);
			}
		} else if (m && m->first == PROFD_UMAP_PENDING) {
			s->early = 1;
			s->fc.early++;
		} else if (!m && s->pc > 4096 && s->pc < 0x800000000000ULL) {
			s->early = 1;
			s->fc.early++;
			/* Borrowed: this process's own request is out already. */
			if (!w->um->refresh && !s->borrowed) {
				/* Racy on purpose: a duplicate request costs user space one maps read. */
				w->um->refresh = 1;
				uevent_small(PROFD_UEV_REFRESH, s->pid, 0, 0);
			}
		}
	}
	if (!row)
		kind = PROFD_UR_CFA_NONE;
	/* The rules that use rbp: its saved value is read now. */
	if (s->bp_at && (kind == PROFD_UR_CFA_NONE || kind == PROFD_UR_CFA_RBP ||
			 kind == PROFD_UR_CFA_DEREF_RBP)) {
		if (uw_read(&s->bp, s->bp_at))
			return 1;
		s->bp_at = 0;
	}
	bp = s->bp;

	switch (kind) {
	case PROFD_UR_CFA_NONE:
		/* Frame pointers: the saved rbp at [rbp], the return address above it. */
		if (bp == 0 || bp < sp)
			return 1;
		if (uw_read(&ra, bp + 8))
			return 1;
		s->bp_at = bp;
		s->sp = bp + 16;
		s->pc = ra;
		s->exact = 0;
		s->fc.fp++;
		return ra == 0;
	case PROFD_UR_CFA_RSP:
		cfa = sp + row->cfa_off;
		break;
	case PROFD_UR_CFA_RBP:
		cfa = bp + row->cfa_off;
		break;
	case PROFD_UR_CFA_PLT:
		cfa = sp + row->cfa_off + ((s->pc & 15) >= (__u64)row->rbp_off ? 8 : 0);
		break;
	case PROFD_UR_CFA_DEREF_RBP:
		if (uw_read(&cfa, bp + (__s16)row->cfa_off))
			return 1;
		break;
	case PROFD_UR_CFA_SIGNAL:
		/* rsp points at the ucontext: uc_mcontext at 40; rbp, rsp, rip at 120, 160, 168. */
		if (uw_read(&s->bp, sp + 120) || uw_read(&s->sp, sp + 160) || uw_read(&s->pc, sp + 168))
			return 1;
		s->bp_at = 0;
		s->exact = 1;
		s->fc.dwarf++;
		return s->pc == 0;
	case PROFD_UR_CFA_END:
		return 1;
	default:
		ucount(PROFD_UCNT_UNSUP);
		return 1;
	}
	if (cfa <= sp && kind != PROFD_UR_CFA_DEREF_RBP)
		return 1; /* the stack grows down: a caller's CFA above ours, or a loop */
	if (uw_read(&ra, cfa - 8))
		return 1;
	switch (PROFD_UR_RBP(row->kind)) {
	case PROFD_UR_RBP_AT_CFA:
		s->bp_at = cfa + (__s64)row->rbp_off * 8;
		break;
	case PROFD_UR_RBP_UNDEF:
		s->bp = 0;
		s->bp_at = 0;
		break;
	}
	s->sp = cfa;
	s->pc = ra;
	s->exact = 0;
	s->fc.dwarf++;
	return ra == 0;
}

/*
 * The tables of this process, or NULL; asks user space to load them on the
 * first sample. A child that has not exec'd walks by its parent's until its
 * own are written: between fork and exec it is its parent's image.
 */
static __always_inline struct profd_umaps *uw_umaps(struct uw_state *s, struct task_struct *task)
{
	__u32 pid = s->pid, ppid, z = 0;
	__u64 sc = task->mm->start_code;
	struct profd_umaps *um = bpf_map_lookup_elem(&umaps, &pid), *zero, *pum;
	bool borrow;
	long err;

	if (um && um->n && um->start_code == sc)
		return um;
	/*
	 * A placeholder this image has tagged: its request is out and its
	 * parent's tables were not its own. A process's first samples, before
	 * its tables come, skip the parent's lookup (three cache misses).
	 */
	if (um && !um->n && um->start_code == sc) {
		ucount(PROFD_UCNT_NO_PID);
		return NULL;
	}
	/*
	 * Exiting: the exit event may have dropped its tables already, and a
	 * request now would only have user space read a zombie's mappings.
	 */
	if (task->flags & 0x00000004 /* PF_EXITING */)
		return NULL;
	ppid = task->real_parent->tgid;
	pum = bpf_map_lookup_elem(&umaps, &ppid);
	borrow = pum && pum->n && pum->start_code == sc;
	if (um) {
		/* exec (or pid reuse): these mappings are another program's. A placeholder (n = 0) has asked. */
		if (um->n && !um->refresh) {
			um->refresh = 1;
			uw_ask(s, task, borrow);
		}
	} else if ((zero = bpf_map_lookup_elem(&umaps_zero, &z))) {
		/* The placeholder (n = 0) makes the request once per process. */
		err = bpf_map_update_elem(&umaps, &pid, zero, BPF_NOEXIST);
		if (err == 0)
			uw_ask(s, task, borrow);
		else if (err != -17 /* EEXIST */)
			ucount(PROFD_UCNT_PIDS_FULL);
	}
	if (borrow) {
		s->borrowed = 1;
		return pum;
	}
	/*
	 * Racy on purpose, as refresh: user space replaces the placeholder
	 * whole, and a tag lost or left on a reused entry costs one more
	 * parent lookup or a refresh request.
	 */
	if (um && !um->n)
		um->start_code = sc;
	ucount(PROFD_UCNT_NO_PID);
	return NULL;
}

/* Test mode: the registers, the top of the stack and the walker's result, for the libunwind oracle. */
static __always_inline void uw_snapshot(struct pt_regs *regs, __u32 pid, __u32 tid,
					const __u64 *ips, __u32 n, __u32 flags)
{
	struct profd_uevent *ev = bpf_ringbuf_reserve(&uevents, sizeof(*ev), 0);
	__u64 sp = regs->sp, off = 0, size;

	if (!ev) {
		ucount(PROFD_UCNT_EVENTS_LOST);
		return;
	}
	ev->type = PROFD_UEV_SNAPSHOT;
	ev->pid = pid;
	ev->tid = tid;
	ev->nframes = n;
	ev->flags = flags;
	ev->time_ns = bpf_ktime_get_ns();
	ev->regs[0] = regs->ax;
	ev->regs[1] = regs->dx;
	ev->regs[2] = regs->cx;
	ev->regs[3] = regs->bx;
	ev->regs[4] = regs->si;
	ev->regs[5] = regs->di;
	ev->regs[6] = regs->bp;
	ev->regs[7] = regs->sp;
	ev->regs[8] = regs->r8;
	ev->regs[9] = regs->r9;
	ev->regs[10] = regs->r10;
	ev->regs[11] = regs->r11;
	ev->regs[12] = regs->r12;
	ev->regs[13] = regs->r13;
	ev->regs[14] = regs->r14;
	ev->regs[15] = regs->r15;
	ev->regs[16] = regs->ip;
	bpf_probe_read_kernel(ev->frames, sizeof(ev->frames), ips);
	/* Page by page: the copy stops at the first page that is not there (the stack's top). */
	size = 4096 - (sp & 4095);
	for (int k = 0; k < PROFD_SNAP_STACK / 4096 + 1; k++) {
		if (off >= PROFD_SNAP_STACK)
			break;
		off &= PROFD_SNAP_STACK - 1;
		if (size > 4096)
			size = 4096;
		if (size == 0 || bpf_probe_read_user(ev->stack + off, size, (void *)(sp + off)))
			break;
		off += size;
		size = 4096;
	}
	ev->stack_len = off > PROFD_SNAP_STACK ? PROFD_SNAP_STACK : off;
	bpf_ringbuf_submit(ev, 0);
}

/*
 * A process's tables go with its last thread, here rather than by a system
 * call from user space per exit. Entries written after this are user
 * space's to delete (tables__exit compares times).
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(uw_exit, struct task_struct *p)
{
	__u32 pid;

	if (BPF_CORE_READ(p, signal, live.counter) != 0)
		return 0;
	pid = BPF_CORE_READ(p, tgid);
	bpf_map_delete_elem(&umaps, &pid);
	return 0;
}

static __always_inline void uw_add_frames(struct uw_frames *f)
{
	if (f->fp)
		__sync_fetch_and_add(&ucounters[PROFD_UCNT_FRAMES_FP], f->fp);
	if (f->dwarf)
		__sync_fetch_and_add(&ucounters[PROFD_UCNT_FRAMES_DWARF], f->dwarf);
	if (f->early)
		__sync_fetch_and_add(&ucounters[PROFD_UCNT_FRAMES_EARLY], f->early);
	f->fp = f->dwarf = f->early = 0;
}

static __always_inline long unwind_walk(struct uw_state *s, __u64 *ips, __u32 max, __u32 nest)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct uw_ref w = { .s = s, .ips = ips };
	__u32 zero = 0;

	__builtin_memset(s, 0, sizeof(*s));
	if (!regs)
		return 0;
	/* Read before any row: rows written after this are another generation's. */
	s->gen = *(volatile __u32 *)&urows_gen;
	/* The outer walk only: a nested one (NMI) could tear a slot the outer one is writing. */
	w.rc = nest ? NULL : bpf_map_lookup_elem(&uw_rcache, &zero);
	s->pid = pid_tgid >> 32;
	w.um = uw_umaps(s, task);
	s->max = max;
	/* A BTF pointer: plain loads, not a bpf_probe_read_kernel call each. */
	s->pc = regs->ip;
	s->sp = regs->sp;
	s->bp = regs->bp;
	s->exact = 1;
	if (s->pc == 0)
		return 0;
	if (w.um)
		ucount(PROFD_UCNT_WALKS);
	bpf_loop(PROFD_MAX_DEPTH, uw_step, &w, 0);
	uw_add_frames(&s->fc);
	/* regs is a BTF pointer: read in place, not copied to the stack (168 bytes of its 512). */
	if (snapshot_tgid && s->pid == snapshot_tgid)
		uw_snapshot(regs, s->pid, (__u32)pid_tgid, ips, s->n,
			    w.um && !s->early ? PROFD_SNAP_F_TABLES : 0);
	return s->n;
}

/* Walks the current task's user stack into ips; returns the number of frames. */
static __always_inline long unwind_user(__u64 *ips, __u32 max)
{
	struct uw_state *s;
	__u32 zero = 0, k;
	__u32 *nest;
	long n;

	nest = bpf_map_lookup_elem(&uw_nest, &zero);
	if (!nest)
		return 0;
	k = *nest;
	if (k > 1)
		return 0;
	s = bpf_map_lookup_elem(&uw_states, &k);
	if (!s)
		return 0;
	*nest = k + 1;
	if (cost_tgid[0]) {
		__u32 tg = bpf_get_current_pid_tgid() >> 32;
		__u32 c = tg == cost_tgid[0] ? 1 : tg == cost_tgid[1] ? 2 : 0;
		__u64 t0 = c ? bpf_ktime_get_ns() : 0;

		n = unwind_walk(s, ips, max, k);
		if (c)
			__sync_fetch_and_add(&cost_unwind_ns[(c - 1) & 1], bpf_ktime_get_ns() - t0);
	} else {
		n = unwind_walk(s, ips, max, k);
	}
	*nest = k;
	return n;
}

/* Drop-in for bpf_get_stack(ctx, ips, size, BPF_F_USER_STACK): bytes written, or -errno. */
static __always_inline long user_stack(void *ctx, __u64 *ips, __u32 size)
{
	if (!unwind_dwarf)
		return bpf_get_stack(ctx, ips, size, BPF_F_USER_STACK);
	return unwind_user(ips, size / sizeof(__u64)) * sizeof(__u64);
}

#endif
