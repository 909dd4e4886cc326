#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "log.h"
#include "lunwind.h"
#include "procmaps.h"
#include "profd.skel.h"
#include "tables.h"
#include "unwind_table.h"

/* A table nobody maps stays this long, so short-lived processes reuse it. */
#define UNUSED_TTL_NS (10 * 1000000000LL)
/*
 * Re-reading a process's mappings at most this often (dlopen, JIT). Short:
 * a process read right after exec, before ld.so mapped its libraries, asks
 * again at once, and until then its library frames are walked by frame
 * pointers. The walker asks once per rewrite of the entry, so this only
 * bounds processes that map new code continuously.
 */
#define REFRESH_MIN_NS (100 * 1000000LL)
/*
 * Table builds run in the event loop: at most this much per turn, so a host
 * starting many processes (or one mapping libLLVM) never holds up a drain or
 * a status request for long. The rest waits in the queue for the next turn.
 */
#define WORK_BUDGET_NS (50 * 1000000LL)

struct tfile {
	uint64_t dev, ino;
	bool vdso;
	struct unwind_table *ut; /* NULL: no table (err says why) */
	int err;
	uint32_t first, count;   /* rows in the kernel; count 0: none */
	unsigned refs;           /* mappings in umaps that point at the rows */
	int64_t unused_since;
};

struct tpid {
	uint32_t pid;
	uint64_t start_time;     /* /proc/PID/stat field 22: tells pid reuse apart */
	int64_t last_load;
	bool pending;            /* a refresh waits for REFRESH_MIN_NS */
	unsigned loads;
	unsigned nfiles;
	struct tfile *files[PROFD_MAX_UMAPS];
};

struct extent {
	uint32_t start, len;
};

struct tables {
	struct profd_bpf *skel;
	struct tables_opts o;
	struct ring_buffer *rb;
	struct profd_urow *rows; /* the rows array, mmapped */
	size_t rows_len;
	uint32_t rows_cap;
	struct extent *free;     /* free ranges of the rows array, sorted by start */
	size_t nfree, free_cap;
	struct tfile **files;
	size_t nfiles, files_cap;
	struct tpid *pids;
	size_t npids, pids_cap;
	int umaps_fd;
	uint32_t *queue;         /* pids waiting for pid_load, oldest first */
	size_t nqueue, queue_cap;
	tables_snapshot_fn snap_fn;
	void *snap_arg;
	/* Test mode (PROFD_UNWIND_CHECK): libunwind re-unwinds every snapshot. */
	struct lunwind *lu;
	FILE *check;
	struct tables_stats st;
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint32_t rows_cap(const struct tables_opts *o)
{
	uint64_t n = o->max_bytes / sizeof(struct profd_urow);

	return n > UINT32_MAX / 2 ? UINT32_MAX / 2 : n ? n : 1;
}

void tables__configure(struct profd_bpf *skel, const struct tables_opts *o)
{
	if (!o || !o->enabled)
		return;
	skel->rodata->unwind_dwarf = 1;
	skel->rodata->snapshot_tgid = o->snapshot_pid;
	bpf_map__set_max_entries(skel->maps.urows, rows_cap(o));
	bpf_map__set_max_entries(skel->maps.umaps, o->max_pids ? o->max_pids : 1);
	/* Snapshots are 20 KB each: room for a second of them at 99 Hz on a few CPUs. */
	bpf_map__set_max_entries(skel->maps.uevents, o->snapshot_pid ? 16 << 20 : 256 << 10);
}

/* --- rows array allocator: first fit over sorted free ranges --- */

static int extent_insert(struct tables *t, size_t at, struct extent e)
{
	if (t->nfree == t->free_cap) {
		size_t cap = t->free_cap ? t->free_cap * 2 : 64;
		struct extent *f = realloc(t->free, cap * sizeof(*f));

		if (!f)
			return -ENOMEM;
		t->free = f;
		t->free_cap = cap;
	}
	memmove(&t->free[at + 1], &t->free[at], (t->nfree - at) * sizeof(*t->free));
	t->free[at] = e;
	t->nfree++;
	return 0;
}

static int rows_alloc(struct tables *t, uint32_t n, uint32_t *first)
{
	for (size_t i = 0; i < t->nfree; i++) {
		if (t->free[i].len < n)
			continue;
		*first = t->free[i].start;
		t->free[i].start += n;
		t->free[i].len -= n;
		if (!t->free[i].len) {
			memmove(&t->free[i], &t->free[i + 1], (t->nfree - i - 1) * sizeof(*t->free));
			t->nfree--;
		}
		t->st.rows_used += n;
		return 0;
	}
	return -ENOSPC;
}

static void rows_release(struct tables *t, uint32_t first, uint32_t n)
{
	size_t i = 0;

	while (i < t->nfree && t->free[i].start < first)
		i++;
	t->st.rows_used -= n;
	if (i > 0 && t->free[i - 1].start + t->free[i - 1].len == first) {
		t->free[i - 1].len += n;
		if (i < t->nfree && first + n == t->free[i].start) {
			t->free[i - 1].len += t->free[i].len;
			memmove(&t->free[i], &t->free[i + 1], (t->nfree - i - 1) * sizeof(*t->free));
			t->nfree--;
		}
		return;
	}
	if (i < t->nfree && first + n == t->free[i].start) {
		t->free[i].start = first;
		t->free[i].len += n;
		return;
	}
	/* Out of memory here only leaks the range until restart. */
	extent_insert(t, i, (struct extent){ first, n });
}

/* --- files --- */

static void file_unload(struct tables *t, struct tfile *f)
{
	if (f->count) {
		rows_release(t, f->first, f->count);
		f->count = 0;
		t->st.files--;
	}
}

static void file_free(struct tables *t, size_t i)
{
	struct tfile *f = t->files[i];

	file_unload(t, f);
	if (!f->ut)
		t->st.files_failed--;
	unwind_table__free(f->ut);
	free(f);
	t->files[i] = t->files[--t->nfiles];
}

/* Drops unused tables, oldest first, until n rows fit (or nothing is left to drop). */
static void make_room(struct tables *t, uint32_t n)
{
	uint32_t dummy;

	while (rows_alloc(t, n, &dummy)) {
		size_t victim = SIZE_MAX;

		for (size_t i = 0; i < t->nfiles; i++)
			if (!t->files[i]->refs && t->files[i]->count &&
			    (victim == SIZE_MAX || t->files[i]->unused_since < t->files[victim]->unused_since))
				victim = i;
		if (victim == SIZE_MAX)
			return;
		file_free(t, victim);
		t->st.evictions++;
	}
	rows_release(t, dummy, n);
}

static void file_upload(struct tables *t, struct tfile *f)
{
	size_t n = unwind_table__nrows(f->ut);

	if (!n || n > t->rows_cap)
		goto over;
	if (rows_alloc(t, n, &f->first)) {
		make_room(t, n);
		if (rows_alloc(t, n, &f->first))
			goto over;
	}
	/* The array is mmapped: the rows are visible to the walker before umaps points at them. */
	memcpy(&t->rows[f->first], unwind_table__rows(f->ut), n * sizeof(struct profd_urow));
	f->count = n;
	t->st.files++;
	return;
over:
	if (n)
		t->st.over_budget++;
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
	if (!f)
		return NULL;
	*f = (struct tfile){ .dev = dev, .ino = ino, .vdso = vdso, .unused_since = now_ns() };
	t->files[t->nfiles++] = f;
	return f;
}

static void file_built(struct tables *t, struct tfile *f, int err, int64_t t0)
{
	t->st.build_us_total += (now_ns() - t0) / 1000;
	f->err = err;
	if (err) {
		t->st.files_failed++;
		return;
	}
	file_upload(t, f);
}

/* Our own [vdso] image: the same kernel maps the same one into every process. */
static struct tfile *vdso_file(struct tables *t)
{
	uint64_t base = getauxval(AT_SYSINFO_EHDR);
	struct procmaps *pm = NULL;
	const struct procmap *m;
	struct tfile *f;
	int64_t t0 = now_ns();
	int err = -ENOENT;

	for (size_t i = 0; i < t->nfiles; i++)
		if (t->files[i]->vdso)
			return t->files[i];
	f = file_new(t, 0, 0, true);
	if (!f)
		return NULL;
	if (base && !procmaps__read("/proc", getpid(), &pm) && (m = procmaps__find(pm, base)) &&
	    (m->flags & PROCMAP_VDSO))
		err = unwind_table__open_mem((const void *)base, m->end - m->start, &f->ut);
	procmaps__free(pm);
	file_built(t, f, err, t0);
	return f;
}

static struct tfile *file_get(struct tables *t, uint32_t pid, const struct procmap *m)
{
	char path[64];
	struct tfile *f;
	int64_t t0 = now_ns();
	int fd, err;

	for (size_t i = 0; i < t->nfiles; i++)
		if (!t->files[i]->vdso && t->files[i]->dev == m->dev && t->files[i]->ino == m->inode)
			return t->files[i];
	f = file_new(t, m->dev, m->inode, false);
	if (!f)
		return NULL;
	/* map_files reaches the mapped file itself: deleted, replaced or in another mount namespace. */
	snprintf(path, sizeof(path), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64, pid, m->start, m->end);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		err = -errno;
	} else {
		err = unwind_table__open_fd(fd, &f->ut);
		close(fd);
	}
	if (err)
		log_debug("no unwind table for %s: %s", m->path ? m->path : path, strerror(-err));
	file_built(t, f, err, t0);
	return f;
}

static void file_put(struct tfile *f)
{
	if (f && --f->refs == 0)
		f->unused_since = now_ns();
}

/* --- processes --- */

/* Fields 22 (starttime) and 26 (startcode) of /proc/PID/stat. */
static int proc_stat(uint32_t pid, uint64_t *out, uint64_t *start_code)
{
	char path[64], buf[1024], *p;
	unsigned long long v, sc;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = 0;
	/* The name may hold spaces and parentheses: fields restart after the last ')'. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu "
			 "%*u %*d %*u %llu", &v, &sc) != 2)
		return -EINVAL;
	*out = v;
	if (start_code)
		*start_code = sc;
	return 0;
}

static struct tpid *pid_find(struct tables *t, uint32_t pid)
{
	for (size_t i = 0; i < t->npids; i++)
		if (t->pids[i].pid == pid)
			return &t->pids[i];
	return NULL;
}

static void pid_forget(struct tables *t, struct tpid *p)
{
	bpf_map_delete_elem(t->umaps_fd, &p->pid);
	for (unsigned i = 0; i < p->nfiles; i++)
		file_put(p->files[i]);
	*p = t->pids[--t->npids];
	t->st.pids = t->npids;
}

static int pid_load(struct tables *t, uint32_t pid)
{
	struct profd_umaps *um = calloc(1, sizeof(*um));
	struct tfile *files[PROFD_MAX_UMAPS] = { 0 };
	struct procmaps *pm = NULL;
	struct tpid *p = pid_find(t, pid);
	uint64_t st = 0;
	int err;

	if (!um)
		return -ENOMEM;
	err = procmaps__read("/proc", pid, &pm);
	if (!err)
		err = proc_stat(pid, &st, (uint64_t *)&um->start_code);
	if (err) {
		/* Gone already: let the walker ask again if the pid comes back. */
		if (p)
			pid_forget(t, p);
		else
			bpf_map_delete_elem(t->umaps_fd, &pid);
		goto out;
	}
	for (size_t i = 0; i < procmaps__count(pm) && um->n < PROFD_MAX_UMAPS; i++) {
		const struct procmap *m = procmaps__get(pm, i);
		struct profd_umap *u = &um->m[um->n];
		struct tfile *f = NULL;
		uint64_t va;

		u->start = m->start;
		u->end = m->end;
		if (m->flags & PROCMAP_VDSO)
			f = vdso_file(t);
		else if (!(m->flags & (PROCMAP_ANON | PROCMAP_SPECIAL)) && m->inode)
			f = file_get(t, pid, m);
		if (f && f->count && !unwind_table__file_to_vaddr(f->ut, f->vdso ? 0 : m->offset, &va)) {
			u->bias = m->start - va;
			u->first = f->first;
			u->count = f->count;
			f->refs++;
			files[um->n] = f;
		}
		um->n++;
	}
	err = bpf_map_update_elem(t->umaps_fd, &pid, um, BPF_ANY);
	if (err) {
		err = -errno;
		for (unsigned i = 0; i < um->n; i++)
			file_put(files[i]);
		goto out;
	}
	if (!p) {
		if (t->npids == t->pids_cap) {
			size_t cap = t->pids_cap ? t->pids_cap * 2 : 64;
			struct tpid *v = realloc(t->pids, cap * sizeof(*v));

			if (!v) {
				err = -ENOMEM;
				bpf_map_delete_elem(t->umaps_fd, &pid);
				for (unsigned i = 0; i < um->n; i++)
					file_put(files[i]);
				goto out;
			}
			t->pids = v;
			t->pids_cap = cap;
		}
		p = &t->pids[t->npids++];
		memset(p, 0, sizeof(*p));
		p->pid = pid;
	} else {
		for (unsigned i = 0; i < p->nfiles; i++)
			file_put(p->files[i]);
	}
	p->start_time = st;
	p->last_load = now_ns();
	p->pending = false;
	p->loads++;
	p->nfiles = um->n;
	memcpy(p->files, files, sizeof(files));
	t->st.pids = t->npids;
	t->st.pid_loads++;
out:
	procmaps__free(pm);
	free(um);
	return err;
}

static void enqueue(struct tables *t, uint32_t pid)
{
	for (size_t i = 0; i < t->nqueue; i++)
		if (t->queue[i] == pid)
			return;
	if (t->nqueue == t->queue_cap) {
		size_t cap = t->queue_cap ? t->queue_cap * 2 : 64;
		uint32_t *q;

		/* Bounded like umaps: beyond it the placeholder stays and gc asks again. */
		if (cap > 4 * (size_t)t->o.max_pids + 64 || !(q = realloc(t->queue, cap * sizeof(*q))))
			return;
		t->queue = q;
		t->queue_cap = cap;
	}
	t->queue[t->nqueue++] = pid;
}

static void work(struct tables *t, int64_t budget)
{
	int64_t t0 = now_ns();
	size_t done = 0;

	while (done < t->nqueue && now_ns() - t0 < budget)
		pid_load(t, t->queue[done++]);
	memmove(t->queue, t->queue + done, (t->nqueue - done) * sizeof(*t->queue));
	t->nqueue -= done;
}

static int on_event(void *ctx, void *data, size_t len)
{
	struct tables *t = ctx;
	const struct profd_uevent *ev = data;
	struct tpid *p;

	if (len < offsetof(struct profd_uevent, regs))
		return 0;
	switch (ev->type) {
	case PROFD_UEV_NEW_PID:
		enqueue(t, ev->pid);
		break;
	case PROFD_UEV_REFRESH:
		p = pid_find(t, ev->pid);
		/* Not for a young process: its first read often raced ld.so mapping its libraries. */
		if (p && p->loads > 2 && now_ns() - p->last_load < REFRESH_MIN_NS)
			p->pending = true;
		else
			enqueue(t, ev->pid);
		break;
	case PROFD_UEV_SNAPSHOT:
		if (len >= sizeof(*ev) && t->snap_fn)
			t->snap_fn(ev, t->snap_arg);
		break;
	}
	return 0;
}

/*
 * One line per snapshot: "<kernel frames> <libunwind frames> <agreeing> <pid>
 * dwarf|fp | kernel pcs | libunwind pcs"; fp: the process's tables were not
 * loaded yet, the walker used frame pointers. Frames agree when both walks have the same
 * pc at the same depth; the test sums agreeing over max(kernel, libunwind).
 */
static void check_snapshot(const struct profd_uevent *ev, void *arg)
{
	struct tables *t = arg;
	uint64_t ips[PROFD_MAX_DEPTH];
	struct procmaps *pm = NULL;
	size_t n = 0, nk = ev->nframes > PROFD_MAX_DEPTH ? PROFD_MAX_DEPTH : ev->nframes, agree = 0;
	int err;

	err = procmaps__read("/proc", ev->pid, &pm);
	if (!err)
		err = lunwind__unwind(t->lu, ev->pid, pm, (const uint64_t *)ev->regs, ev->stack,
				      ev->stack_len > PROFD_SNAP_STACK ? PROFD_SNAP_STACK : ev->stack_len,
				      ips, PROFD_MAX_DEPTH, &n);
	procmaps__free(pm);
	if (err) {
		log_debug("libunwind check of pid %u: %s", ev->pid, strerror(-err));
		return;
	}
	for (size_t i = 0; i < nk && i < n; i++)
		agree += ev->frames[i] == ips[i];
	fprintf(t->check, "%zu %zu %zu %u %s |", nk, n, agree, ev->pid,
		ev->flags & PROFD_SNAP_F_TABLES ? "dwarf" : "fp");
	for (size_t i = 0; i < nk; i++)
		fprintf(t->check, " %" PRIx64, (uint64_t)ev->frames[i]);
	fprintf(t->check, " |");
	for (size_t i = 0; i < n; i++)
		fprintf(t->check, " %" PRIx64, ips[i]);
	fprintf(t->check, "\n");
	fflush(t->check);
}

static int check_open(struct tables *t)
{
	const char *e = getenv("PROFD_UNWIND_CHECK"), *path = e ? strchr(e, ' ') : NULL;
	int err;

	if (!path || !path[1])
		return -EINVAL;
	t->check = fopen(path + 1, "we");
	if (!t->check)
		return -errno;
	err = lunwind__new(&t->lu);
	if (err)
		return err;
	tables__on_snapshot(t, check_snapshot, t);
	log_info("unwind check: snapshots of pid %u, libunwind results to %s", t->o.snapshot_pid, path + 1);
	return 0;
}

int tables__new(struct profd_bpf *skel, const struct tables_opts *o, struct tables **out)
{
	struct tables *t = calloc(1, sizeof(*t));
	long page = sysconf(_SC_PAGESIZE);
	int err;

	if (!t)
		return -ENOMEM;
	t->skel = skel;
	t->o = *o;
	t->umaps_fd = bpf_map__fd(skel->maps.umaps);
	t->rows_cap = bpf_map__max_entries(skel->maps.urows);
	t->rows_len = ((size_t)t->rows_cap * sizeof(struct profd_urow) + page - 1) / page * page;
	t->rows = mmap(NULL, t->rows_len, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(skel->maps.urows), 0);
	if (t->rows == MAP_FAILED) {
		err = -errno;
		t->rows = NULL;
		goto fail;
	}
	err = extent_insert(t, 0, (struct extent){ 0, t->rows_cap });
	if (err)
		goto fail;
	t->rb = ring_buffer__new(bpf_map__fd(skel->maps.uevents), on_event, t, NULL);
	if (!t->rb) {
		err = -errno;
		goto fail;
	}
	if (o->snapshot_pid) {
		err = check_open(t);
		if (err)
			goto fail;
	}
	t->st.rows_cap = t->rows_cap;
	t->st.kernel_bytes = t->rows_len +
		(uint64_t)bpf_map__max_entries(skel->maps.umaps) * (sizeof(struct profd_umaps) + 64) +
		bpf_map__max_entries(skel->maps.uevents);
	*out = t;
	return 0;
fail:
	tables__free(t);
	return err;
}

void tables__free(struct tables *t)
{
	if (!t)
		return;
	ring_buffer__free(t->rb);
	lunwind__free(t->lu);
	if (t->check)
		fclose(t->check);
	if (t->rows)
		munmap(t->rows, t->rows_len);
	while (t->nfiles)
		file_free(t, t->nfiles - 1);
	free(t->files);
	free(t->pids);
	free(t->queue);
	free(t->free);
	free(t);
}

int tables__fd(const struct tables *t)
{
	return ring_buffer__epoll_fd(t->rb);
}

int tables__poll(struct tables *t)
{
	int n = ring_buffer__consume(t->rb);
	int64_t now = now_ns();

	for (size_t i = 0; i < t->npids; i++) {
		if (t->pids[i].pending && now - t->pids[i].last_load >= REFRESH_MIN_NS) {
			t->pids[i].pending = false;
			enqueue(t, t->pids[i].pid);
		}
	}
	work(t, WORK_BUDGET_NS);
	return n < 0 ? n : 0;
}

static bool refresh_asked(struct tables *t, uint32_t pid)
{
	static struct profd_umaps um;

	return !bpf_map_lookup_elem(t->umaps_fd, &pid, &um) && um.refresh;
}

void tables__gc(struct tables *t)
{
	int64_t now;
	uint32_t key, next, *prev = NULL;

	tables__poll(t);
	now = now_ns();
	for (size_t i = 0; i < t->npids;) {
		struct tpid *p = &t->pids[i];
		uint64_t st;

		if (proc_stat(p->pid, &st, NULL) || st != p->start_time) {
			pid_forget(t, p); /* moves the last entry into slot i */
			continue;
		}
		if (p->pending && now - p->last_load >= REFRESH_MIN_NS) {
			p->pending = false;
			enqueue(t, p->pid);
		} else if (!p->pending && now - p->last_load >= REFRESH_MIN_NS && refresh_asked(t, p->pid)) {
			/* The walker asked but its event was lost (ring buffer full): it will not ask again. */
			enqueue(t, p->pid);
		}
		i++;
	}
	/* Placeholders whose request was lost (ring buffer full): the walker asks again. */
	while (!bpf_map_get_next_key(t->umaps_fd, prev, &next)) {
		bool queued = false;

		for (size_t i = 0; i < t->nqueue && !queued; i++)
			queued = t->queue[i] == next;
		/* After a delete, the next key after prev (or the first) is a new one. */
		if (!queued && !pid_find(t, next) && !bpf_map_delete_elem(t->umaps_fd, &next))
			continue;
		key = next;
		prev = &key;
	}
	for (size_t i = 0; i < t->nfiles;) {
		struct tfile *f = t->files[i];

		if (!f->refs && now - f->unused_since >= UNUSED_TTL_NS) {
			if (f->count)
				t->st.evictions++;
			file_free(t, i);
			continue;
		}
		i++;
	}
}

void tables__on_snapshot(struct tables *t, tables_snapshot_fn fn, void *arg)
{
	t->snap_fn = fn;
	t->snap_arg = arg;
}

void tables__stats(const struct tables *t, struct tables_stats *st)
{
	*st = t->st;
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
	};
	struct tables_stats st;

	fprintf(f, "unwind\t%s\n", t ? "dwarf" : "fp");
	if (!t)
		return;
	tables__stats(t, &st);
	fprintf(f, "unwind_table_files\t%" PRIu64 "\n", st.files);
	fprintf(f, "unwind_table_files_failed\t%" PRIu64 "\n", st.files_failed);
	fprintf(f, "unwind_table_over_budget\t%" PRIu64 "\n", st.over_budget);
	fprintf(f, "unwind_table_rows\t%" PRIu64 "\n", st.rows_used);
	fprintf(f, "unwind_table_bytes\t%" PRIu64 "\n", st.rows_used * sizeof(struct profd_urow));
	fprintf(f, "unwind_table_capacity_bytes\t%" PRIu64 "\n", st.rows_cap * sizeof(struct profd_urow));
	fprintf(f, "unwind_kernel_bytes\t%" PRIu64 "\n", st.kernel_bytes);
	fprintf(f, "unwind_pids\t%" PRIu64 "\n", st.pids);
	fprintf(f, "unwind_pid_loads\t%" PRIu64 "\n", st.pid_loads);
	fprintf(f, "unwind_table_evictions\t%" PRIu64 "\n", st.evictions);
	fprintf(f, "unwind_table_build_ms\t%" PRIu64 "\n", st.build_us_total / 1000);
	for (int i = 0; i < PROFD_UCNT_MAX; i++)
		fprintf(f, "%s\t%" PRIu64 "\n", names[i], st.bpf[i]);
}

uint32_t tables_check_pid(void)
{
	const char *e = getenv("PROFD_UNWIND_CHECK");
	unsigned pid;

	return e && sscanf(e, "%u", &pid) == 1 ? pid : 0;
}
