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
#include "profd.h"
#include "pytypes.h"
#include "pyadopt.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

__u64 counters[PROFD_PEV_CNT_MAX] = {};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024); /* user space may resize it before load */
} pevents SEC(".maps");

/*
 * The walker's CPython processes (py_procs, bpf/pyadopt.h): an entry goes
 * here with its image, at exec and exit, and a stale one of the pid's last
 * owner at fork: no system call per exit, where most processes never ran
 * CPython.
 */

/* py_none is the walker's (shared at open): write the exec's notes into it. */
const volatile __u32 py_notes = 0;

/* A py_procs value being made: too large for the stack beside a ring record's pointer. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct profd_pyproc);
} py_new SEC(".maps");

/* val as pid's py_procs value, unless one is there; the walker's "none" notes lapse. */
static __always_inline void py_insert(__u32 pid, struct profd_pyproc *val)
{
	if (bpf_map_update_elem(&py_procs, &pid, val, BPF_NOEXIST) == 0) {
		py_gen_bump(pid);
		__sync_fetch_and_add(&counters[PROFD_PEV_CNT_PY_ADOPTED], 1);
	}
}

/*
 * An exec event is sent once ld.so has mapped the libraries, with the
 * image's executable mappings listed, so that user space wakes once per
 * exec and reads /proc only for files it has not seen. At the exec itself
 * only the binary and ld.so are mapped, and a second read a few
 * milliseconds later cost a second wake-up. The sign: the new image sets
 * its thread pointer (arch_prctl ARCH_SET_FS, x86-64's fsbase), which
 * ld.so (or a static binary's libc) does once, before main, after laying
 * out the static TLS of every library it loaded. A BPF timer looks every
 * exec_poll_ns (0: the event goes at once) until the process has run
 * PROFD_PEV_EXEC_POLLS looks' time on a CPU: what ld.so takes is CPU time,
 * and a process waiting for a CPU is not sampled either. A process that
 * exits first wakes nobody: its exit sends the list.
 */
const volatile __u64 exec_poll_ns = 0;

struct delayed {
	struct bpf_timer timer;
	struct profd_pev ev;
	__u64 fsbase;  /* at exec: the image sets its own */
	__u64 cpu_ns;  /* its CPU time at exec */
	__u32 polls;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* a few in flight: no 8192 entries allocated up front */
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct delayed);
} delayed SEC(".maps");

/*
 * Exec events of programs whose files user space knows wake it at most
 * once per wake_gap_ns, all of them together (0: each at once): a wake-up
 * cost more than the work of an exec. The first event after a wake-up
 * arms the timer; its callback sends one record that wakes. An image
 * listing a file user space has no path for still wakes at once: its
 * /proc read must find the process alive. User space fills known_files.
 */
const volatile __u64 wake_gap_ns = 0;

struct waker {
	struct bpf_timer timer;
	__u64 armed;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct waker);
} waker SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024); /* user space sets it before load */
	__type(key, struct profd_pev_file);
	__type(value, struct profd_pev_fileid);
} known_files SEC(".maps");

/*
 * The walker's umaps (bpf/umaps.h), shared by user space before load, and
 * the files whose rows it may point at (struct profd_ufile). umaps_on: 0
 * when DWARF unwinding is off (then both are empty stand-ins).
 */
const volatile __u32 umaps_on = 0;

#include "umaps.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__type(key, struct profd_pev_file);
	__type(value, struct profd_ufile);
} ufiles SEC(".maps");

/* An entry being made: 2 KB, too large for the stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct profd_umaps);
} umaps_new SEC(".maps");

/*
 * Exec events are made here, then copied into the ring: a process whose
 * event finds the ring full (a loaded host, user space seconds late) is
 * still made known to the walkers (its py_procs and umaps entries), and
 * so are the children it forks. Slot 1 is the exit hook's, 2 the fork
 * hook's, slot 0 the timer's, which may run inside them on the same CPU.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, struct profd_pev_exec);
} pev_new SEC(".maps");

/*
 * Odd while user space takes rows away from a file (its ufiles entry
 * deleted, the umaps entries that point at them dropped), bumped again
 * after: an entry written here across such a change may point at rows
 * given to another file, and is taken back.
 */
__u64 ufiles_seq = 0;

/*
 * 6.7-6.10 keep an inode's times as struct timespec64 (__i_mtime,
 * __i_ctime; 6.11 split them into seconds and nanoseconds). Without this
 * flavor every exec's list on those kernels (Ubuntu 24.04's 6.8) carried
 * no times, and each exec of a known program read /proc.
 */
struct inode___ts {
	struct timespec64 __i_mtime;
	struct timespec64 __i_ctime;
} __attribute__((preserve_access_index));

extern struct task_struct *bpf_task_from_pid(s32 pid) __ksym __weak;
extern void bpf_task_release(struct task_struct *p) __ksym __weak;
extern int bpf_iter_task_vma_new(struct bpf_iter_task_vma *it, struct task_struct *task, __u64 addr) __ksym __weak;
extern struct vm_area_struct *bpf_iter_task_vma_next(struct bpf_iter_task_vma *it) __ksym __weak;
extern void bpf_iter_task_vma_destroy(struct bpf_iter_task_vma *it) __ksym __weak;

/*
 * Exits do not wake user space: they wait for the next wake-up or drain
 * (waking up was a quarter of profd's time at 10 execs a second, by perf
 * record). Exec events force a wake-up: with an exit still unread before
 * them, the default (wake only when the reader has caught up) would not.
 */
static __always_inline void send(const struct profd_pev *ev, __u64 wake)
{
	/* Events that wake nobody still must not fill the ring: half full, the reader is woken. */
	if (wake == BPF_RB_NO_WAKEUP && bpf_ringbuf_query(&pevents, BPF_RB_AVAIL_DATA) >
						bpf_ringbuf_query(&pevents, BPF_RB_RING_SIZE) / 2)
		wake = BPF_RB_FORCE_WAKEUP;
	if (bpf_ringbuf_output(&pevents, (void *)ev, sizeof(*ev), wake))
		__sync_fetch_and_add(&counters[PROFD_PEV_CNT_LOST], 1);
}

static int wake_due(void *map, __u32 *key, struct waker *w)
{
	struct profd_pev ev = { .type = PROFD_PEV_WAKE };

	w->armed = 0;
	send(&ev, BPF_RB_FORCE_WAKEUP);
	return 0;
}

/* After an event sent without a wake-up: one shared wake-up within wake_gap_ns, else one now. */
static __always_inline void wake_soon(void)
{
	struct profd_pev ev = { .type = PROFD_PEV_WAKE };
	__u32 z = 0;
	struct waker *w = bpf_map_lookup_elem(&waker, &z);

	if (w && w->armed)
		return;
	if (w && __sync_val_compare_and_swap(&w->armed, 0, 1) != 0)
		return;
	if (w) {
		bpf_timer_init(&w->timer, &waker, 1 /* CLOCK_MONOTONIC */); /* -EBUSY after the first */
		if (bpf_timer_set_callback(&w->timer, wake_due) == 0 &&
		    bpf_timer_start(&w->timer, wake_gap_ns, 0) == 0)
			return;
		w->armed = 0;
	}
	send(&ev, BPF_RB_FORCE_WAKEUP);
}

/*
 * Writers of an mm's mappings, as the VMA iterator meets them. Where it
 * reads each VMA under that VMA's own lock (6.18.y, the stable backport
 * of the per-VMA-lock iterator; before, it took mmap_lock or failed), a
 * VMA write-locked by the holder of mmap_lock is skipped, silently: a
 * fork's copy locks every VMA of the parent in address order (the
 * binary's first), an mprotect or mmap the ones it changes. A walk then
 * listed libraries without the binary, or nothing at all, for a process
 * forking as the walk ran (36-exec-chain's images fork at once).
 * Returned: the mm's write count (6.13+: odd while held; before, bumped
 * at each unlock) shifted left, and bit 0 set while a writer holds
 * mmap_lock. A walk between two equal values without bit 0 saw every VMA.
 */
struct mm_struct___seqc {
	seqcount_t mm_lock_seq;
} __attribute__((preserve_access_index));

struct mm_struct___int {
	int mm_lock_seq;
} __attribute__((preserve_access_index));

static __always_inline __u64 mm_writes(struct mm_struct *mm)
{
	__u64 seq = 0, held = 0;

	if (bpf_core_field_exists(struct mm_struct___seqc, mm_lock_seq)) {
		seq = BPF_CORE_READ((struct mm_struct___seqc *)mm, mm_lock_seq.sequence);
		held = seq & 1;
	} else if (bpf_core_field_exists(struct mm_struct___int, mm_lock_seq)) {
		seq = (__u32)BPF_CORE_READ((struct mm_struct___int *)mm, mm_lock_seq);
	}
	/* PREEMPT_RT's rw_semaphore has no count: its write count says it (above). */
	if (bpf_core_field_exists(struct rw_semaphore, count))
		held |= BPF_CORE_READ(mm, mmap_lock.count.counter) & 1; /* RWSEM_WRITER_LOCKED */
	return seq << 1 | held;
}

/*
 * The image's executable mappings into x. Not complete (user space reads
 * /proc instead): more than fit, a deleted file (its path would need
 * " (deleted)"), the iterator could not start, the task has another image
 * than x's (it is exec'ing again), or the walk may have skipped VMAs or
 * missed the binary: then true, a later walk may list them all.
 */
static __always_inline bool list_maps(struct task_struct *t, struct profd_pev_exec *x)
{
	struct bpf_iter_task_vma it;
	struct vm_area_struct *vma;
	const struct profd_pev_fileid *id;
	struct profd_pev_map *m;
	struct dentry *de;
	struct file *f;
	struct mm_struct *mm = BPF_CORE_READ(t, mm);
	__u64 vdso = (__u64)BPF_CORE_READ(mm, context.vdso), writes;
	__u32 n;
	bool bin = false;

	/*
	 * The count lives in the record, not a register: read back from
	 * memory it is unknown to the verifier, whose states for successive
	 * iterations then converge (a register count took it 6 s to load).
	 */
	x->nmaps = 0;
	x->maps_flags = 0;
	if (!mm) /* gone: the process exited */
		return false;
	/* The next image's mm (the timer fired inside an execve): this image's mappings are gone. */
	if (BPF_CORE_READ(mm, start_code) != x->ev.start_code) {
		__sync_fetch_and_add(&counters[PROFD_PEV_CNT_MAPS_UNSETTLED], 1);
		return false;
	}
	writes = mm_writes(mm);
	if (writes & 1)
		return true;
	if (bpf_iter_task_vma_new(&it, t, 0) == 0) {
		x->maps_flags = PROFD_PEV_MAPS_OK;
		while ((vma = bpf_iter_task_vma_next(&it))) {
			if (!(vma->vm_flags & 0x4 /* VM_EXEC */))
				continue;
			n = x->nmaps;
			if (n >= PROFD_PEV_MAX_MAPS) {
				x->maps_flags = 0;
				break;
			}
			m = &x->maps[n & (PROFD_PEV_MAX_MAPS - 1)];
			m->start = vma->vm_start;
			m->end = vma->vm_end;
			m->offset = 0;
			m->ino = 0;
			m->dev = 0;
			m->flags = 0;
			m->size = 0;
			m->mtime_sec = m->ctime_sec = 0;
			m->mtime_nsec = m->ctime_nsec = 0;
			f = vma->vm_file;
			if (f) {
				de = BPF_CORE_READ(f, f_path.dentry);
				/* Unhashed: deleted (or never linked): /proc would say so. */
				if (!BPF_CORE_READ(de, d_hash.pprev)) {
					x->maps_flags = 0;
					break;
				}
				m->offset = vma->vm_pgoff << 12;
				m->ino = BPF_CORE_READ(f, f_inode, i_ino);
				m->dev = BPF_CORE_READ(f, f_inode, i_sb, s_dev);
				m->size = BPF_CORE_READ(f, f_inode, i_size);
				/*
				 * Where timestamps are fine-grained (6.13+), the top
				 * bit of the change time's nanoseconds says whether it
				 * was read since: not part of the time.
				 */
				if (bpf_core_field_exists(struct inode, i_mtime_sec) &&
				    bpf_core_field_exists(struct inode, i_ctime_sec)) {
					m->mtime_sec = BPF_CORE_READ(f, f_inode, i_mtime_sec);
					m->mtime_nsec = BPF_CORE_READ(f, f_inode, i_mtime_nsec);
					m->ctime_sec = BPF_CORE_READ(f, f_inode, i_ctime_sec);
					m->ctime_nsec = BPF_CORE_READ(f, f_inode, i_ctime_nsec) & 0x7fffffff;
					m->flags = PROFD_PEV_MAP_STAT;
				} else if (bpf_core_field_exists(struct inode___ts, __i_mtime) &&
					   bpf_core_field_exists(struct inode___ts, __i_ctime)) {
					struct inode___ts *in = (void *)BPF_CORE_READ(f, f_inode);

					m->mtime_sec = BPF_CORE_READ(in, __i_mtime.tv_sec);
					m->mtime_nsec = (__u32)BPF_CORE_READ(in, __i_mtime.tv_nsec);
					m->ctime_sec = BPF_CORE_READ(in, __i_ctime.tv_sec);
					m->ctime_nsec = (__u32)BPF_CORE_READ(in, __i_ctime.tv_nsec);
					m->flags = PROFD_PEV_MAP_STAT;
				}
				/* Known by another file of the inode number: its path is not this one's. */
				id = bpf_map_lookup_elem(&known_files, &(struct profd_pev_file){
								.ino = m->ino, .dev = m->dev });
				if (!id || !(m->flags & PROFD_PEV_MAP_STAT) || id->size != m->size ||
				    id->mtime_sec != m->mtime_sec || id->mtime_nsec != m->mtime_nsec ||
				    id->ctime_sec != m->ctime_sec || id->ctime_nsec != m->ctime_nsec)
					x->maps_flags |= PROFD_PEV_MAPS_NEW;
			} else {
				m->flags = vma->vm_start == vdso ? PROFD_PEV_MAP_VDSO : PROFD_PEV_MAP_ANON;
			}
			x->nmaps = n + 1;
		}
	}
	bpf_iter_task_vma_destroy(&it);
	if (!(x->maps_flags & PROFD_PEV_MAPS_OK))
		return false;
	if (BPF_CORE_READ(t, mm) != mm) {
		x->maps_flags = 0;
		return false;
	}
	/* start_code is in the binary's code: a list without it names none of the binary's frames. */
	for (__u32 i = 0; i < PROFD_PEV_MAX_MAPS; i++) {
		if (i >= x->nmaps)
			break;
		if (x->maps[i].start <= x->ev.start_code && x->ev.start_code < x->maps[i].end) {
			bin = true;
			break;
		}
	}
	if (!bin || mm_writes(mm) != writes) {
		x->maps_flags = 0;
		return true;
	}
	return false;
}

/* The first listed mapping of an interpreter file probed before, made the process's CPython. */
static __always_inline void py_adopt_listed(const struct profd_pev_exec *x)
{
	const struct profd_pev_map *m;
	const struct profd_pyfile *pf;
	struct profd_pyfile_key k;
	struct profd_pyproc *pp;
	__u32 zero = 0;

	for (__u32 i = 0; i < PROFD_PEV_MAX_MAPS; i++) {
		if (i >= x->nmaps)
			return;
		m = &x->maps[i];
		if (!m->ino)
			continue;
		k.dev = m->dev;
		k.ino = m->ino;
		pf = bpf_map_lookup_elem(&py_files, &k);
		if (!pf)
			continue;
		pp = bpf_map_lookup_elem(&py_new, &zero);
		if (pp && !py_from_file(pf, m->start, m->offset >> 12, x->ev.pid, x->ev.start_code,
					pp))
			py_insert(x->ev.pid, pp);
		return;
	}
}

/*
 * The process's umaps entry, from its listed mappings, when every file in
 * them has rows (or none to have) in ufiles: what user space's table load
 * would write (daemon/tables.c, pid_write), without a wake-up or a system
 * call. False: user space loads the tables as for any new program.
 */
static __always_inline bool umaps_write(const struct profd_pev_exec *x)
{
	const struct profd_pev_map *m;
	const struct profd_ufile *uf;
	struct profd_pev_file k;
	struct profd_umaps *um;
	struct profd_umap *u;
	__u64 seq, off, va;
	__u32 zero = 0, pid = x->ev.pid;
	bool vdso, found;

	if (!umaps_on || x->nmaps == 0 || x->nmaps > PROFD_PEV_MAX_MAPS)
		return false;
	seq = __sync_fetch_and_add(&ufiles_seq, 0);
	um = bpf_map_lookup_elem(&umaps_new, &zero);
	if ((seq & 1) || !um)
		return false;
	um->n = x->nmaps;
	um->refresh = 0;
	um->start_code = x->ev.start_code;
	for (__u32 i = 0; i < PROFD_PEV_MAX_MAPS; i++) {
		if (i >= x->nmaps)
			break;
		m = &x->maps[i];
		u = &um->m[i];
		u->start = m->start;
		u->end = m->end;
		u->bias = 0;
		u->first = 0;
		u->count = 0;
		if (m->flags & PROFD_PEV_MAP_ANON)
			continue;
		vdso = m->flags & PROFD_PEV_MAP_VDSO;
		k.ino = vdso ? 0 : m->ino;
		k.dev = vdso ? 0 : m->dev;
		k.pad = 0;
		uf = bpf_map_lookup_elem(&ufiles, &k);
		if (!uf)
			return false;
		if (!vdso && (!(m->flags & PROFD_PEV_MAP_STAT) || uf->size != m->size ||
			      uf->mtime_sec != m->mtime_sec || uf->mtime_nsec != m->mtime_nsec))
			return false;
		if (!uf->count)
			continue;
		off = vdso ? 0 : m->offset;
		found = false;
		va = 0;
		for (__u32 j = 0; j < PROFD_UFILE_SEGS; j++) {
			if (j >= uf->nsegs)
				break;
			/* Mappings start page-aligned, at or below the segment's own offset. */
			if (off >= (uf->segs[j].offset & ~0xfffULL) &&
			    off < uf->segs[j].offset + uf->segs[j].filesz) {
				va = off - uf->segs[j].offset + uf->segs[j].vaddr;
				found = true;
				break;
			}
		}
		if (!found)
			continue;
		u->bias = m->start - va;
		u->first = uf->first;
		u->count = uf->count;
	}
	if (bpf_map_update_elem(&umaps, &pid, um, BPF_ANY))
		return false;
	__sync_fetch_and_add(&counters[PROFD_PEV_CNT_UMAPS], 1);
	if (__sync_fetch_and_add(&ufiles_seq, 0) != seq) {
		bpf_map_delete_elem(&umaps, &pid);
		__sync_fetch_and_add(&counters[PROFD_PEV_CNT_UMAPS_UNDONE], 1);
		return false;
	}
	return true;
}

/*
 * The exec event ev with t's executable mappings listed; flags join the
 * list's own. wake 0: at once, unless the list is complete and names only
 * files user space knows (then a shared wake-up, wake_soon). slot: the
 * caller's in pev_new. True, nothing sent: the list was not complete
 * for a writer of the mappings and the caller will look again (retry).
 */
static __always_inline bool send_listed(struct task_struct *t, const struct profd_pev *ev, __u32 flags,
				       __u64 wake, __u32 slot, bool retry)
{
	struct profd_pev_exec *x = bpf_map_lookup_elem(&pev_new, &slot);
	bool later, written;

	if (!x)
		return false;
	x->ev = *ev;
	if (list_maps(t, x)) {
		if (retry)
			return true;
		__sync_fetch_and_add(&counters[PROFD_PEV_CNT_MAPS_UNSETTLED], 1);
	}
	x->maps_flags |= flags;
	if (!(flags & PROFD_PEV_MAPS_EXITED))
		py_adopt_listed(x);
	later = !wake && wake_gap_ns &&
		(x->maps_flags & (PROFD_PEV_MAPS_OK | PROFD_PEV_MAPS_NEW)) == PROFD_PEV_MAPS_OK;
	if (later && umaps_write(x))
		x->maps_flags |= PROFD_PEV_MAPS_UMAPS;
	/*
	 * With its entry written, the walker needs nothing more of user space,
	 * whose capture (names for the samples) waits for its next wake-up or
	 * drain, as exits do; so does the event while the ring is a quarter
	 * full at most (a loaded host wakes user space late: no event lost).
	 */
	written = x->maps_flags & PROFD_PEV_MAPS_UMAPS;
	if (bpf_ringbuf_output(&pevents, x, sizeof(*x),
			       later ? BPF_RB_NO_WAKEUP : wake ? wake : BPF_RB_FORCE_WAKEUP)) {
		__sync_fetch_and_add(&counters[PROFD_PEV_CNT_LOST], 1);
		return false;
	}
	if (written && bpf_ringbuf_query(&pevents, BPF_RB_AVAIL_DATA) <=
			       bpf_ringbuf_query(&pevents, BPF_RB_RING_SIZE) / 4)
		return false;
	if (later)
		wake_soon();
	return false;
}

static int exec_due(void *map, __u32 *key, struct delayed *d)
{
	struct task_struct *t = bpf_task_from_pid(*key);

	if (!t) {
		bpf_map_delete_elem(map, key);
		return 0;
	}
	if (t->thread.fsbase == d->fsbase &&
	    t->se.sum_exec_runtime - d->cpu_ns < exec_poll_ns * PROFD_PEV_EXEC_POLLS &&
	    ++d->polls < PROFD_PEV_EXEC_POLLS_MAX && !bpf_timer_start(&d->timer, exec_poll_ns, 0)) {
		bpf_task_release(t);
		return 0;
	}
	/*
	 * A writer of the mappings (the image forking, ld.so's mprotect) may
	 * hide some from the walk: the timer looks again a poll later, within
	 * the polls' bound (what user space waits for an event).
	 */
	if (send_listed(t, &d->ev, 0, 0, 0, ++d->polls < PROFD_PEV_EXEC_POLLS_MAX)) {
		__sync_fetch_and_add(&counters[PROFD_PEV_CNT_MAPS_PUT_OFF], 1);
		if (!bpf_timer_start(&d->timer, exec_poll_ns, 0)) {
			bpf_task_release(t);
			return 0;
		}
		/* Started before: failing now, the entry is being freed (profd stops). */
		__sync_fetch_and_add(&counters[PROFD_PEV_CNT_LOST], 1);
	}
	bpf_task_release(t);
	bpf_map_delete_elem(map, key);
	return 0;
}

/*
 * Who p is, as /proc would say: its start time, its real uid, its pid in its
 * innermost namespace (NSpid's last field: perf maps are named by it) and
 * its root directory as statx keys it.
 */
static __always_inline void fill_ids(struct task_struct *p, struct profd_pev *ev)
{
	struct pid *tp = BPF_CORE_READ(p, thread_pid);
	unsigned int level = BPF_CORE_READ(tp, level);
	struct upid up = {};
	struct mount *m;
	struct path root;

	bpf_probe_read_kernel(&up, sizeof(up), &tp->numbers[level & 31]);
	ev->time_ns = bpf_ktime_get_ns();
	ev->start_boottime_ns = BPF_CORE_READ(p, start_boottime);
	ev->start_code = BPF_CORE_READ(p, mm, start_code);
	ev->uid = BPF_CORE_READ(p, real_cred, uid.val);
	ev->nspid = up.nr;
	root = BPF_CORE_READ(p, fs, root);
	m = (void *)root.mnt - bpf_core_field_offset(struct mount, mnt);
	ev->root_mnt_id = BPF_CORE_READ(m, mnt_id);
	ev->root_dev = BPF_CORE_READ(root.dentry, d_sb, s_dev);
	ev->root_ino = BPF_CORE_READ(root.dentry, d_inode, i_ino);
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
	struct profd_pev ev = {};
	struct delayed *d;
	__u32 pid = bpf_get_current_pid_tgid() >> 32, g;

	__sync_fetch_and_add(&counters[PROFD_PEV_CNT_EXEC], 1);
	ev.type = PROFD_PEV_EXEC;
	ev.pid = pid;
	fill_ids(p, &ev);
	/* Before the delete: an insert after it moves the counter past this. */
	g = *(volatile __u32 *)&py_gen[pid & (PROFD_PY_GEN_SLOTS - 1)];
	/* After the event's time: user space deletes what it wrote later than that (pyprocs.c). */
	bpf_map_delete_elem(&py_procs, &pid);
	/*
	 * Until an insert for it (this hook's timer, for an interpreter file
	 * probed before, or user space), the new image has no entry: its
	 * samples skip the lookup from the first on every CPU.
	 */
	if (py_notes)
		py_none_everywhere(pid, g);
	if (exec_poll_ns) {
		/* An exec before the last one's event was due replaces it: that image is gone. */
		if (bpf_map_update_elem(&delayed, &pid, &(struct delayed){}, BPF_ANY) == 0 &&
		    (d = bpf_map_lookup_elem(&delayed, &pid))) {
			d->ev = ev;
			d->fsbase = BPF_CORE_READ(p, thread.fsbase);
			d->cpu_ns = BPF_CORE_READ(p, se.sum_exec_runtime);
			if (bpf_timer_init(&d->timer, &delayed, 1 /* CLOCK_MONOTONIC */) == 0 &&
			    bpf_timer_set_callback(&d->timer, exec_due) == 0 &&
			    bpf_timer_start(&d->timer, exec_poll_ns, 0) == 0)
				return 0;
			bpf_map_delete_elem(&delayed, &pid);
		}
	}
	/* No room or no timer: at once, and user space reads the mappings again once ld.so is done. */
	send(&ev, BPF_RB_FORCE_WAKEUP);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	struct profd_pev ev = {};
	struct delayed *d;
	__u32 pid;

	/*
	 * Fires for every thread; signal->live drops to 0 (before this
	 * tracepoint, on every kernel) only when the last one goes. Read
	 * rather than the group_dead argument, which older kernels lack.
	 */
	if (BPF_CORE_READ(p, signal, live.counter) != 0 || (p->flags & 0x00200000 /* PF_KTHREAD */))
		return 0;
	pid = BPF_CORE_READ(p, tgid);
	__sync_fetch_and_add(&counters[PROFD_PEV_CNT_EXIT], 1);
	ev.time_ns = bpf_ktime_get_ns();
	bpf_map_delete_elem(&py_procs, &pid);
	/*
	 * Gone before its exec event was due (a process of a millisecond or
	 * two): the event goes now, for its samples, with the mappings it
	 * still has here (6.18 drops the mm after this tracepoint; where it
	 * is gone the list is incomplete and ignored). Nobody is woken.
	 */
	d = exec_poll_ns ? bpf_map_lookup_elem(&delayed, &pid) : NULL; /* without the wait: no kfuncs here */
	if (d) {
		send_listed(p, &d->ev, PROFD_PEV_MAPS_EXITED, BPF_RB_NO_WAKEUP, 1, false);
		bpf_map_delete_elem(&delayed, &pid);
	}
	ev.type = PROFD_PEV_EXIT;
	ev.pid = pid;
	send(&ev, BPF_RB_NO_WAKEUP);
	return 0;
}

/*
 * A child forked without CLONE_VM has its parent's image until it execs:
 * user space names its samples from the parent's mappings, which a 40 ms
 * child never gives /proc the time to show. Threads share the process's
 * mappings already; a vfork child (same mm) execs or exits at once. Nobody
 * is woken: the event waits for the next drain, like exits.
 */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	struct profd_pev ev = {};
	struct mm_struct *mm = BPF_CORE_READ(child, mm);
	const struct profd_pyproc *pp;
	struct profd_pyproc *np;
	struct delayed *d;
	__u32 zero = 0, g;

	if (BPF_CORE_READ(child, tgid) == BPF_CORE_READ(parent, tgid) || !mm ||
	    mm == BPF_CORE_READ(parent, mm) ||
	    (BPF_CORE_READ(child, flags) & 0x00200000 /* PF_KTHREAD */))
		return 0;
	__sync_fetch_and_add(&counters[PROFD_PEV_CNT_FORK], 1);
	ev.type = PROFD_PEV_FORK;
	ev.pid = BPF_CORE_READ(child, tgid);
	ev.ppid = BPF_CORE_READ(parent, tgid);
	/*
	 * A parent whose exec event still waits (a script forks a command
	 * substitution a millisecond into its image): the event goes first,
	 * with the mappings the child copied, or the child would be named
	 * from the parent's image before that exec.
	 */
	d = exec_poll_ns ? bpf_map_lookup_elem(&delayed, &ev.ppid) : NULL; /* without the wait: no kfuncs here */
	if (d) {
		send_listed(parent, &d->ev, 0, 0, 2, false);
		bpf_map_delete_elem(&delayed, &ev.ppid);
	}
	fill_ids(child, &ev);
	g = *(volatile __u32 *)&py_gen[ev.pid & (PROFD_PY_GEN_SLOTS - 1)];
	bpf_map_delete_elem(&py_procs, &ev.pid);
	/* The parent's interpreter is the child's, at the same addresses; its code cache is not. */
	pp = bpf_map_lookup_elem(&py_procs, &ev.ppid);
	if (pp && (np = bpf_map_lookup_elem(&py_new, &zero)) && pp->start_code == ev.start_code) {
		__builtin_memcpy(np, pp, sizeof(*np));
		/* The parent's free hook is the parent's pid's link: the child's frees are not counted. */
		np->o.flags &= ~PROFD_PY_F_FREE_HOOK;
		np->epoch = 1ULL << 63 | (__u64)ev.pid << 32 | (__u32)bpf_ktime_get_ns();
		py_insert(ev.pid, np);
	} else if (py_notes && !pp) {
		/* A shell's child runs the shell's code until it execs: no lookup for its samples either. */
		py_none_everywhere(ev.pid, g);
	}
	send(&ev, BPF_RB_NO_WAKEUP);
	return 0;
}
