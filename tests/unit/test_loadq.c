/* loadq: hot requests first, oldest first; cold ones newest first, bounded; young ones wait. */
#include "loadq.h"
#include "procmaps.h"
#include "t.h"

#include <errno.h>

#define MS 1000000LL

struct served {
	uint32_t pid[64];
	struct loadq_req r[64];
	int n, stop_after; /* 0: never stop */
};

static int on_serve(const struct loadq_req *r, void *arg)
{
	struct served *s = arg;

	if (s->n < 64) {
		s->pid[s->n] = r->pid;
		s->r[s->n] = *r;
	}
	s->n++;
	return s->stop_after && s->n >= s->stop_after;
}

static struct procmaps *maps_at(uint64_t start)
{
	struct procmap m = { .start = start, .end = start + 0x1000, .inode = 9, .dev = 1,
			     .path = "/bin/x" };
	struct procmaps *pm = NULL;

	CHECK_EQ_INT(procmaps__from(&m, 1, &pm), 0);
	return pm;
}

static void test_order(void)
{
	struct loadq *q = NULL;
	struct served s = { 0 };

	CHECK_EQ_INT(loadq__new(&(struct loadq_opts){ 0 }, &q), 0);
	if (!q)
		return;
	CHECK_EQ_INT(loadq__add(q, &(struct loadq_req){ .pid = 10, .exec = true }, false, 1), 0);
	CHECK_EQ_INT(loadq__add(q, &(struct loadq_req){ .pid = 11, .hot = true }, false, 2), 0);
	CHECK_EQ_INT(loadq__add(q, &(struct loadq_req){ .pid = 12 }, false, 3), 0);
	CHECK_EQ_INT(loadq__add(q, &(struct loadq_req){ .pid = 13, .hot = true }, false, 4), 0);
	CHECK_EQ_INT(loadq__add(q, &(struct loadq_req){ .pid = 0, .hot = true }, false, 4), -EINVAL);
	CHECK_EQ_INT(loadq__count(q), 4);
	CHECK(loadq__has(q, 12) && !loadq__has(q, 14));
	/* The walker's first, oldest first; then the others, newest first. */
	CHECK(!loadq__serve(q, 5, on_serve, &s));
	CHECK_EQ_INT(s.n, 4);
	CHECK(s.pid[0] == 11 && s.pid[1] == 13 && s.pid[2] == 12 && s.pid[3] == 10);
	CHECK(s.r[3].exec && !s.r[3].hot && s.r[3].queued == 1);
	CHECK_EQ_INT(loadq__count(q), 0);
	/* A turn whose time is spent stops; what is left is served next turn. */
	for (uint32_t pid = 20; pid < 25; pid++)
		loadq__add(q, &(struct loadq_req){ .pid = pid, .hot = pid < 22 }, false, 10);
	s = (struct served){ .stop_after = 3 };
	CHECK(loadq__serve(q, 11, on_serve, &s));
	CHECK(s.n == 3 && s.pid[0] == 20 && s.pid[1] == 21 && s.pid[2] == 24);
	CHECK_EQ_INT(loadq__count(q), 2);
	s = (struct served){ 0 };
	CHECK(!loadq__serve(q, 12, on_serve, &s));
	CHECK(s.n == 2 && s.pid[0] == 23 && s.pid[1] == 22);
	/* An exit calls its request off. */
	loadq__add(q, &(struct loadq_req){ .pid = 30 }, false, 20);
	loadq__add(q, &(struct loadq_req){ .pid = 31, .hot = true }, false, 20);
	loadq__cancel(q, 30);
	loadq__cancel(q, 99);
	s = (struct served){ 0 };
	loadq__serve(q, 21, on_serve, &s);
	CHECK(s.n == 1 && s.pid[0] == 31);
	CHECK_EQ_INT(loadq__dropped(q), 0);
	loadq__free(q);
}

/* One request per process: kinds add up, the newest mappings win, a stale request drops them. */
static void test_merge(void)
{
	struct procmaps *a = maps_at(0x1000), *b = maps_at(0x2000);
	struct loadq *q = NULL;
	struct served s = { 0 };

	CHECK_EQ_INT(loadq__new(&(struct loadq_opts){ .max_cold = 2 }, &q), 0);
	if (!q || !a || !b)
		return;
	loadq__add(q, &(struct loadq_req){ .pid = 5, .exec = true, .pm = a, .start_time = 7 }, false, 1);
	loadq__add(q, &(struct loadq_req){ .pid = 5, .pm = b, .start_time = 8 }, false, 2);
	CHECK_EQ_INT(loadq__count(q), 1);
	loadq__serve(q, 3, on_serve, &s);
	CHECK(s.n == 1 && s.r[0].exec && s.r[0].pm == b && s.r[0].start_time == 8);
	CHECK_EQ_INT(s.r[0].queued, 1);
	/* The walker asks about a process an exec request waits for: it is hot now. */
	loadq__add(q, &(struct loadq_req){ .pid = 6, .pm = a, .start_time = 7 }, false, 5);
	loadq__add(q, &(struct loadq_req){ .pid = 6, .hot = true }, false, 6);
	/* Not counted as cold any more: two more cold ones fit without a drop. */
	loadq__add(q, &(struct loadq_req){ .pid = 7 }, false, 6);
	loadq__add(q, &(struct loadq_req){ .pid = 8 }, false, 6);
	CHECK_EQ_INT(loadq__dropped(q), 0);
	/* A pc outside the mappings known: those waiting are not read again, /proc is. */
	loadq__add(q, &(struct loadq_req){ .pid = 7, .pm = a }, false, 7);
	loadq__add(q, &(struct loadq_req){ .pid = 7, .hot = true }, true, 8);
	s = (struct served){ 0 };
	loadq__serve(q, 9, on_serve, &s);
	CHECK_EQ_INT(s.n, 3);
	CHECK(s.pid[0] == 6 && s.r[0].hot && s.r[0].pm == a && s.r[0].start_time == 7);
	CHECK(s.pid[1] == 7 && s.r[1].pm == NULL);
	CHECK(s.pid[2] == 8);
	/* Beyond max_cold the oldest cold request goes, counted. */
	for (uint32_t pid = 40; pid < 43; pid++)
		loadq__add(q, &(struct loadq_req){ .pid = pid }, false, 10);
	CHECK_EQ_INT(loadq__dropped(q), 1);
	CHECK(!loadq__has(q, 40) && loadq__has(q, 41) && loadq__has(q, 42));
	loadq__free(q);
	procmaps__free(a);
	procmaps__free(b);
}

/* Cold requests too old by their turn are dropped; young ones wait for their mappings. */
static void test_age_and_grace(void)
{
	struct procmaps *a = maps_at(0x1000);
	struct loadq *q = NULL;
	struct served s = { 0 };

	CHECK_EQ_INT(loadq__new(&(struct loadq_opts){ .cold_max_age_ns = 100 * MS,
						       .grace_ns = 5 * MS }, &q), 0);
	if (!q || !a)
		return;
	loadq__add(q, &(struct loadq_req){ .pid = 1 }, false, 0);
	loadq__add(q, &(struct loadq_req){ .pid = 2, .hot = true }, false, 0);
	loadq__serve(q, 200 * MS, on_serve, &s);
	CHECK(s.n == 1 && s.pid[0] == 2);
	CHECK_EQ_INT(loadq__dropped(q), 1);
	CHECK_EQ_INT(loadq__count(q), 0);
	/* Young: waits up to the grace for the exec event's mappings. */
	loadq__add(q, &(struct loadq_req){ .pid = 3, .hot = true, .young = true }, false, 1000 * MS);
	loadq__add(q, &(struct loadq_req){ .pid = 4, .hot = true, .young = true }, false, 1002 * MS);
	CHECK_EQ_INT(loadq__wake_at(q, 1003 * MS), 1005 * MS);
	s = (struct served){ 0 };
	CHECK(!loadq__serve(q, 1003 * MS, on_serve, &s));
	CHECK_EQ_INT(s.n, 0);
	/* The mappings came for one; the other's grace ran out. */
	loadq__add(q, &(struct loadq_req){ .pid = 4, .pm = a, .start_time = 3 }, false, 1004 * MS);
	CHECK_EQ_INT(loadq__wake_at(q, 1004 * MS), 1005 * MS);
	s = (struct served){ 0 };
	loadq__serve(q, 1004 * MS, on_serve, &s);
	CHECK(s.n == 1 && s.pid[0] == 4 && s.r[0].pm == a);
	CHECK_EQ_INT(loadq__wake_at(q, 1006 * MS), 0);
	s = (struct served){ 0 };
	loadq__serve(q, 1006 * MS, on_serve, &s);
	CHECK(s.n == 1 && s.pid[0] == 3);
	/* A stale request does not wait: the walker met a pc outside what it has. */
	loadq__add(q, &(struct loadq_req){ .pid = 5, .hot = true, .young = true }, false, 2000 * MS);
	loadq__add(q, &(struct loadq_req){ .pid = 5, .hot = true }, true, 2000 * MS);
	CHECK_EQ_INT(loadq__wake_at(q, 2000 * MS), 0);
	/* The grace follows the exec events' delay. */
	loadq__add(q, &(struct loadq_req){ .pid = 6, .hot = true, .young = true }, false, 2000 * MS);
	loadq__set_grace(q, 50 * MS);
	CHECK_EQ_INT(loadq__wake_at(q, 2000 * MS), 2050 * MS);
	loadq__free(q);
	procmaps__free(a);
}

/* At its bound a request is refused, and the queue serves on. */
static void test_bound(void)
{
	struct loadq *q = NULL;
	struct served s = { 0 };

	CHECK_EQ_INT(loadq__new(&(struct loadq_opts){ .max = 100, .max_cold = 1000 }, &q), 0);
	if (!q)
		return;
	for (uint32_t pid = 1; pid <= 100; pid++)
		CHECK_EQ_INT(loadq__add(q, &(struct loadq_req){ .pid = pid, .hot = true }, false, 1), 0);
	CHECK_EQ_INT(loadq__add(q, &(struct loadq_req){ .pid = 101, .hot = true }, false, 1), -ENOSPC);
	/* A request for a process waiting already still merges. */
	CHECK_EQ_INT(loadq__add(q, &(struct loadq_req){ .pid = 50, .exec = true }, false, 1), 0);
	CHECK_EQ_INT(loadq__count(q), 100);
	loadq__serve(q, 2, on_serve, &s);
	CHECK_EQ_INT(s.n, 100);
	CHECK(s.pid[0] == 1 && s.pid[63] == 64);
	CHECK(s.r[49].pid == 50 && s.r[49].exec);
	loadq__free(q);
}

/*
 * One walked by its parent's tables lingers: no wake-up of its own before
 * linger, but the first serve past its grace takes it; a stale request
 * (or one of another kind for the pid) stops the lingering.
 */
static void test_linger(void)
{
	struct loadq *q = NULL;
	struct served s = { 0 };

	CHECK_EQ_INT(loadq__new(&(struct loadq_opts){ .grace_ns = 5 * MS, .linger_ns = 1000 * MS }, &q), 0);
	if (!q)
		return;
	loadq__add(q, &(struct loadq_req){ .pid = 1, .hot = true, .young = true, .linger = true },
		   false, 0);
	loadq__add(q, &(struct loadq_req){ .pid = 2, .hot = true, .young = true }, false, 2 * MS);
	/* The one that does not linger sets the wake-up; once it is served, the lingering one's. */
	CHECK_EQ_INT(loadq__wake_at(q, 3 * MS), 7 * MS);
	CHECK(!loadq__serve(q, 3 * MS, on_serve, &s));
	CHECK_EQ_INT(s.n, 0);
	loadq__cancel(q, 2);
	CHECK_EQ_INT(loadq__wake_at(q, 3 * MS), 1000 * MS);
	/* A serve the loop makes for other reasons, past the grace, takes it. */
	loadq__serve(q, 50 * MS, on_serve, &s);
	CHECK(s.n == 1 && s.pid[0] == 1);
	CHECK_EQ_INT(loadq__count(q), 0);
	/* The walker met a pc outside the parent's mappings: no more lingering. */
	loadq__add(q, &(struct loadq_req){ .pid = 3, .hot = true, .young = true, .linger = true },
		   false, 100 * MS);
	loadq__add(q, &(struct loadq_req){ .pid = 3, .hot = true }, true, 101 * MS);
	CHECK_EQ_INT(loadq__wake_at(q, 101 * MS), 0);
	s = (struct served){ 0 };
	loadq__serve(q, 101 * MS, on_serve, &s);
	CHECK(s.n == 1 && s.pid[0] == 3);
	/* A young request that does not linger, merged in, brings its own wake-up back. */
	loadq__add(q, &(struct loadq_req){ .pid = 4, .hot = true, .young = true, .linger = true },
		   false, 200 * MS);
	loadq__add(q, &(struct loadq_req){ .pid = 4, .hot = true, .young = true }, false, 201 * MS);
	CHECK_EQ_INT(loadq__wake_at(q, 201 * MS), 205 * MS);
	loadq__free(q);
}

int main(void)
{
	test_order();
	test_merge();
	test_age_and_grace();
	test_bound();
	test_linger();
	T_DONE();
}
