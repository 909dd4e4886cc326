/* procreg: records, fork sharing, exits forgotten after their last drain, the due queue. */
#include "procmaps.h"
#include "procreg.h"
#include "t.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static struct procmaps *maps_of(uint64_t start, const char *path)
{
	struct procmap m = { .start = start, .end = start + 0x1000, .inode = 7, .dev = 1,
			     .path = path };
	struct procmaps *pm = NULL;

	CHECK_EQ_INT(procmaps__from(&m, 1, &pm), 0);
	return pm;
}

static uint32_t forgot[16];
static int nforgot;

static void on_forget(uint32_t pid, void *arg)
{
	(void)arg;
	if (nforgot < 16)
		forgot[nforgot++] = pid;
}

/*
 * A child's first sample takes its parent's snapshot as it is then (the
 * parent may have mapped more), unless the parent exec'd since the fork:
 * then the child keeps the image it was forked with.
 */
static void test_inherit_after_exec(void)
{
	struct procreg *r = NULL;
	struct procmaps *a = maps_of(0x700000, "/bin/script"), *b = maps_of(0x800000, "/bin/next");
	struct procmaps *more = maps_of(0x900000, "/bin/script"), *got = NULL;

	CHECK_EQ_INT(procreg__new(0, 0, &r), 0);
	if (!r)
		return;
	CHECK_EQ_INT(procreg__exec(r, 20, 1, 0x700000, NULL), 0);
	CHECK_EQ_INT(procreg__set_maps(r, 20, a), 0);
	CHECK_EQ_INT(procreg__fork(r, 20, 21, 2, NULL), 0);
	CHECK_EQ_INT(procreg__fork(r, 20, 22, 2, NULL), 0);
	/* The parent maps more, same image: the child's first sample takes that. */
	CHECK_EQ_INT(procreg__set_maps(r, 20, more), 0);
	CHECK_EQ_INT(procreg__inherit(r, 22), 0);
	CHECK_EQ_INT(procreg__maps(r, 22, &got), 0);
	CHECK(got == more);
	procmaps__free(got);
	/* The parent execs: the other child keeps the image it was forked with. */
	CHECK_EQ_INT(procreg__exec(r, 20, 1, 0x800000, NULL), 0);
	CHECK_EQ_INT(procreg__set_maps(r, 20, b), 0);
	CHECK_EQ_INT(procreg__inherit(r, 21), 0);
	CHECK_EQ_INT(procreg__maps(r, 21, &got), 0);
	CHECK(got == a);
	procmaps__free(got);
	procmaps__free(a);
	procmaps__free(b);
	procmaps__free(more);
	procreg__free(r);
}

static void test_records(void)
{
	struct procreg_ids ids = { 1000, 7, { 1, 2, 3 } };
	struct procreg *r = NULL;
	struct procreg_info in;
	struct procmaps *m = maps_of(0x400000, "/bin/parent"), *got = NULL;

	CHECK_EQ_INT(procreg__new(0, 0, &r), 0);
	if (!r)
		return;
	CHECK_EQ_INT(procreg__seen(r, 10), 1);
	CHECK_EQ_INT(procreg__seen(r, 10), 0);
	CHECK_EQ_INT(procreg__inherit(r, 10), -ENOENT); /* not forked */
	CHECK_EQ_INT(procreg__seen(r, 0), 0);
	CHECK_EQ_INT(procreg__maps(r, 10, &got), -ENOENT);
	CHECK_EQ_INT(procreg__set_maps(r, 11, m), -ENOENT); /* not known */
	CHECK_EQ_INT(procreg__exec(r, 10, 500, 0x400000, &ids), 0);
	CHECK_EQ_INT(procreg__info(r, 10, &in), 0);
	CHECK(in.start_time == 500 && in.start_code == 0x400000);
	CHECK(in.have_ids && in.ids.uid == 1000 && !in.ppid);
	CHECK_EQ_INT(procreg__set_maps(r, 10, m), 0);

	/* A child shares the very snapshot, and its parent's image. */
	CHECK_EQ_INT(procreg__fork(r, 10, 11, 600, &ids), 0);
	CHECK_EQ_INT(procreg__maps(r, 11, &got), 0);
	CHECK(got == m);
	procmaps__free(got);
	CHECK_EQ_INT(procreg__info(r, 11, &in), 0);
	CHECK(in.ppid == 10 && in.start_time == 600 && in.start_code == 0x400000);
	/* A parent with no snapshot: the child is known, without one, until the parent has one. */
	CHECK_EQ_INT(procreg__fork(r, 99, 12, 700, NULL), -ENOENT);
	CHECK_EQ_INT(procreg__seen(r, 12), 2); /* its first sample */
	CHECK_EQ_INT(procreg__seen(r, 12), 0);
	CHECK_EQ_INT(procreg__maps(r, 12, &got), -ENOENT);
	CHECK_EQ_INT(procreg__inherit(r, 12), -ENOENT);
	CHECK_EQ_INT(procreg__seen(r, 99), 1);
	CHECK_EQ_INT(procreg__set_maps(r, 99, m), 0);
	CHECK_EQ_INT(procreg__inherit(r, 12), 0);
	CHECK_EQ_INT(procreg__maps(r, 12, &got), 0);
	CHECK(got == m);
	procmaps__free(got);
	CHECK_EQ_INT(procreg__info(r, 12, &in), 0);
	CHECK_EQ_INT(in.ppid, 99);
	CHECK_EQ_INT(procreg__fork(r, 12, 12, 700, NULL), -EINVAL);

	/* Its own read replaces what it shared; the parent keeps its own. */
	{
		struct procmaps *own = maps_of(0x500000, "/bin/child");

		CHECK_EQ_INT(procreg__set_maps(r, 11, own), 0);
		procmaps__free(own);
		CHECK_EQ_INT(procreg__info(r, 11, &in), 0);
		CHECK_EQ_INT(in.ppid, 0);
		CHECK_EQ_INT(procreg__maps(r, 11, &got), 0);
		CHECK(got && procmaps__find(got, 0x500010) != NULL);
		procmaps__free(got);
		CHECK_EQ_INT(procreg__maps(r, 10, &got), 0);
		CHECK(got == m);
		procmaps__free(got);
	}
	/* exec starts over: the snapshot goes. */
	CHECK_EQ_INT(procreg__exec(r, 11, 800, 0x600000, NULL), 0);
	CHECK_EQ_INT(procreg__maps(r, 11, &got), -ENOENT);
	CHECK_EQ_INT(procreg__info(r, 11, &in), 0);
	CHECK(!in.have_ids && in.start_time == 800);
	procmaps__free(m); /* the registry holds its own reference */
	CHECK_EQ_INT(procreg__maps(r, 10, &got), 0);
	CHECK(got && procmaps__find(got, 0x400010) && !procmaps__find(got, 0x500010));
	procmaps__free(got);
	procreg__free(r);
}

static void test_exits(void)
{
	struct procreg *r = NULL;
	struct procreg_stats st;
	struct procreg_info in;

	CHECK_EQ_INT(procreg__new(0, 0, &r), 0);
	if (!r)
		return;
	nforgot = 0;
	procreg__seen(r, 20);
	procreg__seen(r, 21);
	procreg__seen(r, 22);
	CHECK_EQ_INT(procreg__exit(r, 20), 0);
	CHECK_EQ_INT(procreg__exit(r, 21), 0);
	CHECK_EQ_INT(procreg__exit(r, 30), 0); /* not known here: others are still told */
	CHECK_EQ_INT(procreg__info(r, 20, &in), 0);
	CHECK(in.exited);
	/* pid 21 is reused (fork) before its last drain: the new process stays. */
	CHECK_EQ_INT(procreg__fork(r, 22, 21, 900, NULL), -ENOENT);
	/* First drain: its samples may still come at the next one. */
	procreg__drain_begin(r);
	procreg__drain_end(r, on_forget, NULL);
	CHECK_EQ_INT(nforgot, 0);
	CHECK_EQ_INT(procreg__exit(r, 22), 0); /* exits after the first drain began */
	procreg__drain_begin(r);
	procreg__drain_end(r, on_forget, NULL);
	CHECK_EQ_INT(nforgot, 2);
	CHECK(forgot[0] == 20 && forgot[1] == 30);
	CHECK_EQ_INT(procreg__info(r, 20, &in), -ENOENT);
	CHECK_EQ_INT(procreg__info(r, 21, &in), 0);
	CHECK(!in.exited);
	CHECK_EQ_INT(procreg__info(r, 22, &in), 0);
	procreg__drain_begin(r);
	procreg__drain_end(r, on_forget, NULL);
	CHECK_EQ_INT(nforgot, 3);
	CHECK_EQ_INT(forgot[2], 22);
	procreg__stats(r, &st);
	CHECK_EQ_INT(st.records, 1);
	CHECK_EQ_INT(st.forgotten, 3);
	procreg__free(r);
}

static void test_due(void)
{
	struct procreg *r = NULL;
	uint32_t pid, tries;

	CHECK_EQ_INT(procreg__new(0, 0, &r), 0);
	if (!r)
		return;
	CHECK_EQ_INT(procreg__due_at(r, 0, 40, 100, 0), -ENOENT);
	procreg__exec(r, 40, 1, 1, NULL);
	procreg__exec(r, 41, 1, 1, NULL);
	procreg__exec(r, 42, 1, 1, NULL);
	CHECK_EQ_INT(procreg__due_at(r, 0, 40, 100, 0), 0);
	CHECK_EQ_INT(procreg__due_at(r, 0, 41, 200, 1), 0);
	CHECK_EQ_INT(procreg__due_at(r, 0, 42, 300, 2), 0);
	CHECK(procreg__due_first(r, 0) == 100);
	CHECK_EQ_INT(procreg__due_pop(r, 0, 99, &pid, &tries), 0);
	CHECK_EQ_INT(procreg__due_pop(r, 0, 100, &pid, &tries), 1);
	CHECK(pid == 40 && tries == 0);
	/* Exited, or a new image since: its look is not returned. */
	procreg__exit(r, 41);
	procreg__exec(r, 42, 2, 2, NULL);
	CHECK(procreg__due_first(r, 0) == 0);
	CHECK_EQ_INT(procreg__due_pop(r, 0, 1000, &pid, &tries), 0);
	procreg__due_at(r, 0, 42, 500, 0);
	procreg__due_cancel(r, 0, 42);
	CHECK(procreg__due_first(r, 0) == 0);
	/* Each kind of look is planned and called off on its own: a cancel leaves the other. */
	procreg__exec(r, 70, 1, 1, NULL);
	CHECK_EQ_INT(procreg__due_at(r, PROCREG_LOOK_CAPTURE, 70, 5, 0), 0);
	CHECK_EQ_INT(procreg__due_at(r, PROCREG_LOOK_TABLES, 70, 100, 0), 0);
	CHECK(procreg__due_first(r, PROCREG_LOOK_CAPTURE) == 5);
	CHECK(procreg__due_first(r, PROCREG_LOOK_TABLES) == 100);
	procreg__due_cancel(r, PROCREG_LOOK_TABLES, 70);
	CHECK(procreg__due_first(r, PROCREG_LOOK_TABLES) == 0);
	CHECK_EQ_INT(procreg__due_pop(r, PROCREG_LOOK_CAPTURE, 5, &pid, &tries), 1);
	CHECK_EQ_INT(pid, 70);
	/* An exit calls off every kind. */
	procreg__due_at(r, PROCREG_LOOK_CAPTURE, 70, 10, 0);
	procreg__due_at(r, PROCREG_LOOK_TABLES, 70, 10, 0);
	procreg__exit(r, 70);
	CHECK(procreg__due_first(r, PROCREG_LOOK_CAPTURE) == 0);
	CHECK(procreg__due_first(r, PROCREG_LOOK_TABLES) == 0);
	procreg__free(r);
}

/* Looks planned with different delays come out by due time, ties in the order given. */
static void test_due_order(void)
{
	static const struct { uint32_t pid; int64_t due; } in[] = {
		{ 50, 300 }, { 51, 100 }, { 52, 200 }, { 53, 100 }, { 54, 50 }, { 55, 400 },
	};
	/* 52 is cancelled; 56 is queued at 120 after 54 was taken. */
	static const uint32_t want[] = { 54, 51, 53, 56, 50, 55 };
	struct procreg *r = NULL;
	uint32_t got[8], pid, tries, n = 0;

	CHECK_EQ_INT(procreg__new(0, 0, &r), 0);
	if (!r)
		return;
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		procreg__exec(r, in[i].pid, 1, 1, NULL);
		CHECK_EQ_INT(procreg__due_at(r, 0, in[i].pid, in[i].due, (uint32_t)i), 0);
	}
	CHECK(procreg__due_first(r, 0) == 50);
	procreg__due_cancel(r, 0, 52);
	CHECK_EQ_INT(procreg__due_pop(r, 0, 99, &pid, &tries), 1);
	got[n++] = pid;
	CHECK(tries == 4);
	CHECK_EQ_INT(procreg__due_pop(r, 0, 99, &pid, &tries), 0);
	procreg__exec(r, 56, 1, 1, NULL);
	CHECK_EQ_INT(procreg__due_at(r, 0, 56, 120, 6), 0);
	while (n < 8 && procreg__due_pop(r, 0, 1000, &pid, &tries))
		got[n++] = pid;
	CHECK_EQ_INT((int)n, 6);
	for (uint32_t i = 0; i < n && i < 6; i++)
		CHECK(got[i] == want[i]);
	procreg__free(r);
}

/* Around the ring's end: more than fit are refused, and order holds where the ring wraps. */
static void test_due_wrap(void)
{
	struct procreg *r = NULL;
	uint32_t pid, tries, n = 0, refused = 0;
	int64_t last = -1;
	bool ordered = true;

#define DUE_OF(p) ((p) % 2 ? 1000 + (int64_t)(p) : (int64_t)(p))

	CHECK_EQ_INT(procreg__new(0, 0, &r), 0);
	if (!r)
		return;
	for (uint32_t p = 1; p <= 8000; p++) {
		procreg__exec(r, p, 1, 1, NULL);
		/* Half of them early: each walks back over the late ones. */
		refused += procreg__due_at(r, 0, p, DUE_OF(p), 0) == -ENOSPC;
		if (p == 3000) {
			while (n < 2000 && procreg__due_pop(r, 0, 1 << 30, &pid, &tries)) {
				ordered &= DUE_OF(pid) >= last;
				last = DUE_OF(pid);
				n++;
			}
			last = -1;
		}
	}
	CHECK_EQ_INT((int)refused, 8000 - 2000 - 4096);
	while (procreg__due_pop(r, 0, 1 << 30, &pid, &tries)) {
		ordered &= DUE_OF(pid) >= last;
		last = DUE_OF(pid);
		n++;
	}
	CHECK(ordered);
	CHECK_EQ_INT((int)(n + refused), 8000);
#undef DUE_OF
	procreg__free(r);
}

static void test_bound(void)
{
	struct procreg *r = NULL;
	struct procreg_stats st;

	CHECK_EQ_INT(procreg__new(3000, 0, &r), 0);
	if (!r)
		return;
	/* Past the buckets (they grow) and up to the bound. */
	for (uint32_t pid = 1; pid <= 3000; pid++)
		CHECK_EQ_INT(procreg__seen(r, pid), 1);
	for (uint32_t pid = 1; pid <= 3000; pid += 7)
		CHECK_EQ_INT(procreg__seen(r, pid), 0);
	CHECK_EQ_INT(procreg__seen(r, 5000), 1); /* not kept: new every time */
	CHECK_EQ_INT(procreg__seen(r, 5000), 1);
	CHECK_EQ_INT(procreg__exec(r, 5000, 1, 1, NULL), -ENOSPC);
	procreg__stats(r, &st);
	CHECK_EQ_INT(st.records, 3000);
	CHECK(st.full >= 3);
	procreg__free(r);
}

/* Snapshots within their budget: the least recently set go first, and every one at exit. */
static void test_maps_budget(void)
{
	struct procmaps *a = maps_of(0x1000000, "/bin/a"), *got = NULL;
	struct procreg *r = NULL;
	struct procreg_stats st;
	size_t one = procmaps__mem_bytes(a);

	CHECK_EQ_INT(procreg__new(0, 2 * one + one / 2, &r), 0);
	if (!r)
		return;
	for (uint32_t pid = 1; pid <= 3; pid++) {
		procreg__seen(r, pid);
		CHECK_EQ_INT(procreg__set_maps(r, pid, a), 0);
	}
	CHECK_EQ_INT(procreg__maps(r, 1, &got), -ENOENT); /* the oldest went */
	CHECK_EQ_INT(procreg__maps(r, 3, &got), 0);
	procmaps__free(got);
	procreg__stats(r, &st);
	CHECK_EQ_INT(st.maps_dropped, 1);
	CHECK(st.maps_bytes == 2 * one);
	procreg__exit(r, 3); /* kept until forgotten: its children may still need it */
	CHECK_EQ_INT(procreg__maps(r, 3, &got), 0);
	procmaps__free(got);
	procreg__forget(r, 3);
	procreg__stats(r, &st);
	CHECK(st.maps_bytes == one);
	procreg__forget(r, 2);
	procreg__stats(r, &st);
	CHECK(st.maps_bytes == 0);
	procmaps__free(a);
	procreg__free(r);
}

static int drops;
static uint32_t dropped_pid;

static void on_drop(uint32_t pid, void *data, void *arg)
{
	(void)data;
	(void)arg;
	drops++;
	dropped_pid = pid;
}

static int count_one(uint32_t pid, void *data, void *arg)
{
	(void)pid;
	(void)data;
	(*(int *)arg)++;
	return 0;
}

/* An exit is forgotten at the end of the drain after the one that began after it. */
static void two_drains(struct procreg *r)
{
	for (int i = 0; i < 2; i++) {
		procreg__drain_begin(r);
		procreg__drain_end(r, NULL, NULL);
	}
}

/* Readers' state hangs off the record: it goes with the image it was for. */
static void test_slots(void)
{
	struct procreg *r = NULL;
	struct procreg_stats st;
	int a = 1, b = 2, c = 3, n = 0, s1, s2, loose;

	CHECK_EQ_INT(procreg__new(0, 0, &r), 0);
	if (!r)
		return;
	s1 = procreg__slot(r, on_drop, NULL);
	s2 = procreg__slot(r, on_drop, NULL);
	CHECK(s1 >= 0 && s2 >= 0 && s1 != s2);
	CHECK_EQ_INT(procreg__set_data(r, 60, s1, &a), -ENOENT);
	/* A reader meets a process no event told of. */
	CHECK_EQ_INT(procreg__touch(r, 60), 0);
	CHECK_EQ_INT(procreg__set_data(r, 60, s1, &a), 0);
	CHECK_EQ_INT(procreg__set_data(r, 60, s2, &b), 0);
	CHECK(procreg__data(r, 60, s1) == &a && procreg__data(r, 60, s2) == &b);
	CHECK(procreg__data(r, 61, s1) == NULL);
	/* Its first sample still captures it: only readers knew it. */
	CHECK_EQ_INT(procreg__seen(r, 60), 1);
	CHECK_EQ_INT(procreg__seen(r, 60), 0);
	/* exec: a new image, what hung off the old one is dropped. */
	drops = 0;
	CHECK_EQ_INT(procreg__exec(r, 60, 5, 5, NULL), 0);
	CHECK_EQ_INT(drops, 2);
	CHECK(procreg__data(r, 60, s1) == NULL);
	/* Released by a reader: kept while an event told of it, forgotten when nobody did. */
	procreg__set_data(r, 60, s1, &a);
	procreg__detach(r, 60, s1);
	CHECK(procreg__data(r, 60, s1) == NULL);
	CHECK_EQ_INT(procreg__touch(r, 62), 0);
	procreg__set_data(r, 62, s1, &c);
	procreg__set_data(r, 62, s2, &b);
	procreg__detach(r, 62, s1); /* s2 still holds it */
	procreg__stats(r, &st);
	CHECK_EQ_INT(st.records, 2);
	procreg__each(r, s2, count_one, &n);
	CHECK_EQ_INT(n, 1);
	procreg__detach(r, 62, s2);
	procreg__stats(r, &st);
	CHECK_EQ_INT(st.records, 1);
	/* Forgotten after an exit, what hangs off it is dropped. */
	CHECK_EQ_INT(procreg__touch(r, 63), 0);
	procreg__set_data(r, 63, s2, &c);
	CHECK_EQ_INT(procreg__exit(r, 63), 0);
	drops = 0;
	two_drains(r);
	CHECK_EQ_INT(drops, 1);
	CHECK_EQ_INT(dropped_pid, 63);
	CHECK(procreg__data(r, 63, s2) == NULL);
	/* An exit of a process not known makes a record, so a late reader's state goes too. */
	CHECK_EQ_INT(procreg__exit(r, 64), 0);
	procreg__set_data(r, 64, s1, &a);
	drops = 0;
	two_drains(r);
	CHECK_EQ_INT(drops, 1);
	/* A loose slot rides on records others keep: it neither keeps one nor is lost while one stays. */
	loose = procreg__slot_loose(r, on_drop, NULL);
	CHECK(loose >= 0 && loose != s1 && loose != s2);
	procreg__stats(r, &st);
	n = (int)st.records;
	CHECK_EQ_INT(procreg__touch(r, 70), 0);
	procreg__set_data(r, 70, s1, &a);
	procreg__set_data(r, 70, loose, &b);
	/* The keeping reader lets go: the record goes, and what the loose one held is dropped. */
	drops = 0;
	procreg__detach(r, 70, s1);
	CHECK_EQ_INT(drops, 1);
	CHECK_EQ_INT(dropped_pid, 70);
	CHECK(procreg__data(r, 70, loose) == NULL);
	procreg__stats(r, &st);
	CHECK_EQ_INT(st.records, n);
	/* A record an event told of stays, with the loose slot's data, until it is forgotten. */
	CHECK_EQ_INT(procreg__exec(r, 71, 1, 1, NULL), 0);
	procreg__set_data(r, 71, s1, &a);
	procreg__set_data(r, 71, loose, &b);
	procreg__detach(r, 71, s1);
	CHECK(procreg__data(r, 71, loose) == &b);
	CHECK_EQ_INT(procreg__exit(r, 71), 0);
	drops = 0;
	two_drains(r);
	CHECK_EQ_INT(drops, 1);
	CHECK(procreg__data(r, 71, loose) == NULL);
	/* Its own release forgets a record only a loose slot held. */
	CHECK_EQ_INT(procreg__touch(r, 72), 0);
	procreg__set_data(r, 72, loose, &b);
	procreg__detach(r, 72, loose);
	procreg__stats(r, &st);
	CHECK_EQ_INT(st.records, n);
	while (procreg__slot(r, NULL, NULL) >= 0)
		;
	CHECK_EQ_INT(procreg__slot(r, NULL, NULL), -ENOSPC);
	procreg__free(r);
}

/* Identity from /proc/PID/stat, a name with spaces and parentheses included. */
static void test_identity(void)
{
	char dir[] = "/tmp/procreg-test.XXXXXX", path[128];
	struct procreg *r = NULL;
	struct procreg_info in;
	uint64_t st = 0, sc = 0;
	int fd = -1, proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	FILE *f;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/123", dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/123/stat", dir);
	f = fopen(path, "w");
	if (f) {
		fputs("123 (a) b (c) S 1 123 123 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 "
		      "987654 1000 10 18446744073709551615 4194304 4200000 1 2 3\n", f);
		fclose(f);
	}
	snprintf(path, sizeof(path), "%s/124", dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/124/stat", dir);
	f = fopen(path, "w");
	if (f) {
		fputs("124 (truncated\n", f);
		fclose(f);
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK_EQ_INT(procreg__read_stat(fd, 123, &st, &sc), 0);
	CHECK(st == 987654 && sc == 4194304);
	CHECK_EQ_INT(procreg__read_stat(fd, 124, &st, &sc), -EINVAL);
	CHECK_EQ_INT(procreg__read_stat(fd, 125, &st, NULL), -ENOENT);
	/* A record made at a first sample takes it once; one with an identity keeps its own. */
	CHECK_EQ_INT(procreg__new(0, 0, &r), 0);
	if (r) {
		CHECK_EQ_INT(procreg__identify(r, fd, 123), -ENOENT);
		procreg__seen(r, 123);
		CHECK_EQ_INT(procreg__identify(r, fd, 123), 0);
		CHECK_EQ_INT(procreg__info(r, 123, &in), 0);
		CHECK(in.start_time == 987654 && in.start_code == 4194304);
		procreg__exec(r, 124, 55, 66, NULL);
		CHECK_EQ_INT(procreg__identify(r, fd, 124), 0);
		CHECK_EQ_INT(procreg__info(r, 124, &in), 0);
		CHECK(in.start_time == 55);
		procreg__free(r);
	}
	/* The real one: this process started after boot. */
	CHECK_EQ_INT(procreg__read_stat(proc, (uint32_t)getpid(), &st, &sc), 0);
	CHECK(st > 0 && sc > 0);
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	CHECK_EQ_INT(system(path), 0);
	close(fd);
	close(proc);
}

int main(void)
{
	test_identity();
	test_slots();
	test_maps_budget();
	test_records();
	test_inherit_after_exec();
	test_exits();
	test_due();
	test_due_order();
	test_due_wrap();
	test_bound();
	T_DONE();
}
