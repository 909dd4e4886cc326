#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/sysmacros.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "events.h"
#include "log.h"
#include "events.skel.h"
#include "pevent.h"
#include "procmaps.h"
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
#define MAX_PENDING 4096
/* How often bpf/events.bpf.c looks whether ld.so is done (PROFD_PEV_EXEC_POLLS times at most). */
#define EXEC_POLL_NS (1000000LL)
/*
 * Exits wait a drain and one more: a process is sampled in do_exit after
 * its exit event, and those samples may miss the drain that read the
 * event. Beyond this many a process is forgotten at once.
 */
#define MAX_EXITS 65536
#define SEEN_MAX_CAP (1u << 20)
/*
 * Paths of files seen in /proc reads, by (dev, inode): an exec event lists
 * the new image's mappings without paths. Direct-mapped: a collision only
 * costs a read of /proc.
 */
#define PATH_SLOTS 1024
#define SEEN_TOMB UINT32_MAX

struct pending {
	uint32_t pid;
	uint32_t tries;          /* captures after exec so far */
	int64_t due_ns;
	uint64_t start_time, start_code;
};

struct path_ent {
	uint64_t dev, ino;
	char *path;
};

struct events {
	struct events_bpf *skel;
	struct ring_buffer *rb;
	struct symbolizer *sym;
	int epfd, tfd;
	int64_t armed_ns; /* when tfd fires; 0: disarmed */

	/* Re-captures after exec, in due order (the delay is constant: FIFO). */
	struct pending *pq;
	uint32_t pq_head, pq_len;

	uint32_t *exits;
	size_t nexits, exits_cap, exits_at_drain;
	size_t exits_old;        /* the first exits_old were read before the last drain: forgotten at this one */

	/* Processes captured since their exec or first sight (open addressing). */
	uint32_t *seen;
	size_t seen_cap, seen_used, seen_live;

	struct path_ent *paths;
	struct events_stats st;
	uint64_t delay_max_ns;   /* exec events come at most this long after the exec */
	uint64_t ns_per_tick;    /* /proc's clock ticks (USER_HZ) */

	events_maps_fn maps_fn;
	events_exit_fn exit_fn;
	void *maps_arg, *exit_arg;
};

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static size_t pid_hash(uint32_t pid, size_t cap)
{
	return (size_t)((pid * 0x9e3779b97f4a7c15ULL) >> 32) & (cap - 1);
}

static int seen_find(const struct events *e, uint32_t pid, size_t *slot)
{
	size_t j = pid_hash(pid, e->seen_cap), tomb = SIZE_MAX;

	for (;; j = (j + 1) & (e->seen_cap - 1)) {
		if (e->seen[j] == pid) {
			*slot = j;
			return 1;
		}
		if (e->seen[j] == SEEN_TOMB && tomb == SIZE_MAX)
			tomb = j;
		if (!e->seen[j]) {
			*slot = tomb != SIZE_MAX ? tomb : j;
			return 0;
		}
	}
}

/* Rebuilds without tombstones, twice as large when live entries need it. */
static int seen_rehash(struct events *e)
{
	size_t cap = e->seen_cap, old_cap = e->seen_cap, slot;
	uint32_t *old = e->seen;

	while (e->seen_live * 4 >= cap && cap < SEEN_MAX_CAP)
		cap *= 2;
	if (e->seen_live * 4 >= cap) {
		/* Bounded: forgetting who was seen only costs a second capture. */
		memset(e->seen, 0, old_cap * sizeof(*e->seen));
		e->seen_used = e->seen_live = 0;
		return 0;
	}
	e->seen = calloc(cap, sizeof(*e->seen));
	if (!e->seen) {
		e->seen = old;
		return -ENOMEM;
	}
	e->seen_cap = cap;
	e->seen_used = e->seen_live;
	for (size_t i = 0; i < old_cap; i++) {
		if (!old[i] || old[i] == SEEN_TOMB)
			continue;
		seen_find(e, old[i], &slot);
		e->seen[slot] = old[i];
	}
	free(old);
	return 0;
}

/* Returns 1 when pid was not in the set (and is now). */
static int seen_add(struct events *e, uint32_t pid)
{
	size_t slot;

	if (seen_find(e, pid, &slot))
		return 0;
	if ((e->seen_used + 1) * 2 > e->seen_cap) {
		if (seen_rehash(e))
			return 1; /* no memory: capture anyway, remember nothing */
		seen_find(e, pid, &slot);
	}
	if (!e->seen[slot])
		e->seen_used++;
	e->seen[slot] = pid;
	e->seen_live++;
	return 1;
}

static void seen_del(struct events *e, uint32_t pid)
{
	size_t slot;

	if (seen_find(e, pid, &slot)) {
		e->seen[slot] = SEEN_TOMB;
		e->seen_live--;
	}
}

static struct path_ent *path_slot(struct events *e, uint64_t dev, uint64_t ino)
{
	return &e->paths[((dev * 0x9e3779b97f4a7c15ULL) ^ (ino * 0xc2b2ae3d27d4eb4fULL)) >> 54 & (PATH_SLOTS - 1)];
}

static void paths_learn(struct events *e, const struct procmaps *pm)
{
	for (size_t i = 0; i < procmaps__count(pm); i++) {
		const struct procmap *m = procmaps__get(pm, i);
		struct path_ent *pe;
		char *copy;

		/* A path with a newline came from PROCMAP_QUERY raw; a deleted file is read from /proc. */
		if ((m->flags & (PROCMAP_ANON | PROCMAP_DELETED)) || !m->path || strchr(m->path, '\n'))
			continue;
		pe = path_slot(e, m->dev, m->inode);
		if (pe->path && pe->dev == m->dev && pe->ino == m->inode && !strcmp(pe->path, m->path))
			continue;
		if (!(copy = strdup(m->path)))
			return;
		free(pe->path);
		*pe = (struct path_ent){ m->dev, m->inode, copy };
	}
}

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
		struct path_ent *pe;

		*m = (struct procmap){ .start = k->start, .end = k->end, .offset = k->offset, .inode = k->ino,
				       .dev = makedev(k->dev >> 20, k->dev & 0xfffff) };
		if (k->flags & PROFD_PEV_MAP_VDSO) {
			m->path = "[vdso]";
			m->inode = m->dev = 0;
		} else if (k->flags & PROFD_PEV_MAP_ANON) {
			m->path = NULL;
			m->inode = m->dev = 0;
		} else {
			pe = path_slot(e, m->dev, m->inode);
			if (!pe->path || pe->dev != m->dev || pe->ino != m->inode)
				return NULL;
			m->path = pe->path;
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
 * im->exec: -1 first sight (nobody else told), 1 at exec, 0 a re-capture
 * after it. Returns the executable file mappings found, -1 when the
 * process is gone.
 */
static int capture(struct events *e, struct events_image *im, const struct symbolizer_ids *ids,
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
	if (im->exec < 0)
		return 0;
	im->maps = NULL;
	if (!err)
		symbolizer__maps(e->sym, im->pid, &im->maps);
	if (!given && im->maps)
		paths_learn(e, im->maps);
	n = count_files(im->maps);
	if (e->maps_fn)
		e->maps_fn(im, e->maps_arg);
	procmaps__free(im->maps);
	im->maps = NULL;
	return n;
}

static void recapture_at(struct events *e, const struct events_image *im, uint32_t tries, int64_t due)
{
	if (e->pq_len == MAX_PENDING) {
		e->st.pending_dropped++;
		return;
	}
	e->pq[(e->pq_head + e->pq_len++) % MAX_PENDING] =
		(struct pending){ im->pid, tries, due, im->start_time, im->start_code };
}

static void arm(struct events *e)
{
	struct itimerspec its = {};
	int64_t due;

	/* Re-captures called off (exit, a re-read on the walker's request) wake nobody. */
	while (e->pq_len && !e->pq[e->pq_head].pid) {
		e->pq_head = (e->pq_head + 1) % MAX_PENDING;
		e->pq_len--;
	}
	due = e->pq_len ? e->pq[e->pq_head].due_ns : 0;
	if (due == e->armed_ns)
		return;
	its.it_value.tv_sec = due / 1000000000;
	its.it_value.tv_nsec = due % 1000000000;
	if (due && !its.it_value.tv_sec && !its.it_value.tv_nsec)
		its.it_value.tv_nsec = 1;
	if (!timerfd_settime(e->tfd, TFD_TIMER_ABSTIME, &its, NULL))
		e->armed_ns = due;
}

static void run_due(struct events *e)
{
	int64_t now = mono_ns();

	while (e->pq_len && e->pq[e->pq_head].due_ns <= now) {
		struct pending p = e->pq[e->pq_head];
		struct events_image im = { p.pid, 0, p.start_time, p.start_code, NULL };

		e->pq_head = (e->pq_head + 1) % MAX_PENDING;
		e->pq_len--;
		/* Binary and ld.so only: the libraries are not mapped yet. Same delay: the queue stays in due order. */
		if (p.pid && capture(e, &im, NULL, NULL) == 2 && p.tries + 1 < RECAPTURE_TRIES)
			recapture_at(e, &im, p.tries + 1, now + RECAPTURE_DELAY_NS);
	}
	arm(e);
}

/* Planned re-captures of pid are called off; arm() drops them from the queue's head. */
static void cancel_recaptures(struct events *e, uint32_t pid)
{
	for (uint32_t i = 0; i < e->pq_len; i++) {
		struct pending *p = &e->pq[(e->pq_head + i) % MAX_PENDING];

		if (p->pid == pid)
			p->pid = 0;
	}
}

static void on_exec(struct events *e, const struct profd_pev *ev, const struct profd_pev_exec *x)
{
	struct procmaps *listed;
	struct events_image im = { ev->pid, 1, ev->start_boottime_ns / e->ns_per_tick, ev->start_code, NULL };
	struct symbolizer_ids ids = { ev->uid, ev->nspid,
				      { ev->root_mnt_id, makedev(ev->root_dev >> 20, ev->root_dev & 0xfffff), ev->root_ino } };
	uint32_t pid = ev->pid;
	int n;

	/* Samples taken before the exec resolve against the new image from here on: the price of one table per pid. */
	symbolizer__forget_pid(e->sym, pid);
	/* A new process under an old pid: not to be forgotten with the old one. */
	for (size_t i = 0; i < e->nexits; i++)
		if (e->exits[i] == pid)
			e->exits[i] = 0;
	listed = x ? event_maps(e, x) : NULL;
	if (x && (x->maps_flags & PROFD_PEV_MAPS_EXITED)) {
		/* Exited before ld.so was done: named from the list or not at all; the tables want nothing (exec -1). */
		im.exec = -1;
		if (listed && capture(e, &im, &ids, listed) == 0)
			seen_add(e, pid);
		procmaps__free(listed);
		return;
	}
	n = capture(e, &im, &ids, listed);
	procmaps__free(listed);
	seen_add(e, pid);
	/*
	 * Gone already, or static (the binary only: no ld.so to map libraries).
	 * With libraries found, sent once ld.so was done or read as late as a
	 * re-capture would be (a busy host wakes profd late), the capture was
	 * the re-capture.
	 */
	if (n > 2 && (e->delay_max_ns || mono_ns() >= (int64_t)ev->time_ns + RECAPTURE_DELAY_NS))
		return;
	if (n >= 2)
		recapture_at(e, &im, 0, (int64_t)ev->time_ns + RECAPTURE_DELAY_NS);
}

static void on_exit_ev(struct events *e, uint32_t pid, uint64_t time_ns)
{
	symbolizer__exited(e->sym, pid);
	if (e->exit_fn)
		e->exit_fn(pid, time_ns, e->exit_arg);
	/* Its mappings are gone already; a re-capture now would find nothing. */
	cancel_recaptures(e, pid);
	if (e->nexits == e->exits_cap) {
		size_t ncap = e->exits_cap ? e->exits_cap * 2 : 256;
		uint32_t *n = ncap <= MAX_EXITS ? realloc(e->exits, ncap * sizeof(*n)) : NULL;

		if (!n) {
			symbolizer__forget_pid(e->sym, pid);
			seen_del(e, pid);
			e->st.forgotten++;
			return;
		}
		e->exits = n;
		e->exits_cap = ncap;
	}
	e->exits[e->nexits++] = pid;
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct events *e = ctx;
	const struct profd_pev *ev = data;

	if (size < sizeof(*ev) || !ev->pid)
		return 0;
	if (ev->type == PROFD_PEV_EXEC)
		on_exec(e, ev, size >= sizeof(struct profd_pev_exec) ? data : NULL);
	else if (ev->type == PROFD_PEV_EXIT)
		on_exit_ev(e, ev->pid, ev->time_ns);
	return 0;
}

static int open_bpf(struct events *e, uint64_t poll_ns)
{
	int err = 0;

	events_bpf__destroy(e->skel);
	e->skel = events_bpf__open();
	if (!e->skel)
		return -errno;
	e->skel->rodata->exec_poll_ns = poll_ns;
	if (events_bpf__load(e->skel) || events_bpf__attach(e->skel))
		err = -errno;
	e->delay_max_ns = err ? 0 : poll_ns * PROFD_PEV_EXEC_POLLS;
	return err;
}

int events__open(struct symbolizer *sym, struct events **out)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct events *e = calloc(1, sizeof(*e));
	const char *nowait;
	int err = 0;

	if (!e)
		return -ENOMEM;
	e->sym = sym;
	e->epfd = e->tfd = -1;
	e->ns_per_tick = 1000000000 / (uint64_t)(sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100);
	e->seen_cap = 1024;
	e->seen = calloc(e->seen_cap, sizeof(*e->seen));
	e->pq = calloc(MAX_PENDING, sizeof(*e->pq));
	e->paths = calloc(PATH_SLOTS, sizeof(*e->paths));
	if (!e->seen || !e->pq || !e->paths) {
		err = -ENOMEM;
		goto fail;
	}
	/*
	 * Without BPF timers or the task_vma iterator (before 6.7) each exec
	 * wakes us at once, and its re-capture again. PROFD_EXEC_NOWAIT=1 in
	 * the environment (tests) takes that path on any kernel.
	 */
	nowait = getenv("PROFD_EXEC_NOWAIT");
	err = nowait && !strcmp(nowait, "1") ? -EOPNOTSUPP : open_bpf(e, EXEC_POLL_NS);
	if (err)
		err = open_bpf(e, 0);
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
	free(e->pq);
	for (size_t i = 0; e->paths && i < PATH_SLOTS; i++)
		free(e->paths[i].path);
	free(e->paths);
	free(e->exits);
	free(e->seen);
	free(e);
}

int events__fd(const struct events *e)
{
	return e->epfd;
}

void events__dispatch(struct events *e)
{
	uint64_t ticks;

	/* Read only when due: most wake-ups are the ring buffer's, and every system call counts per exec. */
	if (e->armed_ns && mono_ns() >= e->armed_ns && read(e->tfd, &ticks, sizeof(ticks)) > 0)
		e->armed_ns = 0;
	ring_buffer__consume(e->rb);
	run_due(e);
}

void events__poll(struct events *e)
{
	ring_buffer__consume(e->rb);
	run_due(e);
}

void events__drain_begin(struct events *e)
{
	ring_buffer__consume(e->rb);
	arm(e);
	e->exits_at_drain = e->nexits;
}

void events__drain_end(struct events *e)
{
	size_t n = e->exits_old;

	for (size_t i = 0; i < n; i++) {
		if (!e->exits[i])
			continue;
		symbolizer__forget_pid(e->sym, e->exits[i]);
		seen_del(e, e->exits[i]);
		e->st.forgotten++;
	}
	memmove(e->exits, e->exits + n, (e->nexits - n) * sizeof(*e->exits));
	e->nexits -= n;
	e->exits_old = e->exits_at_drain - n;
	e->exits_at_drain = 0;
}

void events__recapture(struct events *e, uint32_t pid, uint64_t start_time, uint64_t start_code)
{
	struct events_image im = { pid, 0, start_time, start_code, NULL };

	/* With libraries found, the planned re-capture would find the same: it need not wake us. */
	if (capture(e, &im, NULL, NULL) > 2)
		cancel_recaptures(e, pid);
	arm(e);
}

void events__seen(struct events *e, uint32_t pid)
{
	struct events_image im = { .pid = pid, .exec = -1 };

	if (pid && seen_add(e, pid))
		capture(e, &im, NULL, NULL);
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
	*out = e->st;
	out->execs = __atomic_load_n(&e->skel->bss->counters[PROFD_PEV_CNT_EXEC], __ATOMIC_RELAXED);
	out->exits = __atomic_load_n(&e->skel->bss->counters[PROFD_PEV_CNT_EXIT], __ATOMIC_RELAXED);
	out->lost = __atomic_load_n(&e->skel->bss->counters[PROFD_PEV_CNT_LOST], __ATOMIC_RELAXED);
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
	fprintf(f, "process_events_lost\t%" PRIu64 "\n", s.lost);
	fprintf(f, "process_captures\t%" PRIu64 "\n", s.captures);
	fprintf(f, "process_captures_gone\t%" PRIu64 "\n", s.capture_gone);
	fprintf(f, "process_captures_listed\t%" PRIu64 "\n", s.captures_listed);
	fprintf(f, "process_recaptures_dropped\t%" PRIu64 "\n", s.pending_dropped);
}
