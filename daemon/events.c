#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "clock.h"
#include "events.h"
#include "log.h"
#include "events.skel.h"
#include "filenames.h"
#include "pevent.h"
#include "procmaps.h"
#include "procreg.h"
#include "pyprocs.h"
#include "symbolizer.h"

/*
 * The kernel maps the binary and ld.so at exec; the libraries come a
 * millisecond or two later, from ld.so in user space. A second capture
 * this long after exec sees them while a short process still runs, and
 * gives the DWARF walker libc's table before the first sample lands there
 * (99 Hz: one every 10 ms). On a loaded host ld.so can take longer: a
 * capture that finds no library yet is tried again, as often as this, each
 * this long after the last. A static binary (no ld.so at exec) maps nothing
 * more and is not captured again.
 */
#define RECAPTURE_DELAY_NS (5 * 1000000LL)
#define RECAPTURE_TRIES 4
/* How often bpf/events.bpf.c looks whether ld.so is done. */
#define EXEC_POLL_NS (1000000LL)
/* The registry's looks planned here: the unwind tables plan and call off their own. */
#define LOOK PROCREG_LOOK_CAPTURE
/* Paths of files seen in /proc reads: an exec event lists mappings without them. */
#define MAX_PATHS 1024
/* A read of /proc only to learn the paths an exec event's list lacks: within this much heap. */
#define LEARN_MAPS_BYTES (1u << 20)
/*
 * Exec events of known programs wake us together, at most this often
 * (bpf/events.bpf.c): a wake-up costs more than an exec's work, and the
 * event lists the mappings, so nothing is lost by waiting but the first
 * milliseconds of the new image's tables.
 */
#define EXEC_WAKE_GAP_NS (20 * 1000000LL)
/*
 * Exec events without a complete list, held this long. Such a list is
 * missing mostly because the image was gone when the hook looked (a
 * shell script's chain execs on within a millisecond or two): the
 * process's next exec event then comes a few milliseconds later, and a
 * read of /proc for the one before (100-300 µs with the stats of its
 * files) would only find the image that event lists. Anything else of the
 * process (its exit, a fork) and any drain end the wait at once: samples
 * are named after the events that came before them, as without a wait.
 */
#define EXEC_HOLD_NS (25 * 1000000LL)
#define EXEC_HELD_MAX 16

struct events {
	struct events_bpf *skel;
	struct ring_buffer *rb;
	struct symbolizer *sym;
	int epfd, tfd;
	int proc_fd;             /* /proc: the identity of processes older than profd */
	int64_t armed_ns; /* when tfd fires; 0: disarmed */

	/*
	 * Every process seen (exec, fork, a first sample), its exit, and its
	 * re-captures after exec, in due order (the delay is constant: FIFO).
	 * The symbolizer's and the unwind tables' state hang off its records.
	 */
	struct procreg *reg;

	struct filenames *paths;
	struct events_stats st;
	uint64_t delay_max_ns;   /* exec events come at most this long after the exec */
	uint64_t wake_gap_ns;    /* exec events of known programs share wake-ups this far apart */
	int known_fd;            /* known_files: files whose paths the exec events need not wait for */
	uint64_t ns_per_tick;    /* /proc's clock ticks (USER_HZ) */

	events_maps_fn maps_fn;
	events_exit_fn exit_fn;
	void *maps_arg, *exit_arg;
	uint32_t woken; /* execs and re-captures handled: what wakes the reader */

	struct profd_pev_exec held[EXEC_HELD_MAX]; /* in order of arrival, so of their due times */
	int64_t held_due[EXEC_HELD_MAX];
	uint32_t nheld;
};

/*
 * The exec event's list of mappings, named from the paths seen before;
 * NULL when it is not complete or names a file not seen yet.
 */
static struct procmaps *event_maps(struct events *e, const struct profd_pev_exec *x)
{
	struct procmap list[PROFD_PEV_MAX_MAPS];
	struct procmaps *pm = NULL;
	uint32_t n = x->nmaps;

	if (!(x->maps_flags & PROFD_PEV_MAPS_OK) || n == 0 || n > PROFD_PEV_MAX_MAPS)
		return NULL;
	for (uint32_t i = 0; i < n; i++) {
		const struct profd_pev_map *k = &x->maps[i];
		struct procmap *m = &list[i];

		*m = (struct procmap){ .start = k->start, .end = k->end, .offset = k->offset, .inode = k->ino,
				       .dev = makedev(k->dev >> 20, k->dev & 0xfffff) };
		if (k->flags & PROFD_PEV_MAP_STAT) {
			m->flags = PROCMAP_STAT;
			m->size = k->size;
			m->mtime_ns = k->mtime_sec * 1000000000LL + k->mtime_nsec;
		}
		if (k->flags & PROFD_PEV_MAP_VDSO) {
			m->path = "[vdso]";
			m->inode = m->dev = 0;
		} else if (k->flags & PROFD_PEV_MAP_ANON) {
			m->path = NULL;
			m->inode = m->dev = 0;
		} else {
			/* Without the inode's figures the file cannot be told from a later one of its number. */
			struct filenames_id id = { k->size, m->mtime_ns,
						   k->ctime_sec * 1000000000LL + k->ctime_nsec };
			int err = k->flags & PROFD_PEV_MAP_STAT ?
					  filenames__get(e->paths, m->dev, m->inode, &id, &m->path) :
					  -ENOENT;

			e->st.names_stale += err == -ESTALE;
			if (err)
				return NULL;
		}
	}
	if (procmaps__from(list, n, &pm))
		return NULL;
	return pm;
}

/* Executable mappings of files: the binary, then ld.so, then the libraries ld.so maps. */
static int count_files(const struct procmaps *m)
{
	int n = 0;

	for (size_t i = 0; m && i < procmaps__count(m); i++)
		n += !(procmaps__get(m, i)->flags & PROCMAP_ANON);
	return n;
}

/*
 * The identity of the file m maps: a stat of the very file mapped through
 * map_files (CAP_CHECKPOINT_RESTORE or CAP_SYS_ADMIN), else of its path in
 * the process's root, when that is the same inode. No open: the stat is
 * taken once per file learned. AT_STATX_DONT_SYNC: the figures the inode
 * holds, which are what the exec hook reads (a network filesystem is not
 * asked again).
 */
static int file_id(struct events *e, uint32_t pid, const struct procmap *m, struct filenames_id *id)
{
	char path[PATH_MAX + 32];
	struct statx sx;
	int flags = AT_NO_AUTOMOUNT | AT_STATX_DONT_SYNC, err;

	snprintf(path, sizeof(path), "%u/map_files/%llx-%llx", pid, (unsigned long long)m->start,
		 (unsigned long long)m->end);
	err = statx(e->proc_fd, path, flags, STATX_BASIC_STATS, &sx) ? -errno : 0;
	/* The mapped file itself: only the inode is compared (btrfs: a subvolume's device). */
	if (!err && sx.stx_ino != m->inode)
		return -ESTALE;
	if (err == -EPERM || err == -EACCES) {
		/* The path is the process's view and may lead anywhere: only the very inode counts. */
		if ((size_t)snprintf(path, sizeof(path), "%u/root%s", pid, m->path) >= sizeof(path))
			return -ENAMETOOLONG;
		err = statx(e->proc_fd, path, flags, STATX_BASIC_STATS, &sx) ? -errno : 0;
		if (!err && (sx.stx_ino != m->inode || makedev(sx.stx_dev_major, sx.stx_dev_minor) != m->dev))
			return -ESTALE;
	}
	if (err)
		return err;
	if (!S_ISREG(sx.stx_mode))
		return -EINVAL;
	*id = (struct filenames_id){ sx.stx_size, sx.stx_mtime.tv_sec * 1000000000LL + sx.stx_mtime.tv_nsec,
				     sx.stx_ctime.tv_sec * 1000000000LL + sx.stx_ctime.tv_nsec };
	return 0;
}

/* Seconds and nanoseconds as the inode keeps them: a time before 1970 has a negative second only. */
static void split_ns(int64_t ns, __s64 *sec, __u32 *nsec)
{
	int64_t r = ns % 1000000000LL;

	*sec = ns / 1000000000LL - (r < 0);
	*nsec = (__u32)(r < 0 ? r + 1000000000LL : r);
}

/*
 * Paths of pid's files in m, each with its file's identity, and the
 * kernel told of them: their next exec events need not wake us at once.
 * Only those not known as they are: a read of a known program's mappings
 * would otherwise cost a stat and a system call per file.
 */
static void learn(struct events *e, uint32_t pid, const struct procmaps *m)
{
	for (size_t i = 0; i < procmaps__count(m); i++) {
		const struct procmap *p = procmaps__get(m, i);
		struct profd_pev_file k = { .ino = p->inode,
					    .dev = (uint32_t)(major(p->dev) << 20 | minor(p->dev)) };
		struct filenames_id id;
		struct profd_pev_fileid v;

		if (!filenames__wants(e->paths, p))
			continue;
		if (file_id(e, pid, p, &id)) {
			e->st.names_unstated++;
			continue;
		}
		if (filenames__learn(e->paths, p, &id))
			continue;
		e->st.names_learned++;
		if (e->known_fd < 0)
			continue;
		v.size = id.size;
		split_ns(id.mtime_ns, &v.mtime_sec, &v.mtime_nsec);
		split_ns(id.ctime_ns, &v.ctime_sec, &v.ctime_nsec);
		bpf_map_update_elem(e->known_fd, &k, &v, BPF_ANY);
	}
}

/*
 * The exec event's list, which names a file not seen yet (a program's
 * first exec), named once a read of /proc taught the paths. The list, not
 * the read, is the image's: a host that wakes us late finds the process
 * in a later image already (a shim's chain execs on within milliseconds),
 * and that image's mappings would leave this one's samples, and those of
 * the children it forked, unnamed. A chain's images map mostly the same
 * files, so the later image's paths name this one's list. NULL: not named
 * even so (then the read names the image, as for an event without a list).
 */
static struct procmaps *event_maps_learned(struct events *e, const struct profd_pev_exec *x)
{
	struct procmaps *now = NULL, *listed;

	if (procmaps__read_at_max(e->proc_fd, x->ev.pid, LEARN_MAPS_BYTES, &now))
		return NULL;
	learn(e, x->ev.pid, now);
	procmaps__free(now);
	listed = event_maps(e, x);
	e->st.lists_named_late += listed != NULL;
	return listed;
}

/*
 * im->exec: -1 first sight (nobody else told), 1 at exec, 0 a re-capture
 * after it. Returns the executable file mappings found, -1 when the
 * process is gone.
 */
static int capture(struct events *e, struct events_image *im, const struct procreg_ids *ids,
		   struct procmaps *given)
{
	int err = symbolizer__capture_maps(e->sym, im->pid, ids, given), n;

	e->st.captures++;
	e->st.captures_listed += given != NULL;
	log_debug("capture of pid %u: %s", im->pid, given ? "listed by its event" : "from /proc");
	if (err == -ENOENT || err == -ESRCH) {
		e->st.capture_gone++;
		return -1; /* the DWARF tables would find nothing either */
	}
	im->maps = NULL;
	if (!err)
		symbolizer__maps(e->sym, im->pid, &im->maps);
	if (im->maps)
		procreg__set_maps(e->reg, im->pid, im->maps);
	if (im->exec < 0) {
		procmaps__free(im->maps);
		im->maps = NULL;
		return 0;
	}
	if (!given && im->maps)
		learn(e, im->pid, im->maps);
	n = count_files(im->maps);
	if (e->maps_fn)
		e->maps_fn(im, e->maps_arg);
	procmaps__free(im->maps);
	im->maps = NULL;
	return n;
}

static void arm(struct events *e)
{
	int64_t at = procreg__due_first(e->reg, LOOK);

	if (e->nheld && (!at || e->held_due[0] < at))
		at = e->held_due[0];
	/* Re-captures called off (exit, a re-read on the walker's request) wake nobody. */
	clock__timer_arm(e->tfd, at, &e->armed_ns);
}

static void run_due(struct events *e)
{
	struct procreg_info in;
	uint32_t pid, tries;
	int64_t now;

	/* Called for every drained entry: most find nothing queued and need no clock. */
	if (!procreg__due_first(e->reg, LOOK)) {
		arm(e);
		return;
	}
	now = clock__mono_ns();
	while (procreg__due_pop(e->reg, LOOK, now, &pid, &tries)) {
		struct events_image im = { pid, 0, 0, 0, NULL, false };

		e->woken++;

		if (!procreg__info(e->reg, pid, &in)) {
			im.start_time = in.start_time;
			im.start_code = in.start_code;
		}
		/* Binary and ld.so only: the libraries are not mapped yet. */
		if (capture(e, &im, NULL, NULL) == 2 && tries + 1 < RECAPTURE_TRIES)
			procreg__due_at(e->reg, LOOK, pid, now + RECAPTURE_DELAY_NS, tries + 1);
	}
	arm(e);
}

static struct procreg_ids event_ids(const struct profd_pev *ev)
{
	return (struct procreg_ids){
		ev->uid, ev->nspid,
		{ ev->root_mnt_id, makedev(ev->root_dev >> 20, ev->root_dev & 0xfffff),
		  ev->root_ino }
	};
}

static void on_exec(struct events *e, const struct profd_pev *ev, const struct profd_pev_exec *x)
{
	struct procmaps *listed, *prev, *older[SYMBOLIZER_PREV_IMAGES];
	struct events_image im = { ev->pid, 1, ev->start_boottime_ns / e->ns_per_tick, ev->start_code, NULL, false };
	struct procreg_ids ids = event_ids(ev);
	uint32_t pid = ev->pid;
	size_t nolder;
	int n;

	/*
	 * Samples taken before the exec resolve against the new image from
	 * here on: the price of one table per pid. A new record (what hung
	 * off the old one goes): an exit of an old process under the pid does
	 * not forget this one.
	 */
	/*
	 * The image before (a forked child's: its parent's) names the samples
	 * taken before the exec. Only when the exec events wait for ld.so: an
	 * address outside the new image's list is then not one it maps yet.
	 */
	if (!e->delay_max_ns || procreg__maps(e->reg, pid, &prev))
		prev = NULL;
	/*
	 * And the images before that one: the new record starts the
	 * symbolizer's entry afresh, and a shim's chain (shim, env, script,
	 * program) is drained after its last exec.
	 */
	nolder = prev ? symbolizer__prev_images(e->sym, pid, older) : 0;
	procreg__exec(e->reg, pid, im.start_time, im.start_code, &ids);
	listed = x ? event_maps(e, x) : NULL;
	if (!listed && x && (x->maps_flags & (PROFD_PEV_MAPS_OK | PROFD_PEV_MAPS_EXITED)) == PROFD_PEV_MAPS_OK)
		listed = event_maps_learned(e, x);
	if (x && (x->maps_flags & PROFD_PEV_MAPS_EXITED)) {
		/* Exited before ld.so was done: named from the list or not at all; the tables want nothing (exec -1). */
		im.exec = -1;
		if (listed && capture(e, &im, &ids, listed) >= 0)
			symbolizer__exec_prev(e->sym, pid, prev, older, nolder);
		else if (!listed)
			procreg__forget(e->reg, pid); /* its first sample, if any, tries /proc */
		procmaps__free(listed);
		goto out;
	}
	/* The hook wrote the walker's entry itself only from a complete list (not EXITED). */
	im.written = listed && (x->maps_flags & PROFD_PEV_MAPS_UMAPS);
	n = capture(e, &im, &ids, listed);
	if (n >= 0)
		symbolizer__exec_prev(e->sym, pid, prev, older, nolder);
	procmaps__free(listed);
	/*
	 * Gone already, or static (the binary only: no ld.so to map libraries).
	 * With libraries found, sent once ld.so was done or read as late as a
	 * re-capture would be (a busy host wakes profd late), the capture was
	 * the re-capture.
	 */
	if (n > 2 &&
	    (e->delay_max_ns || clock__mono_ns() >= (int64_t)ev->time_ns + RECAPTURE_DELAY_NS))
		goto out;
	if (n >= 2)
		procreg__due_at(e->reg, LOOK, pid, (int64_t)ev->time_ns + RECAPTURE_DELAY_NS, 0);
out:
	procmaps__free(prev);
	for (size_t i = 0; i < nolder; i++)
		procmaps__free(older[i]);
}

/*
 * The child has its parent's image until it execs or maps more: its record
 * shares the parent's snapshot. A parent not read yet (older than profd) is
 * read now, once, while it surely runs: a drain late under load finds it
 * gone. Nothing more is done until a sample of the child comes.
 */
static void on_fork(struct events *e, const struct profd_pev *ev)
{
	struct events_image im = { .pid = ev->ppid, .exec = -1 };
	struct procreg_ids ids = event_ids(ev);

	e->st.forks++;
	if (procreg__fork(e->reg, ev->ppid, ev->pid, ev->start_boottime_ns / e->ns_per_tick,
			  &ids) != -ENOENT)
		return;
	procreg__seen(e->reg, ev->ppid);
	if (!capture(e, &im, NULL, NULL) && !procreg__inherit(e->reg, ev->pid))
		e->st.fork_parents_read++;
}

/* The first sample of a forked child (it may be gone): named from its parent's snapshot. */
static void inherit(struct events *e, const struct procreg_info *in)
{
	struct procmaps *maps = NULL;

	if (!procreg__inherit(e->reg, in->pid) && !procreg__maps(e->reg, in->pid, &maps) &&
	    !symbolizer__fork(e->sym, in->ppid, in->pid, in->have_ids ? &in->ids : 0, maps)) {
		e->st.forks_named++;
		if (in->exited)
			symbolizer__exited(e->sym, in->pid);
	}
	procmaps__free(maps);
}

static void on_exit_ev(struct events *e, uint32_t pid, uint64_t time_ns)
{
	symbolizer__exited(e->sym, pid);
	if (e->exit_fn)
		e->exit_fn(pid, time_ns, e->exit_arg);
	/*
	 * Its re-captures are called off: its mappings are gone. With too
	 * many exits waiting, it is forgotten now.
	 */
	if (procreg__exit(e->reg, pid) == -ENOSPC) {
		procreg__forget(e->reg, pid);
		e->st.forgotten++;
	}
}

static int held_find(const struct events *e, uint32_t pid)
{
	for (uint32_t i = 0; i < e->nheld; i++)
		if (e->held[i].ev.pid == pid)
			return (int)i;
	return -1;
}

static void held_take(struct events *e, uint32_t i)
{
	memmove(&e->held[i], &e->held[i + 1], (e->nheld - i - 1) * sizeof(e->held[0]));
	memmove(&e->held_due[i], &e->held_due[i + 1], (e->nheld - i - 1) * sizeof(e->held_due[0]));
	e->nheld--;
}

/* The held event of pid (if any) handled now: what comes next of that process must find it done. */
static void held_run_pid(struct events *e, uint32_t pid)
{
	int i = held_find(e, pid);
	struct profd_pev_exec x;

	if (i < 0)
		return;
	x = e->held[i];
	held_take(e, (uint32_t)i);
	on_exec(e, &x.ev, &x);
}

/* The held events due (all: every one): their process did not exec again meanwhile. */
static void held_run(struct events *e, bool all)
{
	int64_t now;

	if (!e->nheld)
		return;
	now = all ? INT64_MAX : clock__mono_ns();
	while (e->nheld && e->held_due[0] <= now)
		held_run_pid(e, e->held[0].ev.pid);
}

static void consume(struct events *e, bool all)
{
	ring_buffer__consume(e->rb);
	held_run(e, all);
}

/*
 * An exec event: a held one of the same process is dropped (its image is
 * gone, the new event's capture serves its samples as a read of /proc
 * would have); this one is held when it has no complete list.
 */
static void exec_event(struct events *e, const struct profd_pev *ev, const struct profd_pev_exec *x)
{
	int i = held_find(e, ev->pid);

	if (i >= 0) {
		held_take(e, (uint32_t)i);
		e->st.exec_reads_saved++;
		log_debug("exec event of pid %u without a list: dropped, the process exec'd again", ev->pid);
	}
	/*
	 * A complete list whose files are not all known yet goes on at once:
	 * the read that names it teaches their paths to the next events.
	 */
	if (x && !(x->maps_flags & (PROFD_PEV_MAPS_OK | PROFD_PEV_MAPS_EXITED))) {
		if (e->nheld == EXEC_HELD_MAX)
			held_run_pid(e, e->held[0].ev.pid);
		e->held[e->nheld] = *x;
		e->held_due[e->nheld++] = clock__mono_ns() + EXEC_HOLD_NS;
		return;
	}
	on_exec(e, ev, x);
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct events *e = ctx;
	const struct profd_pev *ev = data;

	if (size < sizeof(*ev) || (!ev->pid && ev->type != PROFD_PEV_WAKE))
		return 0;
	if (ev->type == PROFD_PEV_WAKE) {
		e->woken++;
	} else if (ev->type == PROFD_PEV_EXEC) {
		const struct profd_pev_exec *x = size >= sizeof(*x) ? data : NULL;

		/* What woke us counts, not what a shared wake-up brought: the loop ticks above a rate. */
		if (!e->wake_gap_ns || !x ||
		    (x->maps_flags & (PROFD_PEV_MAPS_OK | PROFD_PEV_MAPS_NEW | PROFD_PEV_MAPS_EXITED)) !=
			    PROFD_PEV_MAPS_OK)
			e->woken++;
		exec_event(e, ev, x);
	} else if (ev->type == PROFD_PEV_EXIT) {
		held_run_pid(e, ev->pid);
		on_exit_ev(e, ev->pid, ev->time_ns);
	} else if (ev->type == PROFD_PEV_FORK) {
		held_run_pid(e, ev->ppid);
		held_run_pid(e, ev->pid);
		on_fork(e, ev);
	}
	return 0;
}

/* Nobody's to share: one entry, not preallocated, for the hooks to find empty. */
static int map_empty(struct bpf_map *m)
{
	return bpf_map__set_type(m, BPF_MAP_TYPE_HASH) || bpf_map__set_max_entries(m, 1) ||
	       bpf_map__set_map_flags(m, BPF_F_NO_PREALLOC);
}

static int open_bpf(struct events *e, uint64_t poll_ns, const struct pyprocs_fds *py, int umaps_fd)
{
	struct bpf_map *procs, *files;
	int err = 0;

	events_bpf__destroy(e->skel);
	e->skel = events_bpf__open();
	if (!e->skel)
		return -errno;
	e->skel->rodata->exec_poll_ns = poll_ns;
	e->skel->rodata->wake_gap_ns = poll_ns ? EXEC_WAKE_GAP_NS : 0;
	bpf_map__set_max_entries(e->skel->maps.known_files, MAX_PATHS);
	procs = e->skel->maps.py_procs;
	files = e->skel->maps.py_files;
	if (py ? bpf_map__reuse_fd(procs, py->procs) || bpf_map__reuse_fd(files, py->files) ||
		 bpf_map__reuse_fd(e->skel->maps.data_py_gen, py->gen) ||
		 bpf_map__reuse_fd(e->skel->maps.py_none, py->none) :
		 map_empty(procs) || map_empty(files))
		err = -errno;
	e->skel->rodata->py_notes = !!py;
	/* Entries written at exec: only with the events that wait for ld.so, and the walker's map. */
	e->skel->rodata->umaps_on = umaps_fd >= 0 && poll_ns;
	if (!err && (e->skel->rodata->umaps_on ?
			     bpf_map__reuse_fd(e->skel->maps.umaps, umaps_fd) :
			     map_empty(e->skel->maps.umaps) ||
				     bpf_map__set_max_entries(e->skel->maps.ufiles, 1)))
		err = -errno;
	if (!err && (events_bpf__load(e->skel) || events_bpf__attach(e->skel)))
		err = -errno;
	e->wake_gap_ns = err || !poll_ns ? 0 : EXEC_WAKE_GAP_NS;
	e->delay_max_ns = err ? 0 : poll_ns * PROFD_PEV_EXEC_POLLS_MAX + e->wake_gap_ns;
	e->known_fd = err ? -1 : bpf_map__fd(e->skel->maps.known_files);
	return err;
}

int events__open(struct symbolizer *sym, struct procreg *reg, struct filecache *fc,
		 const struct pyprocs_fds *py, int umaps_fd, struct events **out)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct events *e = calloc(1, sizeof(*e));
	const char *nowait;
	int err = 0;

	if (!e)
		return -ENOMEM;
	e->sym = sym;
	e->reg = reg;
	e->epfd = e->tfd = e->known_fd = -1;
	e->proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	e->ns_per_tick = 1000000000 / (uint64_t)(sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100);
	if (filenames__new(fc, MAX_PATHS, &e->paths)) {
		err = -ENOMEM;
		goto fail;
	}
	/*
	 * Without BPF timers or the task_vma iterator (before 6.7) each exec
	 * wakes us at once, and its re-capture again. PROFD_EXEC_NOWAIT=1 in
	 * the environment (tests) takes that path on any kernel.
	 */
	nowait = getenv("PROFD_EXEC_NOWAIT");
	err = nowait && !strcmp(nowait, "1") ? -EOPNOTSUPP :
					       open_bpf(e, EXEC_POLL_NS, py, umaps_fd);
	if (err)
		err = open_bpf(e, 0, py, umaps_fd);
	if (err)
		goto fail;
	e->rb = ring_buffer__new(bpf_map__fd(e->skel->maps.pevents), on_event, e, NULL);
	if (!e->rb) {
		err = -errno;
		goto fail;
	}
	e->epfd = epoll_create1(EPOLL_CLOEXEC);
	e->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (e->epfd < 0 || e->tfd < 0 ||
	    epoll_ctl(e->epfd, EPOLL_CTL_ADD, ring_buffer__epoll_fd(e->rb), &ev) ||
	    epoll_ctl(e->epfd, EPOLL_CTL_ADD, e->tfd, &ev)) {
		err = -errno;
		goto fail;
	}
	*out = e;
	return 0;
fail:
	events__free(e);
	return err ? err : -EINVAL;
}

void events__free(struct events *e)
{
	if (!e)
		return;
	ring_buffer__free(e->rb);
	events_bpf__destroy(e->skel);
	if (e->epfd >= 0)
		close(e->epfd);
	if (e->tfd >= 0)
		close(e->tfd);
	if (e->proc_fd >= 0)
		close(e->proc_fd);
	filenames__free(e->paths);
	free(e);
}

int events__fd(const struct events *e)
{
	return e->epfd;
}

int events__dispatch(struct events *e)
{
	int n;

	/* Read only when due: most wake-ups are the ring buffer's, and every system call counts per exec. */
	clock__timer_take(e->tfd, clock__mono_ns(), &e->armed_ns);
	e->woken = 0;
	n = ring_buffer__consume(e->rb);
	held_run(e, false);
	run_due(e);
	/* Forks and exits wake nobody (they wait for the next exec or drain): not counted. */
	return n < 0 ? n : (int)e->woken;
}

void events__poll(struct events *e)
{
	/* Inside a drain: its next entries may be of the processes those events tell of. */
	consume(e, true);
	run_due(e);
}

void events__drain_begin(struct events *e)
{
	consume(e, true);
	arm(e);
	procreg__drain_begin(e->reg);
}

void events__drain_end(struct events *e)
{
	procreg__drain_end(e->reg, NULL, NULL);
}

void events__recapture(struct events *e, uint32_t pid, uint64_t start_time, uint64_t start_code)
{
	struct events_image im = { pid, 0, start_time, start_code, NULL, false };

	/* With libraries found, the planned re-capture would find the same: it need not wake us. */
	if (capture(e, &im, NULL, NULL) > 2)
		procreg__due_cancel(e->reg, LOOK, pid);
	arm(e);
}

void events__seen(struct events *e, uint32_t pid)
{
	struct events_image im = { .pid = pid, .exec = -1 };
	struct procreg_info in;

	switch (procreg__seen(e->reg, pid)) {
	case 1:
		procreg__identify(e->reg, e->proc_fd, pid);
		capture(e, &im, NULL, NULL);
		break;
	case 2:
		if (!procreg__info(e->reg, pid, &in) && in.ppid)
			inherit(e, &in);
		break;
	}
}

uint64_t events__exec_delay_ns(const struct events *e)
{
	return e->delay_max_ns;
}

void events__on_maps(struct events *e, events_maps_fn fn, void *arg)
{
	e->maps_fn = fn;
	e->maps_arg = arg;
}

void events__on_exit(struct events *e, events_exit_fn fn, void *arg)
{
	e->exit_fn = fn;
	e->exit_arg = arg;
}

void events__stats(const struct events *e, struct events_stats *out)
{
	struct procreg_stats rs;

	*out = e->st;
	procreg__stats(e->reg, &rs);
	out->forgotten += rs.forgotten;
	out->pending_dropped = rs.due_dropped;
	out->execs = __atomic_load_n(&e->skel->bss->counters[PROFD_PEV_CNT_EXEC], __ATOMIC_RELAXED);
	out->exits = __atomic_load_n(&e->skel->bss->counters[PROFD_PEV_CNT_EXIT], __ATOMIC_RELAXED);
	out->lost = __atomic_load_n(&e->skel->bss->counters[PROFD_PEV_CNT_LOST], __ATOMIC_RELAXED);
	out->forks_seen =
		__atomic_load_n(&e->skel->bss->counters[PROFD_PEV_CNT_FORK], __ATOMIC_RELAXED);
	out->py_adopted =
		__atomic_load_n(&e->skel->bss->counters[PROFD_PEV_CNT_PY_ADOPTED], __ATOMIC_RELAXED);
	out->umaps_written =
		__atomic_load_n(&e->skel->bss->counters[PROFD_PEV_CNT_UMAPS], __ATOMIC_RELAXED);
	out->umaps_undone =
		__atomic_load_n(&e->skel->bss->counters[PROFD_PEV_CNT_UMAPS_UNDONE], __ATOMIC_RELAXED);
	out->lists_put_off =
		__atomic_load_n(&e->skel->bss->counters[PROFD_PEV_CNT_MAPS_PUT_OFF], __ATOMIC_RELAXED);
	out->lists_unsettled =
		__atomic_load_n(&e->skel->bss->counters[PROFD_PEV_CNT_MAPS_UNSETTLED], __ATOMIC_RELAXED);
}

int events__ufiles(struct events *e, uint64_t **seq)
{
	if (!e->skel->rodata->umaps_on)
		return -1;
	*seq = (uint64_t *)&e->skel->bss->ufiles_seq;
	return bpf_map__fd(e->skel->maps.ufiles);
}

void events__print_status(const struct events *e, FILE *f)
{
	struct events_stats s;

	fprintf(f, "process_events\t%s\n", e ? "on" : "unavailable");
	if (!e)
		return;
	events__stats(e, &s);
	fprintf(f, "process_exec_wait_ms\t%" PRIu64 "\n", e->delay_max_ns / 1000000);
	fprintf(f, "process_execs\t%" PRIu64 "\n", s.execs);
	fprintf(f, "process_exits\t%" PRIu64 "\n", s.exits);
	fprintf(f, "process_forks\t%" PRIu64 "\n", s.forks_seen);
	fprintf(f, "process_forks_named\t%" PRIu64 "\n", s.forks_named);
	fprintf(f, "process_forks_parent_read\t%" PRIu64 "\n", s.fork_parents_read);
	fprintf(f, "process_python_made_known\t%" PRIu64 "\n", s.py_adopted);
	fprintf(f, "process_events_lost\t%" PRIu64 "\n", s.lost);
	fprintf(f, "process_captures\t%" PRIu64 "\n", s.captures);
	fprintf(f, "process_captures_gone\t%" PRIu64 "\n", s.capture_gone);
	fprintf(f, "process_captures_listed\t%" PRIu64 "\n", s.captures_listed);
	fprintf(f, "process_exec_reads_saved\t%" PRIu64 "\n", s.exec_reads_saved);
	fprintf(f, "process_names_learned\t%" PRIu64 "\n", s.names_learned);
	fprintf(f, "process_names_unstated\t%" PRIu64 "\n", s.names_unstated);
	fprintf(f, "process_names_stale\t%" PRIu64 "\n", s.names_stale);
	fprintf(f, "process_exec_lists_named_late\t%" PRIu64 "\n", s.lists_named_late);
	fprintf(f, "process_exec_lists_put_off\t%" PRIu64 "\n", s.lists_put_off);
	fprintf(f, "process_exec_lists_unsettled\t%" PRIu64 "\n", s.lists_unsettled);
	fprintf(f, "process_recaptures_dropped\t%" PRIu64 "\n", s.pending_dropped);
	fprintf(f, "process_tables_written_at_exec\t%" PRIu64 "\n", s.umaps_written - s.umaps_undone);
	fprintf(f, "process_tables_written_undone\t%" PRIu64 "\n", s.umaps_undone);
}
