/* The folding table: interning, aggregation, merge with filters, folded output. */
#include <stdio.h>
#include <stdlib.h>

#include "fold.h"
#include "profile.h"
#include "query.h"
#include "t.h"

static uint32_t frame(struct profile *p, const char *name, const char *mod, uint64_t off, int kind)
{
	struct pf_frame f = { .offset = off, .kind = kind };
	uint32_t id;

	profile__intern_str(p, name, &f.name);
	profile__intern_str(p, mod, &f.module);
	CHECK(profile__frame_add(p, &f, &id) == 0);
	return id;
}

static void add(struct profile *p, uint32_t pid, const char *comm, const char *thread,
		const char *cg, const uint32_t *fr, uint32_t n, int kind, uint64_t v)
{
	struct pf_sample s = { .pid = pid, .tid = pid, .kind = kind, .value = v };

	profile__intern_str(p, comm, &s.comm);
	profile__intern_str(p, thread, &s.thread);
	profile__intern_str(p, cg, &s.cgroup);
	CHECK(profile__stack_add(p, fr, n, &s.stack) == 0);
	CHECK(profile__add(p, &s) == 0);
}

static char *folded(const struct query *q, const struct profile *p)
{
	struct profile *c;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CHECK(profile__new(&c) == 0);
	CHECK(fold__collapse(q, p, c) == 0);
	CHECK(fold__write(q, c, f) == 0);
	fclose(f);
	profile__free(c);
	return buf;
}

/*
 * Folded lines come out by value, then in strcmp order of their text,
 * whatever the names: labels that begin others, separators and bytes
 * escaped or above 0x7f, unnamed frames, with and without thread names.
 */
static void test_fold_order(int threads)
{
	static const char *const names[] = { "a", "ab", "a;b", "a b", "a:b", "\xc3\xa9", "\x01x", "z", "", "a_[k]" };
	static const char *const comms[] = { "p", "p;q", "", "p\xc3\xa9", "pq" };
	struct query q = { .threads = threads };
	struct profile *p;
	uint32_t fr[10], st[5];
	uint64_t total = 0, seen = 0, rng = 12345;
	char *out, *line, *prev = NULL, *next;
	uint64_t pv = UINT64_MAX;
	size_t nlines = 0;

	CHECK(profile__new(&p) == 0);
	for (int i = 0; i < 10; i++)
		fr[i] = frame(p, names[i], i == 8 ? "/lib/libm.so" : "/bin/x", 0x10 * (uint64_t)i,
			      i == 0 ? PF_FRAME_KERNEL : PF_FRAME_USER);
	for (int i = 0; i < 400; i++) {
		uint32_t n;

		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		n = (uint32_t)(rng >> 60) % 5;
		for (uint32_t k = 0; k < n; k++)
			st[k] = fr[(rng >> (8 + 4 * k)) % 10];
		add(p, 1 + (uint32_t)(rng >> 40) % 50, comms[(rng >> 33) % 5], comms[(rng >> 36) % 5], "", st, n,
		    PF_KIND_CPU, 1 + (rng >> 50) % 2);
		total += 1 + (rng >> 50) % 2;
	}
	out = folded(&q, p);
	for (line = out; *line; line = next) {
		char *sp;
		uint64_t v;

		next = strchr(line, '\n');
		CHECK(next != NULL);
		*next++ = 0;
		sp = strrchr(line, ' ');
		CHECK(sp != NULL);
		*sp = 0;
		v = strtoull(sp + 1, NULL, 10);
		CHECK(v <= pv);
		if (prev && v == pv)
			CHECK(strcmp(prev, line) <= 0);
		prev = line;
		pv = v;
		seen += v;
		nlines++;
	}
	CHECK_EQ_INT(seen, total);
	CHECK(nlines > 100);
	free(out);
	profile__free(p);
}

/*
 * A profile given the sizes of another holds a copy of it without growing
 * a table or an index, and what it held before keeps its ids.
 */
static void test_reserve(void)
{
	struct profile *a, *b;
	struct pf_sizes z, zb;
	uint32_t x, y, fr[8];
	char name[32];
	size_t mem;

	CHECK(profile__new(&a) == 0 && profile__new(&b) == 0);
	for (uint32_t i = 0; i < 3000; i++) {
		snprintf(name, sizeof(name), "function_%u", i);
		fr[i % 8] = frame(a, name, "/usr/lib/libx.so", 16 * i, PF_FRAME_USER);
		add(a, i % 97, "proc", "thr", "/cg", fr, 1 + i % 8, PF_KIND_CPU, 1);
	}
	CHECK(profile__intern_str(b, "kept", &x) == 0);
	profile__sizes(a, &z);
	CHECK(z.strs > 3000 && z.frames == 3000 && z.stacks > 2000 && z.samples > 2000 && z.stack_frames > 8000);
	CHECK(profile__reserve(b, &z) == 0);
	mem = profile__mem_bytes(b);
	CHECK_EQ_STR(profile__str(b, x), "kept");
	for (uint32_t i = 1; i < profile__nstrs(a); i++)
		CHECK(profile__intern_str(b, profile__str(a, i), &y) == 0 && y == i + (i >= x ? 1 : 0));
	for (uint32_t i = 0; i < profile__nframes(a); i++) {
		struct pf_frame f = *profile__frame(a, i);

		f.name += f.name >= x;
		f.module += f.module >= x;
		CHECK(profile__frame_add(b, &f, &y) == 0 && y == i);
	}
	for (uint32_t i = 1; i < profile__nstacks(a); i++) {
		uint32_t n;
		const uint32_t *st = profile__stack(a, i, &n);

		CHECK(profile__stack_add(b, st, n, &y) == 0 && y == i);
	}
	for (size_t i = 0; i < profile__nsamples(a); i++) {
		struct pf_sample s = *profile__sample(a, i);

		s.comm += s.comm >= x;
		s.thread += s.thread >= x;
		s.cgroup += s.cgroup >= x;
		CHECK(profile__add(b, &s) == 0);
	}
	profile__sizes(b, &zb);
	CHECK(zb.samples == z.samples && zb.stacks == z.stacks && zb.frames == z.frames && zb.strs == z.strs + 1);
	CHECK(profile__mem_bytes(b) == mem);
	CHECK_EQ_STR(profile__str(b, x), "kept");
	profile__free(a);
	profile__free(b);
}

int main(void)
{
	struct profile *p, *m;
	uint32_t a, b, k, u, id1, id2, fr[3];
	char *out;

	CHECK(profile__new(&p) == 0);
	CHECK_EQ_STR(profile__str(p, 0), "");
	CHECK(profile__intern_str(p, "main", &id1) == 0);
	CHECK(profile__intern(p, "main!!", 4, &id2) == 0);
	CHECK(id1 == id2);
	CHECK(profile__intern_str(p, "mai", &id2) == 0 && id2 != id1);

	a = frame(p, "main", "/bin/app", 0x10, PF_FRAME_USER);
	CHECK(frame(p, "main", "/bin/app", 0x10, PF_FRAME_USER) == a);
	b = frame(p, "work", "/bin/app", 0x20, PF_FRAME_USER);
	k = frame(p, "do_syscall_64", "", 0, PF_FRAME_KERNEL);
	u = frame(p, "", "/usr/lib/libx.so", 0x1234, PF_FRAME_USER);

	fr[0] = a; fr[1] = b; fr[2] = k;
	add(p, 10, "app", "worker", "/system.slice/app.service", fr, 3, PF_KIND_CPU, 3);
	add(p, 10, "app", "worker", "/system.slice/app.service", fr, 3, PF_KIND_CPU, 4);
	add(p, 11, "app", "main", "/system.slice/app.service", fr, 2, PF_KIND_CPU, 5);
	fr[1] = u;
	add(p, 12, "other", "other", "/user.slice", fr, 2, PF_KIND_CPU, 2);
	add(p, 12, "other", "other", "/user.slice", fr, 2, PF_KIND_OFFCPU, 2500);
	CHECK_EQ_INT(profile__nsamples(p), 4);

	/* Aggregation: identical labels, stack and kind add up. */
	CHECK_EQ_INT(profile__sample(p, 0)->value, 7);

	/* Many stacks force rehashing; ids stay stable. */
	for (uint32_t i = 0; i < 5000; i++) {
		uint32_t f2[2] = { a, frame(p, "f", "/bin/app", i, PF_FRAME_USER) };

		add(p, 1000 + i % 7, "bulk", "bulk", "", f2, 2, PF_KIND_CPU, 1);
	}
	CHECK_EQ_INT(profile__nsamples(p), 5004);
	CHECK_EQ_STR(profile__str(p, profile__frame(p, b)->name), "work");

	/* Folded: root first, kernel suffix, unnamed frames as [module+0xOFF], sorted by value. */
	{
		struct query q = { .type = QUERY_CPU, .comm = "app" };

		out = folded(&q, p);
		CHECK_EQ_STR(out, "app;main;work;do_syscall_64_[k] 7\napp;main;work 5\n");
		free(out);
		q.threads = 1;
		q.no_kernel = 1;
		out = folded(&q, p);
		CHECK_EQ_STR(out, "app;worker;main;work 7\napp;main;main;work 5\n");
		free(out);
	}
	{
		struct query q = { .type = QUERY_CPU, .comm = "oth*" };

		out = folded(&q, p);
		CHECK_EQ_STR(out, "other;main;[libx.so+0x1234] 2\n");
		free(out);
		q.type = QUERY_OFFCPU;
		out = folded(&q, p);
		CHECK_EQ_STR(out, "other;main;[libx.so+0x1234] 3\n"); /* 2500 ns -> 3 us */
		free(out);
	}
	{
		uint32_t pids[] = { 11 };
		struct query q = { .type = QUERY_CPU, .pids = pids, .npids = 1 };

		out = folded(&q, p);
		CHECK_EQ_STR(out, "app;main;work 5\n");
		free(out);
	}
	{
		struct query q = { .type = QUERY_CPU, .cgroup = "app.service" };

		out = folded(&q, p);
		CHECK_EQ_STR(out, "app;main;work;do_syscall_64_[k] 7\napp;main;work 5\n");
		free(out);
		q.cgroup = "/system.slice/app";
		out = folded(&q, p);
		CHECK_EQ_STR(out, "");
		free(out);
		q.cgroup = "/system.slice";
		out = folded(&q, p);
		CHECK(strstr(out, "app;main;work 5\n") != NULL);
		free(out);
	}

	/* Merge: re-interns into another profile, filtered; meta and counters combine. */
	CHECK(profile__new(&m) == 0);
	profile__meta(p)->start_ns = 100;
	profile__meta(p)->end_ns = 200;
	profile__counter_add(p, "lost", 3);
	{
		struct query q = { .type = QUERY_CPU, .comm = "app" };

		CHECK(profile__merge(m, p, query__keep, &q) == 0);
		CHECK(profile__merge(m, p, query__keep, &q) == 0);
		CHECK_EQ_INT(profile__nsamples(m), 2);
		CHECK_EQ_INT(profile__counter_get(m, "lost"), 6);
		CHECK_EQ_INT(profile__meta(m)->start_ns, 100);
		out = folded(&q, m);
		CHECK_EQ_STR(out, "app;main;work;do_syscall_64_[k] 14\napp;main;work 10\n");
		free(out);
	}

	/* By function: two pcs of one named function fold into one frame and one stack. */
	{
		struct profile *src, *dst;
		uint32_t f1[2], f2[2];

		CHECK(profile__new(&src) == 0 && profile__new(&dst) == 0);
		f1[0] = f2[0] = frame(src, "main", "/bin/app", 0x10, PF_FRAME_USER);
		f1[1] = frame(src, "hot", "/bin/app", 0x100, PF_FRAME_USER);
		f2[1] = frame(src, "hot", "/bin/app", 0x104, PF_FRAME_USER);
		add(src, 1, "app", "app", "", f1, 2, PF_KIND_CPU, 2);
		add(src, 1, "app", "app", "", f2, 2, PF_KIND_CPU, 3);
		f2[1] = frame(src, "", "/bin/app", 0x900, PF_FRAME_USER);
		add(src, 1, "app", "app", "", f2, 2, PF_KIND_CPU, 1);
		f2[1] = frame(src, "", "/bin/app", 0x904, PF_FRAME_USER);
		add(src, 1, "app", "app", "", f2, 2, PF_KIND_CPU, 1);
		CHECK(profile__merge_flags(dst, src, NULL, NULL, PF_MERGE_BY_FUNCTION) == 0);
		CHECK_EQ_INT(profile__nsamples(dst), 3); /* hot x2 folded; unnamed pcs kept apart */
		CHECK_EQ_INT(profile__sample(dst, 0)->value, 5);
		profile__reset(dst);
		CHECK(profile__merge(dst, src, NULL, NULL) == 0);
		CHECK_EQ_INT(profile__nsamples(dst), 4); /* without the flag every pc stays */
		/* Without thread names a process's threads on one stack are one sample. */
		profile__reset(src);
		profile__reset(dst);
		f1[0] = frame(src, "main", "/bin/app", 0x10, PF_FRAME_USER);
		add(src, 1, "app", "app", "", f1, 1, PF_KIND_CPU, 2);
		add(src, 2, "app", "worker", "", f1, 1, PF_KIND_CPU, 3);
		add(src, 3, "app", "io", "/a", f1, 1, PF_KIND_CPU, 4);
		CHECK(profile__merge_flags(dst, src, NULL, NULL, PF_MERGE_BY_NAME | PF_MERGE_NO_THREAD) == 0);
		CHECK_EQ_INT(profile__nsamples(dst), 2); /* cgroups stay apart */
		CHECK_EQ_INT(profile__sample(dst, 0)->value, 5);
		CHECK_EQ_STR(profile__str(dst, profile__sample(dst, 0)->thread), "");
		profile__free(src);
		profile__free(dst);
	}

	/* Reset keeps the profile usable. */
	profile__reset(m);
	CHECK_EQ_INT(profile__nsamples(m), 0);
	CHECK_EQ_STR(profile__str(m, 0), "");
	CHECK(profile__intern_str(m, "x", &id1) == 0 && id1 == 1);

	/* Bad ids are refused, not followed. */
	{
		struct pf_sample s = { .stack = 999999 };

		CHECK(profile__add(m, &s) < 0);
		fr[0] = 424242;
		CHECK(profile__stack_add(m, fr, 1, &id1) < 0);
	}
	/*
	 * The merge cache: a source whose tables only grow (reset_samples between
	 * windows, as a chain of records is decoded) merges as a fresh source would,
	 * and a full reset of either side drops the cached ids.
	 */
	{
		struct profile *src, *a, *b;
		uint32_t f1, f2, f3, st[3];
		char *fa, *fb;
		struct query q = { .type = QUERY_CPU };

		CHECK(profile__new(&src) == 0 && profile__new(&a) == 0 && profile__new(&b) == 0);
		f1 = frame(src, "main", "/bin/x", 0x10, PF_FRAME_USER);
		f2 = frame(src, "work", "/bin/x", 0x20, PF_FRAME_USER);
		st[0] = f1, st[1] = f2;
		add(src, 7, "x", "x", "", st, 2, PF_KIND_CPU, 3);
		CHECK(profile__merge(a, src, NULL, NULL) == 0);
		profile__reset_samples(src);
		CHECK_EQ_INT(profile__nsamples(src), 0);
		CHECK_EQ_INT(profile__nframes(src), 2);
		f3 = frame(src, "leaf", "/bin/x", 0x30, PF_FRAME_USER);
		st[2] = f3;
		add(src, 7, "x", "x", "", st, 3, PF_KIND_CPU, 5);
		add(src, 7, "x", "x", "", st, 2, PF_KIND_CPU, 1);
		CHECK(profile__merge(a, src, NULL, NULL) == 0);
		/* b: the same windows, each from a fresh source */
		struct profile *w;
		CHECK(profile__new(&w) == 0);
		st[0] = frame(w, "main", "/bin/x", 0x10, PF_FRAME_USER);
		st[1] = frame(w, "work", "/bin/x", 0x20, PF_FRAME_USER);
		add(w, 7, "x", "x", "", st, 2, PF_KIND_CPU, 4);
		st[2] = frame(w, "leaf", "/bin/x", 0x30, PF_FRAME_USER);
		add(w, 7, "x", "x", "", st, 3, PF_KIND_CPU, 5);
		CHECK(profile__merge(b, w, NULL, NULL) == 0);
		fa = folded(&q, a);
		fb = folded(&q, b);
		CHECK_EQ_STR(fa, fb);
		free(fa);
		free(fb);
		/* A reset source reuses ids for other things: nothing cached may survive it. */
		profile__reset(src);
		st[0] = frame(src, "other", "/bin/y", 0x99, PF_FRAME_USER);
		add(src, 8, "y", "y", "", st, 1, PF_KIND_CPU, 2);
		CHECK(profile__merge(a, src, NULL, NULL) == 0);
		fa = folded(&q, a);
		CHECK(strstr(fa, "y;other 2") != NULL);
		free(fa);
		profile__free(w);
		profile__free(src);
		profile__free(a);
		profile__free(b);
	}
	profile__free(m);
	profile__free(p);
	test_fold_order(0);
	test_fold_order(1);
	test_reserve();
	T_DONE();
}
