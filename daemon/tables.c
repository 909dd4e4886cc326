#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "clock.h"
#include "filecache.h"
#include "loadq.h"
#include "log.h"
#include "pevent.h"
#include "procmaps.h"
#include "procreg.h"
#include "rowalloc.h"
#include "safeopen.h"
#include "profd.skel.h"
#include "tablebuild.h"
#include "tables.h"
#include "unwind_table.h"

/*
 * A table nobody maps stays this long (in rows the array holds anyway,
 * given up first when room is needed), so the next run of a program
 * reuses it: a compile loop runs cc1 (479,000 rows, 0.17 s to build) and
 * clang's libLLVM (949,000 rows, 0.35 s) every few seconds, and with a 10 s
 * stay most runs built them again. At most MAX_UNUSED of them.
 */
#define UNUSED_TTL_NS (300 * 1000000000LL)
#define MAX_UNUSED 256
/*
 * Re-reading a process's mappings at most this often (dlopen, JIT). Short:
 * a process read right after exec, before ld.so mapped its libraries, asks
 * again at once, and until then its library frames are walked by frame
 * pointers. The walker asks once per rewrite of the entry, so this only
 * bounds processes that map new code continuously. A read that finds the
 * same mappings doubles the wait, up to REFRESH_MAX_NS: the pc outside was
 * garbage (a frame-pointer walk through code without them), and such a
 * process, walked at every switch, had its maps read ten times a second.
 */
#define REFRESH_MIN_NS (100 * 1000000LL)
#define REFRESH_MAX_NS (10 * 1000000000LL)
/*
 * A process is read at its exec, when it maps only its binary, ld.so and
 * the vdso; ld.so maps the libraries within the next milliseconds. Reading
 * again this much later gives the walker libc before the first sample
 * lands there (99 Hz: one every 10 ms), not one sample after.
 */
#define EXEC_REREAD_NS (5 * 1000000LL)
/*
 * Reading mappings runs in the event loop (the builds do not): at most this
 * much per turn, so a host starting many processes never holds up a drain
 * or a status request for long. The rest waits for the next turn.
 */
#define WORK_BUDGET_NS (20 * 1000000LL)
/*
 * A table's rows go into the kernel's array in steps of at most this many
 * (512 KB), and steps follow one another within a turn for at most
 * ROWS_BUDGET_NS, after the turn's reads of mappings: a clang's libz3,
 * libclang-cpp and libLLVM (0.4-1 M rows each, 8 bytes a row, a page fault
 * per 4 KB) written at once held turns of 1.2-2.1 s at load 12-16, and a
 * new program's table, its read waiting behind them, loaded late. A table
 * being written is pending for the walker (frame pointers) until its last
 * step; the smallest being written goes first.
 */
#define ROWS_STEP 65536
#define ROWS_BUDGET_NS (10 * 1000000LL)
/*
 * Tables up to this many rows (64 KB: a program's own, most libraries) are
 * written as soon as built, in a few page faults: at profd's start a
 * host's hundreds of them, written within the rows budget, took seconds
 * of turns at load 20, and a new program's libc waited among them.
 */
#define ROWS_AT_ONCE 8192
/*
 * The walker's re-read requests ask process events for a capture, in which
 * the symbolizer reads the symbols of every file it has not seen: a
 * clang's libLLVM and libclang-cpp took it 1-3 s at load 15. They wait
 * for the end of the turn, after the new processes' reads and the rows,
 * up to this many (beyond, at once).
 */
#define MAX_REREADS 64
/*
 * The walker asks about a process it has no entry for at its first sample
 * or context switch, most often a child between fork and exec. Its exec
 * event brings the mappings read for the symbolizer: the request waits
 * this long for them before reading /proc itself (a read of the parent's
 * image, replaced at once, was one per exec). When exec events wait for
 * ld.so (tables__exec_delay), only requests marked as having one due wait,
 * as long as that takes.
 */
#define NEW_PID_GRACE_NS (5 * 1000000LL)
/*
 * A first request that loses nothing by waiting lingers: served at a turn
 * the loop takes anyway (process events, a drain), its own wake-up at most
 * this late. Such are a forked child the walker walks by its parent's
 * tables (its parent's image), and a process that exec'd a moment ago,
 * whose exec event either comes with the entry the exec hook wrote or wakes
 * the loop itself. A young forked child without its parent's tables waits
 * only the grace: it may never exec, and walks without tables meanwhile. Under gcc and pyenv's python loops the timer that served
 * them woke the loop 4-7 times a second, most of its wake-ups, and most of
 * those children exec or exit before a turn, calling their loads off.
 */
#define NEW_PID_LINGER_NS (1000 * 1000000LL)
/* Requests not from the walker (exec, re-reads): at most this many, for at most this long. */
#define MAX_COLD 256
#define COLD_MAX_AGE_NS (1000 * 1000000LL)
/* Files waiting for a build hold an open descriptor each: at most this many. */
#define MAX_JOBS 256
/* Reloads of a process whose files could not be opened (it exec'd or exited meanwhile). */
#define MAX_RETRIES 3
/*
 * Builders: two threads, one of which takes only files up to this size, so
 * a small file (a new program, libc) never waits behind libLLVM (100 MB,
 * 0.4 s) or cc1. Both take the smallest file first.
 */
#define SMALL_FILE_BYTES (16ULL << 20)
/*
 * Files up to this size are built in the loop at once (well under a
 * millisecond: a program's own binary, most libraries), saving the round
 * trip through a worker, which on a loaded host costs a few scheduler waits.
 */
#define INLINE_FILE_BYTES (512ULL << 10)
#define NWORKERS 2
/*
 * With exit events, the scan of every known process (a /proc/PID/stat read
 * each: 500 a second on a host with 500 processes) and of the walker's
 * placeholders only catches what a lost event missed: this often.
 */
#define BACKSTOP_NS (10 * 1000000000LL)
/*
 * A table displaced while in use is built again no sooner than this, twice
 * as long for each displacement before, up to RELOAD_WAIT_DOUBLINGS times:
 * libLLVM's rebuild costs a worker 0.35 s.
 */
#define RELOAD_WAIT_NS (5 * 1000000000LL)
#define RELOAD_WAIT_DOUBLINGS 5
/* The registry's looks planned here: process events plan and call off their own. */
#define LOOK PROCREG_LOOK_TABLES

enum tfile_state {
	TF_BUILDING, /* a worker builds the table */
	TF_BUILT,    /* ut describes the table; in the kernel when count > 0 */
	TF_FAILED,   /* the file has no usable unwind info (err) */
};

/*
 * A file's table lives in the kernel's rows array only: ut keeps its size and
 * the segments (file offset to address) once the rows are written, not the
 * rows. A table displaced or built without room is built again from the
 * file when room comes (file_reload). Reading the rows back from the map
 * cannot serve that: a displaced table's rows are overwritten by the one
 * that displaced it, and one without room was never there. And a copy of
 * every table kept in user space costs its size all the time (15-29 MB on a
 * host with 500 processes) to save a rebuild (node 0.17 s, libc 5 ms of a
 * worker) that only a tight --unwind-memory asks for, at most once per
 * displacement.
 */
struct tfile {
	uint64_t dev, ino;       /* as /proc/PID/maps names the file */
	uint64_t st_dev, st_ino; /* fstat of the file built: a rebuild must open the same one, */
	uint64_t st_size;        /* and a file mapped again after nobody did must still be it */
	struct timespec st_mtim;
	bool vdso;
	enum tfile_state state;
	struct unwind_table *ut; /* rows dropped once in the kernel (or found no room) */
	int err;
	uint32_t first, count;   /* rows in the kernel; count 0: none */
	uint32_t reserved;       /* rows kept at first for a rebuild under way (count 0 until written) */
	unsigned users;          /* process mappings that point at this file, whatever its state */
	bool no_room;            /* built, but the rows array had no room for it */
	bool job;                /* a build or rebuild of it is queued or running, or its rows are being written */
	bool writing;            /* built; rows [first, first + written) of reserved are in the kernel */
	uint32_t written;
	bool changed;            /* loaded or unloaded since the processes mapping it were written */
	int64_t unused_since;
	unsigned displaced;      /* times it was displaced while in use */
	int64_t reload_at;       /* displaced: not built again before this time */
};

/* A mapping of a process as last read, so its umaps entry can be rewritten when a file loads. */
struct tmap {
	uint64_t start, end, offset;
	struct tfile *f;         /* NULL: anonymous, or no file (yet) */
};

/* What the tables keep of a process, hanging off its registry record. */
struct tpid {
	uint32_t pid;
	uint64_t start_time;     /* /proc/PID/stat field 22: tells pid reuse apart */
	uint64_t start_code;
	int64_t last_load;
	int64_t due;             /* read again at this time (a registry look); 0: not planned */
	unsigned loads, retries;
	unsigned n;
	int64_t wait;            /* the least time between reads the walker asks for (REFRESH_MIN_NS doubling) */
	struct tmap *m;
};

struct tables {
	struct profd_bpf *skel;
	struct procreg *reg;     /* every process known; ours hang off its records in slot */
	int slot;
	struct filecache *fc;    /* files by (dev, inode): ours hang off its entries in fslot */
	int fslot;
	struct tables_opts o;
	struct ring_buffer *rb;
	int epfd;                /* what tables__fd returns: ring buffer, eventfd, timer */
	int tfd;                 /* timerfd: the next planned re-read */
	int64_t armed;
	bool poked;              /* the loop wrote the eventfd itself */
	bool collected;          /* the last poll collected builds: their eventfd writes may be unread */
	struct tablebuild *b;
	unsigned njobs;          /* builds queued, running or done but not collected */
	unsigned nwriting;       /* files whose rows are being written (writing) */
	struct profd_urow *rows; /* NULL: the rows array is mapped only while rows_write writes */
	size_t rows_len;
	uint32_t rows_cap;
	/*
	 * Rows below this were written once: a cached row of the walker can
	 * only be of those. A write above it needs no new generation.
	 */
	uint32_t rows_used_end;
	struct rowalloc *ra;     /* rows taken; a failed release leaks its rows */
	struct tfile **files;
	size_t nfiles, files_cap;
	bool changed;            /* some file's changed flag is set */
	size_t npids;
	int umaps_fd;
	int proc_fd;             /* /proc, for reading mappings */
	int root_fd;             /* our "/", for file_same_by_path; -1: that check is off */
	uint64_t root_dev;       /* the device of the filesystem mounted at "/" */
	int64_t backstop_at;     /* the last liveness scan (tables__gc) */
	struct profd_umaps *um;  /* scratch for writing one umaps entry */
	struct loadq *queue;     /* pids waiting for pid_load */
	tables_snapshot_fn snap_fn;
	void *snap_arg;
	tables_reread_fn reread_fn;
	void *reread_arg;
	uint32_t rereads[MAX_REREADS]; /* the walker's re-read requests, for the end of the turn */
	unsigned nrereads;
	uint64_t lost_seen;      /* the walker's lost requests as of the last gc */
	bool rescan;             /* some were lost: look for set refresh flags at the next gc */
	int64_t exec_delay_ns;   /* exec events come this late (they wait for ld.so); 0: at once */
	struct bpf_link *exit_link; /* the walker's exit hook: umaps entries go with their process */
	int ufiles_fd;           /* files with rows, for the exec hook's own umaps writes; -1: none */
	uint64_t *ufiles_seq;    /* odd while rows are taken from a file (bpf/events.bpf.c) */
	struct tables_stats st;
};

static uint32_t rows_cap(const struct tables_opts *o)
{
	uint64_t n = o->max_bytes / sizeof(struct profd_urow);

	return n > UINT32_MAX / 2 ? UINT32_MAX / 2 : n ? n : 1;
}

void tables__configure(struct profd_bpf *skel, const struct tables_opts *o)
{
	bpf_program__set_autoload(skel->progs.uw_exit, o && o->enabled);
	if (!o || !o->enabled)
		return;
	skel->rodata->unwind_dwarf = 1;
	skel->rodata->snapshot_tgid = o->snapshot_pid;
	bpf_map__set_max_entries(skel->maps.urows, rows_cap(o));
	bpf_map__set_max_entries(skel->maps.umaps, o->max_pids ? o->max_pids : 1);
	/* Snapshots are 20 KB each: room for a second of them at 99 Hz on a few CPUs. */
	bpf_map__set_max_entries(skel->maps.uevents, o->snapshot_pid ? 16 << 20 : 256 << 10);
}

/* Brings the loop back for more work after whatever else waits. */
static void poke(struct tables *t)
{
	uint64_t one = 1;
	ssize_t r = write(tablebuild__fd(t->b), &one, sizeof(one));

	(void)r; /* fails only when the counter is full: readable anyway */
	t->poked = true;
}

/* --- process entries --- */

static bool same_maps(const struct tmap *a, unsigned na, const struct tmap *b, unsigned nb)
{
	if (na != nb)
		return false;
	for (unsigned i = 0; i < na; i++)
		if (a[i].start != b[i].start || a[i].end != b[i].end || a[i].f != b[i].f)
			return false;
	return true;
}

/* Writes p's umaps entry from its mappings as last read, with every table loaded now. */
static int pid_write(struct tables *t, const struct tpid *p)
{
	struct profd_umaps *um = t->um;

	memset(um, 0, sizeof(*um));
	um->n = p->n;
	um->start_code = p->start_code;
	for (unsigned i = 0; i < p->n; i++) {
		const struct tmap *m = &p->m[i];
		struct profd_umap *u = &um->m[i];
		uint64_t va;

		u->start = m->start;
		u->end = m->end;
		if (m->f && (m->f->state == TF_BUILDING || m->f->writing))
			u->first = PROFD_UMAP_PENDING;
		else if (m->f && m->f->count &&
		    !unwind_table__file_to_vaddr(m->f->ut, m->f->vdso ? 0 : m->offset, &va)) {
			u->bias = m->start - va;
			u->first = m->f->first;
			u->count = m->f->count;
		}
	}
	return bpf_map_update_elem(t->umaps_fd, &p->pid, um, BPF_ANY) ? -errno : 0;
}

static int write_if_changed(uint32_t pid, void *data, void *arg)
{
	struct tpid *p = data;

	for (unsigned k = 0; k < p->n; k++) {
		if (p->m[k].f && p->m[k].f->changed) {
			pid_write(arg, p);
			break;
		}
	}
	return 0;
}

/* Rewrites the entries of the processes that map a file loaded or unloaded since. */
static void write_changed(struct tables *t)
{
	if (!t->changed)
		return;
	t->changed = false;
	procreg__each(t->reg, t->slot, write_if_changed, t);
	for (size_t i = 0; i < t->nfiles; i++)
		t->files[i]->changed = false;
}

/* --- files --- */

static struct tpid *pid_find(const struct tables *t, uint32_t pid);

/* f's key in ufiles; false when the exec hook cannot know the file by it (see file_same_by_inode). */
static bool ufile_key(const struct tfile *f, struct profd_pev_file *k)
{
	*k = (struct profd_pev_file){ 0 };
	if (f->vdso)
		return true;
	if (f->st_dev != f->dev || f->st_ino != f->ino)
		return false;
	k->ino = f->ino;
	k->dev = (uint32_t)(major(f->dev) << 20 | minor(f->dev));
	return true;
}

/*
 * Tells the exec hook of f's rows (or that it has no usable unwind info):
 * the next execs of programs made of such files have their umaps entries
 * written in the kernel, without a table load here.
 */
static void ufile_put(struct tables *t, const struct tfile *f)
{
	struct profd_ufile v = { .size = f->st_size, .mtime_sec = f->st_mtim.tv_sec,
				 .mtime_nsec = (uint32_t)f->st_mtim.tv_nsec };
	struct profd_pev_file k;
	uint64_t o;
	unsigned i;

	if (t->ufiles_fd < 0 || !ufile_key(f, &k) || (f->state == TF_BUILT && !f->count))
		return;
	if (f->count) {
		v.first = f->first;
		v.count = f->count;
		for (i = 0; i < PROFD_UFILE_SEGS; i++) {
			uint64_t off, sz, va;

			if (unwind_table__segment(f->ut, i, &off, &sz, &va))
				break;
			v.segs[i] = (struct profd_ufile_seg){ off, sz, va };
		}
		if (i == PROFD_UFILE_SEGS && !unwind_table__segment(f->ut, i, &o, &o, &o))
			return; /* more segments than the hook searches */
		v.nsegs = i;
	}
	if (!bpf_map_update_elem(t->ufiles_fd, &k, &v, BPF_ANY))
		t->st.ufiles_put++;
}

/*
 * Takes f's rows away from the exec hook before they go to another file:
 * its ufiles entry first, then the umaps entries the hook wrote from it
 * for processes not ours (those are rewritten by write_changed). The
 * sequence number, odd meanwhile, makes the hook take back an entry it
 * wrote across this.
 */
static void ufile_drop(struct tables *t, const struct tfile *f)
{
	struct profd_pev_file k;
	uint32_t key, next, *drop = NULL;
	size_t ndrop = 0, cap = 0, budget;
	bool first = true;

	if (t->ufiles_fd < 0 || !ufile_key(f, &k))
		return;
	__atomic_add_fetch(t->ufiles_seq, 1, __ATOMIC_SEQ_CST);
	bpf_map_delete_elem(t->ufiles_fd, &k);
	/* Every entry is read (umaps holds at most max_pids): deletes wait, a hash walk restarts after one. */
	for (budget = (size_t)t->o.max_pids + 1024; f->count && budget--; first = false) {
		const struct tpid *p;

		if (bpf_map_get_next_key(t->umaps_fd, first ? NULL : &key, &next))
			break;
		key = next;
		if (bpf_map_lookup_elem(t->umaps_fd, &key, t->um))
			continue;
		p = pid_find(t, key);
		if (p && p->start_code == t->um->start_code)
			continue;
		for (uint32_t i = 0; i < t->um->n && i < PROFD_MAX_UMAPS; i++) {
			if (t->um->m[i].count && t->um->m[i].first == f->first) {
				if (ndrop == cap) {
					uint32_t *v = realloc(drop, (cap = cap ? cap * 2 : 16) * sizeof(*v));

					if (!v)
						break;
					drop = v;
				}
				drop[ndrop++] = key;
				break;
			}
		}
	}
	for (size_t i = 0; i < ndrop; i++)
		bpf_map_delete_elem(t->umaps_fd, &drop[i]);
	t->st.ufiles_entries_dropped += ndrop;
	free(drop);
	__atomic_add_fetch(t->ufiles_seq, 1, __ATOMIC_SEQ_CST);
}

static void file_unload(struct tables *t, struct tfile *f)
{
	if (f->count) {
		ufile_drop(t, f);
		rowalloc__release(t->ra, f->first, f->count);
		f->count = 0;
		f->changed = true;
		t->changed = true;
		t->st.files--;
	}
}

/* Only for a file no process maps (users 0) and no build or rebuild holds (job). */
static void file_free(struct tables *t, size_t i)
{
	struct tfile *f = t->files[i];

	file_unload(t, f);
	if (f->state == TF_FAILED)
		ufile_drop(t, f);
	if (!f->vdso)
		filecache__set(t->fc, f->dev, f->ino, t->fslot, NULL);
	if (f->state == TF_FAILED)
		t->st.files_failed--;
	unwind_table__free(f->ut);
	free(f);
	t->files[i] = t->files[--t->nfiles];
}

static int by_lru(const void *a, const void *b)
{
	const struct tfile *x = *(struct tfile *const *)a, *y = *(struct tfile *const *)b;

	return (x->unused_since > y->unused_since) - (x->unused_since < y->unused_since);
}

static int by_size_desc(const void *a, const void *b)
{
	const struct tfile *x = *(struct tfile *const *)a, *y = *(struct tfile *const *)b;

	return (x->count < y->count) - (x->count > y->count);
}

/*
 * The tables to give up so that n rows fit, in the order they go, into
 * v (room for nfiles): first tables no process maps, least recently used
 * first; then tables in use that are larger than n rows, largest first.
 * Tried on a copy of the allocator, so nothing goes unless it makes room:
 * a table that cannot fit even so (libclang-cpp's million rows beside
 * libLLVM in use) emptied the cache of every unused table at each try, and
 * the next runs of those programs built them all again. The number of
 * victims, or -ENOSPC when n cannot fit (-ENOMEM).
 */
static int plan_room(struct tables *t, uint32_t n, struct tfile **v)
{
	struct rowalloc *sim;
	size_t nu = 0, nd = 0;
	uint32_t first;
	int err = -ENOSPC;

	for (size_t i = 0; i < t->nfiles; i++)
		if (!t->files[i]->users && !t->files[i]->job && t->files[i]->count)
			v[nu++] = t->files[i];
	qsort(v, nu, sizeof(*v), by_lru);
	for (size_t i = 0; i < t->nfiles; i++)
		if (t->files[i]->users && t->files[i]->count > n)
			v[nu + nd++] = t->files[i];
	qsort(v + nu, nd, sizeof(*v), by_size_desc);
	if (rowalloc__copy(t->ra, &sim))
		return -ENOMEM;
	for (size_t k = 0; k < nu + nd; k++) {
		if (rowalloc__release(sim, v[k]->first, v[k]->count))
			break;
		if (!rowalloc__alloc(sim, n, &first)) {
			err = (int)(k + 1);
			break;
		}
	}
	rowalloc__free(sim);
	return err;
}

/*
 * Frees rows until n fit (plan_room's order). Under a tight budget the
 * many small tables of a host (each program, libc) win over a few huge
 * ones (libLLVM, cc1, node): their processes fall back to frame pointers
 * in those files only. A table only ever displaces larger ones, so two
 * tables never push each other out in turn; a displaced table waits
 * longer for each displacement before it is built again (reload_at), so
 * small new programs that keep displacing a huge one do not have it built
 * again every second.
 */
static void make_room(struct tables *t, uint32_t n)
{
	struct tfile **v = malloc((t->nfiles ? t->nfiles : 1) * sizeof(*v));
	int64_t now = clock__mono_ns();
	int nv = v ? plan_room(t, n, v) : -ENOMEM;

	for (int k = 0; k < nv; k++) {
		struct tfile *f = v[k];

		if (!f->users) {
			for (size_t i = 0; i < t->nfiles; i++) {
				if (t->files[i] == f) {
					file_free(t, i);
					t->st.evictions++;
					break;
				}
			}
			continue;
		}
		file_unload(t, f);
		f->no_room = true;
		f->reload_at = now + (RELOAD_WAIT_NS << (f->displaced < RELOAD_WAIT_DOUBLINGS ?
							   f->displaced : RELOAD_WAIT_DOUBLINGS));
		f->displaced++;
		t->st.displaced++;
	}
	free(v);
	/* The walker must stop using displaced rows before they are overwritten. */
	write_changed(t);
}

/* Whether n rows can be had, making room as make_room would, without giving anything up. */
static bool room_possible(struct tables *t, uint32_t n)
{
	struct tfile **v;
	uint32_t first;
	bool ok;

	if (!rowalloc__alloc(t->ra, n, &first)) {
		rowalloc__release(t->ra, first, n);
		return true;
	}
	v = malloc((t->nfiles ? t->nfiles : 1) * sizeof(*v));
	ok = v && plan_room(t, n, v) > 0;
	free(v);
	return ok;
}

/*
 * Writes rows [first, first + n) of the kernel's array through a mapping of
 * just those pages. A mapping of the whole array is resident from mmap on
 * (the kernel maps every page at once) and counts in profd's RSS: 16 MB by
 * default, for memory the map holds anyway.
 */
static int rows_write(struct tables *t, uint32_t first, const struct profd_urow *src, size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), off = (size_t)first * sizeof(*src);
	size_t start = off / page * page, len = off + n * sizeof(*src) - start;
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(t->skel->maps.urows), (off_t)start);

	if (m == MAP_FAILED)
		return -errno;
	/*
	 * Before rows another block had change: the walker's cached rows of
	 * the old generation go unused. Rows never written before were in no
	 * block the walker saw: its row cache keeps what it has (a new
	 * generation on each load emptied it on a host that execs new
	 * programs often).
	 */
	if (first < t->rows_used_end)
		__atomic_add_fetch(&t->skel->bss->urows_gen, 1, __ATOMIC_SEQ_CST);
	if (first + n > t->rows_used_end)
		t->rows_used_end = first + (uint32_t)n;
	memcpy(m + (off - start), src, n * sizeof(*src));
	munmap(m, len);
	return 0;
}

/* Room for n rows at *first: free space, else what make_room frees. */
static int rows_reserve(struct tables *t, uint32_t n, uint32_t *first)
{
	if (n > t->rows_cap)
		return -E2BIG;
	if (!rowalloc__alloc(t->ra, n, first))
		return 0;
	make_room(t, n);
	return rowalloc__alloc(t->ra, n, first);
}

/*
 * Puts a table just built into the kernel, into the rows reserved for it
 * (a rebuild) or into room made now, at most *budget rows of it (taken
 * from *budget). False while rows remain to be written (f->writing), or
 * when it does not fit. Once done, either way, the rows leave user space.
 */
static bool file_upload(struct tables *t, struct tfile *f, size_t *budget)
{
	size_t n = unwind_table__nrows(f->ut), k;
	uint32_t first;

	if (f->reserved && f->reserved != n) {
		rowalloc__release(t->ra, f->first, f->reserved); /* the file changed: sized anew */
		f->reserved = 0;
		f->written = 0;
	}
	if (f->count || !n)
		goto out;
	if (!f->reserved) {
		if (rows_reserve(t, n, &first))
			goto over;
		f->first = first;
		f->reserved = n;
		f->written = 0;
	}
	k = n - f->written < *budget ? n - f->written : *budget;
	/* Written through a shared mapping: the rows are visible to the walker before umaps points at them. */
	if (rows_write(t, f->first + f->written, unwind_table__rows(f->ut) + f->written, k)) {
		rowalloc__release(t->ra, f->first, f->reserved);
		f->reserved = 0;
		f->written = 0;
		goto over;
	}
	*budget -= k;
	f->written += k;
	if (f->written < n) {
		f->writing = true;
		return false;
	}
	f->reserved = 0;
	f->written = 0;
	f->count = n;
	f->no_room = false;
	f->changed = true;
	t->changed = true;
	t->st.files++;
	ufile_put(t, f);
	goto out;
over:
	if (!f->no_room)
		t->st.over_budget++;
	f->no_room = true;
out:
	f->writing = false;
	unwind_table__drop_rows(f->ut);
	return f->count;
}

static struct tfile *file_new(struct tables *t, uint64_t dev, uint64_t ino, bool vdso)
{
	struct tfile *f;

	if (t->nfiles == t->files_cap) {
		size_t cap = t->files_cap ? t->files_cap * 2 : 64;
		struct tfile **v = realloc(t->files, cap * sizeof(*v));

		if (!v)
			return NULL;
		t->files = v;
		t->files_cap = cap;
	}
	f = calloc(1, sizeof(*f));
	if (!f || (!vdso && filecache__set(t->fc, dev, ino, t->fslot, f))) {
		free(f);
		return NULL;
	}
	*f = (struct tfile){ .dev = dev, .ino = ino, .vdso = vdso,
			     .unused_since = clock__mono_ns() };
	t->files[t->nfiles++] = f;
	return f;
}

/*
 * A build or rebuild is done: the table (ut, err) replaces what f had. Its
 * rows go into the kernel now when few (ROWS_AT_ONCE), else later in the
 * turn (rows_steps, smallest table first, after the turn's reads of
 * mappings): f stays pending meanwhile, held like a file in a build.
 */
static void file_built(struct tables *t, struct tfile *f, struct unwind_table *ut, int err)
{
	size_t budget = ROWS_STEP;

	if (err && f->reserved) {
		rowalloc__release(t->ra, f->first, f->reserved);
		f->reserved = 0;
	}
	if (f->state == TF_FAILED)
		t->st.files_failed--;
	unwind_table__free(f->ut);
	f->ut = ut;
	f->err = err;
	f->state = err ? TF_FAILED : TF_BUILT;
	if (err) {
		t->st.files_failed++;
		ufile_put(t, f);
	} else if (unwind_table__nrows(ut) > ROWS_AT_ONCE && !f->count) {
		f->writing = true;
		f->job = true;
		t->nwriting++;
	} else {
		file_upload(t, f, &budget);
	}
}

/*
 * Rows of the tables being written, smallest first, a step at a time, until
 * ROWS_BUDGET_NS after t0 (at least one step a turn). Whether some remain.
 */
static bool rows_steps(struct tables *t, int64_t t0)
{
	while (t->nwriting) {
		struct tfile *f = NULL;
		size_t budget = ROWS_STEP;

		for (size_t i = 0; i < t->nfiles; i++)
			if (t->files[i]->writing &&
			    (!f || unwind_table__nrows(t->files[i]->ut) < unwind_table__nrows(f->ut)))
				f = t->files[i];
		if (!f) {
			t->nwriting = 0;
			break;
		}
		t->st.rows_steps++;
		if (file_upload(t, f, &budget) || !f->writing) {
			f->job = false;
			t->nwriting--;
		}
		if (clock__mono_ns() - t0 >= ROWS_BUDGET_NS)
			break;
	}
	return t->nwriting;
}

/* Our own [vdso] image: the same kernel maps the same one into every process. Tiny: built here. */
static int vdso_build(struct unwind_table **ut)
{
	uint64_t base = getauxval(AT_SYSINFO_EHDR);
	struct procmaps *pm = NULL;
	const struct procmap *m;
	int err = -ENOENT;

	if (base && !procmaps__read("/proc", getpid(), &pm) && (m = procmaps__find(pm, base)) &&
	    (m->flags & PROCMAP_VDSO))
		err = unwind_table__open_mem((const void *)base, m->end - m->start, ut);
	procmaps__free(pm);
	return err;
}

static struct tfile *vdso_file(struct tables *t)
{
	struct unwind_table *ut = NULL;
	struct tfile *f;
	int64_t t0 = clock__mono_ns();
	int err;

	for (size_t i = 0; i < t->nfiles; i++)
		if (t->files[i]->vdso)
			return t->files[i];
	f = file_new(t, 0, 0, true);
	if (!f)
		return NULL;
	err = vdso_build(&ut);
	t->st.build_us_total += (clock__mono_ns() - t0) / 1000;
	file_built(t, f, ut, err);
	return f;
}

static void job_finish(struct tables *t, const struct tablebuild_done *j)
{
	struct tfile *f = j->arg;

	t->st.build_us_total += j->ns / 1000;
	if (j->err)
		log_debug("no unwind table for %s: %s", j->path ? j->path : "?", strerror(-j->err));
	f->job = false;
	file_built(t, f, j->ut, j->err);
	if (!j->err)
		log_debug("unwind table of %s: %zu rows, %s", j->path ? j->path : "?",
			  unwind_table__nrows(f->ut),
			  f->count ? "loaded" : f->writing ? "built, rows to write" : "no room");
}

/* Finished builds: their tables go into the kernel, then the processes mapping them are rewritten. */
static void collect(struct tables *t)
{
	struct tablebuild_done j;

	t->collected = false;
	while (tablebuild__take(t->b, &j)) {
		t->collected = true;
		t->njobs--;
		job_finish(t, &j);
	}
}

/*
 * Builds f's table from fd (taken): at once when the file is small, else on
 * a worker. path is for the log only.
 */
static int job_submit(struct tables *t, struct tfile *f, int fd, const char *path)
{
	struct tablebuild_done j = { .arg = f, .path = path };
	uint64_t size = 0;
	struct stat sb;
	int err;

	if (!fstat(fd, &sb)) {
		size = (uint64_t)sb.st_size;
		f->st_dev = sb.st_dev;
		f->st_ino = sb.st_ino;
		f->st_size = (uint64_t)sb.st_size;
		f->st_mtim = sb.st_mtim;
	}
	if (size && size <= INLINE_FILE_BYTES) {
		int64_t t0 = clock__mono_ns();

		j.err = unwind_table__open_fd(fd, &j.ut);
		j.ns = clock__mono_ns() - t0;
		close(fd);
		job_finish(t, &j);
		return 0;
	}
	err = tablebuild__submit(t->b, fd, size, path, f);
	if (err)
		return err;
	f->job = true;
	t->njobs++;
	return 0;
}

/*
 * map_files reaches the mapped file itself: deleted, replaced or in another
 * mount namespace. Only a regular file is opened for reading, and only the
 * inode mapped (ino: 0 when the caller does not know it) is kept.
 */
static int open_mapped(uint32_t pid, uint64_t start, uint64_t end, uint64_t ino, char *path, size_t len)
{
	struct stat st;
	int fd;

	snprintf(path, len, "/proc/%u/map_files/%" PRIx64 "-%" PRIx64, pid, start, end);
	/* Not FUSE: a small file is built in the loop, and its server could stall the read. */
	fd = safeopen__regular(AT_FDCWD, path, SAFEOPEN_NO_FUSE, &st);
	if (fd >= 0 && ino && (uint64_t)st.st_ino != ino) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/*
 * Opening map_files takes CAP_CHECKPOINT_RESTORE (or CAP_SYS_ADMIN) in the
 * initial user namespace, whoever the target is; without it no table is
 * ever built and code without frame pointers loses its callers. Said once
 * in the log and counted, never silently.
 */
static void denied(struct tables *t, const char *path, int err)
{
	if (!t->st.files_denied++ && !t->st.map_files_denied)
		log_warn("DWARF unwinding is off: opening %s was refused (%s); it needs CAP_CHECKPOINT_RESTORE "
			 "(add it to the unit's CapabilityBoundingSet=)", path, strerror(-err));
}

/* At start: profd's own map_files tells whether any can be opened. */
static int map_files_probe(int proc_fd)
{
	struct dirent *e;
	int fd, dfd, err = -ENOENT;
	DIR *d;

	dfd = openat(proc_fd, "self/map_files", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -ENOMEM;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		fd = openat(dfd, e->d_name, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		err = fd < 0 ? -errno : 0;
		if (fd >= 0)
			close(fd);
		break;
	}
	closedir(d);
	return err;
}

/*
 * Whether mapping m of pid is still the file f was built from. Nobody maps
 * f: its inode may have been freed and given to another file since (a
 * rebuilt binary often gets the number back). Unknown (the process is
 * gone) counts as the same: the next one to map it asks again.
 */
/* sb is the very file f was built from: inode, size and modification time. */
static bool stat_is(const struct tfile *f, const struct stat *sb)
{
	return S_ISREG(sb->st_mode) && sb->st_dev == f->st_dev && sb->st_ino == f->st_ino &&
	       (uint64_t)sb->st_size == f->st_size && sb->st_mtim.tv_sec == f->st_mtim.tv_sec &&
	       sb->st_mtim.tv_nsec == f->st_mtim.tv_nsec;
}

static bool file_same(struct tfile *f, uint32_t pid, const struct procmap *m)
{
	char path[64];
	struct stat sb;

	/*
	 * A stat through the link, not an open: one system call instead of
	 * seven, at every start of a program whose table nobody else uses (cc1,
	 * as). The file is on the filesystem of the one built, which was no
	 * FUSE mount, so the stat cannot wait on a server.
	 */
	snprintf(path, sizeof(path), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64, pid, m->start,
		 m->end);
	return stat(path, &sb) || stat_is(f, &sb);
}

/*
 * The cheap form of file_same, which only ever says "the same": the path
 * the mapping had, looked up in our root, is still the inode f was built
 * from, with its size and time. A live inode keeps its number, so the
 * mapping's (device, inode) is that file. The walk stays on the root's
 * mount, the filesystem of the file built (no FUSE server can stall it:
 * such a file is never built), and follows no link. Only for a file whose
 * device stat and the mappings agree on (a btrfs subvolume's do not: its
 * inode numbers are per subvolume). A stat of /proc/PID/map_files costs
 * three lookups that are never cached (the pid is new at each exec); this
 * is a walk of cached names.
 */
static bool file_same_by_path(const struct tables *t, const struct tfile *f,
			      const struct procmap *m)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC,
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS |
					   RESOLVE_NO_MAGICLINKS };
	struct stat sb;
	bool same;
	int fd;

	if (t->root_fd < 0 || !m->path || m->path[0] != '/' || !m->path[1] ||
	    f->st_dev != t->root_dev || f->st_dev != f->dev || f->st_ino != f->ino)
		return false;
	fd = (int)syscall(SYS_openat2, t->root_fd, m->path + 1, &how, sizeof(how));
	if (fd < 0)
		return false;
	same = !fstat(fd, &sb) && stat_is(f, &sb);
	close(fd);
	return same;
}

/*
 * The cheapest form of file_same, which only ever says "the same": the
 * exec event read the mapped inode's size and modification time in the
 * kernel, and they are those of the file f was built from. No system
 * call: at every start of a program whose table nobody else uses (cc1,
 * as, ld) the path check cost three. The same conditions as that check
 * (device and inode as stat says them).
 */
static bool file_same_by_inode(const struct tfile *f, const struct procmap *m)
{
	return (m->flags & PROCMAP_STAT) && f->st_dev == f->dev && f->st_ino == f->ino &&
	       m->size == f->st_size &&
	       m->mtime_ns == f->st_mtim.tv_sec * 1000000000LL + f->st_mtim.tv_nsec;
}

/*
 * The file of mapping m of pid: known already, or a new one handed to a
 * worker. NULL with *retry set when it cannot be opened now: the process
 * exited or exec'd since its mappings were read, which says nothing about
 * the file, so nothing is remembered about it.
 */
static struct tfile *file_get(struct tables *t, uint32_t pid, const struct procmap *m, bool *retry)
{
	char path[64];
	struct tfile *f;
	int fd;

	f = filecache__get(t->fc, m->dev, m->inode, t->fslot);
	if (f) {
		if (f->users || f->job)
			return f;
		t->st.file_checks++;
		if (file_same_by_inode(f, m)) {
			t->st.file_checks_by_inode++;
			return f;
		}
		if (file_same_by_path(t, f, m)) {
			t->st.file_checks_by_path++;
			return f;
		}
		if (file_same(f, pid, m))
			return f;
		for (size_t i = 0; i < t->nfiles; i++) {
			if (t->files[i] == f) {
				file_free(t, i);
				t->st.evictions++;
				break;
			}
		}
	}
	if (t->njobs >= MAX_JOBS) {
		*retry = true;
		return NULL;
	}
	fd = open_mapped(pid, m->start, m->end, m->inode, path, sizeof(path));
	if (fd < 0) {
		if (fd == -EPERM || fd == -EACCES)
			denied(t, path, fd);
		*retry = true;
		return NULL;
	}
	f = file_new(t, m->dev, m->inode, false);
	if (!f) {
		close(fd);
		return NULL;
	}
	f->state = TF_BUILDING;
	if (job_submit(t, f, fd, m->path ? m->path : path)) {
		f->state = TF_FAILED;
		f->err = -ENOMEM;
		t->st.files_failed++;
	}
	return f;
}

struct reload_open {
	const struct tfile *f;
	char *path;
	size_t len;
};

/* The file of a mapping of pid, checked to be the one f was built from: its descriptor + 1. */
static int open_for_reload(uint32_t pid, void *data, void *arg)
{
	const struct tpid *p = data;
	struct reload_open *ro = arg;

	for (const struct tmap *m = p->m; m < p->m + p->n; m++) {
		struct stat sb;
		int fd;

		if (m->f != ro->f || (fd = open_mapped(pid, m->start, m->end, m->f->ino, ro->path,
						       ro->len)) < 0)
			continue;
		if (!fstat(fd, &sb) && sb.st_dev == ro->f->st_dev && sb.st_ino == ro->f->st_ino)
			return fd + 1;
		close(fd);
	}
	return 0;
}

/*
 * A table that found no room, or was displaced, in use still: when room can
 * be made for it, keep that room and build the table again from the file
 * (through a process that maps it, checked to be the same file).
 */
static void file_reload(struct tables *t, struct tfile *f)
{
	uint32_t n = f->ut ? (uint32_t)unwind_table__nrows(f->ut) : 0, first;
	char path[64];
	int fd = -ENOENT;

	if (!n || n > t->rows_cap || f->job || f->count || f->state != TF_BUILT ||
	    (t->njobs >= MAX_JOBS && !f->vdso) || clock__mono_ns() < f->reload_at ||
	    !room_possible(t, n))
		return;
	if (!f->vdso) {
		struct reload_open ro = { f, path, sizeof(path) };

		fd = procreg__each(t->reg, t->slot, open_for_reload, &ro);
		fd = fd > 0 ? fd - 1 : -ENOENT;
	}
	if ((fd < 0 && !f->vdso) || rows_reserve(t, n, &first)) {
		if (fd >= 0)
			close(fd);
		return;
	}
	f->first = first;
	f->reserved = n;
	t->st.rebuilds++;
	if (f->vdso) {
		struct unwind_table *ut = NULL;
		int64_t t0 = clock__mono_ns();
		int err = vdso_build(&ut);

		t->st.build_us_total += (clock__mono_ns() - t0) / 1000;
		file_built(t, f, ut, err);
	} else if (job_submit(t, f, fd, path)) {
		rowalloc__release(t->ra, first, n);
		f->reserved = 0;
	}
}

/* Beyond MAX_UNUSED tables nobody maps, the least recently used go. */
static void evict_unused(struct tables *t)
{
	size_t unused = 0;

	for (size_t i = 0; i < t->nfiles; i++)
		unused += !t->files[i]->users && !t->files[i]->job;
	while (unused-- > MAX_UNUSED) {
		size_t victim = SIZE_MAX;

		for (size_t i = 0; i < t->nfiles; i++)
			if (!t->files[i]->users && !t->files[i]->job &&
			    (victim == SIZE_MAX || t->files[i]->unused_since < t->files[victim]->unused_since))
				victim = i;
		if (t->files[victim]->count)
			t->st.evictions++;
		file_free(t, victim);
	}
}

static void file_put(struct tfile *f)
{
	if (f && --f->users == 0)
		f->unused_since = clock__mono_ns();
}

/* --- processes --- */

static struct tpid *pid_find(const struct tables *t, uint32_t pid)
{
	return procreg__data(t->reg, pid, t->slot);
}

static void maps_put(struct tmap *m, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		file_put(m[i].f);
	free(m);
}

static void tpid_free(struct tables *t, struct tpid *p)
{
	maps_put(p->m, p->n);
	free(p);
	t->st.pids = --t->npids;
}

/* The process's state here; its umaps entry stays. */
static void pid_drop(struct tables *t, struct tpid *p)
{
	uint32_t pid = p->pid;

	if (p->due)
		procreg__due_cancel(t->reg, LOOK, pid);
	tpid_free(t, p);
	procreg__detach(t->reg, pid, t->slot);
}

/* Forgotten, or a new image under the pid: its umaps entry stays until the next load. */
static void tpid_dropped(uint32_t pid, void *data, void *arg)
{
	tpid_free(arg, data);
}

/* Read again at at (the registry's look); not planned when its queue is full. */
static void plan(struct tables *t, struct tpid *p, int64_t at)
{
	if (!procreg__due_at(t->reg, LOOK, p->pid, at, 0))
		p->due = at;
}

static void pid_forget(struct tables *t, struct tpid *p)
{
	bpf_map_delete_elem(t->umaps_fd, &p->pid);
	pid_drop(t, p);
}

static struct tpid *pid_new(struct tables *t, uint32_t pid)
{
	struct tpid *p;

	if (procreg__touch(t->reg, pid) || !(p = calloc(1, sizeof(*p))))
		return NULL;
	p->pid = pid;
	procreg__set_data(t->reg, pid, t->slot, p);
	t->st.pids = ++t->npids;
	return p;
}

/*
 * Reads pid's mappings (or takes those given: e->pm, read by the
 * symbolizer's capture at or after an exec, with the start time and code
 * of the exec event) and writes its umaps entry.
 */
static int pid_load(struct tables *t, const struct loadq_req *e)
{
	uint32_t pid = e->pid;
	bool exec = e->exec;
	struct procmaps *pm = procmaps__ref(e->pm);
	struct tpid *p = pid_find(t, pid);
	struct tmap *maps = NULL;
	uint64_t st = e->start_time, sc = e->start_code;
	struct procreg_info in;
	unsigned n = 0;
	bool retry = false;
	int64_t now;
	int err = 0;

	/*
	 * start_code before the mappings: an exec in between leaves the old
	 * start_code, which the walker takes for an exec and asks again. The
	 * other order would pair the old mappings with the new start_code, and
	 * nothing would ever ask again. Mappings given come with the exec
	 * event's start_code; an exec since then is followed by its own event,
	 * whose mappings replace these (only a lost event leaves the pair
	 * wrong, until the walker meets a pc outside them and asks).
	 */
	if (!pm && !procreg__info(t->reg, pid, &in) && !in.exited && in.start_time &&
	    in.start_code) {
		/*
		 * As the process events told (exec, fork): older than the
		 * mappings read next, as above. A read of /proc/PID/stat
		 * formats every field of the task, for two of them.
		 */
		st = in.start_time;
		sc = in.start_code;
	} else if (!pm || !st) {
		t->st.stat_reads++;
		err = procreg__read_stat(t->proc_fd, pid, &st, &sc);
	}
	if (!err && !pm) {
		t->st.maps_reads++;
		log_debug("read /proc/%u/maps for unwind tables", pid);
		err = procmaps__read_at(t->proc_fd, pid, &pm);
	}
	/* Nothing mapped: a zombie. An entry without mappings would stop the walker's requests. */
	if (!err && !procmaps__count(pm))
		err = -ESRCH;
	if (!err && !(maps = calloc(procmaps__count(pm), sizeof(*maps))))
		err = -ENOMEM;
	if (err)
		goto gone;
	for (size_t i = 0; i < procmaps__count(pm) && n < PROFD_MAX_UMAPS; i++) {
		const struct procmap *m = procmaps__get(pm, i);
		struct tfile *f = NULL;

		if (m->flags & PROCMAP_VDSO)
			f = vdso_file(t);
		else if (!(m->flags & (PROCMAP_ANON | PROCMAP_SPECIAL)) && m->inode)
			f = file_get(t, pid, m, &retry);
		if (f)
			f->users++;
		maps[n++] = (struct tmap){ m->start, m->end, m->offset, f };
	}
	if (!p && !(p = pid_new(t, pid))) {
		maps_put(maps, n);
		err = -ENOMEM;
		goto gone;
	}
	p->wait = !exec && p->wait && same_maps(p->m, p->n, maps, n) ?
		  (p->wait * 2 > REFRESH_MAX_NS ? REFRESH_MAX_NS : p->wait * 2) : REFRESH_MIN_NS;
	maps_put(p->m, p->n);
	p->m = maps;
	p->n = n;
	p->start_time = st;
	p->start_code = sc;
	now = clock__mono_ns();
	p->last_load = now;
	p->loads = exec ? 1 : p->loads + 1;
	p->retries = exec || !retry ? 0 : p->retries + 1;
	if (p->due)
		procreg__due_cancel(t->reg, LOOK, pid);
	p->due = 0;
	/* Given at exec: process events read the mappings again once ld.so mapped the libraries. */
	if (exec && !e->pm)
		plan(t, p, now + EXEC_REREAD_NS);
	else if (retry && p->retries <= MAX_RETRIES)
		plan(t, p, now + REFRESH_MIN_NS);
	err = pid_write(t, p);
	if (err) {
		pid_forget(t, p);
		goto out;
	}
	t->st.pid_loads++;
	goto out;
gone:
	/* Gone already (or no memory): let the walker ask again if the pid comes back. */
	if (p)
		pid_forget(t, p);
	else
		bpf_map_delete_elem(t->umaps_fd, &pid);
out:
	procmaps__free(pm);
	return err;
}

/* A request for a read of pid's mappings; stale: the walker met a pc outside them. */
static void enqueue(struct tables *t, const struct loadq_req *n, bool stale)
{
	/* Full (bounded like umaps): the placeholder stays and gc asks again. */
	loadq__add(t->queue, n, stale, clock__mono_ns());
}

struct work_turn {
	struct tables *t;
	int64_t t0, budget;
};

static int work_one(const struct loadq_req *e, void *arg)
{
	struct work_turn *w = arg;
	int64_t waited = w->t0 - e->queued;

	if (e->hot && waited > 0 && (uint64_t)waited > w->t->st.load_wait_ns_max)
		w->t->st.load_wait_ns_max = (uint64_t)waited;
	pid_load(w->t, e);
	return clock__mono_ns() - w->t0 >= w->budget;
}

static void work(struct tables *t, int64_t budget)
{
	struct work_turn w = { t, clock__mono_ns(), budget };

	/* Come back next turn, after whatever else waits; requests waiting for an exec have the timer. */
	if (loadq__serve(t->queue, w.t0, work_one, &w))
		poke(t);
}

/*
 * The walker met a pc outside p's mappings, or a planned re-read is due:
 * process events read them for the symbolizer and us at once (the
 * reread callback), else we do.
 */
static void reread(struct tables *t, uint32_t pid, struct tpid *p, bool asked)
{
	if (p && t->reread_fn)
		t->reread_fn(pid, p->start_time, p->start_code, t->reread_arg);
	else
		enqueue(t, &(struct loadq_req){ .pid = pid, .hot = asked }, asked);
}

/* Queues the processes whose planned re-read is due; arms the timer for the next one. */
static void run_due(struct tables *t)
{
	int64_t now = clock__mono_ns(), next, wake;
	uint32_t pid, tries;

	while (procreg__due_pop(t->reg, LOOK, now, &pid, &tries)) {
		struct tpid *p = pid_find(t, pid);

		if (p && p->due && p->due <= now) {
			p->due = 0;
			reread(t, pid, p, false);
		}
	}
	next = procreg__due_first(t->reg, LOOK);
	wake = loadq__wake_at(t->queue, now);
	if (wake && (!next || wake < next))
		next = wake;
	clock__timer_arm(t->tfd, next, &t->armed);
}

static int on_event(void *ctx, void *data, size_t len)
{
	struct tables *t = ctx;
	const struct profd_uevent *ev = data;
	struct tpid *p;

	if (len < offsetof(struct profd_uevent, regs))
		return 0;
	switch (ev->type) {
	case PROFD_UEV_NEW_PID: {
		/* See NEW_PID_LINGER_NS. */
		bool linger = (ev->flags & PROFD_UEV_F_BORROWS) || (ev->flags & PROFD_UEV_F_EXECD);
		struct loadq_req q = { .pid = ev->pid, .hot = true, .linger = linger,
				  .young = !t->exec_delay_ns || linger ||
					   (ev->flags & PROFD_UEV_F_EXEC_DUE) };
		struct procreg_info in;
		bool known = !procreg__info(t->reg, ev->pid, &in);

		t->st.requests_new++;
		t->st.requests_new_lingering += linger;
		/*
		 * Sampled before its exit, whose event came first: the exit
		 * hook dropped its entry, and a load would find it gone.
		 */
		if (known && in.exited && t->exit_link) {
			t->st.requests_exited++;
			break;
		}
		/*
		 * A child between fork and exec has its parent's image: the
		 * registry's snapshot of it serves, without a read of /proc
		 * (the child may be gone before its turn). Its samples walk by
		 * its parent's entry meanwhile (bpf/unwind.h), and most such
		 * children (a shell's subshells, a fork before an exec) exit or
		 * exec within the grace, which calls the load off (an exec's
		 * entry comes with its event): it waits like a young request.
		 */
		if (known && in.ppid && in.start_time &&
		    in.start_code && !procreg__maps(t->reg, ev->pid, &q.pm)) {
			q.start_time = in.start_time;
			q.start_code = in.start_code;
			q.young = q.snapshot = true;
			t->st.maps_inherited++;
		} else if (known && !in.ppid && in.start_time && in.start_code &&
			   !procreg__maps(t->reg, ev->pid, &q.pm)) {
			/*
			 * An image of its own that process events captured (at
			 * its exec, or at first sight) and keep as re-captures
			 * find more: no read of /proc for it. Most are a shim's
			 * chain (bash, pyenv, pyenv-exec), sampled before the
			 * exec whose entry the hook wrote: the request comes
			 * after its exec event, which found none to call off. A
			 * young one waits as before (its exit or exec calls it
			 * off); a library mapped since the capture is a pc
			 * outside them, and the walker asks for a re-read.
			 */
			q.start_time = in.start_time;
			q.start_code = in.start_code;
			q.snapshot = q.young;
			t->st.maps_captured++;
		}
		enqueue(t, &q, false);
		procmaps__free(q.pm);
		break;
	}
	case PROFD_UEV_REFRESH:
		t->st.requests_refresh++;
		p = pid_find(t, ev->pid);
		/*
		 * Read since the walk asked (often a re-capture that profd's own
		 * wake-up preempted the process for): the walker asks again if
		 * the pc is still outside.
		 */
		if (p && p->last_load >= (int64_t)ev->time_ns)
			break;
		/* Not for a young process: its first read often raced ld.so mapping its libraries. */
		if (p && p->loads > 2 && clock__mono_ns() - p->last_load < p->wait) {
			if (!p->due)
				plan(t, p, p->last_load + p->wait);
		} else if (p && t->reread_fn && t->nrereads < MAX_REREADS) {
			t->rereads[t->nrereads++] = ev->pid;
		} else {
			reread(t, ev->pid, p, true);
		}
		break;
	case PROFD_UEV_SNAPSHOT:
		if (len >= sizeof(*ev) && t->snap_fn)
			t->snap_fn(ev, t->snap_arg);
		break;
	}
	return 0;
}

int tables__new(struct profd_bpf *skel, const struct tables_opts *o, struct tables **out)
{
	struct tables *t = calloc(1, sizeof(*t));
	struct epoll_event ev = { .events = EPOLLIN };
	long page = sysconf(_SC_PAGESIZE);
	int err, ncpus;

	if (!t)
		return -ENOMEM;
	t->skel = skel;
	t->o = *o;
	t->epfd = t->tfd = t->proc_fd = t->root_fd = -1;
	t->umaps_fd = bpf_map__fd(skel->maps.umaps);
	t->ufiles_fd = -1;
	t->proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (t->proc_fd < 0) {
		err = -errno;
		goto fail;
	}
	{
		struct stat sb;

		t->root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (t->root_fd >= 0 && fstat(t->root_fd, &sb)) {
			close(t->root_fd);
			t->root_fd = -1;
		}
		t->root_dev = t->root_fd >= 0 ? (uint64_t)sb.st_dev : 0;
	}
	t->um = calloc(1, sizeof(*t->um));
	if (!t->um) {
		err = -ENOMEM;
		goto fail;
	}
	t->rows_cap = bpf_map__max_entries(skel->maps.urows);
	t->rows_len = ((size_t)t->rows_cap * sizeof(struct profd_urow) + page - 1) / page * page;
	/* Mapped per upload (rows_write); checked here, so a kernel that cannot map it fails at start. */
	t->rows = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(skel->maps.urows), 0);
	if (t->rows == MAP_FAILED) {
		err = -errno;
		t->rows = NULL;
		goto fail;
	}
	munmap(t->rows, (size_t)page);
	t->rows = NULL;
	err = rowalloc__new(t->rows_cap, &t->ra);
	if (!err)
		err = loadq__new(&(struct loadq_opts){ .max = 4 * (size_t)o->max_pids + MAX_COLD + 64,
						      .max_cold = MAX_COLD,
						      .cold_max_age_ns = COLD_MAX_AGE_NS,
						      .grace_ns = NEW_PID_GRACE_NS,
						      .linger_ns = NEW_PID_LINGER_NS }, &t->queue);
	if (err)
		goto fail;
	t->rb = ring_buffer__new(bpf_map__fd(skel->maps.uevents), on_event, t, NULL);
	if (!t->rb) {
		err = -errno;
		goto fail;
	}
	err = tablebuild__new(NWORKERS, SMALL_FILE_BYTES, &t->b);
	if (err)
		goto fail;
	t->epfd = epoll_create1(EPOLL_CLOEXEC);
	t->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (t->epfd < 0 || t->tfd < 0 ||
	    epoll_ctl(t->epfd, EPOLL_CTL_ADD, ring_buffer__epoll_fd(t->rb), &ev) ||
	    epoll_ctl(t->epfd, EPOLL_CTL_ADD, tablebuild__fd(t->b), &ev) ||
	    epoll_ctl(t->epfd, EPOLL_CTL_ADD, t->tfd, &ev)) {
		err = -errno;
		goto fail;
	}
	err = map_files_probe(t->proc_fd);
	if (err == -EPERM || err == -EACCES) {
		t->st.map_files_denied = true;
		log_warn("DWARF unwinding is off: /proc/PID/map_files cannot be opened (%s); it needs "
			 "CAP_CHECKPOINT_RESTORE (add it to the unit's CapabilityBoundingSet=); frames without "
			 "frame pointers lose their callers", strerror(-err));
	}
	err = 0;
	/* Without it (not loaded, or attach failed) each exit deletes its entry by a system call. */
	t->exit_link = bpf_program__attach(skel->progs.uw_exit);
	t->st.rows_cap = t->rows_cap;
	ncpus = libbpf_num_possible_cpus();
	t->st.kernel_bytes = t->rows_len +
		(uint64_t)bpf_map__max_entries(skel->maps.umaps) * (sizeof(struct profd_umaps) + 64) +
		bpf_map__max_entries(skel->maps.uevents) +
		(uint64_t)bpf_map__value_size(skel->maps.uw_rcache) * (ncpus > 0 ? ncpus : 1);
	*out = t;
	return 0;
fail:
	tables__free(t);
	return err;
}

static int forget_one(uint32_t pid, void *data, void *arg)
{
	pid_forget(arg, data);
	return 0;
}

void tables__free(struct tables *t)
{
	if (!t)
		return;
	/* Workers first: their jobs point at files freed below. */
	tablebuild__free(t->b);
	bpf_link__destroy(t->exit_link);
	ring_buffer__free(t->rb);
	if (t->epfd >= 0)
		close(t->epfd);
	if (t->tfd >= 0)
		close(t->tfd);
	if (t->reg)
		procreg__each(t->reg, t->slot, forget_one, t);
	if (t->rows)
		munmap(t->rows, t->rows_len);
	while (t->nfiles)
		file_free(t, t->nfiles - 1);
	if (t->proc_fd >= 0)
		close(t->proc_fd);
	if (t->root_fd >= 0)
		close(t->root_fd);
	free(t->files);
	loadq__free(t->queue);
	rowalloc__free(t->ra);
	free(t->um);
	free(t);
}

int tables__fd(const struct tables *t)
{
	return t->epfd;
}

/* The re-reads the walker asked for in this turn; whether there were any. */
static bool rereads(struct tables *t)
{
	unsigned n = t->nrereads;

	for (unsigned i = 0; i < n; i++) {
		struct tpid *p = pid_find(t, t->rereads[i]);

		reread(t, t->rereads[i], p, true);
	}
	t->nrereads = 0;
	return n;
}

static void max_ns(uint64_t *m, int64_t ns)
{
	if (ns > 0 && (uint64_t)ns > *m)
		*m = (uint64_t)ns;
}

int tables__poll(struct tables *t)
{
	int64_t t0 = clock__mono_ns(), t1, t2;
	uint64_t v;
	int n;

	/*
	 * Called after every batch of process events, so only what may be
	 * readable is read: per exec, the reads that find nothing were a
	 * tenth of profd's system calls. A worker writes the eventfd under
	 * the lock collect takes, so a build collected last time may have
	 * left a write behind.
	 */
	if ((t->njobs || t->poked || t->collected) &&
	    read(tablebuild__fd(t->b), &v, sizeof(v)) < 0 && errno != EAGAIN)
		return -errno;
	t->poked = false;
	t->st.timer_turns += clock__timer_take(t->tfd, t0, &t->armed);
	n = ring_buffer__consume(t->rb);
	t1 = clock__mono_ns();
	max_ns(&t->st.turn_requests_ns_max, t1 - t0);
	collect(t);
	run_due(t);
	t2 = clock__mono_ns();
	max_ns(&t->st.turn_builds_ns_max, t2 - t1);
	t1 = t2;
	/* New processes' reads first: a small program's table never waits behind a large one's rows. */
	work(t, WORK_BUDGET_NS);
	t2 = clock__mono_ns();
	max_ns(&t->st.turn_loads_ns_max, t2 - t1);
	if (rows_steps(t, t2))
		poke(t);
	t1 = clock__mono_ns();
	max_ns(&t->st.turn_rows_ns_max, t1 - t2);
	write_changed(t);
	t2 = clock__mono_ns();
	max_ns(&t->st.turn_write_ns_max, t2 - t1);
	if (rereads(t))
		poke(t); /* their captures' loads: the next turn */
	max_ns(&t->st.turn_rereads_ns_max, clock__mono_ns() - t2);
	run_due(t);
	max_ns(&t->st.turn_ns_max, clock__mono_ns() - t0);
	return n;
}

void tables__exec(struct tables *t, uint32_t pid, int exec, uint64_t start_time, uint64_t start_code,
		  struct procmaps *maps)
{
	/* No poke: the loop polls the tables after each batch of process events. */
	enqueue(t, &(struct loadq_req){ .pid = pid, .exec = exec, .pm = maps,
					.start_time = start_time, .start_code = start_code }, false);
}

void tables__exit(struct tables *t, uint32_t pid, uint64_t time_ns)
{
	struct tpid *p = pid_find(t, pid);

	loadq__cancel(t->queue, pid);
	if (!p) {
		/* The walker's placeholder, if any; exiting tasks make none after the exit hook ran. */
		if (!t->exit_link)
			bpf_map_delete_elem(t->umaps_fd, &pid);
		return;
	}
	/* Written before the exit: the exit hook deleted it, and no system call per exit is needed. */
	if (t->exit_link && p->last_load < (int64_t)time_ns)
		pid_drop(t, p);
	else
		pid_forget(t, p);
}

static bool refresh_asked(struct tables *t, uint32_t pid)
{
	struct profd_umaps *um = t->um;

	return !bpf_map_lookup_elem(t->umaps_fd, &pid, um) && um->refresh;
}

struct gc_pass {
	struct tables *t;
	int64_t now;
	bool scan, lost;
};

static int gc_one(uint32_t pid, void *data, void *arg)
{
	struct gc_pass *g = arg;
	struct tables *t = g->t;
	struct tpid *p = data;
	uint64_t st;

	if (g->scan && (procreg__read_stat(t->proc_fd, pid, &st, NULL) || st != p->start_time)) {
		pid_forget(t, p);
		return 0;
	}
	if (g->lost && (p->due || g->now - p->last_load < p->wait)) {
		t->rescan = true;
	} else if (g->lost && refresh_asked(t, pid)) {
		/* The walker asked, the event was lost (ring buffer full): it asks no more. */
		enqueue(t, &(struct loadq_req){ .pid = pid, .hot = true }, true);
	}
	return 0;
}

void tables__gc(struct tables *t)
{
	int64_t now;
	uint32_t key, next, *prev = NULL;
	bool scan, lost;
	uint64_t nlost = __atomic_load_n(&t->skel->bss->ucounters[PROFD_UCNT_EVENTS_LOST], __ATOMIC_RELAXED);

	tables__poll(t);
	now = clock__mono_ns();
	/*
	 * Looking for requests whose event was lost costs a lookup per process:
	 * hundreds of system calls a second on a host with hundreds of idle
	 * processes. Only after a loss, until a look found nothing deferred.
	 */
	if (nlost != t->lost_seen)
		t->rescan = true;
	t->lost_seen = nlost;
	lost = t->rescan;
	t->rescan = false;
	scan = !t->o.exit_events || now - t->backstop_at >= BACKSTOP_NS;
	if (scan)
		t->backstop_at = now;
	if (scan || lost) {
		struct gc_pass g = { t, now, scan, lost };

		procreg__each(t->reg, t->slot, gc_one, &g);
	}
	/* Placeholders whose request was lost (ring buffer full): the walker asks again. */
	while (scan && !bpf_map_get_next_key(t->umaps_fd, prev, &next)) {
		/* After a delete, the next key after prev (or the first) is a new one. */
		if (!loadq__has(t->queue, next) && !pid_find(t, next) &&
		    !bpf_map_delete_elem(t->umaps_fd, &next))
			continue;
		key = next;
		prev = &key;
	}
	for (size_t i = 0; i < t->nfiles;) {
		struct tfile *f = t->files[i];

		if (!f->users && !f->job && now - f->unused_since >= UNUSED_TTL_NS) {
			if (f->count)
				t->st.evictions++;
			file_free(t, i);
			continue;
		}
		i++;
	}
	evict_unused(t);
	/* Tables that found no room: in use still, they get the room that freed up (or displace larger ones). */
	for (size_t i = 0; i < t->nfiles; i++)
		if (t->files[i]->no_room && t->files[i]->users)
			file_reload(t, t->files[i]);
	write_changed(t);
	if (loadq__count(t->queue))
		poke(t);
}

void tables__exec_delay(struct tables *t, uint64_t ns)
{
	t->skel->bss->uw_quiet_ns = ns;
	t->exec_delay_ns = (int64_t)ns;
	loadq__set_grace(t->queue, (int64_t)ns + NEW_PID_GRACE_NS);
}

void tables__on_reread(struct tables *t, tables_reread_fn fn, void *arg)
{
	t->reread_fn = fn;
	t->reread_arg = arg;
}

void tables__on_snapshot(struct tables *t, tables_snapshot_fn fn, void *arg)
{
	t->snap_fn = fn;
	t->snap_arg = arg;
}

int tables__use_registry(struct tables *t, struct procreg *reg, struct filecache *fc)
{
	int slot = procreg__slot(reg, tpid_dropped, t), fslot = filecache__slot(fc, NULL, NULL);

	if (slot < 0 || fslot < 0)
		return -ENOSPC;
	t->reg = reg;
	t->fc = fc;
	t->slot = slot;
	t->fslot = fslot;
	return 0;
}

void tables__share_ufiles(struct tables *t, int ufiles_fd, uint64_t *seq)
{
	if (ufiles_fd < 0 || !seq)
		return;
	t->ufiles_fd = ufiles_fd;
	t->ufiles_seq = seq;
	for (size_t i = 0; i < t->nfiles; i++)
		if (t->files[i]->count || t->files[i]->state == TF_FAILED)
			ufile_put(t, t->files[i]);
}

void tables__exec_written(struct tables *t, uint32_t pid, const struct procmaps *maps)
{
	int64_t now = clock__mono_ns();

	/* A request of the walker's from before the write (a sample before ld.so was done) is answered. */
	loadq__cancel(t->queue, pid);
	t->st.exec_written++;
	for (size_t i = 0; maps && i < procmaps__count(maps); i++) {
		const struct procmap *m = procmaps__get(maps, i);
		struct tfile *f;

		if ((m->flags & (PROCMAP_ANON | PROCMAP_SPECIAL | PROCMAP_VDSO)) || !m->inode)
			continue;
		f = filecache__get(t->fc, m->dev, m->inode, t->fslot);
		if (f && !f->users)
			f->unused_since = now;
	}
}

void tables__stats(const struct tables *t, struct tables_stats *st)
{
	*st = t->st;
	st->requests_dropped = loadq__dropped(t->queue);
	st->rows_used = rowalloc__used(t->ra);
	st->builds_pending = t->njobs + t->nwriting;
	st->rows_unused = 0;
	for (size_t i = 0; i < t->nfiles; i++)
		if (!t->files[i]->users)
			st->rows_unused += t->files[i]->count;
	for (int i = 0; i < PROFD_UCNT_MAX; i++)
		st->bpf[i] = __atomic_load_n(&t->skel->bss->ucounters[i], __ATOMIC_RELAXED);
}

void tables__print_status(const struct tables *t, FILE *f)
{
	static const char *const names[PROFD_UCNT_MAX] = {
		[PROFD_UCNT_WALKS] = "unwind_dwarf_walks",
		[PROFD_UCNT_FRAMES_DWARF] = "unwind_frames_dwarf",
		[PROFD_UCNT_FRAMES_FP] = "unwind_frames_fp",
		[PROFD_UCNT_UNSUP] = "unwind_stopped_unsupported",
		[PROFD_UCNT_BAD_READ] = "unwind_stopped_bad_read",
		[PROFD_UCNT_NO_PID] = "unwind_samples_before_tables",
		[PROFD_UCNT_PIDS_FULL] = "unwind_pids_map_full",
		[PROFD_UCNT_EVENTS_LOST] = "unwind_requests_lost",
		[PROFD_UCNT_FRAMES_EARLY] = "unwind_frames_before_tables",
	};
	struct tables_stats st;

	fprintf(f, "unwind\t%s\n", t ? "dwarf" : "fp");
	if (!t)
		return;
	tables__stats(t, &st);
	fprintf(f, "unwind_table_files\t%" PRIu64 "\n", st.files);
	fprintf(f, "unwind_table_files_failed\t%" PRIu64 "\n", st.files_failed);
	fprintf(f, "unwind_map_files\t%s\n", st.map_files_denied ? "denied" : "ok");
	fprintf(f, "unwind_table_files_denied\t%" PRIu64 "\n", st.files_denied);
	fprintf(f, "unwind_table_over_budget\t%" PRIu64 "\n", st.over_budget);
	fprintf(f, "unwind_table_rows\t%" PRIu64 "\n", st.rows_used);
	fprintf(f, "unwind_table_rows_unused\t%" PRIu64 "\n", st.rows_unused);
	fprintf(f, "unwind_table_bytes\t%" PRIu64 "\n", st.rows_used * sizeof(struct profd_urow));
	fprintf(f, "unwind_table_capacity_bytes\t%" PRIu64 "\n", st.rows_cap * sizeof(struct profd_urow));
	fprintf(f, "unwind_kernel_bytes\t%" PRIu64 "\n", st.kernel_bytes);
	fprintf(f, "unwind_pids\t%" PRIu64 "\n", st.pids);
	fprintf(f, "unwind_pid_loads\t%" PRIu64 "\n", st.pid_loads);
	fprintf(f, "unwind_maps_reads\t%" PRIu64 "\n", st.maps_reads);
	fprintf(f, "unwind_maps_inherited\t%" PRIu64 "\n", st.maps_inherited);
	fprintf(f, "unwind_maps_captured\t%" PRIu64 "\n", st.maps_captured);
	fprintf(f, "unwind_table_evictions\t%" PRIu64 "\n", st.evictions);
	fprintf(f, "unwind_table_build_ms\t%" PRIu64 "\n", st.build_us_total / 1000);
	fprintf(f, "unwind_table_builds_pending\t%" PRIu64 "\n", st.builds_pending);
	fprintf(f, "unwind_table_displaced\t%" PRIu64 "\n", st.displaced);
	fprintf(f, "unwind_table_rebuilds\t%" PRIu64 "\n", st.rebuilds);
	fprintf(f, "unwind_load_requests_dropped\t%" PRIu64 "\n", st.requests_dropped);
	fprintf(f, "unwind_file_checks\t%" PRIu64 "\n", st.file_checks);
	fprintf(f, "unwind_file_checks_by_path\t%" PRIu64 "\n", st.file_checks_by_path);
	fprintf(f, "unwind_file_checks_by_inode\t%" PRIu64 "\n", st.file_checks_by_inode);
	fprintf(f, "unwind_exec_entries_by_hook\t%" PRIu64 "\n", st.exec_written);
	fprintf(f, "unwind_files_told_hook\t%" PRIu64 "\n", st.ufiles_put);
	fprintf(f, "unwind_hook_entries_dropped\t%" PRIu64 "\n", st.ufiles_entries_dropped);
	fprintf(f, "unwind_turn_max_ms\t%.1f\n", st.turn_ns_max / 1e6);
	fprintf(f, "unwind_turn_requests_max_ms\t%.1f\n", st.turn_requests_ns_max / 1e6);
	fprintf(f, "unwind_turn_builds_max_ms\t%.1f\n", st.turn_builds_ns_max / 1e6);
	fprintf(f, "unwind_turn_loads_max_ms\t%.1f\n", st.turn_loads_ns_max / 1e6);
	fprintf(f, "unwind_turn_rows_max_ms\t%.1f\n", st.turn_rows_ns_max / 1e6);
	fprintf(f, "unwind_turn_rewrite_max_ms\t%.1f\n", st.turn_write_ns_max / 1e6);
	fprintf(f, "unwind_turn_rereads_max_ms\t%.1f\n", st.turn_rereads_ns_max / 1e6);
	fprintf(f, "unwind_rows_steps\t%" PRIu64 "\n", st.rows_steps);
	fprintf(f, "unwind_load_wait_max_ms\t%.1f\n", st.load_wait_ns_max / 1e6);
	fprintf(f, "unwind_timer_turns\t%" PRIu64 "\n", st.timer_turns);
	fprintf(f, "unwind_requests_new\t%" PRIu64 "\n", st.requests_new);
	fprintf(f, "unwind_requests_new_lingering\t%" PRIu64 "\n", st.requests_new_lingering);
	fprintf(f, "unwind_requests_exited\t%" PRIu64 "\n", st.requests_exited);
	fprintf(f, "unwind_requests_refresh\t%" PRIu64 "\n", st.requests_refresh);
	fprintf(f, "unwind_stat_reads\t%" PRIu64 "\n", st.stat_reads);
	for (int i = 0; i < PROFD_UCNT_MAX; i++)
		fprintf(f, "%s\t%" PRIu64 "\n", names[i], st.bpf[i]);
}
