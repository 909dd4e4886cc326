/*
 * Symbolizer: process mappings (per pid, LRU, hanging off the process
 * registry's record) -> ELF file (per dev/inode, LRU, hanging off the file
 * cache's entry) -> symbol. Everything read here is untrusted; failures
 * leave the frame unnamed ([module+0xOFF]) and are counted, never logged.
 */
#include "clock.h"
#include "symbolizer.h"
#include "demangle.h"
#include "elfsym.h"
#include "filecache.h"
#include "kallsyms.h"
#include "perfmap.h"
#include "procmaps.h"
#include "procreg.h"
#include "safeopen.h"
#include "symload.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_MAX_FILES 512
#define DEFAULT_MAX_FILE_BYTES (32u << 20)
#define DEFAULT_MAX_PIDS 4096
#define DEFAULT_CACHE_MEMORY (64u << 20)
/*
 * Shares of the budget one file (an ELF file or a perf map: a large JIT
 * names 100,000s of functions) or one process's mappings may hold: one
 * over its share is refused (and counted), it never evicts the rest.
 */
#define FILE_SHARE 4
#define PID_SHARE 16
/* Keys one process could not open as the very file it maps: remembered so its frames do not retry each time. */
#define REFUSED_KEYS 8
/* A miss outside every mapping is checked with the kernel at most MISS_CHECKS_PER_SEC times per pid in this long. */
#define MAPS_REFRESH_MS 1000
#define MISS_CHECKS_PER_SEC 4
/*
 * The image a process had before its exec names addresses outside the new
 * one this long: its samples taken before the exec are drained after the
 * exec event (the next drain, late on a loaded host), and a shell's
 * fork-and-exec puts a few of them into every new process.
 */
#define PREV_IMAGE_MS 10000
#define PREV_IMAGES SYMBOLIZER_PREV_IMAGES
/* A file we could not open (process gone, EACCES) is retried after this. */
#define OPEN_RETRY_MS 5000
#define GONE_RETRY_MS 100
#define KALLSYMS_REFRESH_MS 10000
/* A JIT frame the perf map does not name yet re-reads its growth at most this often. */
#define PERFMAP_REFRESH_MS 1000
/* Read times within a 1 s drain vary: "due at the next drain" needs this much slack. */
#define PERFMAP_SLACK_MS 200
/* A process without a perf map is looked at again after 1, 2, 4 ... up to this many ms. */
#define PERFMAP_ABSENT_MAX_MS 32000
#define MAX_STATUS_BYTES (64u << 10)
#define MAX_VDSO_BYTES (1u << 20)
/*
 * Debug files are checksummed whole for .gnu_debuglink, on the drain loop:
 * beyond this size we do not try, and at most this many bytes a second are
 * checksummed (about 50 ms); a file found over that waits a second, its
 * frames unnamed meanwhile. Build-id lookups need no checksum.
 */
#define MAX_DEBUG_FILE_BYTES (64ull << 20)
#define CRC_BYTES_PER_SEC (64ull << 20)
#define CRC_RETRY_MS 1000
#define NAME_BUF 4096
/*
 * Demangling a long C++ name takes microseconds; a drain sees the same hot
 * functions over and over. Direct-mapped, keyed by (file load, symbol).
 */
#define DEMANGLE_SLOTS 4096
/*
 * Files at least this big have their symbols read on the worker thread;
 * their frames are named once the read is in. libLLVM's (110 MB) took
 * 1.1-4.4 s of a loop turn at load 13-18, and even files under 2 MiB up
 * to 224 ms (the loop waits for a CPU as well): libstdc++'s (2.2 MB) reads
 * in 33 ms of CPU, libc's (1.9 MB) in 11 ms, ld.so's (240 KB) in about 1.
 */
#define DEFAULT_ASYNC_BYTES (256u << 10)
/* Files read on the worker whose frames can still ask for their name: the last this many. */
#define LANDED 256

struct lru {
	struct lru *prev, *next;
};

struct file_ent {
	struct lru lru;
	uint64_t dev, ino;
	uint64_t id;          /* unique per load: keys the demangle cache */
	struct elfsym *es;    /* NULL: negative entry */
	size_t bytes;         /* heap held by es (counted in file_bytes) */
	int64_t retry_at_ms;  /* negative entries: when to try again (INT64_MAX: never) */
	/*
	 * The inode's size and mtime when es was read (have_stat): a file
	 * rewritten in place keeps its key but not these.
	 */
	bool have_stat;
	uint64_t size;
	int64_t mtime_ns;
	/*
	 * Its symbols are being read on the worker (es NULL until then); what
	 * the debug-file search needs then, taken while the process ran: its
	 * root (or -1), its pid and the mapping's path.
	 */
	bool loading;
	int load_root;
	uint32_t load_pid;
	char *load_path;
	int64_t load_ns;
};

struct pid_ent {
	struct lru lru;
	uint32_t pid;
	uint32_t nspid;        /* pid inside its own namespace: names the perf map; 0 until read */
	struct procmaps *maps; /* NULL when maps could not be read */
	/*
	 * Forked, not exec'd: maps are its parent's (shared, counted with the
	 * parent), until a read of its own. An address outside them in a child
	 * that is gone is looked up in the parent's, as the parent maps now.
	 */
	uint32_t ppid;
	int64_t miss_ms;       /* start of the current second of miss checks */
	uint32_t miss_n;       /* misses checked with the kernel in it */
	int64_t kid_ms;        /* the same for misses of its forked children */
	uint32_t kid_n;
	bool exited;           /* process events said so: the kernel has nothing more to tell */
	/* The images before its last execs, newest first (a forked child's: its parent's), until prev_until_ms. */
	struct procmaps *prev[PREV_IMAGES];
	int64_t prev_until_ms;
	struct perfmap *pm;    /* NULL until a JIT frame asks */
	int64_t pm_read_ms;
	uint32_t pm_wait_ms;   /* no perf map last time: wait this long before looking again */
	uint32_t uid;          /* real uid at capture; set with root */
	struct root *root;     /* pinned at capture: finds the perf map once /proc forgot the process */
	bool pm_tried;
	bool pinned;           /* root and uid were asked for (once: it costs a status read) */
	bool gone;             /* /proc has no process or only its zombie: nothing new will be mapped */
	bool over;             /* its mappings are over the per-process share: not read again until exec */
	bool pm_capped;        /* its perf map reached the per-process share (counted once) */
	size_t bytes;          /* heap held (counted in pid_bytes) */
	/*
	 * Mappings whose file, as this process reaches it, is not the file the
	 * kernel mapped (a bind mount in its namespace, a FIFO, another inode):
	 * never cached under the mapping's key, never opened again for it.
	 */
	struct { uint64_t dev, ino; } refused[REFUSED_KEYS];
	uint32_t nrefused;
};

/*
 * A process's root directory, opened at capture and shared by every cached
 * process with the same one. A JIT process whose samples are drained after
 * it exited has no /proc/PID/root any more, and its perf map is still in its
 * own /tmp. The key is the mount as well as the directory: a service with a
 * private /tmp has the host's root directory in a mount namespace of its
 * own, with another /tmp.
 */
struct root {
	struct root *next;
	uint64_t mnt_id, dev, ino;
	int fd;
	uint32_t refs;
};

struct symbolizer {
	int proc_fd;
	int debug_fd; /* the host's debug root, or -1 */
	char *kallsyms_path;
	size_t max_files, max_pids, max_file_bytes;
	size_t file_bytes, pid_bytes;
	size_t cache_memory, file_cap, pid_cap;
	int64_t crc_ms;     /* start of the current second of debug-file checksums */
	uint64_t crc_bytes; /* bytes checksummed in it */
	struct file_ent none; /* what a refused mapping resolves to: no symbols */
	bool no_query; /* the kernel cannot answer PROCMAP_QUERY: a miss re-reads maps */

	struct filecache *fc; /* files by (dev, inode): ours hang off its entries in slot fslot */
	bool own_fc;
	int fslot;
	size_t nfiles;
	struct lru flru;

	struct procreg *reg;  /* what is kept per process hangs off its record, in slot pslot */
	bool own_reg;
	int pslot;
	size_t npids;
	struct lru plru;
	struct root *roots;

	struct kallsyms *ks;
	int64_t ks_read_ms;
	bool ks_tried;

	void (*bad_file)(void *arg, uint32_t pid, const char *path, int err);
	void *bad_file_arg;
	void (*maps_read)(void *arg, uint32_t pid);

	struct dm_slot {
		uint64_t file_id, addr;
		char *name;   /* NULL with file_id set: demangling failed, the mangled name stands */
	} *dm;
	uint64_t next_file_id;

	struct symload *sl;   /* NULL: every file is read in the caller's thread */
	uint64_t async_bytes;
	struct file_ent *loading[SYMLOAD_MAX_JOBS]; /* files whose read is on the worker */
	struct { uint64_t id, dev, ino; } landed[LANDED];
	unsigned nlanded;

	struct symbolizer_stats st;
	char *modbuf;
	size_t modcap;
	char namebuf[NAME_BUF];
};

#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

static void lru_init(struct lru *h)
{
	h->prev = h->next = h;
}

static void lru_del(struct lru *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
}

static void lru_push_front(struct lru *h, struct lru *n)
{
	n->next = h->next;
	n->prev = h;
	h->next->prev = n;
	h->next = n;
}

static size_t hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return (size_t)x;
}

static void pid_remove(struct symbolizer *s, struct pid_ent *p);
static void file_remove(struct symbolizer *s, struct file_ent *f);
static void pid_dropped(uint32_t pid, void *data, void *arg);

int symbolizer__new(const struct symbolizer_opts *o, struct symbolizer **out)
{
	struct symbolizer *s;
	const char *proc_root = o && o->proc_root ? o->proc_root : "/proc";
	int err = 0;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->proc_fd = -1;
	s->debug_fd = -1;
	lru_init(&s->flru);
	lru_init(&s->plru);
	s->max_files = o && o->max_files ? o->max_files : DEFAULT_MAX_FILES;
	s->max_pids = o && o->max_pids ? o->max_pids : DEFAULT_MAX_PIDS;
	s->max_file_bytes = o && o->max_file_bytes ? o->max_file_bytes : DEFAULT_MAX_FILE_BYTES;
	s->cache_memory = o && o->cache_memory ? o->cache_memory : DEFAULT_CACHE_MEMORY;
	s->file_cap = s->cache_memory / FILE_SHARE;
	s->pid_cap = s->cache_memory / PID_SHARE;
	if (o) {
		s->bad_file = o->bad_file;
		s->bad_file_arg = o->bad_file_arg;
		s->maps_read = o->maps_read;
	}
	s->kallsyms_path = strdup(o && o->kallsyms ? o->kallsyms : "/proc/kallsyms");
	s->dm = calloc(DEMANGLE_SLOTS, sizeof(*s->dm));
	if (!s->kallsyms_path || !s->dm) {
		err = -ENOMEM;
		goto out;
	}
	s->async_bytes = o && o->async_bytes ? o->async_bytes : DEFAULT_ASYNC_BYTES;
	/* What waits to land is bounded as one file is: its share of the budget. */
	if (s->async_bytes != SIZE_MAX && (err = symload__new(s->file_cap, &s->sl)))
		goto out;
	s->fc = o ? o->files : NULL;
	s->reg = o ? o->registry : NULL;
	s->own_fc = !s->fc;
	s->own_reg = !s->reg;
	if ((s->own_fc && (err = filecache__new(&s->fc))) ||
	    (s->own_reg && (err = procreg__new(0, 0, &s->reg))))
		goto out;
	s->fslot = filecache__slot(s->fc, NULL, NULL);
	s->pslot = procreg__slot(s->reg, pid_dropped, s);
	if (s->fslot < 0 || s->pslot < 0) {
		err = -ENOSPC;
		goto out;
	}
	s->proc_fd = open(proc_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->proc_fd < 0) {
		err = -errno;
		goto out;
	}
	/* No debug root is fine: binaries then name what their own tables hold. */
	s->debug_fd = open(o && o->debug_root ? o->debug_root : "/usr/lib/debug",
			   O_PATH | O_DIRECTORY | O_CLOEXEC);
	*out = s;
	s = NULL;
out:
	symbolizer__free(s);
	return err;
}

/* ---- process roots ---- */

static int root_key(int dirfd, const char *path, int flags, uint64_t key[3])
{
	struct statx stx;

	if (statx(dirfd, path, flags, STATX_INO | STATX_MNT_ID, &stx) < 0)
		return -errno;
	/* Without mount ids (before 5.8) two mount namespaces would share a key. */
	if (!(stx.stx_mask & STATX_MNT_ID))
		return -EOPNOTSUPP;
	key[0] = stx.stx_mnt_id;
	key[1] = makedev(stx.stx_dev_major, stx.stx_dev_minor);
	key[2] = stx.stx_ino;
	return 0;
}

static struct root *root_find(struct symbolizer *s, const uint64_t key[3])
{
	for (struct root *r = s->roots; r; r = r->next)
		if (r->mnt_id == key[0] && r->dev == key[1] && r->ino == key[2])
			return r;
	return NULL;
}

/*
 * Mount ids are reused once a mount is gone, but a pinned root holds its
 * mount: while it is in the list, no other mount has its id.
 */
static int root_pin(struct symbolizer *s, uint32_t pid, const uint64_t *known, struct root **out)
{
	char path[32];
	uint64_t key[3];
	struct root *r = known && known[0] ? root_find(s, known) : NULL;
	int fd = -1, err = 0;

	if (r)
		goto found;
	snprintf(path, sizeof(path), "%u/root", pid);
	err = root_key(s->proc_fd, path, 0, key);
	if (err)
		return err;
	r = root_find(s, key);
	if (!r) {
		fd = openat(s->proc_fd, path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		/* It may have changed root since the statx: key what was opened. */
		err = root_key(fd, "", AT_EMPTY_PATH, key);
		if (err)
			goto out;
		r = root_find(s, key);
	}
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r) {
			err = -ENOMEM;
			goto out;
		}
		*r = (struct root){ .next = s->roots, .mnt_id = key[0], .dev = key[1], .ino = key[2], .fd = fd };
		s->roots = r;
		fd = -1;
	}
found:
	r->refs++;
	*out = r;
out:
	if (fd >= 0)
		close(fd);
	return err;
}

static void root_unpin(struct symbolizer *s, struct root *r)
{
	struct root **pp = &s->roots;

	if (!r || --r->refs)
		return;
	while (*pp != r)
		pp = &(*pp)->next;
	*pp = r->next;
	close(r->fd);
	free(r);
}

static void file_ent_free(struct file_ent *f)
{
	elfsym__free(f->es);
	if (f->loading && f->load_root >= 0)
		close(f->load_root);
	free(f->load_path);
	free(f);
}

static void pid_ent_free(struct symbolizer *s, struct pid_ent *p)
{
	lru_del(&p->lru);
	s->npids--;
	s->pid_bytes -= p->bytes;
	root_unpin(s, p->root);
	perfmap__free(p->pm);
	procmaps__free(p->maps);
	for (int i = 0; i < PREV_IMAGES; i++)
		procmaps__free(p->prev[i]);
	free(p);
}

void symbolizer__free(struct symbolizer *s)
{
	if (!s)
		return;
	/* First: a read under way ends before the files it would land in go. */
	symload__free(s->sl);
	s->sl = NULL;
	while (s->nfiles)
		file_remove(s, container_of(s->flru.prev, struct file_ent, lru));
	if (s->own_fc)
		filecache__free(s->fc);
	while (s->npids)
		pid_remove(s, container_of(s->plru.prev, struct pid_ent, lru));
	if (s->own_reg)
		procreg__free(s->reg);
	for (size_t i = 0; s->dm && i < DEMANGLE_SLOTS; i++)
		free(s->dm[i].name);
	free(s->dm);
	kallsyms__free(s->ks);
	free(s->kallsyms_path);
	free(s->modbuf);
	if (s->proc_fd >= 0)
		close(s->proc_fd);
	if (s->debug_fd >= 0)
		close(s->debug_fd);
	free(s);
}

/* ---- process mapping tables ---- */

static struct pid_ent *pid_find(const struct symbolizer *s, uint32_t pid)
{
	return procreg__data(s->reg, pid, s->pslot);
}

/* Evicted here: the registry keeps the record only for what else hangs off it. */
static void pid_remove(struct symbolizer *s, struct pid_ent *p)
{
	uint32_t pid = p->pid;

	pid_ent_free(s, p);
	procreg__detach(s->reg, pid, s->pslot);
}

/* The registry forgot the process, or a new image starts under its pid. */
static void pid_dropped(uint32_t pid, void *data, void *arg)
{
	(void)pid;
	pid_ent_free(arg, data);
}

/* Its mappings or perf map changed: what it holds now. */
static void pid_account(struct symbolizer *s, struct pid_ent *p)
{
	size_t b = sizeof(*p) + (p->maps && !p->ppid ? procmaps__mem_bytes(p->maps) : 0) +
		   (p->pm ? perfmap__mem_bytes(p->pm) : 0);

	s->pid_bytes = s->pid_bytes - p->bytes + b;
	p->bytes = b;
}

/*
 * Everything cached within one budget: the least recently used files go
 * first (they are re-read from disk), then the least recently used
 * processes (their mappings are read again). keep_f and keep_p stay.
 */
static void budget_enforce(struct symbolizer *s, const struct file_ent *keep_f, const struct pid_ent *keep_p)
{
	while (s->file_bytes + s->pid_bytes > s->cache_memory) {
		struct file_ent *f = s->nfiles ? container_of(s->flru.prev, struct file_ent, lru) : NULL;
		struct pid_ent *p = s->npids ? container_of(s->plru.prev, struct pid_ent, lru) : NULL;

		if (f && f != keep_f && f->bytes) {
			file_remove(s, f);
			s->st.file_evictions++;
		} else if (p && p != keep_p) {
			pid_remove(s, p);
			s->st.pid_evictions++;
		} else {
			break;
		}
	}
}

/* /proc lost the process, or shows its zombie: its samples are still to be named. */
static void pid_gone(struct pid_ent *p)
{
	if (p->gone)
		return;
	p->gone = true;
	/* Its perf map is complete now: the next JIT frame reads it once more, whatever the wait. */
	p->pm_tried = false;
}

static void maps_check(struct symbolizer *s, const struct pid_ent *p);

static void pid_read_maps(struct symbolizer *s, struct pid_ent *p)
{
	struct procmaps *m = NULL;
	int err;

	if (p->over)
		return;
	s->st.maps_reads++;
	if (s->maps_read)
		s->maps_read(s->bad_file_arg, p->pid);
	err = procmaps__read_at_max(s->proc_fd, p->pid, s->pid_cap, &m);
	if (err == -ENOENT || err == -ESRCH)
		pid_gone(p);
	if (err == -EFBIG) {
		/* Its frames stay unnamed; the other processes keep their share. */
		p->over = true;
		s->st.pids_refused++;
		procmaps__free(p->maps);
		p->maps = NULL;
	}
	if (err)
		return;
	/*
	 * An exiting process (a zombie until reaped) shows no mappings: keep
	 * what was captured while it ran, its samples are still to be named.
	 */
	if (p->maps && !procmaps__count(m) && procmaps__count(p->maps)) {
		procmaps__free(m);
		pid_gone(p);
	} else {
		procmaps__free(p->maps);
		p->maps = m;
		p->ppid = 0;
		p->gone = false;
		p->exited = false; /* a pid in use again (forked, not exec'd: no event says so) */
		maps_check(s, p);
	}
}

/* Mappings the caller read (process events): the same as a read of /proc would give. */
static void pid_set_maps(struct pid_ent *p, struct procmaps *m)
{
	procmaps__free(p->maps);
	p->maps = procmaps__ref(m);
	p->ppid = 0;
	p->gone = false;
	p->exited = false;
}

/* given: mappings the caller read; NULL: read them now. */
static void pid_load_maps(struct symbolizer *s, struct pid_ent *p, struct procmaps *given)
{
	if (given) {
		pid_set_maps(p, given);
		maps_check(s, p);
	} else
		pid_read_maps(s, p);
	pid_account(s, p);
	budget_enforce(s, NULL, p);
}

/* given: mappings for a pid not known yet; NULL: read them. */
static int pid_get_maps(struct symbolizer *s, uint32_t pid, struct procmaps *given, struct pid_ent **out)
{
	struct pid_ent *p = pid_find(s, pid);
	int err;

	if (p) {
		s->st.pid_hits++;
		lru_del(&p->lru);
		lru_push_front(&s->plru, &p->lru);
		*out = p;
		return 0;
	}
	s->st.pid_misses++;
	if (s->npids >= s->max_pids) {
		pid_remove(s, container_of(s->plru.prev, struct pid_ent, lru));
		s->st.pid_evictions++;
	}
	err = procreg__touch(s->reg, pid);
	if (err)
		return err == -ENOSPC ? -ENOMEM : err;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->pid = pid;
	procreg__set_data(s->reg, pid, s->pslot, p);
	lru_push_front(&s->plru, &p->lru);
	s->npids++;
	pid_load_maps(s, p, given);
	*out = p;
	return 0;
}

static int pid_get(struct symbolizer *s, uint32_t pid, struct pid_ent **out)
{
	return pid_get_maps(s, pid, NULL, out);
}

void symbolizer__exited(struct symbolizer *s, uint32_t pid)
{
	struct pid_ent *p = pid_find(s, pid);

	if (p) {
		pid_gone(p);
		p->exited = true;
	}
}

void symbolizer__forget_pid(struct symbolizer *s, uint32_t pid)
{
	struct pid_ent *p = pid_find(s, pid);

	if (p)
		pid_remove(s, p);
}

static void pid_pin(struct symbolizer *s, struct pid_ent *p, const struct procreg_ids *ids);

int symbolizer__fork(struct symbolizer *s, uint32_t ppid, uint32_t pid,
		     const struct procreg_ids *ids, struct procmaps *maps)
{
	struct pid_ent *p;
	int err;

	if (!maps || ppid == pid)
		return -EINVAL;
	symbolizer__forget_pid(s, pid);
	err = pid_get_maps(s, pid, maps, &p);
	if (err)
		return err;
	p->ppid = ppid;
	pid_account(s, p);
	pid_pin(s, p, ids && ids->nspid ? ids : NULL);
	return 0;
}

/* ---- ELF files ---- */

static void file_remove(struct symbolizer *s, struct file_ent *f)
{
	/* A read under way lands nowhere: its result is dropped when it comes. */
	for (unsigned i = 0; f->loading && i < SYMLOAD_MAX_JOBS; i++)
		if (s->loading[i] == f)
			s->loading[i] = NULL;
	filecache__set(s->fc, f->dev, f->ino, s->fslot, NULL);
	lru_del(&f->lru);
	s->nfiles--;
	s->file_bytes -= f->bytes;
	file_ent_free(f);
}

/*
 * A file a process names, never opened for reading unless it is a regular
 * file, and not on a FUSE mount (whose server, any user, can stall a read
 * for ever). -EINVAL: refused for what it is.
 */
static int open_untrusted(struct symbolizer *s, int dirfd, const char *path, int flags, struct stat *st)
{
	int fd = safeopen__regular(dirfd, path, flags | SAFEOPEN_NO_FUSE, st);

	if (fd == -EINVAL)
		s->st.nonregular_refused++;
	return fd;
}

/* The path is the process's view: resolve it, symlinks included, inside its root. */
static int open_in_root(struct symbolizer *s, int rootfd, const char *path)
{
	return open_untrusted(s, rootfd, path, SAFEOPEN_IN_ROOT, NULL);
}

/*
 * map_files reaches the very file mapped, even deleted or in another mount
 * namespace; it needs CAP_SYS_ADMIN. The path through the process's root is
 * the fallback, never for a deleted file (the path names another file now).
 */
static int open_mapped(struct symbolizer *s, uint32_t pid, const struct procmap *m)
{
	char path[96];
	struct stat st;
	int fd, rootfd;

	snprintf(path, sizeof(path), "%u/map_files/%llx-%llx", pid, (unsigned long long)m->start,
		 (unsigned long long)m->end);
	fd = open_untrusted(s, s->proc_fd, path, 0, &st);
	/*
	 * The kernel's own file of the mapping: only the inode is compared (btrfs
	 * reports a subvolume's device to stat, the superblock's to maps).
	 */
	if (fd >= 0 && (uint64_t)st.st_ino == m->inode)
		return fd;
	if (fd >= 0 || fd == -EINVAL)
		goto refuse;
	if ((m->flags & PROCMAP_DELETED) || !m->path || m->path[0] != '/')
		return fd;
	snprintf(path, sizeof(path), "%u/root", pid);
	rootfd = openat(s->proc_fd, path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return -errno;
	fd = open_untrusted(s, rootfd, m->path, SAFEOPEN_IN_ROOT, &st);
	close(rootfd);
	/*
	 * The path is what the process sees now: a bind mount in its own
	 * namespace puts any file there. Only the very file mapped is read.
	 */
	if (fd >= 0 && (uint64_t)st.st_dev == m->dev && (uint64_t)st.st_ino == m->inode)
		return fd;
	if (fd < 0 && fd != -EINVAL)
		return fd;
refuse:
	if (fd >= 0) {
		close(fd);
		s->st.files_mismatched++;
	}
	return -ESTALE;
}

/*
 * profd's own vdso: the kernel maps one image per ABI into every process, so
 * a process gone before its vdso was read is named from ours when the sizes
 * agree (a 32-bit process's image differs in size and is not).
 */
static int read_own_vdso(struct symbolizer *s, size_t len, struct elfsym **es)
{
	uint64_t base = getauxval(AT_SYSINFO_EHDR);
	const struct procmap *m;
	struct procmaps *own;
	int err = -ENOENT;

	if (!base || procmaps__read_at(s->proc_fd, (uint32_t)getpid(), &own))
		return -ENOENT;
	m = procmaps__find(own, base);
	if (m && (m->flags & PROCMAP_VDSO) && m->start == base && m->end - m->start == len)
		err = elfsym__open_mem((const void *)(uintptr_t)base, len, es);
	procmaps__free(own);
	return err;
}

/*
 * A process can rewrite its own vdso, and the cache is shared: only our own
 * image names it. A vdso of another size (a 32-bit process) is refused.
 */
static int read_vdso(struct symbolizer *s, const struct procmap *m, struct elfsym **es)
{
	size_t len = m->end - m->start;

	if (len > MAX_VDSO_BYTES)
		return -EFBIG;
	return read_own_vdso(s, len, es) ? -ESTALE : 0;
}

static bool is_bad_file_error(int err)
{
	return err == -EINVAL || err == -ENOEXEC || err == -EFBIG;
}

static int open_root(struct symbolizer *s, uint32_t pid)
{
	char path[32];
	int fd;

	snprintf(path, sizeof(path), "%u/root", pid);
	fd = openat(s->proc_fd, path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* Opens a candidate debug file and keeps it only if it is the one asked for. */
static int try_debug_file(struct symbolizer *s, int fd, const uint8_t *id, size_t idlen, const uint32_t *crc,
			  struct elfsym **out)
{
	struct elfsym *d = NULL;
	const uint8_t *did;
	uint32_t c;
	int err;

	if (fd < 0)
		return fd;
	if (crc) {
		struct stat st;
		int64_t now = clock__mono_ms();

		if (now - s->crc_ms >= 1000) {
			s->crc_ms = now;
			s->crc_bytes = 0;
		}
		if (fstat(fd, &st) < 0) {
			err = -errno;
			goto out;
		}
		if ((uint64_t)st.st_size <= MAX_DEBUG_FILE_BYTES &&
		    s->crc_bytes + (uint64_t)st.st_size > CRC_BYTES_PER_SEC) {
			s->st.debug_deferred++;
			err = -EAGAIN;
			goto out;
		}
		s->crc_bytes += (uint64_t)st.st_size;
		err = elfsym__crc32_fd(fd, MAX_DEBUG_FILE_BYTES, &c);
		if (!err && c != *crc)
			err = -ESTALE;
		if (err)
			goto out;
	}
	err = elfsym__open_fd_max(fd, s->file_cap, &d);
	if (err)
		goto out;
	if (idlen && (elfsym__build_id(d, &did) != idlen || memcmp(did, id, idlen))) {
		err = -ESTALE;
		goto out;
	}
	*out = d;
	d = NULL;
out:
	elfsym__free(d);
	close(fd);
	return err;
}

static int open_host_debug(struct symbolizer *s, const char *rel)
{
	int fd;

	if (s->debug_fd < 0)
		return -ENOENT;
	/* The host's debug root is trusted (root-owned); its build-id links are symlinks on Fedora. */
	fd = open_untrusted(s, s->debug_fd, rel, 0, NULL);
	return fd;
}

/*
 * Separate debug info for a binary without .symtab: by build-id in the
 * host's debug root then the process's, then by .gnu_debuglink next to the
 * binary, in its .debug/ and under the debug roots (gdb's order). Only a
 * file with the same build-id or the recorded CRC is accepted, and debug
 * files' own links are never followed: no loops.
 */
static int find_debug(struct symbolizer *s, uint32_t pid, int given_root, const char *mpath,
		      const struct elfsym *es, struct elfsym **out)
{
	char rel[PATH_MAX + 64], dir[PATH_MAX];
	const uint8_t *id;
	size_t idlen = elfsym__build_id(es, &id);
	const char *link, *slash;
	uint32_t crc;
	int rootfd = given_root, err = -ENOENT;

	if (idlen >= 2) {
		int o = snprintf(rel, sizeof(rel), ".build-id/%02x/", id[0]);

		for (size_t i = 1; i < idlen; i++)
			o += snprintf(rel + o, sizeof(rel) - (size_t)o, "%02x", id[i]);
		snprintf(rel + o, sizeof(rel) - (size_t)o, ".debug");
		err = try_debug_file(s, open_host_debug(s, rel), id, idlen, NULL, out);
		if (!err || err == -ENOMEM || err == -EAGAIN)
			goto out;
		if (rootfd < 0 && pid)
			rootfd = open_root(s, pid);
		if (rootfd >= 0) {
			char path[PATH_MAX + 80];

			snprintf(path, sizeof(path), "/usr/lib/debug/%s", rel);
			err = try_debug_file(s, open_in_root(s, rootfd, path), id, idlen, NULL, out);
			if (!err || err == -ENOMEM || err == -EAGAIN)
				goto out;
		}
	}
	link = elfsym__debuglink(es, &crc);
	if (!link || !mpath || mpath[0] != '/')
		goto out;
	slash = strrchr(mpath, '/');
	if ((size_t)(slash - mpath) >= sizeof(dir))
		goto out;
	memcpy(dir, mpath, (size_t)(slash - mpath));
	dir[slash - mpath] = 0;
	if (rootfd < 0 && pid)
		rootfd = open_root(s, pid);
	if (rootfd >= 0) {
		static const char *const fmts[] = { "%s/%s", "%s/.debug/%s", "/usr/lib/debug%s/%s" };

		for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
			if (snprintf(rel, sizeof(rel), fmts[i], dir, link) >= (int)sizeof(rel))
				continue;
			/* A debuglink naming the binary itself cannot match its own CRC; skip the read. */
			if (!strcmp(rel, mpath))
				continue;
			err = try_debug_file(s, open_in_root(s, rootfd, rel), NULL, 0, &crc, out);
			if (!err || err == -ENOMEM || err == -EAGAIN)
				goto out;
		}
	}
	if (snprintf(rel, sizeof(rel), "%s%s%s", dir[0] ? dir + 1 : "", dir[0] ? "/" : "", link) < (int)sizeof(rel))
		err = try_debug_file(s, open_host_debug(s, rel), NULL, 0, &crc, out);
out:
	if (rootfd >= 0 && rootfd != given_root)
		close(rootfd);
	return err;
}

/*
 * A file without .symtab gets its separate debug file's symbols.
 * rootfd: the process's root (or -1: opened from pid when needed, pid 0:
 * not at all). *es is freed on -EAGAIN and -ENOMEM.
 */
static int add_debug(struct symbolizer *s, uint32_t pid, int rootfd, const char *path, struct elfsym **es)
{
	struct elfsym *d = NULL;
	int err;

	if (elfsym__has_full_symtab(*es))
		return 0;
	err = find_debug(s, pid, rootfd, path, *es, &d);
	if (err == -EAGAIN) {
		elfsym__free(*es);
		*es = NULL;
		return err;
	}
	if (!err) {
		/* A failed merge leaves what fitted: still better than .dynsym alone. */
		err = elfsym__merge(*es, d);
		elfsym__free(d);
		if (err == -ENOMEM) {
			elfsym__free(*es);
			*es = NULL;
			return err;
		}
	}
	return 0;
}

/*
 * Reads the file's symbols into *es, or hands a big file's read to the
 * worker under id (*queued set, *es NULL; *rootfd the process's root for
 * the debug-file search when it lands, or -1).
 */
static int load_file(struct symbolizer *s, uint32_t pid, const struct procmap *m, uint64_t id,
		     struct elfsym **es, struct stat *st, bool *queued, int *rootfd)
{
	int64_t t0;
	int fd, err;

	*queued = false;
	if (m->flags & PROCMAP_VDSO)
		return read_vdso(s, m, es);
	fd = open_mapped(s, pid, m);
	if (fd < 0)
		return fd;
	if (fstat(fd, st))
		memset(st, 0, sizeof(*st));
	if (s->sl && (uint64_t)st->st_size >= s->async_bytes) {
		if (symload__pending(s->sl) >= SYMLOAD_MAX_JOBS) {
			/* A burst of new big files: the loop reads this one, as it did every one. */
			s->st.loads_inline_full++;
		} else if (symload__submit(s->sl, fd, s->file_cap, id) == 0) {
			*queued = true;
			*rootfd = open_root(s, pid);
			return 0;
		}
	}
	t0 = clock__mono_ns();
	err = elfsym__open_fd_max(fd, s->file_cap, es);
	t0 = clock__mono_ns() - t0;
	if ((uint64_t)t0 > s->st.read_inline_max_us * 1000)
		s->st.read_inline_max_us = (uint64_t)t0 / 1000;
	close(fd);
	if (err)
		return err;
	return add_debug(s, pid, -1, m->path, es);
}

static bool pid_refused(const struct pid_ent *p, uint64_t dev, uint64_t ino)
{
	for (uint32_t i = 0; i < p->nrefused && i < REFUSED_KEYS; i++)
		if (p->refused[i].dev == dev && p->refused[i].ino == ino)
			return true;
	return false;
}

static void pid_refuse(struct pid_ent *p, uint64_t dev, uint64_t ino)
{
	p->refused[p->nrefused++ % REFUSED_KEYS].dev = dev;
	p->refused[(p->nrefused - 1) % REFUSED_KEYS].ino = ino;
}

/*
 * The mapping's inode, by the size and mtime that came with the mappings,
 * was written after the file was read: rewritten in place (`cat new >
 * old`, an inode number reused after a delete). The key (device, inode)
 * stays. Only a newer write counts: an older process's mappings, drained
 * later, carry the figures of its exec, while the inode (and every
 * mapping of it) holds the new bytes; reading again for them would throw
 * the new file's names away, and a gone process's read would fail.
 */
static bool file_changed(const struct file_ent *f, const struct procmap *m)
{
	return f->have_stat && (m->flags & PROCMAP_STAT) &&
	       (m->mtime_ns > f->mtime_ns || (m->mtime_ns == f->mtime_ns && m->size != f->size));
}

/*
 * Mappings read from /proc carry no size or mtime: a cached file they name
 * is checked with a stat of the very file mapped, when they are read
 * (once per read, never per frame). Mappings from exec events, most of
 * them on a host that keeps starting processes, carry the kernel's figures.
 */
static void file_check(struct symbolizer *s, uint32_t pid, const struct procmap *m)
{
	struct file_ent *f = filecache__get(s->fc, m->dev, m->inode, s->fslot);
	struct procmap now = *m;
	char path[96];
	struct stat st;
	int fd, err;

	if (!f || !f->have_stat)
		return;
	/*
	 * The very file mapped, by one stat through map_files (no open: a read
	 * of a process's maps checks every file it names, and an open costs
	 * four system calls); without CAP_SYS_ADMIN, as a load would open it.
	 */
	snprintf(path, sizeof(path), "%u/map_files/%llx-%llx", pid, (unsigned long long)m->start,
		 (unsigned long long)m->end);
	err = fstatat(s->proc_fd, path, &st, 0) ? -errno : 0;
	if (err == -EPERM || err == -EACCES) {
		fd = open_mapped(s, pid, m);
		if (fd < 0)
			return;
		err = fstat(fd, &st);
		close(fd);
	}
	if (err || !S_ISREG(st.st_mode) || (uint64_t)st.st_ino != m->inode)
		return;
	now.flags |= PROCMAP_STAT;
	now.size = (uint64_t)st.st_size;
	now.mtime_ns = st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
	if (file_changed(f, &now)) {
		file_remove(s, f);
		s->st.files_changed++;
	}
}

static void maps_check(struct symbolizer *s, const struct pid_ent *p)
{
	for (size_t i = 0; p->maps && i < procmaps__count(p->maps); i++) {
		const struct procmap *m = procmaps__get(p->maps, i);

		if (m->path && !(m->flags & (PROCMAP_ANON | PROCMAP_VDSO | PROCMAP_STAT)))
			file_check(s, p->pid, m);
	}
}

/*
 * The read of f is in (es, or err): accounting, the bounds, and how soon
 * a failed read is tried again. pid and path name it to bad_file.
 */
static void file_set(struct symbolizer *s, struct file_ent *f, struct elfsym *es, int err,
		     const struct pid_ent *keep_p, uint32_t pid, const char *path)
{
	int64_t now;

	f->es = es;
	f->bytes = f->es ? elfsym__mem_bytes(f->es) : 0;
	s->file_bytes += f->bytes;
	/* Bytes bound the cache as well as the count: one libLLVM weighs as much as 200 small libraries. */
	while (s->file_bytes > s->max_file_bytes && s->flru.prev != &f->lru) {
		file_remove(s, container_of(s->flru.prev, struct file_ent, lru));
		s->st.file_evictions++;
	}
	budget_enforce(s, f, keep_p);
	now = clock__mono_ms();
	if (err == -ENOMEM) {
		f->retry_at_ms = now;
		return;
	}
	if (err) {
		f->es = NULL;
		if (is_bad_file_error(err)) {
			s->st.bad_files++;
			if (err == -EFBIG)
				s->st.files_refused++;
			f->retry_at_ms = INT64_MAX;
			if (s->bad_file)
				s->bad_file(s->bad_file_arg, pid, path ? path : "?", err);
		} else {
			/*
			 * ENOENT, ESRCH: the process went (its map_files with
			 * it), not the file: another process mapping it may open
			 * it soon, but not at every frame of the gone one's drain.
			 */
			f->retry_at_ms = now + (err == -ENOENT || err == -ESRCH ? GONE_RETRY_MS :
						err == -EAGAIN ? CRC_RETRY_MS : OPEN_RETRY_MS);
		}
	}
}

/* Reads finished on the worker land in their files (those still cached). */
static void loads_collect(struct symbolizer *s)
{
	struct symload_done d;

	while (s->sl && symload__take(s->sl, &d)) {
		struct file_ent *f = NULL;
		int64_t ms;
		int err = d.err;

		for (unsigned i = 0; !f && i < SYMLOAD_MAX_JOBS; i++) {
			if (s->loading[i] && s->loading[i]->id == d.key) {
				f = s->loading[i];
				s->loading[i] = NULL;
			}
		}
		if (!f) {
			elfsym__free(d.es); /* evicted or rewritten meanwhile */
			continue;
		}
		f->loading = false;
		ms = (clock__mono_ns() - f->load_ns) / 1000000;
		if ((uint64_t)ms > s->st.load_async_max_ms)
			s->st.load_async_max_ms = (uint64_t)ms;
		/* The debug-file search through the root taken at the start: the process may be gone. */
		if (!err)
			err = add_debug(s, 0, f->load_root, f->load_path, &d.es);
		if (f->load_root >= 0)
			close(f->load_root);
		f->load_root = -1;
		file_set(s, f, err ? NULL : d.es, err, NULL, f->load_pid, f->load_path);
		if (err)
			elfsym__free(d.es);
		free(f->load_path);
		f->load_path = NULL;
		s->landed[s->nlanded++ % LANDED] = (typeof(s->landed[0])){ f->id, f->dev, f->ino };
	}
}

/*
 * Returns the cached file (es may be NULL for a file that cannot be read,
 * or one whose read is on the worker: loading), s->none for a mapping this
 * process cannot show us (nothing is cached under its key then), or NULL
 * on ENOMEM.
 */
static struct file_ent *file_get(struct symbolizer *s, struct pid_ent *p, const struct procmap *m)
{
	/* The vdso has no inode; its size tells a 32-bit process's image from a 64-bit one. */
	uint64_t dev = m->flags & PROCMAP_VDSO ? 0 : m->dev;
	uint64_t ino = m->flags & PROCMAP_VDSO ? m->end - m->start : m->inode;
	struct file_ent *f = filecache__get(s->fc, dev, ino, s->fslot);
	struct elfsym *es = NULL;
	struct stat st = { 0 };
	uint64_t id;
	bool queued;
	int err, rootfd = -1;

	if (f && file_changed(f, m)) {
		file_remove(s, f);
		s->st.files_changed++;
		f = NULL;
	}
	if (f && (f->es || f->loading || clock__mono_ms() < f->retry_at_ms)) {
		s->st.file_hits++;
		lru_del(&f->lru);
		lru_push_front(&s->flru, &f->lru);
		return f;
	}
	if (pid_refused(p, dev, ino))
		return &s->none;
	s->st.file_misses++;
	id = ++s->next_file_id;
	err = load_file(s, p->pid, m, id, &es, &st, &queued, &rootfd);
	if (err == -ESTALE) {
		/* Not the file mapped, as this process shows it: the key stays as it was for everyone else. */
		pid_refuse(p, dev, ino);
		s->st.files_refused_pid++;
		return &s->none;
	}
	f = filecache__get(s->fc, dev, ino, s->fslot);
	if (!f) {
		if (s->nfiles >= s->max_files) {
			file_remove(s, container_of(s->flru.prev, struct file_ent, lru));
			s->st.file_evictions++;
		}
		f = calloc(1, sizeof(*f));
		if (!f || filecache__set(s->fc, dev, ino, s->fslot, f)) {
			free(f);
			elfsym__free(es);
			if (rootfd >= 0)
				close(rootfd);
			/* A queued read lands nowhere (no file has its id). */
			return NULL;
		}
		f->dev = dev;
		f->ino = ino;
		f->load_root = -1;
		lru_push_front(&s->flru, &f->lru);
		s->nfiles++;
	} else {
		lru_del(&f->lru);
		lru_push_front(&s->flru, &f->lru);
	}
	f->have_stat = st.st_ino != 0;
	f->size = (uint64_t)st.st_size;
	f->mtime_ns = st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
	f->id = id;
	if (queued) {
		/* A slot is free: the worker holds fewer than SYMLOAD_MAX_JOBS reads, each in one slot. */
		for (unsigned i = 0; i < SYMLOAD_MAX_JOBS; i++) {
			if (!s->loading[i]) {
				s->loading[i] = f;
				break;
			}
		}
		f->loading = true;
		f->load_root = rootfd;
		f->load_pid = p->pid;
		f->load_path = m->path ? strdup(m->path) : NULL;
		f->load_ns = clock__mono_ns();
		f->retry_at_ms = 0;
		s->st.loads_async++;
		return f;
	}
	file_set(s, f, es, err, p, p->pid, m->path);
	return f;
}

static int parse_u32(const char *s, const char **end, uint32_t *v)
{
	uint64_t x = 0;
	const char *p = s;

	while (*p >= '0' && *p <= '9') {
		x = x * 10 + (uint64_t)(*p++ - '0');
		if (x > UINT32_MAX)
			return -EINVAL;
	}
	if (p == s)
		return -EINVAL;
	*end = p;
	*v = (uint32_t)x;
	return 0;
}

/* Real uid and innermost-namespace pid from /proc/<pid>/status. */
static int read_status(struct symbolizer *s, uint32_t pid, uint32_t *uid, uint32_t *nspid)
{
	char path[32], *buf = NULL, *line;
	const char *end;
	size_t len;
	bool have_uid = false;
	int err;

	snprintf(path, sizeof(path), "%u/status", pid);
	err = procmaps__read_file(s->proc_fd, path, O_NOFOLLOW, MAX_STATUS_BYTES, &buf, &len);
	if (err)
		return err;
	*nspid = pid; /* kernels before 4.1 have no NSpid: no pid namespaces to speak of */
	for (line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		if (!strncmp(line, "Uid:\t", 5)) {
			have_uid = parse_u32(line + 5, &end, uid) == 0;
		} else if (!strncmp(line, "NSpid:", 6)) {
			const char *p = line + 6;
			uint32_t v;

			/* The last field is the pid as the process's own namespace sees it. */
			while (*p == '\t' || *p == ' ') {
				while (*p == '\t' || *p == ' ')
					p++;
				if (parse_u32(p, &end, &v))
					break;
				*nspid = v;
				p = end;
			}
		}
	}
	free(buf);
	return have_uid ? 0 : -EINVAL;
}

/*
 * What reading the perf map needs once /proc forgot the process, asked for
 * while it runs: its root, its pid in its own namespace and its real uid.
 */
static void pid_pin(struct symbolizer *s, struct pid_ent *p, const struct procreg_ids *ids)
{
	uint32_t uid, nspid;

	if (p->pinned)
		return;
	p->pinned = true;
	if (ids) {
		uid = ids->uid;
		nspid = ids->nspid;
	} else if (read_status(s, p->pid, &uid, &nspid)) {
		return;
	}
	p->nspid = nspid;
	if (root_pin(s, p->pid, ids ? ids->root : NULL, &p->root) == 0)
		p->uid = uid;
}

/*
 * (Re)reads the process's perf map. /tmp is world-writable, so a map is
 * believed only when the process's own (real) user owns it.
 */
static void perfmap_refresh(struct symbolizer *s, struct pid_ent *p)
{
	char path[48];
	struct stat st;
	uint32_t uid, nspid;
	int rootfd, fd;

	p->pm_tried = true;
	p->pm_read_ms = clock__mono_ms();
	/* The namespace pid never changes; the owner is checked against the uid of the moment, below. */
	if (!p->nspid && read_status(s, p->pid, &uid, &p->nspid))
		return;
	/* Exited, or a zombie (its root already released): the root pinned at capture. */
	rootfd = p->exited && p->root ? -ENOENT : open_root(s, p->pid);
	if (rootfd < 0 && !p->root)
		return;
	snprintf(path, sizeof(path), "/tmp/perf-%u.map", p->nspid);
	/*
	 * No symlinks at all: a planted link could point the owner check at any
	 * file. A FIFO or a device planted there is refused unopened.
	 */
	fd = open_untrusted(s, rootfd >= 0 ? rootfd : p->root->fd, path, SAFEOPEN_IN_ROOT | SAFEOPEN_NO_SYMLINKS, &st);
	if (rootfd >= 0)
		close(rootfd);
	if (fd == -ELOOP || fd == -EINVAL)
		s->st.perfmaps_rejected++;
	/* Most processes with anonymous code never write a map: look again less and less often. */
	if (fd == -ENOENT && !p->pm)
		p->pm_wait_ms = p->pm_wait_ms ? (p->pm_wait_ms * 2 > PERFMAP_ABSENT_MAX_MS ? PERFMAP_ABSENT_MAX_MS :
						 p->pm_wait_ms * 2) : PERFMAP_REFRESH_MS;
	if (fd < 0)
		return;
	p->pm_wait_ms = 0;
	if (read_status(s, p->pid, &uid, &nspid)) {
		/* Gone from /proc: the uid it had when its root was pinned. */
		if (!p->root) {
			s->st.perfmaps_rejected++;
			goto out;
		}
		uid = p->uid;
	}
	if (st.st_uid != uid) {
		s->st.perfmaps_rejected++;
		goto out;
	}
	if (!p->pm && perfmap__new_max(s->file_cap, &p->pm))
		goto out;
	perfmap__update_fd(p->pm, fd);
	if (perfmap__full(p->pm) && !p->pm_capped) {
		p->pm_capped = true;
		s->st.perfmaps_capped++;
	}
	pid_account(s, p);
	budget_enforce(s, NULL, p);
out:
	close(fd);
}

static bool jit_lookup(struct symbolizer *s, struct pid_ent *p, uint64_t addr, const char **name)
{
	if (p->pm && perfmap__lookup(p->pm, addr, name, NULL) == 0)
		return true;
	/*
	 * Drains come every second; read times within a drain vary by tens of
	 * ms: without slack, "a second since the last read" fails at the next
	 * drain about half the time, and a process living a second or two is
	 * drained without its map.
	 */
	if (p->pm_tried && clock__mono_ms() - p->pm_read_ms + PERFMAP_SLACK_MS <
				   (p->pm_wait_ms > PERFMAP_REFRESH_MS ? p->pm_wait_ms : PERFMAP_REFRESH_MS))
		return false;
	perfmap_refresh(s, p);
	return p->pm && perfmap__lookup(p->pm, addr, name, NULL) == 0;
}

static const char *set_module(struct symbolizer *s, const char *path)
{
	size_t len = strlen(path) + 1;

	if (len > s->modcap) {
		char *nb = realloc(s->modbuf, len);

		if (!nb)
			return NULL;
		s->modbuf = nb;
		s->modcap = len;
	}
	memcpy(s->modbuf, path, len);
	return s->modbuf;
}

static const char *demangled(struct symbolizer *s, const struct file_ent *f, uint64_t start, const char *name)
{
	struct dm_slot *d;
	char *copy;

	if (name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return name;
	d = &s->dm[hash64(f->id * 0x9e3779b97f4a7c15ULL ^ start) & (DEMANGLE_SLOTS - 1)];
	if (d->file_id == f->id && d->addr == start)
		return d->name ? d->name : name;
	if (demangle(name, s->namebuf, sizeof(s->namebuf))) {
		/* A crafted name can make every attempt slow: the failure is remembered too. */
		free(d->name);
		*d = (struct dm_slot){ f->id, start, NULL };
		return name;
	}
	copy = strdup(s->namebuf);
	if (copy) {
		free(d->name);
		*d = (struct dm_slot){ f->id, start, copy };
	}
	return s->namebuf;
}

/*
 * An address outside every mapping we know: a mapping made since we read
 * them (dlopen, JIT) or, far more often, a garbage return address from a
 * frame-pointer walk through code built without frame pointers. The kernel
 * is asked about that one address first (PROCMAP_QUERY), so garbage costs an
 * ioctl per process and second instead of re-reading its maps and looking
 * for a perf map. *maybe_jit: a perf map may still name it (the kernel could
 * not tell us; a perf map can be ahead of the maps we hold).
 */
static const struct procmap *miss(struct symbolizer *s, struct pid_ent *p, uint64_t addr, bool kid,
				  bool *maybe_jit)
{
	int64_t now = clock__mono_ms(), *ms = kid ? &p->kid_ms : &p->miss_ms;
	uint32_t *n = kid ? &p->kid_n : &p->miss_n;
	int r;

	/* A process gone from /proc maps nothing new: only its perf map can name what the capture missed. */
	*maybe_jit = s->no_query || p->gone;
	if (p->exited)
		return NULL;
	/*
	 * A few checks a second: garbage from a frame-pointer walk through code
	 * without them costs at most that, and a JIT address that comes after
	 * garbage in the same drain is still checked (with one, it waited a
	 * drain or two: a second-long JIT process lost every name).
	 */
	if (now - *ms >= MAPS_REFRESH_MS) {
		*ms = now;
		*n = 0;
	}
	/* Gone: one check a window notices the pid in use again; more would find the same. */
	if (*n >= (p->gone ? 1 : MISS_CHECKS_PER_SEC))
		return NULL;
	(*n)++;
	s->st.miss_checks++;
	r = s->no_query ? -ENOTTY : procmaps__covers_exec(s->proc_fd, p->pid, addr);
	if (r == -ENOENT || r == -ESRCH) {
		pid_gone(p);
		*maybe_jit = true;
		return NULL;
	}
	if (r >= 0 && p->gone) {
		p->gone = false; /* the pid is in use again */
		*maybe_jit = s->no_query;
	}
	if (r == -ENOTTY)
		*maybe_jit = s->no_query = true;
	else if (r <= 0)
		return NULL;
	pid_read_maps(s, p);
	return p->maps ? procmaps__find(p->maps, addr) : NULL;
}

/*
 * A forked child gone from /proc, at an address outside the mappings it
 * shares: its parent mapped more before the fork than the parent's last
 * read shows (a prefork server's dlopen()). The parent, if it still runs,
 * is asked like for a miss of its own; the child then shares the new
 * read. *owner: whose entry opens the file (the child's map_files is gone).
 */
static const struct procmap *parent_miss(struct symbolizer *s, struct pid_ent *p, uint64_t addr,
					 struct pid_ent **owner)
{
	struct pid_ent *pp = p->ppid ? pid_find(s, p->ppid) : NULL;
	const struct procmap *m = NULL;
	struct procreg_info in;
	bool maybe_jit;

	/*
	 * A parent that only sleeps (a prefork server in waitpid()) may have
	 * no sample drained yet, so no entry: the registry says whether the
	 * pid is still that parent (no exit seen), and it is read as if sampled.
	 */
	if (!pp && p->ppid && !procreg__info(s->reg, p->ppid, &in) && !in.exited &&
	    pid_get(s, p->ppid, &pp))
		pp = NULL;
	if (!pp || pp == p)
		return NULL;
	/*
	 * A parent that has exited still has the mappings its last read found:
	 * a prefork server's last workers are drained after it is gone.
	 */
	if (pp->maps && pp->maps != p->maps)
		m = procmaps__find(pp->maps, addr);
	/*
	 * On a budget of the children's own: a sleeping server's off-CPU stacks,
	 * walked by frame pointers through a libc without them, spend the
	 * parent's checks on garbage, and its workers' real misses went unasked.
	 */
	if (!m)
		m = miss(s, pp, addr, true, &maybe_jit);
	if (!m)
		return NULL;
	if (p->maps != pp->maps) {
		procmaps__free(p->maps);
		p->maps = procmaps__ref(pp->maps);
	}
	*owner = pp;
	return m;
}

/*
 * addr in an image p had before its exec, in a file loaded already (the
 * old image's files are opened through the process, which maps them no
 * more): a sample taken before the exec. NULL otherwise.
 */
static const struct procmap *prev_find(struct symbolizer *s, struct pid_ent *p, uint64_t addr,
				       struct file_ent **fo)
{
	const struct procmap *m = NULL;
	struct file_ent *f;

	if (!p->prev[0])
		return NULL;
	if (clock__mono_ms() >= p->prev_until_ms) {
		for (int i = 0; i < PREV_IMAGES; i++) {
			procmaps__free(p->prev[i]);
			p->prev[i] = NULL;
		}
		return NULL;
	}
	for (int i = 0; !m && i < PREV_IMAGES && p->prev[i]; i++)
		m = procmaps__find(p->prev[i], addr);
	if (!m || !m->path || (m->flags & PROCMAP_ANON))
		return NULL;
	f = filecache__get(s->fc, m->dev, m->inode, s->fslot);
	if (!f || !f->es || file_changed(f, m))
		return NULL;
	s->st.prev_image_hits++;
	*fo = f;
	return m;
}

int symbolizer__user(struct symbolizer *s, uint32_t pid, uint64_t ip, int is_return, struct sym *out)
{
	uint64_t addr = is_return && ip ? ip - 1 : ip, vaddr, start;
	const struct procmap *m = NULL;
	struct pid_ent *p, *owner;
	struct file_ent *f = NULL;
	const char *name;
	bool maybe_jit = false;
	int err;

	out->name = NULL;
	out->module = NULL;
	out->offset = ip;
	out->kind = SYM_USER;
	out->later = 0;

	loads_collect(s);
	err = pid_get(s, pid, &p);
	if (err)
		return err;
	owner = p;
	if (p->maps)
		m = procmaps__find(p->maps, addr);
	if (!m)
		m = prev_find(s, p, addr, &f);
	if (!m)
		m = miss(s, p, addr, false, &maybe_jit);
	if (!m && p->ppid && (p->gone || p->exited))
		m = parent_miss(s, p, addr, &owner);
	if ((!m && maybe_jit) || (m && (m->flags & PROCMAP_ANON) && !(m->flags & PROCMAP_VDSO))) {
		char jm[48];

		/* JIT code lives in anonymous memory; a perf map may name it. */
		if (jit_lookup(s, p, addr, &name)) {
			snprintf(jm, sizeof(jm), "/tmp/perf-%u.map", p->nspid);
			out->module = set_module(s, jm);
			if (!out->module)
				return -ENOMEM;
			snprintf(s->namebuf, sizeof(s->namebuf), "%s", name);
			out->name = s->namebuf;
			out->kind = SYM_JIT;
			s->st.jit_hits++;
			return 0;
		}
	}
	if (!m || !m->path)
		return 0;
	out->module = set_module(s, m->path);
	if (!out->module)
		return -ENOMEM;
	out->offset = ip - m->start + m->offset;
	if ((m->flags & PROCMAP_ANON) && !(m->flags & PROCMAP_VDSO))
		return 0;
	if (!f)
		f = file_get(s, owner, m);
	if (!f)
		return -ENOMEM;
	if (f->loading)
		out->later = f->id;
	if (!f->es)
		return 0;
	if (elfsym__file_to_vaddr(f->es, addr - m->start + m->offset, &vaddr))
		return 0;
	if (elfsym__lookup(f->es, vaddr, &name, &start) == 0)
		out->name = demangled(s, f, start, name);
	return 0;
}

int symbolizer__place(struct symbolizer *s, uint32_t pid, uint64_t ip, int is_return,
		      uint64_t *file, uint64_t *offset)
{
	uint64_t addr = is_return && ip ? ip - 1 : ip;
	struct pid_ent *p = pid_find(s, pid);
	const struct procmap *m = NULL;
	struct file_ent *f = NULL;

	*file = 0;
	/* What symbolizer__user would find first, and nothing it would look further for. */
	if (!p)
		return 0;
	if (p->maps)
		m = procmaps__find(p->maps, addr);
	if (!m && !(m = prev_find(s, p, addr, &f)))
		return 0;
	if (!m->path || (m->flags & PROCMAP_ANON))
		return 0;
	if (!f)
		f = filecache__get(s->fc, m->dev, m->inode, s->fslot);
	if (!f || !f->es)
		return 0;
	lru_del(&p->lru);
	lru_push_front(&s->plru, &p->lru);
	lru_del(&f->lru);
	lru_push_front(&s->flru, &f->lru);
	*file = f->id;
	*offset = ip - m->start + m->offset;
	return 0;
}

int symbolizer__kernel(struct symbolizer *s, uint64_t ip, struct sym *out)
{
	const char *name, *module;
	int64_t now;

	out->name = NULL;
	out->module = NULL;
	out->offset = ip;
	out->kind = SYM_KERNEL;
	out->later = 0;
	if (s->ks && kallsyms__lookup(s->ks, ip, &name, &module, NULL) == 0)
		goto found;
	now = clock__mono_ms();
	/* Modules load and unload: a miss re-reads kallsyms, at most every few seconds. */
	if (s->ks_tried && now - s->ks_read_ms < KALLSYMS_REFRESH_MS)
		return 0;
	{
		struct kallsyms *k = NULL;

		s->ks_tried = true;
		s->ks_read_ms = now;
		if (kallsyms__load(s->kallsyms_path, &k) == -ENOMEM)
			return -ENOMEM;
		if (k) {
			kallsyms__free(s->ks);
			s->ks = k;
		}
	}
	if (!s->ks || kallsyms__lookup(s->ks, ip, &name, &module, NULL))
		return 0;
found:
	out->name = name;
	out->module = module ? module : "[kernel.kallsyms]";
	return 0;
}

int symbolizer__capture(struct symbolizer *s, uint32_t pid, const struct procreg_ids *ids)
{
	return symbolizer__capture_maps(s, pid, ids, NULL);
}

int symbolizer__capture_maps(struct symbolizer *s, uint32_t pid, const struct procreg_ids *ids,
			     struct procmaps *maps)
{
	uint64_t misses = s->st.pid_misses;
	struct pid_ent *p;
	int err;

	loads_collect(s);
	err = pid_get_maps(s, pid, maps, &p);
	if (err)
		return err;
	if (s->st.pid_misses == misses)
		pid_load_maps(s, p, maps); /* a known pid: it may have exec'd since */
	if (!p->maps || !procmaps__count(p->maps))
		return -ENOENT;
	pid_pin(s, p, ids && ids->nspid ? ids : NULL);
	for (size_t i = 0; i < procmaps__count(p->maps); i++) {
		const struct procmap *m = procmaps__get(p->maps, i);

		if (!m->path || ((m->flags & PROCMAP_ANON) && !(m->flags & PROCMAP_VDSO)))
			continue;
		if (!file_get(s, p, m))
			return -ENOMEM;
	}
	return 0;
}

size_t symbolizer__prev_images(struct symbolizer *s, uint32_t pid, struct procmaps **out)
{
	struct pid_ent *p = pid_find(s, pid);
	size_t n = 0;

	if (!p || clock__mono_ms() >= p->prev_until_ms)
		return 0;
	for (int i = 0; i < PREV_IMAGES && p->prev[i]; i++)
		out[n++] = procmaps__ref(p->prev[i]);
	return n;
}

void symbolizer__exec_prev(struct symbolizer *s, uint32_t pid, struct procmaps *prev,
			   struct procmaps *const *older, size_t nolder)
{
	struct pid_ent *p = pid_find(s, pid);
	struct procmaps *keep[PREV_IMAGES];
	int64_t now = clock__mono_ms();
	size_t n = 0;

	if (!p || !prev || prev == p->maps)
		return;
	/*
	 * Newest first: prev, the images before it (from the entry the exec
	 * replaced), then the entry's own while the last exec is recent.
	 */
	keep[n++] = procmaps__ref(prev);
	for (size_t i = 0; i < nolder + PREV_IMAGES && n < PREV_IMAGES; i++) {
		struct procmaps *m = i < nolder ? older[i] : p->prev[i - nolder];
		bool dup = !m || m == p->maps;

		if (i >= nolder && now >= p->prev_until_ms)
			break;
		for (size_t j = 0; !dup && j < n; j++)
			dup = keep[j] == m;
		if (!dup)
			keep[n++] = procmaps__ref(m);
	}
	for (int i = 0; i < PREV_IMAGES; i++) {
		procmaps__free(p->prev[i]);
		p->prev[i] = i < (int)n ? keep[i] : NULL;
	}
	p->prev_until_ms = now + PREV_IMAGE_MS;
}

int symbolizer__maps(struct symbolizer *s, uint32_t pid, struct procmaps **out)
{
	struct pid_ent *p = pid_find(s, pid);

	if (!p || !p->maps)
		return -ENOENT;
	*out = procmaps__ref(p->maps);
	return 0;
}

int symbolizer__name_later(struct symbolizer *s, uint64_t file, uint64_t offset, int is_return,
			   const char **name)
{
	struct file_ent *f = NULL;
	uint64_t vaddr, start;
	const char *n;

	loads_collect(s);
	for (unsigned i = 0; i < SYMLOAD_MAX_JOBS; i++)
		if (s->loading[i] && s->loading[i]->id == file)
			return -EAGAIN;
	for (unsigned i = 0; !f && i < LANDED && i < s->nlanded; i++) {
		unsigned k = (s->nlanded - 1 - i) % LANDED;

		if (s->landed[k].id == file)
			f = filecache__get(s->fc, s->landed[k].dev, s->landed[k].ino, s->fslot);
	}
	/* Evicted, read again since (another id), or its read failed: the frame stays unnamed. */
	if (!f || f->id != file || !f->es)
		return -ENOENT;
	if (elfsym__file_to_vaddr(f->es, is_return && offset ? offset - 1 : offset, &vaddr) ||
	    elfsym__lookup(f->es, vaddr, &n, &start))
		return -ENOENT;
	*name = demangled(s, f, start, n);
	return 0;
}

void symbolizer__stats(const struct symbolizer *s, struct symbolizer_stats *out)
{
	*out = s->st;
	out->loads_waiting = s->sl ? symload__pending(s->sl) : 0;
	out->files_cached = s->nfiles;
	out->pids_cached = s->npids;
	out->file_bytes = s->file_bytes;
	out->pid_bytes = s->pid_bytes;
	for (const struct root *r = s->roots; r; r = r->next)
		out->pid_bytes += sizeof(*r);
	out->cache_memory = s->cache_memory;
	out->file_cap = s->file_cap;
	out->pid_cap = s->pid_cap;
}
