#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procmaps.h"
#include "procreg.h"

#define DEFAULT_MAX (1u << 20)
#define MIN_BUCKETS 1024
/* Exits waiting for their last drain; beyond, the caller forgets at once. */
#define MAX_EXITS 65536
/* Looks queued at once; beyond, dropped and counted. */
#define MAX_DUE 4096
/* Snapshot bytes kept (a shared one once per record holding it): beyond, the oldest go. */
#define DEFAULT_MAPS_BYTES (16u << 20)

struct lru {
	struct lru *prev, *next;
};

struct rec {
	struct lru lru;        /* among records holding a snapshot, the most recently set first */
	struct rec *next;
	struct procreg_info in;
	uint32_t gen;          /* new at each image under the pid: stale exits and looks see it */
	uint32_t pgen;         /* a forked child's: its parent's gen at the fork (0: not known) */
	struct procmaps *maps; /* NULL: not known */
	size_t maps_bytes;
	bool sampled;          /* procreg__seen told of it */
	bool told;             /* an event or a sample made it: procreg__detach leaves it */
	void *data[PROCREG_SLOTS];
};

struct slot {
	procreg_drop_fn drop;
	void *arg;
	bool loose; /* what it holds does not keep a record */
};

struct pidgen {
	uint32_t pid, gen;
};

struct due {
	uint32_t pid, gen, tries;
	int64_t due_ns;
};

struct dueq {
	struct due *dq;
	uint32_t head, len;
};

struct procreg {
	struct rec **b;
	size_t nb, n, max;
	size_t maps_bytes, maps_max;
	struct lru lru;
	uint32_t next_gen;

	struct pidgen *exits;
	size_t nexits, exits_cap, exits_at_drain, exits_old;

	struct dueq q[PROCREG_LOOKS];
	struct slot slots[PROCREG_SLOTS];
	int nslots;

	struct procreg_stats st;
	/* Records of forgotten pids for the next new ones: a record a fork or exec, one a exit. */
	struct rec *spare;
	size_t nspare;
};
#define MAX_SPARE 256

static size_t bucket(const struct procreg *r, uint32_t pid)
{
	return (size_t)((pid * 0x9e3779b97f4a7c15ULL) >> 32) & (r->nb - 1);
}

static struct rec **slot(const struct procreg *r, uint32_t pid)
{
	struct rec **pp = &r->b[bucket(r, pid)];

	while (*pp && (*pp)->in.pid != pid)
		pp = &(*pp)->next;
	return pp;
}

static struct rec *find(const struct procreg *r, uint32_t pid)
{
	return *slot(r, pid);
}

#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

static void maps_drop(struct procreg *r, struct rec *x)
{
	if (!x->maps)
		return;
	x->lru.prev->next = x->lru.next;
	x->lru.next->prev = x->lru.prev;
	r->maps_bytes -= x->maps_bytes;
	procmaps__free(x->maps);
	x->maps = NULL;
	x->maps_bytes = 0;
}

/* x holds m from now on (a new reference); the least recently set go beyond the budget. */
static void maps_hold(struct procreg *r, struct rec *x, struct procmaps *m)
{
	size_t b = procmaps__mem_bytes(m);

	maps_drop(r, x);
	if (b > r->maps_max) {
		r->st.maps_dropped++;
		return;
	}
	while (r->maps_bytes + b > r->maps_max && r->lru.prev != &r->lru) {
		maps_drop(r, container_of(r->lru.prev, struct rec, lru));
		r->st.maps_dropped++;
	}
	x->maps = procmaps__ref(m);
	x->maps_bytes = b;
	r->maps_bytes += b;
	x->lru.next = r->lru.next;
	x->lru.prev = &r->lru;
	r->lru.next->prev = &x->lru;
	r->lru.next = &x->lru;
}

/* What hangs off the record goes with the image it was for. */
static void drop_data(struct procreg *r, struct rec *x)
{
	for (int i = 0; i < r->nslots; i++) {
		void *d = x->data[i];

		x->data[i] = NULL;
		if (d && r->slots[i].drop)
			r->slots[i].drop(x->in.pid, d, r->slots[i].arg);
	}
}

int procreg__new(size_t max, size_t maps_max, struct procreg **out)
{
	struct procreg *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->max = max ? max : DEFAULT_MAX;
	r->maps_max = maps_max ? maps_max : DEFAULT_MAPS_BYTES;
	r->lru.prev = r->lru.next = &r->lru;
	r->nb = MIN_BUCKETS;
	r->b = calloc(r->nb, sizeof(*r->b));
	for (int k = 0; k < PROCREG_LOOKS; k++)
		if (!(r->q[k].dq = calloc(MAX_DUE, sizeof(*r->q[k].dq))))
			r->nb = 0;
	if (!r->b || !r->nb) {
		procreg__free(r);
		return -ENOMEM;
	}
	*out = r;
	return 0;
}

void procreg__free(struct procreg *r)
{
	if (!r)
		return;
	for (size_t i = 0; r->b && i < r->nb; i++) {
		for (struct rec *x = r->b[i], *nx; x; x = nx) {
			nx = x->next;
			drop_data(r, x);
			procmaps__free(x->maps);
			free(x);
		}
	}
	for (struct rec *x = r->spare, *nx; x; x = nx) {
		nx = x->next;
		free(x);
	}
	free(r->b);
	free(r->exits);
	for (int k = 0; k < PROCREG_LOOKS; k++)
		free(r->q[k].dq);
	free(r);
}

/* Twice the buckets once records outnumber them; a failed grow keeps the chains longer. */
static void grow(struct procreg *r)
{
	size_t nb = r->nb * 2, old = r->nb;
	struct rec **b, **ob = r->b;

	if (r->n < r->nb || !(b = calloc(nb, sizeof(*b))))
		return;
	r->b = b;
	r->nb = nb;
	for (size_t i = 0; i < old; i++) {
		for (struct rec *x = ob[i], *nx; x; x = nx) {
			nx = x->next;
			x->next = b[bucket(r, x->in.pid)];
			b[bucket(r, x->in.pid)] = x;
		}
	}
	free(ob);
}

/* pid's record, made empty when new or when reset; NULL at the bound or without memory. */
static struct rec *get(struct procreg *r, uint32_t pid, bool reset, bool *made)
{
	struct rec **pp = slot(r, pid), *x = *pp;

	*made = false;
	if (x && !reset)
		return x;
	if (!x) {
		if (r->n >= r->max) {
			r->st.full++;
			return NULL;
		}
		if (r->spare) {
			x = r->spare; /* emptied when it was forgotten */
			r->spare = x->next;
			r->nspare--;
			x->next = NULL;
		} else if (!(x = calloc(1, sizeof(*x)))) {
			return NULL;
		}
		*pp = x;
		r->n++;
		*made = true;
	}
	maps_drop(r, x);
	drop_data(r, x);
	struct rec *next = x->next;

	memset(x, 0, sizeof(*x));
	x->next = next;
	x->in.pid = pid;
	x->gen = ++r->next_gen ? r->next_gen : ++r->next_gen; /* 0: an exit with no record */
	grow(r);
	return x;
}

static void set_ids(struct rec *x, const struct procreg_ids *ids)
{
	if (!ids)
		return;
	x->in.ids = *ids;
	x->in.have_ids = true;
}

int procreg__exec(struct procreg *r, uint32_t pid, uint64_t start_time, uint64_t start_code,
		  const struct procreg_ids *ids)
{
	bool made;
	struct rec *x = pid ? get(r, pid, true, &made) : NULL;

	if (!x)
		return pid ? (r->n >= r->max ? -ENOSPC : -ENOMEM) : -EINVAL;
	x->in.start_time = start_time;
	x->in.start_code = start_code;
	x->told = true;
	set_ids(x, ids);
	return 0;
}

int procreg__fork(struct procreg *r, uint32_t ppid, uint32_t pid, uint64_t start_time,
		  const struct procreg_ids *ids)
{
	struct rec *p = find(r, ppid), *x;
	bool made;

	if (!pid || pid == ppid)
		return -EINVAL;
	if (!(x = get(r, pid, true, &made)))
		return r->n >= r->max ? -ENOSPC : -ENOMEM;
	x->in.start_time = start_time;
	x->in.ppid = ppid;
	x->told = true;
	x->pgen = p ? p->gen : 0;
	set_ids(x, ids);
	if (!p || !p->maps)
		return -ENOENT;
	x->in.start_code = p->in.start_code;
	maps_hold(r, x, p->maps);
	return 0;
}

int procreg__inherit(struct procreg *r, uint32_t pid)
{
	struct rec *x = find(r, pid), *p = x && x->in.ppid ? find(r, x->in.ppid) : NULL;

	if (!p || !p->maps)
		return -ENOENT;
	/*
	 * The parent exec'd since the fork (a script's command substitution,
	 * then the script's exec): its snapshot now is of an image the child
	 * never had, and the one taken at the fork stays.
	 */
	if (x->pgen && p->gen != x->pgen && x->maps)
		return 0;
	if (x->maps != p->maps)
		maps_hold(r, x, p->maps);
	x->in.start_code = p->in.start_code;
	return 0;
}

int procreg__seen(struct procreg *r, uint32_t pid)
{
	bool made;

	struct rec *x;
	int ret;

	if (!pid)
		return 0;
	/* At the bound: not remembered, so seen as new again (a second look costs only a read). */
	if (!(x = get(r, pid, false, &made)))
		return 1;
	ret = made || (!x->told && !x->sampled) ? 1 : x->sampled ? 0 : 2;
	x->sampled = x->told = true;
	return ret;
}

int procreg__set_maps(struct procreg *r, uint32_t pid, struct procmaps *m)
{
	struct rec *x = find(r, pid);

	if (!x)
		return -ENOENT;
	maps_hold(r, x, m);
	x->in.ppid = 0;
	return 0;
}

int procreg__maps(const struct procreg *r, uint32_t pid, struct procmaps **out)
{
	struct rec *x = find(r, pid);

	if (!x || !x->maps)
		return -ENOENT;
	*out = procmaps__ref(x->maps);
	return 0;
}

int procreg__info(const struct procreg *r, uint32_t pid, struct procreg_info *out)
{
	struct rec *x = find(r, pid);

	if (!x)
		return -ENOENT;
	*out = x->in;
	return 0;
}

void procreg__forget(struct procreg *r, uint32_t pid)
{
	struct rec **pp = slot(r, pid), *x = *pp;

	if (!x)
		return;
	*pp = x->next;
	maps_drop(r, x);
	drop_data(r, x);
	r->n--;
	if (r->nspare >= MAX_SPARE) {
		free(x);
		return;
	}
	memset(x, 0, sizeof(*x));
	x->next = r->spare;
	r->spare = x;
	r->nspare++;
}

int procreg__exit(struct procreg *r, uint32_t pid)
{
	bool made;
	/* Made if not known: what hangs off it later (a late sample) goes with it. */
	struct rec *x = pid ? get(r, pid, false, &made) : NULL;

	for (int k = 0; k < PROCREG_LOOKS; k++)
		procreg__due_cancel(r, k, pid);
	/* The snapshot stays until forgotten: its children's samples may still be named from it. */
	if (x)
		x->in.exited = x->told = true;
	if (r->nexits == r->exits_cap) {
		size_t ncap = r->exits_cap ? r->exits_cap * 2 : 256;
		struct pidgen *n = ncap <= MAX_EXITS ? realloc(r->exits, ncap * sizeof(*n)) : NULL;

		if (!n)
			return -ENOSPC;
		r->exits = n;
		r->exits_cap = ncap;
	}
	/* Not known here, it may be elsewhere (a name cache): forget() is told all the same. */
	r->exits[r->nexits++] = (struct pidgen){ pid, x ? x->gen : 0 };
	return 0;
}

void procreg__drain_begin(struct procreg *r)
{
	r->exits_at_drain = r->nexits;
}

void procreg__drain_end(struct procreg *r, void (*forget)(uint32_t pid, void *arg), void *arg)
{
	size_t n = r->exits_old;

	for (size_t i = 0; i < n; i++) {
		struct rec *x = find(r, r->exits[i].pid);

		/* A new image under the pid since (exec, fork): not forgotten with the old one. */
		if (x && x->gen != r->exits[i].gen)
			continue;
		if (forget)
			forget(r->exits[i].pid, arg);
		procreg__forget(r, r->exits[i].pid);
		r->st.forgotten++;
	}
	memmove(r->exits, r->exits + n, (r->nexits - n) * sizeof(*r->exits));
	r->nexits -= n;
	r->exits_old = r->exits_at_drain - n;
	r->exits_at_drain = 0;
}

int procreg__due_at(struct procreg *r, int look, uint32_t pid, int64_t due_ns, uint32_t tries)
{
	struct rec *x = find(r, pid);
	struct dueq *q = &r->q[look];
	uint32_t i;

	if (!x)
		return -ENOENT;
	if (q->len == MAX_DUE) {
		r->st.due_dropped++;
		return -ENOSPC;
	}
	/* Behind every look due no later: most come in order, and the walk back ends at once. */
	for (i = q->len++; i > 0; i--) {
		struct due *prev = &q->dq[(q->head + i - 1) % MAX_DUE];

		if (prev->due_ns <= due_ns)
			break;
		q->dq[(q->head + i) % MAX_DUE] = *prev;
	}
	q->dq[(q->head + i) % MAX_DUE] = (struct due){ pid, x->gen, tries, due_ns };
	return 0;
}

/* Whether the head look still stands: its process has the image it was queued for. */
static bool head_live(const struct procreg *r, const struct dueq *q)
{
	const struct due *d = &q->dq[q->head];
	const struct rec *x = d->pid ? find(r, d->pid) : NULL;

	return x && x->gen == d->gen && !x->in.exited;
}

int64_t procreg__due_first(struct procreg *r, int look)
{
	struct dueq *q = &r->q[look];

	while (q->len && !head_live(r, q)) {
		q->head = (q->head + 1) % MAX_DUE;
		q->len--;
	}
	return q->len ? q->dq[q->head].due_ns : 0;
}

int procreg__due_pop(struct procreg *r, int look, int64_t now_ns, uint32_t *pid, uint32_t *tries)
{
	int64_t first = procreg__due_first(r, look);
	struct dueq *q = &r->q[look];

	if (!first || first > now_ns)
		return 0;
	*pid = q->dq[q->head].pid;
	*tries = q->dq[q->head].tries;
	q->head = (q->head + 1) % MAX_DUE;
	q->len--;
	return 1;
}

void procreg__due_cancel(struct procreg *r, int look, uint32_t pid)
{
	struct dueq *q = &r->q[look];

	for (uint32_t i = 0; i < q->len; i++) {
		struct due *d = &q->dq[(q->head + i) % MAX_DUE];

		if (d->pid == pid)
			d->pid = 0;
	}
}

static int add_slot(struct procreg *r, procreg_drop_fn drop, void *arg, bool loose)
{
	if (r->nslots == PROCREG_SLOTS)
		return -ENOSPC;
	r->slots[r->nslots] = (struct slot){ drop, arg, loose };
	return r->nslots++;
}

int procreg__slot(struct procreg *r, procreg_drop_fn drop, void *arg)
{
	return add_slot(r, drop, arg, false);
}

int procreg__slot_loose(struct procreg *r, procreg_drop_fn drop, void *arg)
{
	return add_slot(r, drop, arg, true);
}

int procreg__touch(struct procreg *r, uint32_t pid)
{
	bool made;

	if (!pid)
		return -EINVAL;
	if (!get(r, pid, false, &made))
		return r->n >= r->max ? -ENOSPC : -ENOMEM;
	return 0;
}

void *procreg__data(const struct procreg *r, uint32_t pid, int slot)
{
	struct rec *x = find(r, pid);

	return x ? x->data[slot] : NULL;
}

int procreg__set_data(struct procreg *r, uint32_t pid, int slot, void *data)
{
	struct rec *x = find(r, pid);

	if (!x)
		return -ENOENT;
	x->data[slot] = data;
	return 0;
}

void procreg__detach(struct procreg *r, uint32_t pid, int slot)
{
	struct rec *x = find(r, pid);

	if (!x)
		return;
	x->data[slot] = NULL;
	if (x->told || x->maps)
		return;
	for (int i = 0; i < r->nslots; i++)
		if (x->data[i] && !r->slots[i].loose)
			return;
	procreg__forget(r, pid);
}

int procreg__each(struct procreg *r, int slot, procreg_each_fn fn, void *arg)
{
	for (size_t i = 0; i < r->nb; i++) {
		for (struct rec *x = r->b[i], *nx; x; x = nx) {
			int ret;

			nx = x->next;
			if (x->data[slot] && (ret = fn(x->in.pid, x->data[slot], arg)))
				return ret;
		}
	}
	return 0;
}

void procreg__stats(const struct procreg *r, struct procreg_stats *out)
{
	*out = r->st;
	out->records = r->n;
	out->maps_bytes = r->maps_bytes;
}

int procreg__read_stat(int proc_fd, uint32_t pid, uint64_t *start_time, uint64_t *start_code)
{
	char path[32], buf[1024], *p;
	unsigned long long v, sc;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%u/stat", pid);
	fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -EIO : -ESRCH;
	buf[n] = 0;
	/* The name may hold spaces and parentheses: fields restart after the last ')'. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
			 "%*d %*d %*d %llu %*u %*d %*u %llu", &v, &sc) != 2)
		return -EINVAL;
	*start_time = v;
	if (start_code)
		*start_code = sc;
	return 0;
}

int procreg__identify(struct procreg *r, int proc_fd, uint32_t pid)
{
	struct rec *x = find(r, pid);

	if (!x)
		return -ENOENT;
	if (x->in.start_time)
		return 0;
	return procreg__read_stat(proc_fd, pid, &x->in.start_time, &x->in.start_code);
}
