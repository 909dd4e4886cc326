/*
 * Wires lib/pyinterp (is this process a CPython, and where is its runtime)
 * to the walker's py_procs map, and names the walker's Python frames from
 * py_syms when a drain turns stacks into window frames.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "clock.h"
#include "profd.skel.h"
#include "pyfree.skel.h"
#include "procmaps.h"
#include "procreg.h"
#include "profd.h"
#include "profile.h"
#include "pyinterp.h"
#include "pyline.h"
#include "pyprocs.h"
#include "pystack.h"
#include "symbolizer.h"

/*
 * A process not found to run CPython is looked at again at most this
 * often: its mappings may have been read before ld.so mapped libpython.
 */
#define RETRY_NS 1000000000LL

/* What was found of a process, on its registry record: it goes with the image. */
struct seen {
	uint32_t found;
	int64_t tried_ns;
	/*
	 * When its py_procs entry was last written from here (CLOCK_MONOTONIC,
	 * after the write), 0: none written. The kernel deletes entries as
	 * images go (bpf/events.bpf.c); one written after that is ours to.
	 */
	int64_t wrote_ns;
	/* When first found to run CPython (CLOCK_MONOTONIC_COARSE); 0: not yet. */
	int64_t found_ns;
	/*
	 * Made at its exec event: found_ns is within the exec events' delay of
	 * the image's start. /proc's start time is the fork's, and a program
	 * started through a shim's chain of execs (pyenv's: bash, pyenv,
	 * pyenv-exec) would look seconds old at its first sample.
	 */
	bool at_exec;
	/* When its free hook was last weighed (free_hook): at most once a RETRY_NS. */
	int64_t hook_ns;
	uint16_t file;  /* its interpreter file in files[], plus 1; 0: none to hook */
	uint16_t link;  /* its free hook in links[], plus 1; 0: none */
	bool hook_done; /* the hook failed, or the process exited: not again for this image */
	/*
	 * Its interpreter file did not open as the mapped file by the name
	 * its mappings gave (a name learned for a reused inode number, a
	 * rename): its mappings are read from /proc again a RETRY_NS later.
	 */
	bool file_stale;
	/*
	 * Every interpreter-file slot was taken when it was found: looked at
	 * again (file_again) once one is free, at most once a RETRY_NS.
	 */
	bool file_full;
};
/*
 * Where each process's eval function is, as py_procs said at most this long
 * ago: a drain asks for every stack with Python frames, and takes a few
 * milliseconds; the next one is a second later and asks again.
 */
#define EVAL_SLOTS 256
#define EVAL_FRESH_NS (100 * 1000000LL)

struct eval_slot {
	uint32_t pid;
	int64_t at_ns;
	uint64_t lo, hi; /* 0, 0: not known */
};

/* py_syms entries read at drains, by id: ids name content, so a hit is always right. */
#define NAME_SLOTS 4096

/*
 * Interpreter files that a free hook may be put in, by the walker's (dev,
 * inode) key: each opened once, checked to be the mapped inode, and kept
 * open while a process of it is known (a link names its file by our
 * descriptor's path, whatever the file's own path names by now). A file
 * no process uses any more is closed FILE_IDLE_NS later, or at once when
 * it has been deleted: a descriptor kept for nothing would pin a removed
 * interpreter's disk space (an upgrade, a container's image), and its
 * slot would be lost to the next interpreter on a host of many images.
 */
#ifndef FREE_FILES
#define FREE_FILES 64 /* -DFREE_FILES=N builds another cap (a check by hand of the full slots) */
#endif
#define FILE_IDLE_NS (60 * 1000000000LL)

struct free_file {
	struct profd_pyfile_key key;
	int fd; /* -1: code_dealloc not found, no hook */
	uint64_t off; /* code_dealloc's file offset */
	uint32_t refs;   /* seen records that name it (their file) */
	int64_t idle_ns; /* when refs last fell to 0 (or the failed probe) */
	bool used;       /* false: a free slot */
};

/*
 * A process's free hook: a uprobe_multi link of py_code_free with its pid,
 * so the breakpoint is in that process's memory only (its threads' too).
 */
struct free_link {
	uint32_t pid;
	int fd;           /* -1: a free slot */
	int64_t since_ns; /* the start of the rate's measure */
	uint64_t gen0;    /* py_freegen's slot then */
	int64_t close_ns; /* unhooked: closed from then on; 0: live */
	/*
	 * A child forked from it was sampled: a child's memory is a copy of
	 * the parent's, breakpoint included, and the kernel leaves it there
	 * (our handler runs, and ignores another process). The link is made
	 * again at the next sweep and the old one closed, which takes the
	 * breakpoint out of every process no link's pid names.
	 */
	bool relink;
};

/*
 * A process freeing code objects faster than the bound, measured over this
 * long, is unhooked, and hooked again this long after (its burst of
 * imports or compiles may be over by then).
 */
#define RATE_NS (4 * 1000000000LL)
#define REHOOK_NS (60 * 1000000000LL)
#define UPROBE_MULTI 48 /* BPF_TRACE_UPROBE_MULTI (Linux 6.6), which older headers lack */

/* BPF_LINK_CREATE's uprobe_multi attributes, as union bpf_attr lays them out. */
struct uprobe_multi_attr {
	__u32 prog_fd, target_fd, attach_type, flags;
	__u64 path, offsets, ref_ctr_offsets, cookies;
	__u32 cnt, um_flags, pid, pad;
};

struct name_slot {
	uint64_t id;
	uint32_t firstlineno;
	uint16_t lt_len;
	uint8_t lt_310;
	char *text; /* "qualname (file)" */
	char *file;
	uint8_t *lt; /* the start of the line table */
	/* text's and file's string ids in the window of generation win_gen (0: none) */
	uint64_t win_gen;
	uint32_t win_name, win_module;
};

struct pyprocs {
	struct profd_bpf *skel;
	struct pyinterp *pi;
	struct procreg *reg;
	int slot;                /* ours on reg's records: loose, the symbols and events keep them */
	size_t nseen;
	int procs_fd, syms_fd, files_fd, proc_fd;
	struct name_slot *names;
	struct eval_slot evals[EVAL_SLOTS];
	uint64_t written, write_errors, sym_misses;
	uint64_t epochs; /* py_procs values written: each one's epoch */
	bool untracked;  /* an entry written for a pid without a record: exits delete it blind */
	/*
	 * The py_files entry written last: each exec of an interpreter gives
	 * the same one again, and only user space writes that map (nothing
	 * evicts it), so an equal one is not written again.
	 */
	struct profd_pyfile_key tmpl_key;
	struct profd_pyfile tmpl;
	bool tmpl_written;
	struct free_file files[FREE_FILES];
	uint32_t nfiles;
	struct free_link links[PYPROCS_FREE_LINKS];
	uint32_t nlinks;              /* live ones, unhooked ones waiting to close aside */
	struct pyfree_bpf *free_skel; /* loaded at the first hook */
	int free_err;                 /* its load's -errno: no hooks */
	uint64_t hooked, hook_failures, hooks_full, unhooks, relinks;
	uint64_t files_full, files_closed;
	uint64_t files_retried; /* processes that met the slots full, looked at again once one freed */
	uint32_t files_waiting; /* processes that met them full and wait for a slot */
	int hook_err; /* the last failure's -errno, for the status */
	int64_t sweep_ns;
	long ticks; /* clock ticks a second (/proc/PID/stat's start time) */
	struct pyprocs_hook_opts hook;
};

/* A pid at *s, which is left after it; 0 when there is none. */
static uint32_t cost_pid(const char **s)
{
	char *end;
	unsigned long pid;

	errno = 0;
	pid = strtoul(*s, &end, 10);
	if (errno || end == *s || pid > UINT32_MAX)
		return 0;
	*s = end;
	return (uint32_t)pid;
}

void pyprocs__configure(struct profd_bpf *skel)
{
	const char *v = getenv("PROFD_COST_PID");
	uint32_t a, b = 0;

	if (!v || !*v)
		return;
	a = cost_pid(&v);
	if (*v == ',') {
		v++;
		b = cost_pid(&v);
		if (!b)
			return;
	}
	if (!a || *v)
		return;
	skel->rodata->cost_tgid[0] = skel->rodata->py_cost_tgid = a;
	skel->rodata->cost_tgid[1] = b;
}

static void link_close(struct pyprocs *p, uint32_t i)
{
	struct free_link *l = &p->links[i];

	close(l->fd);
	if (!l->close_ns)
		p->nlinks--;
	*l = (struct free_link){ .fd = -1 };
}

static void file_put(struct pyprocs *p, uint16_t file)
{
	struct free_file *f = &p->files[file - 1u];

	if (f->refs && !--f->refs)
		f->idle_ns = clock__ns(CLOCK_MONOTONIC_COARSE);
}

static void seen_free(struct pyprocs *p, struct seen *sl)
{
	p->files_waiting -= sl->file_full;
	/* Its image is gone (exit, exec, forgotten): no walk of it reads the flag. */
	if (sl->link)
		link_close(p, sl->link - 1u);
	if (sl->file)
		file_put(p, sl->file);
	free(sl);
	p->nseen--;
}

/*
 * A new image under the pid (exec, or a fork of a reused pid): the old
 * one's entry, written when its exec was read late, after the kernel's
 * delete, goes too. Rare: a CPython that execs.
 */
static void seen_dropped(uint32_t pid, void *data, void *arg)
{
	struct pyprocs *p = arg;
	struct seen *sl = data;

	if (sl->wrote_ns)
		bpf_map_delete_elem(p->procs_fd, &pid);
	seen_free(p, sl);
}

static int seen_forget(uint32_t pid, void *data, void *arg)
{
	struct pyprocs *p = arg;

	procreg__detach(p->reg, pid, p->slot);
	seen_free(p, data);
	return 0;
}

void pyprocs__share(struct profd_bpf *skel, struct pyprocs_fds *out)
{
	out->procs = bpf_map__fd(skel->maps.py_procs);
	out->files = bpf_map__fd(skel->maps.py_files);
	out->gen = bpf_map__fd(skel->maps.data_py_gen);
	out->none = bpf_map__fd(skel->maps.py_none);
}

int pyprocs__new(struct profd_bpf *skel, struct procreg *reg, struct filecache *fc,
		 const struct pyprocs_hook_opts *hook, struct pyprocs **out)
{
	struct pyprocs *p = calloc(1, sizeof(*p));
	int err;

	if (!p)
		return -ENOMEM;
	p->skel = skel;
	p->reg = reg;
	p->hook = *hook;
	p->ticks = sysconf(_SC_CLK_TCK);
	for (uint32_t i = 0; i < PYPROCS_FREE_LINKS; i++)
		p->links[i].fd = -1;
	p->procs_fd = bpf_map__fd(skel->maps.py_procs);
	p->syms_fd = bpf_map__fd(skel->maps.py_syms);
	p->files_fd = bpf_map__fd(skel->maps.py_files);
	p->proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	p->names = calloc(NAME_SLOTS, sizeof(*p->names));
	p->slot = procreg__slot_loose(reg, seen_dropped, p);
	err = p->slot < 0 ? p->slot : p->proc_fd < 0 ? -errno : pyinterp__new(fc, 0, &p->pi);
	if (err || !p->names) {
		pyprocs__free(p);
		return err ? err : -ENOMEM;
	}
	*out = p;
	return 0;
}

void pyprocs__free(struct pyprocs *p)
{
	if (!p)
		return;
	if (p->slot >= 0 && p->reg)
		procreg__each(p->reg, p->slot, seen_forget, p);
	if (p->proc_fd >= 0)
		close(p->proc_fd);
	for (size_t i = 0; p->names && i < NAME_SLOTS; i++) {
		free(p->names[i].text);
		free(p->names[i].file);
		free(p->names[i].lt);
	}
	free(p->names);
	for (uint32_t i = 0; i < PYPROCS_FREE_LINKS; i++)
		if (p->links[i].fd >= 0)
			link_close(p, i);
	for (uint32_t i = 0; i < p->nfiles; i++)
		if (p->files[i].used && p->files[i].fd >= 0)
			close(p->files[i].fd);
	pyfree_bpf__destroy(p->free_skel);
	pyinterp__free(p->pi);
	free(p);
}

/* pid's note, looked at now; NULL: the registry has no record of it (looked at every time). */
static struct seen *seen_now(struct pyprocs *p, uint32_t pid)
{
	struct seen *sl = procreg__data(p->reg, pid, p->slot);

	if (!sl && (sl = calloc(1, sizeof(*sl)))) {
		if (procreg__set_data(p->reg, pid, p->slot, sl)) {
			free(sl);
			return NULL;
		}
		p->nseen++;
	}
	if (sl) {
		sl->found = 0;
		sl->tried_ns = clock__ns(CLOCK_MONOTONIC_COARSE);
		/* Waits for a slot again only if found again (pyprocs__maps). */
		p->files_waiting -= sl->file_full;
		sl->file_full = false;
	}
	return sl;
}

/* py_code_free's fd, its object loaded at the first call (sharing py_freegen); -errno. */
static int free_prog(struct pyprocs *p)
{
	struct pyfree_bpf *sk;
	int err;

	if (p->free_skel)
		return bpf_program__fd(p->free_skel->progs.py_code_free);
	if (p->free_err)
		return p->free_err;
	sk = pyfree_bpf__open();
	if (!sk) {
		p->free_err = errno ? -errno : -ENOMEM;
		return p->free_err;
	}
	err = bpf_program__set_expected_attach_type(sk->progs.py_code_free, (enum bpf_attach_type)UPROBE_MULTI);
	if (!err)
		err = bpf_map__reuse_fd(sk->maps.data_py_freegen, bpf_map__fd(p->skel->maps.data_py_freegen));
	if (!err)
		err = pyfree_bpf__load(sk);
	if (err) {
		pyfree_bpf__destroy(sk);
		p->free_err = err < 0 ? err : -EINVAL;
		return p->free_err;
	}
	p->free_skel = sk;
	return bpf_program__fd(sk->progs.py_code_free);
}

/* A uprobe_multi link of prog at off in the file named path, for process pid only: its fd, or -errno. */
static int uprobe_multi(int prog, const char *path, uint64_t off, uint32_t pid)
{
	struct uprobe_multi_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.prog_fd = (__u32)prog;
	a.attach_type = UPROBE_MULTI;
	a.path = (__u64)(uintptr_t)path;
	a.offsets = (__u64)(uintptr_t)&off;
	a.cnt = 1;
	a.pid = pid;
	fd = (int)syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a));
	return fd < 0 ? -errno : fd;
}

/*
 * The file the last pyinterp__find found (key), for free hooks: its index
 * in files[] plus 1, opened now if it is the file's first time; 0: no hook.
 */
static uint16_t free_file(struct pyprocs *p, int root_fd, const struct profd_pyfile_key *key, bool *stale,
			  bool *full)
{
	uint64_t dev, ino, off;
	struct free_file *f = NULL;
	int fd, err;

	for (uint32_t i = 0; i < p->nfiles; i++) {
		if (!p->files[i].used) {
			if (!f)
				f = &p->files[i];
		} else if (!memcmp(&p->files[i].key, key, sizeof(*key))) {
			if (p->files[i].fd < 0)
				return 0;
			p->files[i].refs++;
			return (uint16_t)(i + 1);
		}
	}
	if (!f && p->nfiles == FREE_FILES) {
		p->files_full++;
		*full = true;
		return 0;
	}
	err = pyinterp__open_found(p->pi, root_fd, &dev, &ino, &off, &fd);
	*stale = err == -ESTALE || err == -ENOENT;
	if (*stale || err == -EMFILE || err == -ENFILE || err == -ENOMEM)
		return 0; /* another time: the file itself may be fine */
	if (!f)
		f = &p->files[p->nfiles++];
	/* A file without code_dealloc stays known (no probe at each exec) until it idles out. */
	*f = (struct free_file){ .key = *key, .fd = err ? -1 : fd, .off = off, .refs = !err,
				 .idle_ns = clock__ns(CLOCK_MONOTONIC_COARSE), .used = true };
	if (err) {
		p->hook_failures++;
		p->hook_err = err;
		return 0;
	}
	return (uint16_t)(f - p->files + 1);
}

/* Files no process uses: closed once idle long enough, or deleted. */
static void file_sweep(struct pyprocs *p, int64_t now)
{
	struct stat st;

	for (uint32_t i = 0; i < p->nfiles; i++) {
		struct free_file *f = &p->files[i];

		if (!f->used || f->refs)
			continue;
		if (now - f->idle_ns < FILE_IDLE_NS && !(f->fd >= 0 && !fstat(f->fd, &st) && !st.st_nlink))
			continue;
		if (f->fd >= 0) {
			close(f->fd);
			p->files_closed++;
		}
		*f = (struct free_file){ .fd = -1 };
	}
}

static uint64_t freegen(const struct pyprocs *p, uint32_t pid)
{
	return __atomic_load_n(&p->skel->data_py_freegen->py_freegen[pid & (PROFD_PY_GEN_SLOTS - 1)],
			       __ATOMIC_SEQ_CST);
}

/*
 * pid's free hook, if it has lived the hook's age and has none: the link
 * first, then PROFD_PY_F_FREE_HOOK in its py_procs entry, with a new epoch.
 * Every free after the link is counted, and the walker stamps a code cache
 * entry with a generation only while the flag is set; the new epoch keeps
 * it from trusting any entry stamped before (an earlier hook of this pid,
 * or another process of its py_freegen slot), so frees before the link
 * cannot matter. A rewrite of the entry by the kernel between our read
 * and our write (an exec) is undone when the exec is read: the walker
 * meanwhile finds the entry's start_code is not the image's.
 */
static void free_hook(struct pyprocs *p, uint32_t pid, struct seen *sl, int64_t now)
{
	struct procreg_info in;
	struct profd_pyproc pp;
	struct free_link *l = NULL;
	char path[64];
	int64_t age;
	int prog, fd;

	if (!p->hook.on || sl->link || sl->hook_done || !sl->file || now - sl->hook_ns < RETRY_NS)
		return;
	sl->hook_ns = now;
	age = now - sl->found_ns;
	/* A process older than profd, or found late: its age from /proc (boot time, clock ticks). */
	if (age < p->hook.after_ns && !sl->at_exec && p->ticks > 0 && !procreg__info(p->reg, pid, &in) &&
	    in.start_time) {
		int64_t up = clock__ns(CLOCK_BOOTTIME) - (int64_t)(in.start_time * (1000000000ULL / (uint64_t)p->ticks));

		if (up > age)
			age = up;
	}
	if (age < p->hook.after_ns)
		return;
	for (uint32_t i = 0; i < PYPROCS_FREE_LINKS && !l; i++)
		if (p->links[i].fd < 0)
			l = &p->links[i];
	if (!l) {
		p->hooks_full++;
		return;
	}
	prog = free_prog(p);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", p->files[sl->file - 1].fd);
	fd = prog < 0 ? prog : uprobe_multi(prog, path, p->files[sl->file - 1].off, pid);
	if (fd < 0) {
		p->hook_failures++;
		p->hook_err = fd;
		sl->hook_done = true;
		return;
	}
	if (bpf_map_lookup_elem(p->procs_fd, &pid, &pp)) {
		close(fd); /* no entry now: another time */
		return;
	}
	pp.o.flags |= PROFD_PY_F_FREE_HOOK;
	pp.epoch = ++p->epochs;
	if (bpf_map_update_elem(p->procs_fd, &pid, &pp, BPF_EXIST)) {
		close(fd);
		p->write_errors++;
		return;
	}
	*l = (struct free_link){ .pid = pid, .fd = fd, .since_ns = now, .gen0 = freegen(p, pid) };
	sl->link = (uint16_t)(l - p->links + 1);
	sl->wrote_ns = clock__mono_ns();
	p->nlinks++;
	p->hooked++;
}

/*
 * The flag out of the process's entry now, the link closed a second later
 * (free_sweep): a walk that read the flag reads the generation in the same
 * run of the program, long over by then, so no frees it trusts go
 * uncounted. A failed write takes the entry out (the walker reads no
 * Python frames of it until it is looked at again).
 */
static void unhook(struct pyprocs *p, uint32_t i, struct seen *sl, int64_t now)
{
	struct free_link *l = &p->links[i];
	struct profd_pyproc pp;

	if (!bpf_map_lookup_elem(p->procs_fd, &l->pid, &pp) && (pp.o.flags & PROFD_PY_F_FREE_HOOK)) {
		pp.o.flags &= ~PROFD_PY_F_FREE_HOOK;
		if (bpf_map_update_elem(p->procs_fd, &l->pid, &pp, BPF_EXIST)) {
			p->write_errors++;
			bpf_map_delete_elem(p->procs_fd, &l->pid);
			if (sl)
				sl->found = 0;
		}
	}
	if (sl) {
		sl->link = 0;
		sl->hook_ns = now + REHOOK_NS; /* free_hook looks again a RETRY_NS after that */
	}
	l->close_ns = now + RETRY_NS;
	p->nlinks--;
	p->unhooks++;
}

/* The new link in before the old one goes: no free of the process goes uncounted. */
static void relink(struct pyprocs *p, struct free_link *l, const struct seen *sl)
{
	char path[64];
	int prog = free_prog(p), fd;

	l->relink = false;
	if (prog < 0 || !sl->file)
		return;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", p->files[sl->file - 1].fd);
	fd = uprobe_multi(prog, path, p->files[sl->file - 1].off, l->pid);
	if (fd < 0) {
		p->hook_failures++;
		p->hook_err = fd;
		return;
	}
	close(l->fd);
	l->fd = fd;
	p->relinks++;
}

/*
 * Once a second: links of unhooked processes closed, links of processes
 * with children made again, and each process's rate of frees weighed.
 */
static void free_sweep(struct pyprocs *p, int64_t now)
{
	if (!p->hook.on || now - p->sweep_ns < RETRY_NS)
		return;
	p->sweep_ns = now;
	file_sweep(p, now);
	for (uint32_t i = 0; i < PYPROCS_FREE_LINKS; i++) {
		struct free_link *l = &p->links[i];
		struct seen *sl;
		uint64_t g;

		if (l->fd < 0)
			continue;
		if (l->close_ns) {
			if (now >= l->close_ns)
				link_close(p, i);
			continue;
		}
		sl = procreg__data(p->reg, l->pid, p->slot);
		if (!sl || sl->link != i + 1) {
			link_close(p, i); /* not its record's: should not happen, but no fd is kept for it */
			continue;
		}
		if (l->relink)
			relink(p, l, sl);
		if (!p->hook.max_rate || now - l->since_ns < RATE_NS)
			continue;
		g = freegen(p, l->pid);
		if ((double)(g - l->gen0) * 1e9 > (double)p->hook.max_rate * (double)(now - l->since_ns)) {
			unhook(p, i, sl, now);
		} else {
			l->gen0 = g;
			l->since_ns = now;
		}
	}
}

void pyprocs__maps(struct pyprocs *p, uint32_t pid, uint64_t start_code, const struct procmaps *maps,
		   bool exec)
{
	struct seen *sl = seen_now(p, pid);
	struct profd_pyfile_key fkey;
	struct profd_pyfile pf;
	struct profd_pyproc pp;
	char root[32];
	bool full = false;
	int fd;

	if (sl && exec)
		sl->at_exec = true;
	/* No file that could be an interpreter: no open of /proc/PID/root (a path walk). */
	fd = -1;
	if (pyinterp__may_find(maps)) {
		snprintf(root, sizeof(root), "%u/root", pid);
		fd = openat(p->proc_fd, root, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return;
	}
	if (fd >= 0 && pyinterp__find(p->pi, fd, maps, &pp) == 0) {
		bool tmpl = pyinterp__template(p->pi, &fkey, &pf) == 0;

		if (sl) {
			sl->found = 1;
			if (!sl->found_ns)
				sl->found_ns = clock__ns(CLOCK_MONOTONIC_COARSE);
			sl->file_stale = false;
			if (tmpl && p->hook.on && !sl->file)
				sl->file = free_file(p, fd, &fkey, &sl->file_stale, &full);
			p->files_waiting += full;
			sl->file_full = full;
			/* Its link is in (the entry written again, as its mappings were read again). */
			if (sl->link)
				pp.o.flags |= PROFD_PY_F_FREE_HOOK;
		}
		pp.start_code = start_code;
		pp.epoch = ++p->epochs;
		if (bpf_map_update_elem(p->procs_fd, &pid, &pp, BPF_ANY)) {
			p->write_errors++;
		} else {
			/* After the write: the walker's per-CPU "no entry" notes of older values lapse. */
			__atomic_fetch_add(&p->skel->data_py_gen->py_gen[pid & (PROFD_PY_GEN_SLOTS - 1)], 1,
					   __ATOMIC_SEQ_CST);
			p->written++;
			if (sl)
				sl->wrote_ns = clock__mono_ns();
			else
				p->untracked = true;
		}
		/* The next process of this interpreter is read from its first sample on, before we look. */
		if (tmpl && (!p->tmpl_written || memcmp(&fkey, &p->tmpl_key, sizeof(fkey)) ||
		     memcmp(&pf, &p->tmpl, sizeof(pf)))) {
			p->tmpl_written = !bpf_map_update_elem(p->files_fd, &fkey, &pf, BPF_ANY);
			if (p->tmpl_written) {
				p->tmpl_key = fkey;
				p->tmpl = pf;
			} else {
				p->write_errors++;
			}
		}
	} else if (!sl || sl->wrote_ns) {
		/* No longer found in this image (unmapped): what was written must not be read. */
		bpf_map_delete_elem(p->procs_fd, &pid);
		if (sl)
			sl->wrote_ns = 0;
	}
	if (fd >= 0)
		close(fd);
}

/* Whether an interpreter file could be opened now: a slot free (closed files leave theirs). */
static bool file_slot_free(const struct pyprocs *p)
{
	if (p->nfiles < FREE_FILES)
		return true;
	for (uint32_t i = 0; i < p->nfiles; i++)
		if (!p->files[i].used)
			return true;
	return false;
}

/*
 * The interpreter file of a process found to run CPython, by the name
 * /proc gives now. Only the file: its py_procs entry stays as written (a
 * file deleted since is no longer found by name, but its process runs).
 */
static void file_again(struct pyprocs *p, uint32_t pid, struct seen *sl, int64_t now)
{
	struct profd_pyfile_key fkey;
	struct procmaps *maps = NULL;
	struct profd_pyfile pf;
	struct profd_pyproc pp;
	char root[32];
	bool full = false;
	int fd;

	sl->file_stale = false;
	sl->tried_ns = now;
	if (procmaps__read_at(p->proc_fd, pid, &maps) || !pyinterp__may_find(maps))
		goto out;
	snprintf(root, sizeof(root), "%u/root", pid);
	fd = openat(p->proc_fd, root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		goto out;
	if (pyinterp__find(p->pi, fd, maps, &pp) == 0 && pyinterp__template(p->pi, &fkey, &pf) == 0)
		sl->file = free_file(p, fd, &fkey, &sl->file_stale, &full);
	close(fd);
out:
	if (full != sl->file_full)
		p->files_waiting += full ? 1u : -1u;
	sl->file_full = full;
	procmaps__free(maps);
}

void pyprocs__seen(struct pyprocs *p, struct symbolizer *sym, uint32_t pid)
{
	struct seen *sl = procreg__data(p->reg, pid, p->slot);
	const struct seen *ps;
	int64_t now = clock__ns(CLOCK_MONOTONIC_COARSE);
	struct procmaps *maps = NULL;
	struct procreg_info in;
	struct seen *nl;
	uint64_t st, sc;
	bool again;

	free_sweep(p, now);
	/* A /proc read only with something to gain: a waiter for a slot while none is free reads nothing. */
	again = sl && sl->found && now - sl->tried_ns >= RETRY_NS &&
		(sl->file_stale || (sl->file_full && file_slot_free(p)));
	if (sl && sl->found && !again) {
		free_hook(p, pid, sl, now);
		return;
	}
	if (sl && now - sl->tried_ns < RETRY_NS)
		return;
	if (sl && sl->found) {
		p->files_retried += sl->file_full;
		file_again(p, pid, sl, now);
		return;
	}
	if (procreg__info(p->reg, pid, &in))
		in = (struct procreg_info){ .pid = pid };
	/* A child of a hooked process has its breakpoint: out at the next sweep. */
	if (in.ppid && (ps = procreg__data(p->reg, in.ppid, p->slot)) && ps->link)
		p->links[ps->link - 1].relink = true;
	nl = seen_now(p, pid);
	/* Gone: its samples were taken, and nothing written now would serve them. */
	if (in.exited)
		return;
	/*
	 * A forked child runs its parent's image: no CPython where the parent
	 * was found to have none (bash's subshells, by the hundred a second on
	 * a build host), and no /proc read to tell it again.
	 */
	if (in.ppid && (ps = procreg__data(p->reg, in.ppid, p->slot)) && !ps->found &&
	    now - ps->tried_ns < RETRY_NS) {
		if (nl)
			nl->tried_ns = ps->tried_ns;
		return;
	}
	if (symbolizer__maps(sym, pid, &maps))
		return;
	/* The exec event's start_code, else /proc's (a process older than profd, a fork). */
	sc = in.start_code;
	if (sc || procreg__read_stat(p->proc_fd, pid, &st, &sc) == 0)
		pyprocs__maps(p, pid, sc, maps, false);
	procmaps__free(maps);
}

/*
 * The kernel deleted its entry at the exit (time_ns): only one written from
 * here after that is left. What was found of it goes with its record.
 */
void pyprocs__exit(struct pyprocs *p, uint32_t pid, uint64_t time_ns)
{
	struct seen *sl = procreg__data(p->reg, pid, p->slot);

	if (sl ? sl->wrote_ns && sl->wrote_ns >= (int64_t)time_ns : p->untracked)
		bpf_map_delete_elem(p->procs_fd, &pid);
	if (sl) {
		sl->wrote_ns = 0;
		/* Its memory is gone, and the uprobe with it: the link goes now. */
		if (sl->link) {
			link_close(p, sl->link - 1u);
			sl->link = 0;
		}
		sl->hook_done = true;
	}
}

/* The name slot for id, read from py_syms unless cached; NULL when the id is gone from the map. */
static struct name_slot *py_name(struct pyprocs *p, uint64_t id)
{
	struct name_slot *n = &p->names[(id * 0x9e3779b97f4a7c15ULL) >> 52 & (NAME_SLOTS - 1)];
	struct profd_pysym s;
	char name[PROFD_PY_NAME_MAX + 8], file[PROFD_PY_FILE_MAX + 8], text[512];

	if (n->text && n->id == id)
		return n;
	if (bpf_map_lookup_elem(p->syms_fd, &id, &s)) {
		p->sym_misses++;
		return NULL;
	}
	snprintf(name, sizeof(name), "%s%.*s%s", s.flags & PROFD_PYSYM_F_NAME_RAW ? "[non-ascii]" : "",
		 (int)(s.name_len < PROFD_PY_NAME_MAX ? s.name_len : PROFD_PY_NAME_MAX), s.name,
		 s.flags & PROFD_PYSYM_F_NAME_CUT ? "..." : "");
	snprintf(file, sizeof(file), "%s%.*s", s.flags & PROFD_PYSYM_F_FILE_CUT ? "..." : "",
		 (int)(s.file_len < PROFD_PY_FILE_MAX ? s.file_len : PROFD_PY_FILE_MAX), s.file);
	pystack__frame_text(name, file, text, sizeof(text));
	free(n->text);
	free(n->file);
	free(n->lt);
	n->text = strdup(text);
	n->file = strdup(file);
	n->lt_len = s.lt_len < PROFD_PY_LT_MAX ? s.lt_len : PROFD_PY_LT_MAX;
	n->lt = malloc(n->lt_len ? n->lt_len : 1);
	n->lt_310 = !!(s.flags & PROFD_PYSYM_F_LT_310);
	n->id = id;
	n->win_gen = 0;
	n->firstlineno = s.firstlineno;
	if (!n->text || !n->file || !n->lt) {
		free(n->text);
		free(n->file);
		free(n->lt);
		n->text = n->file = NULL;
		n->lt = NULL;
		return NULL;
	}
	memcpy(n->lt, s.lt, n->lt_len);
	return n;
}

static int py_frame_id(struct pyprocs *p, struct profile *w, uint64_t ip, uint32_t *id)
{
	struct name_slot *n = py_name(p, ip & PROFD_PY_ID_MASK);
	struct pf_frame f = { .kind = PF_FRAME_PY };
	uint64_t lasti = ip >> PROFD_PY_LASTI_SHIFT & PROFD_PY_LASTI_MASK;
	uint32_t line = 0;
	int err;

	/* offset: the first line, and the line being run above it (0: not known). */
	if (n) {
		if (lasti && pyline__line(n->lt_310 ? PYLINE_310 : PYLINE_311, n->lt, n->lt_len,
					  (int32_t)n->firstlineno, (int64_t)lasti - 2, &line))
			line = 0;
		f.offset = PF_PY_OFFSET(n->firstlineno, line);
	}
	/* A code object runs in many samples of a window: its names are interned once. */
	if (n && n->win_gen == profile__gen(w)) {
		f.name = n->win_name;
		f.module = n->win_module;
		return profile__frame_add(w, &f, id);
	}
	err = profile__intern_str(w, n ? n->text : "[unknown python]", &f.name);
	if (!err)
		err = profile__intern_str(w, n ? n->file : "", &f.module);
	if (err)
		return err;
	if (n) {
		n->win_gen = profile__gen(w);
		n->win_name = f.name;
		n->win_module = f.module;
	}
	return profile__frame_add(w, &f, id);
}

int pyprocs__stack(struct pyprocs *p, struct profile *window, uint32_t pid, const __u64 *ips, uint32_t n,
		   pyprocs_native_fn native, void *arg, uint32_t *out, uint32_t *nout)
{
	uint32_t ids[PROFD_MAX_DEPTH], order[PROFD_MAX_DEPTH], k;
	uint8_t is_eval[PROFD_MAX_DEPTH];
	struct eval_slot *ev = &p->evals[(pid * 0x9e3779b9U) >> 24 & (EVAL_SLOTS - 1)];
	int64_t now = clock__ns(CLOCK_MONOTONIC_COARSE);
	struct profd_pyproc pp = { 0 };
	int err;

	/* The eval function's range tells its frames even where the symbolizer could not name them. */
	if (ev->pid != pid || !ev->at_ns || now - ev->at_ns >= EVAL_FRESH_NS) {
		if (bpf_map_lookup_elem(p->procs_fd, &pid, &pp))
			pp.eval_lo = pp.eval_hi = 0;
		*ev = (struct eval_slot){ pid, now, pp.eval_lo, pp.eval_hi };
	}
	pp.eval_lo = ev->lo;
	pp.eval_hi = ev->hi;
	if (n > PROFD_MAX_DEPTH)
		n = PROFD_MAX_DEPTH;
	for (uint32_t i = 0; i < n; i++) {
		is_eval[i] = 0;
		if (ips[i] & PROFD_PY_FRAME) {
			err = py_frame_id(p, window, ips[i], &ids[i]);
		} else {
			const char *name;

			err = native(arg, ips[i], i > 0, &ids[i]);
			name = err ? NULL : profile__str(window, profile__frame(window, ids[i])->name);
			/* gcc splits the function: _PyEval_EvalFrameDefault.cold is the same call. */
			is_eval[i] = (name && !strncmp(name, "_PyEval_EvalFrameDefault", 24)) ||
				     (ips[i] - (i > 0) >= pp.eval_lo && ips[i] - (i > 0) < pp.eval_hi);
		}
		if (err)
			return err;
	}
	k = pystack__merge(ips, n, is_eval, order);
	for (uint32_t j = 0; j < k; j++)
		out[j] = ids[order[j]];
	*nout = k;
	return 0;
}

void pyprocs__print_status(const struct pyprocs *p, FILE *f)
{
	static const char *const names[PROFD_PYCNT_MAX] = {
		[PROFD_PYCNT_WALKS] = "python_walks",
		[PROFD_PYCNT_FRAMES] = "python_frames",
		[PROFD_PYCNT_NO_THREAD] = "python_no_thread_state",
		[PROFD_PYCNT_BAD_READ] = "python_bad_reads",
		[PROFD_PYCNT_NOT_CODE] = "python_not_code",
		[PROFD_PYCNT_SYMS_FULL] = "python_syms_full",
		[PROFD_PYCNT_SYM_CLASH] = "python_sym_clashes",
		[PROFD_PYCNT_TRUNCATED] = "python_truncated",
		[PROFD_PYCNT_THREAD_CACHED] = "python_thread_cached",
		[PROFD_PYCNT_CODE_CACHED] = "python_code_cached",
		[PROFD_PYCNT_ADOPTED] = "python_adopted",
		[PROFD_PYCNT_CODE_GEN_HITS] = "python_code_gen_hits",
		[PROFD_PYCNT_CODE_STATIC_HITS] = "python_code_static_hits",
	};
	struct pyinterp_stats st;
	uint64_t frees = 0;
	uint32_t open_files = 0;

	if (!p)
		return;
	pyinterp__stats(p->pi, &st);
	fprintf(f, "python_processes\t%" PRIu64 "\n", st.found);
	fprintf(f, "python_unsupported\t%" PRIu64 "\n", st.unsupported);
	fprintf(f, "python_files_probed\t%" PRIu64 "\n", st.probes);
	fprintf(f, "python_write_errors\t%" PRIu64 "\n", p->write_errors);
	fprintf(f, "python_names_missing\t%" PRIu64 "\n", p->sym_misses);
	for (int i = 0; i < PROFD_PY_GEN_SLOTS; i++)
		frees += __atomic_load_n(&p->skel->data_py_freegen->py_freegen[i], __ATOMIC_RELAXED);
	fprintf(f, "python_free_hooks\t%" PRIu32 "\n", p->nlinks);
	fprintf(f, "python_free_hooks_made\t%" PRIu64 "\n", p->hooked);
	fprintf(f, "python_free_hooks_full\t%" PRIu64 "\n", p->hooks_full);
	fprintf(f, "python_free_unhooks\t%" PRIu64 "\n", p->unhooks);
	fprintf(f, "python_free_relinks\t%" PRIu64 "\n", p->relinks);
	fprintf(f, "python_free_hook_failures\t%" PRIu64 "\n", p->hook_failures);
	for (uint32_t i = 0; i < p->nfiles; i++)
		open_files += p->files[i].used && p->files[i].fd >= 0;
	fprintf(f, "python_free_hook_files\t%" PRIu32 "\n", open_files);
	fprintf(f, "python_free_hook_files_closed\t%" PRIu64 "\n", p->files_closed);
	fprintf(f, "python_free_hook_files_full\t%" PRIu64 "\n", p->files_full);
	fprintf(f, "python_free_hook_files_waiting\t%" PRIu32 "\n", p->files_waiting);
	fprintf(f, "python_free_hook_files_retried\t%" PRIu64 "\n", p->files_retried);
	if (p->hook_failures)
		fprintf(f, "python_free_hook_error\t%d\n", p->hook_err);
	fprintf(f, "python_code_frees\t%" PRIu64 "\n", frees);
	for (int i = 0; i < PROFD_PYCNT_MAX; i++)
		fprintf(f, "%s\t%" PRIu64 "\n", names[i], (uint64_t)p->skel->bss->pycounters[i]);
	if (p->skel->rodata->cost_tgid[0]) {
		fprintf(f, "sample_cost_pid\t%u\n", p->skel->rodata->cost_tgid[0]);
		fprintf(f, "sample_cost_ns\t%" PRIu64 "\n", (uint64_t)p->skel->bss->cost_ns[0]);
		fprintf(f, "sample_cost_samples\t%" PRIu64 "\n", (uint64_t)p->skel->bss->cost_samples[0]);
		fprintf(f, "sample_cost_python_ns\t%" PRIu64 "\n", (uint64_t)p->skel->bss->py_cost_ns);
		fprintf(f, "sample_cost_unwind_ns\t%" PRIu64 "\n", (uint64_t)p->skel->bss->cost_unwind_ns[0]);
	}
	if (p->skel->rodata->cost_tgid[1]) {
		fprintf(f, "sample_cost_pid_2\t%u\n", p->skel->rodata->cost_tgid[1]);
		fprintf(f, "sample_cost_ns_2\t%" PRIu64 "\n", (uint64_t)p->skel->bss->cost_ns[1]);
		fprintf(f, "sample_cost_samples_2\t%" PRIu64 "\n", (uint64_t)p->skel->bss->cost_samples[1]);
		fprintf(f, "sample_cost_unwind_ns_2\t%" PRIu64 "\n", (uint64_t)p->skel->bss->cost_unwind_ns[1]);
	}
	{
		/* The daemon's own memory for Python: its tables and the names they hold. */
		uint64_t bytes = sizeof(*p) + p->nseen * sizeof(struct seen) + NAME_SLOTS * sizeof(*p->names) +
				 pyinterp__mem_bytes(p->pi);

		for (size_t i = 0; i < NAME_SLOTS; i++)
			if (p->names[i].text)
				bytes += strlen(p->names[i].text) + strlen(p->names[i].file) + 2 + p->names[i].lt_len;
		fprintf(f, "python_daemon_bytes\t%" PRIu64 "\n", bytes);
	}
	fprintf(f, "python_kernel_map_bytes\t%" PRIu64 "\n",
		(uint64_t)bpf_map__max_entries(p->skel->maps.py_syms) * (sizeof(struct profd_pysym) + 8 + 16) +
			(uint64_t)bpf_map__max_entries(p->skel->maps.py_procs) * (sizeof(struct profd_pyproc) + 4 + 16) +
			(uint64_t)bpf_map__max_entries(p->skel->maps.py_threads) * (24 + 4 + 16) +
			(uint64_t)bpf_map__max_entries(p->skel->maps.py_files) *
				(sizeof(struct profd_pyfile) + sizeof(struct profd_pyfile_key) + 16) +
			(uint64_t)bpf_map__value_size(p->skel->maps.py_scratch) * 2 * libbpf_num_possible_cpus());
}
