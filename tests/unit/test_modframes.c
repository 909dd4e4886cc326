/* Module frames merged in one pass: the profile a fold, then a merge, makes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "modframes.h"
#include "profile.h"
#include "t.h"

static uint32_t frame(struct profile *p, const char *name, const char *mod, uint64_t off, int kind)
{
	struct pf_frame f = { .offset = off, .kind = kind };
	uint32_t id;

	CHECK(profile__intern_str(p, name, &f.name) == 0);
	CHECK(profile__intern_str(p, mod, &f.module) == 0);
	CHECK(profile__frame_add(p, &f, &id) == 0);
	return id;
}

static void add(struct profile *p, uint32_t pid, const char *thread, const char *cg, const uint32_t *fr,
		uint32_t n, int kind, uint64_t v)
{
	struct pf_sample s = { .pid = pid, .tid = pid + 1, .kind = kind, .value = v };

	CHECK(profile__intern_str(p, "cc1", &s.comm) == 0);
	CHECK(profile__intern_str(p, thread, &s.thread) == 0);
	CHECK(profile__intern_str(p, cg, &s.cgroup) == 0);
	CHECK(profile__stack_add(p, fr, n, &s.stack) == 0);
	CHECK(profile__add(p, &s) == 0);
}

#define CC1 "/usr/libexec/gcc/x86_64-linux-gnu/13/cc1"
#define LIBC "/usr/lib/x86_64-linux-gnu/libc.so.6"

/*
 * Window i of a chain, its tables grown from window i - 1's: a stripped
 * compiler's pcs new every window, runs of unnamed frames in one module,
 * a frame named as a module frame at offset 0 (a window as flushed by
 * function) and at another, unnamed frames of no module, of a bracketed
 * module, of another kind and of a Python file, a module whose base name
 * is longer than a label holds.
 */
static void window(struct profile *p, int i)
{
	static char longmod[600];
	uint32_t f[8], o = (uint32_t)i * 8;

	memset(longmod, 'm', sizeof(longmod) - 1);
	longmod[0] = '/';
	profile__reset_samples(p);
	f[0] = frame(p, "main", CC1, 0x1000 + (uint64_t)(i % 3), PF_FRAME_USER);
	f[1] = frame(p, "", CC1, 0x50000 + o, PF_FRAME_USER);
	f[2] = frame(p, "", CC1, 0x60000 + o, PF_FRAME_USER);
	f[3] = frame(p, "", LIBC, 0x2000 + o, PF_FRAME_USER);
	f[4] = frame(p, "write", LIBC, 0x3000 + (uint64_t)(i % 2), PF_FRAME_USER);
	f[5] = frame(p, "", "", 0xffffffff81000000ull + o, PF_FRAME_KERNEL);
	add(p, 100 + (uint32_t)i, "cc1", "/user.slice", f, 6, PF_KIND_CPU, 5);
	add(p, 100 + (uint32_t)i, "cc1", "/user.slice", f, 6, PF_KIND_RUNQ, 2000000);
	add(p, 200, "cc1", "/user.slice", f, 1, PF_KIND_CPU, 1);
	/* The unnamed leaf reads as its caller's module frame: one frame. */
	f[1] = frame(p, "[cc1]", CC1, 0, PF_FRAME_USER);
	f[2] = frame(p, "", CC1, 0x70000 + o, PF_FRAME_USER);
	add(p, 300, "worker", "/user.slice", f, 3, PF_KIND_CPU, 7);
	/* At another offset it reads differently: two frames. */
	f[1] = frame(p, "[cc1]", CC1, 8, PF_FRAME_USER);
	add(p, 300, "worker", "/system.slice", f, 3, PF_KIND_CPU, 3);
	/* Named between unnamed runs of one module, and another kind after them. */
	f[1] = frame(p, "", CC1, 0x80000 + o, PF_FRAME_USER);
	f[2] = frame(p, "parse", CC1, 0x4000, PF_FRAME_USER);
	f[3] = frame(p, "", CC1, 0x81000 + o, PF_FRAME_USER);
	f[4] = frame(p, "", CC1, 0x82000, PF_FRAME_JIT);
	f[5] = frame(p, "", "[vdso]", 0x900 + o, PF_FRAME_USER);
	f[6] = frame(p, "", "/app/x.py", PF_PY_OFFSET(10, 12 + i), PF_FRAME_PY);
	f[7] = frame(p, "", longmod, 0x10 + o, PF_FRAME_USER);
	add(p, 400 + (uint32_t)(i % 2), "py", "", f, 8, PF_KIND_OFFCPU, 1000 + (uint64_t)i);
	add(p, 400, "py", "", f + 1, 2, PF_KIND_CPU, 2);
	CHECK(profile__counter_add(p, "lost", 3 + (uint64_t)i) == 0);
	struct pf_meta *m = profile__meta(p);
	m->start_ns = 1000000000ll * (60 + i);
	m->end_ns = m->start_ns + 1000000000ll;
	m->frequency = 99;
	CHECK(profile__intern_str(p, "host", &m->host) == 0);
}

/* a and b hold the same tables with the same ids, entries in the same order. */
static int same_profile(const struct profile *a, const struct profile *b)
{
	const struct pf_meta *ma = profile__meta_const(a), *mb = profile__meta_const(b);
	int diff = 0;

	if (profile__nstrs(a) != profile__nstrs(b) || profile__nframes(a) != profile__nframes(b) ||
	    profile__nstacks(a) != profile__nstacks(b) || profile__nsamples(a) != profile__nsamples(b) ||
	    profile__ncounters(a) != profile__ncounters(b))
		return 0;
	for (uint32_t i = 0; i < profile__nstrs(a); i++)
		diff |= strcmp(profile__str(a, i), profile__str(b, i)) != 0;
	for (uint32_t i = 0; i < profile__nframes(a); i++) {
		const struct pf_frame *x = profile__frame(a, i), *y = profile__frame(b, i);

		diff |= x->name != y->name || x->module != y->module || x->offset != y->offset || x->kind != y->kind;
	}
	for (uint32_t i = 0; i < profile__nstacks(a); i++) {
		uint32_t n, m;
		const uint32_t *x = profile__stack(a, i, &n), *y = profile__stack(b, i, &m);

		diff |= n != m || (n && memcmp(x, y, n * sizeof(*x)));
	}
	for (size_t i = 0; i < profile__nsamples(a); i++)
		diff |= memcmp(profile__sample(a, i), profile__sample(b, i), sizeof(struct pf_sample)) != 0;
	for (size_t i = 0; i < profile__ncounters(a); i++)
		diff |= profile__counter(a, i)->name != profile__counter(b, i)->name ||
			profile__counter(a, i)->value != profile__counter(b, i)->value;
	diff |= ma->start_ns != mb->start_ns || ma->end_ns != mb->end_ns || ma->frequency != mb->frequency ||
		ma->host != mb->host || ma->kernel != mb->kernel || ma->event != mb->event;
	return !diff;
}

static int unnamed_frames(const struct profile *p)
{
	int n = 0;

	for (uint32_t i = 0; i < profile__nframes(p); i++)
		n += !profile__str(p, profile__frame(p, i)->name)[0];
	return n;
}

/*
 * A chain's windows merged by modframes__fold_merge() give the profile that
 * modframes__fold() then profile__merge_flags() give, id for id (the bytes
 * of a named rollup are written from it): across windows whose tables
 * grow, a new chain, dst reset as after a flush, another source merged in
 * between.
 */
static void test_same_as_fold_then_merge(unsigned flags)
{
	struct profile *src, *other, *a, *b, *tmp;
	uint64_t in[PF_KIND_MAX] = { 0 }, out[PF_KIND_MAX] = { 0 };

	CHECK(profile__new(&src) == 0 && profile__new(&other) == 0 && profile__new(&a) == 0 &&
	      profile__new(&b) == 0 && profile__new(&tmp) == 0);
	window(other, 99);
	for (int i = 0; i < 8; i++) {
		if (i == 4)
			profile__reset(src); /* the next chain */
		if (i == 5) {
			profile__reset(a);
			profile__reset(b);
			memset(in, 0, sizeof(in));
		}
		window(src, i);
		CHECK_EQ_INT(modframes__fold_merge(a, src, flags), 0);
		CHECK_EQ_INT(modframes__fold(tmp, src), 0);
		CHECK_EQ_INT(profile__merge_flags(b, tmp, NULL, NULL, flags), 0);
		for (size_t k = 0; k < profile__nsamples(src); k++)
			in[profile__sample(src, k)->kind] += profile__sample(src, k)->value;
		if (i == 2) {
			CHECK_EQ_INT(profile__merge_flags(a, other, NULL, NULL, flags), 0);
			CHECK_EQ_INT(profile__merge_flags(b, other, NULL, NULL, flags), 0);
			for (size_t k = 0; k < profile__nsamples(other); k++)
				in[profile__sample(other, k)->kind] += profile__sample(other, k)->value;
		}
		CHECK(same_profile(a, b));
	}
	for (size_t k = 0; k < profile__nsamples(a); k++)
		out[profile__sample(a, k)->kind] += profile__sample(a, k)->value;
	for (int k = 0; k < PF_KIND_MAX; k++)
		CHECK_EQ_INT(out[k], in[k]);
	/* Reset at window 5, a holds module-folded windows alone: no frame without a name. */
	CHECK(profile__nframes(a) > 1);
	CHECK_EQ_INT(unnamed_frames(a), 0);
	profile__free(src);
	profile__free(other);
	profile__free(a);
	profile__free(b);
	profile__free(tmp);
}

/* The stacks a user reads in a module-folded window, as fold names its frames. */
static void test_reads(void)
{
	struct profile *src, *a;
	char line[4096];
	int main_line = 0, leaf_line = 0, apart_line = 0;

	CHECK(profile__new(&src) == 0 && profile__new(&a) == 0);
	window(src, 1);
	CHECK_EQ_INT(modframes__fold_merge(a, src, PF_MERGE_BY_FUNCTION | PF_MERGE_BY_NAME), 0);
	for (size_t i = 0; i < profile__nsamples(a); i++) {
		const struct pf_sample *x = profile__sample(a, i);
		uint32_t n;
		const uint32_t *f = profile__stack(a, x->stack, &n);
		size_t at = 0;

		CHECK_EQ_INT(x->pid, 0);
		line[0] = 0;
		for (uint32_t k = 0; k < n; k++)
			at += (size_t)snprintf(line + at, sizeof(line) - at, "%s%s", k ? ";" : "",
					       profile__str(a, profile__frame(a, f[k])->name));
		main_line += !strcmp(line, "main;[cc1];[libc.so.6];write;[unknown]") && x->kind == PF_KIND_CPU &&
			     x->value == 5;
		leaf_line += !strcmp(line, "main;[cc1]") && !strcmp(profile__str(a, x->cgroup), "/user.slice");
		apart_line += !strcmp(line, "main;[cc1];[cc1]") && x->value == 3;
	}
	CHECK_EQ_INT(main_line, 1);
	CHECK_EQ_INT(leaf_line, 1);
	CHECK_EQ_INT(apart_line, 1);
	profile__free(src);
	profile__free(a);
}

int main(void)
{
	test_same_as_fold_then_merge(PF_MERGE_BY_FUNCTION | PF_MERGE_BY_NAME);
	test_same_as_fold_then_merge(0);
	test_same_as_fold_then_merge(PF_MERGE_BY_FUNCTION | PF_MERGE_BY_LABEL);
	test_same_as_fold_then_merge(PF_MERGE_BY_FUNCTION | PF_MERGE_NO_THREAD | PF_MERGE_NO_CGROUP);
	test_reads();
	T_DONE();
}
