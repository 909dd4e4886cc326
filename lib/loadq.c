#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "loadq.h"
#include "procmaps.h"

#define DEFAULT_MAX 1024
#define DEFAULT_COLD 256
#define DEFAULT_AGE_NS 1000000000LL

struct loadq {
	struct loadq_req *r;     /* oldest first; pid 0: served, squeezed out at the serve's end */
	size_t n, cap, ncold;
	size_t max, max_cold;
	int64_t max_age, grace, linger;
	uint64_t dropped;
};

int loadq__new(const struct loadq_opts *o, struct loadq **out)
{
	struct loadq *q = calloc(1, sizeof(*q));

	if (!q)
		return -ENOMEM;
	q->max = o->max ? o->max : DEFAULT_MAX;
	q->max_cold = o->max_cold ? o->max_cold : DEFAULT_COLD;
	q->max_age = o->cold_max_age_ns ? o->cold_max_age_ns : DEFAULT_AGE_NS;
	q->grace = o->grace_ns;
	q->linger = o->linger_ns;
	*out = q;
	return 0;
}

void loadq__free(struct loadq *q)
{
	if (!q)
		return;
	for (size_t i = 0; i < q->n; i++)
		procmaps__free(q->r[i].pm);
	free(q->r);
	free(q);
}

void loadq__set_grace(struct loadq *q, int64_t ns)
{
	q->grace = ns;
}

static void remove_at(struct loadq *q, size_t i)
{
	if (!q->r[i].hot)
		q->ncold--;
	procmaps__free(q->r[i].pm);
	memmove(&q->r[i], &q->r[i + 1], (q->n - i - 1) * sizeof(*q->r));
	q->n--;
}

static struct loadq_req *find(const struct loadq *q, uint32_t pid)
{
	for (size_t i = 0; pid && i < q->n; i++)
		if (q->r[i].pid == pid)
			return &q->r[i];
	return NULL;
}

int loadq__add(struct loadq *q, const struct loadq_req *r, bool stale, int64_t now)
{
	struct loadq_req *e = find(q, r->pid);

	if (!r->pid)
		return -EINVAL;
	if (e) {
		e->exec |= r->exec;
		if (r->hot && !e->hot)
			q->ncold--;
		e->hot |= r->hot;
		e->young &= !stale;
		e->linger &= !stale && r->linger;
		if (r->pm || stale) {
			e->snapshot = r->snapshot && !stale;
			procmaps__free(e->pm);
			e->pm = procmaps__ref(r->pm);
			e->start_time = r->start_time;
			e->start_code = r->start_code;
		}
		return 0;
	}
	if (!r->hot && q->ncold >= q->max_cold) {
		for (size_t i = 0; i < q->n; i++) {
			if (!q->r[i].hot) {
				remove_at(q, i);
				q->dropped++;
				break;
			}
		}
	}
	if (q->n == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 64;
		struct loadq_req *n;

		if (cap > q->max)
			cap = q->max;
		if (cap <= q->n)
			return -ENOSPC;
		if (!(n = realloc(q->r, cap * sizeof(*n))))
			return -ENOMEM;
		q->r = n;
		q->cap = cap;
	}
	e = &q->r[q->n++];
	*e = *r;
	e->queued = now;
	e->pm = procmaps__ref(r->pm);
	if (!e->hot)
		q->ncold++;
	return 0;
}

void loadq__cancel(struct loadq *q, uint32_t pid)
{
	struct loadq_req *e = find(q, pid);

	if (e)
		remove_at(q, (size_t)(e - q->r));
}

bool loadq__has(const struct loadq *q, uint32_t pid)
{
	return find(q, pid) != NULL;
}

size_t loadq__count(const struct loadq *q)
{
	return q->n;
}

static bool waits(const struct loadq *q, const struct loadq_req *e, int64_t now)
{
	return e->young && (!e->pm || e->snapshot) && now - e->queued < q->grace;
}

/* Takes request i out of the queue for serving: marked served, its pm the caller's. */
static struct loadq_req take(struct loadq *q, size_t i)
{
	struct loadq_req e = q->r[i];

	q->r[i].pid = 0;
	q->r[i].pm = NULL;
	if (!e.hot)
		q->ncold--;
	return e;
}

bool loadq__serve(struct loadq *q, int64_t now, loadq_serve_fn fn, void *arg)
{
	bool stop = false, more = false;
	size_t k = 0;

	for (size_t i = 0; i < q->n && !stop; i++) {
		if (q->r[i].pid && q->r[i].hot && !waits(q, &q->r[i], now)) {
			struct loadq_req e = take(q, i);

			stop = fn(&e, arg) != 0;
			procmaps__free(e.pm);
		}
	}
	for (size_t i = q->n; i-- > 0 && !stop;) {
		struct loadq_req e;

		if (!q->r[i].pid || q->r[i].hot)
			continue;
		e = take(q, i);
		if (now - e.queued > q->max_age)
			q->dropped++;
		else
			stop = fn(&e, arg) != 0;
		procmaps__free(e.pm);
	}
	for (size_t i = 0; i < q->n; i++) {
		if (q->r[i].pid) {
			more |= !waits(q, &q->r[i], now);
			q->r[k++] = q->r[i];
		}
	}
	q->n = k;
	return more;
}

int64_t loadq__wake_at(const struct loadq *q, int64_t now)
{
	int64_t next = 0;

	for (size_t i = 0; i < q->n; i++) {
		int64_t due = q->r[i].queued +
			      (q->r[i].linger && q->linger > q->grace ? q->linger : q->grace);

		if (waits(q, &q->r[i], now) && (!next || due < next))
			next = due;
	}
	return next;
}

uint64_t loadq__dropped(const struct loadq *q)
{
	return q->dropped;
}
