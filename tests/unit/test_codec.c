/* Window payload codec: round trips of random profiles, and hostile input. */
#include "codec.h"
#include "crc32c.h"
#include "profile.h"
#include "t.h"

#include <errno.h>
#include <stdlib.h>

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

/* Values that stress varints: small, byte boundaries, and the full 64 bits. */
static uint64_t rnd_value(void)
{
	switch (below(4)) {
	case 0: return below(4);
	case 1: return below(300);
	case 2: return (1ull << below(64)) + below(3) - 1;
	default: return rnd();
	}
}

static void rnd_profile(struct profile *p, int scale)
{
	static const char *words[] = { "main", "std::vector<int>::push_back", "/usr/lib/libc.so.6",
		"__x64_sys_read", "[k]", "python3", "worker", "/system.slice/foo.service", "ä-utf8" };
	size_t nw = sizeof(words) / sizeof(words[0]);
	uint32_t strs[64], frames[256], stacks[128];
	size_t nstr = 1 + below(64 > scale ? (uint64_t)scale + 1 : 63);
	char buf[128];

	profile__reset(p);
	strs[0] = 0;
	for (size_t i = 1; i < nstr; i++) {
		int n = snprintf(buf, sizeof(buf), "%s%llu", words[below(nw)], (unsigned long long)below(1000));
		CHECK(!profile__intern(p, buf, (size_t)n, &strs[i]));
	}
	struct pf_meta *m = profile__meta(p);
	m->start_ns = (int64_t)rnd_value() * (below(8) ? 1 : -1);
	m->end_ns = below(8) ? (int64_t)((uint64_t)m->start_ns + below(20000000000ull)) : (int64_t)rnd();
	m->host = strs[below(nstr)];
	m->kernel = strs[below(nstr)];
	m->event = strs[below(nstr)];
	m->frequency = (uint32_t)rnd_value();

	size_t nc = below(6);
	for (size_t i = 0; i < nc; i++)
		CHECK(!profile__counter_add(p, below(2) ? "lost.map_full" : profile__str(p, strs[below(nstr)]), rnd_value()));

	size_t nf = below((uint64_t)scale * 4 + 1) % 256;
	for (size_t i = 0; i < nf; i++) {
		struct pf_frame f = { .name = strs[below(nstr)], .module = strs[below(nstr)],
				      .offset = rnd_value(), .kind = (uint32_t)below(3) };
		CHECK(!profile__frame_add(p, &f, &frames[i]));
	}
	size_t nk = nf ? below((uint64_t)scale * 2 + 1) % 128 : 0;
	uint32_t st[64], prevn = 0;
	for (size_t i = 0; i < nk; i++) {
		uint32_t n = (uint32_t)below(64);
		/* Share a prefix with the previous stack half of the time, as real stacks do. */
		uint32_t keep = below(2) ? (uint32_t)below(prevn + 1) : 0;
		if (keep > n)
			keep = n;
		for (uint32_t j = keep; j < n; j++)
			st[j] = frames[below(nf)];
		CHECK(!profile__stack_add(p, st, n, &stacks[i]));
		prevn = n;
	}
	size_t ns = below((uint64_t)scale * 8 + 1);
	for (size_t i = 0; i < ns; i++) {
		struct pf_sample s = {
			.pid = (uint32_t)(below(4) ? below(5000) : rnd()),
			.comm = strs[below(nstr)], .thread = strs[below(nstr)], .cgroup = strs[below(nstr)],
			.stack = nk && below(8) ? stacks[below(nk)] : 0,
			.kind = (uint32_t)below(PF_KIND_MAX), .value = rnd_value(),
		};
		s.tid = below(2) ? s.pid + (uint32_t)below(10) : (uint32_t)rnd();
		CHECK(!profile__add(p, &s));
	}
}

/* A canonical text form that does not depend on ids: sorted sample lines. */
static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *canon(const struct profile *p)
{
	size_t ns = profile__nsamples(p), cap = 1 << 16, len = 0;
	char **lines = calloc(ns + 1, sizeof(char *));
	char *out;
	const struct pf_meta *m = profile__meta_const(p);

	for (size_t i = 0; i < ns; i++) {
		const struct pf_sample *s = profile__sample(p, i);
		char *line = NULL;
		size_t sz = 0;
		FILE *f = open_memstream(&line, &sz);
		uint32_t n;
		const uint32_t *fr = profile__stack(p, s->stack, &n);
		fprintf(f, "%u %u [%s] [%s] [%s] %u %llu:", s->pid, s->tid, profile__str(p, s->comm),
			profile__str(p, s->thread), profile__str(p, s->cgroup), s->kind,
			(unsigned long long)s->value);
		for (uint32_t j = 0; j < n; j++) {
			const struct pf_frame *x = profile__frame(p, fr[j]);
			fprintf(f, " %s@%s+%llx/%u", profile__str(p, x->name), profile__str(p, x->module),
				(unsigned long long)x->offset, x->kind);
		}
		fclose(f);
		lines[i] = line;
	}
	qsort(lines, ns, sizeof(char *), cmp_str);
	out = malloc(cap);
	len = (size_t)snprintf(out, cap, "%lld %lld %s %s %s %u\n", (long long)m->start_ns, (long long)m->end_ns,
			       profile__str(p, m->host), profile__str(p, m->kernel), profile__str(p, m->event),
			       m->frequency);
	for (size_t i = 0; i < profile__ncounters(p); i++) {
		const struct pf_counter *k = profile__counter(p, i);
		len += (size_t)snprintf(out + len, cap - len, "c %s %llu\n", profile__str(p, k->name),
					(unsigned long long)k->value);
	}
	for (size_t i = 0; i < ns; i++) {
		size_t n = strlen(lines[i]);
		if (len + n + 2 > cap) {
			cap = (len + n + 2) * 2;
			out = realloc(out, cap);
		}
		memcpy(out + len, lines[i], n);
		out[len + n] = '\n';
		len += n + 1;
		out[len] = 0;
		free(lines[i]);
	}
	free(lines);
	return out;
}

static void test_varint_and_empty(struct codec *c, struct profile *a, struct profile *b)
{
	const uint8_t *buf;
	size_t len;

	profile__reset(a);
	CHECK(!codec__encode(c, a, &buf, &len));
	CHECK(len > 0 && len < 32);
	uint8_t *copy = malloc(len);
	memcpy(copy, buf, len);
	CHECK_EQ_INT(codec__decode(c, copy, len, b), 0);
	CHECK_EQ_INT(profile__nsamples(b), 0);
	free(copy);

	/* Hand-made hostile payloads. */
	static const uint8_t overlong[] = { 1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02 };
	CHECK_EQ_INT(codec__decode(c, overlong, sizeof(overlong), b), -EBADMSG);
	static const uint8_t badver[] = { 2, 0 };
	CHECK_EQ_INT(codec__decode(c, badver, sizeof(badver), b), -EBADMSG);
	static const uint8_t hugecount[] = { 1, 0xff, 0xff, 0xff, 0xff, 0x0f };
	CHECK_EQ_INT(codec__decode(c, hugecount, sizeof(hugecount), b), -EBADMSG);
	CHECK_EQ_INT(codec__decode(c, NULL, 0, b), -EBADMSG);
}


/*
 * Hand-made samples in the version 5 layout (a thread table) and in the
 * version 4 one (a row per entry): the same sample either way, and a
 * thread table that does not add up is rejected.
 */
static void test_thread_table(struct codec *c, struct profile *b)
{
	/* Version, chain (key), no strings, meta, no counters, frames or stacks. */
#define HEAD(v) v, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 99, 0, 0, 0
	/* One entry; thread table: pid 7 (zigzag 14), tid = pid, comm "", thread as comm, cgroup ""; 1 on-CPU. */
	static const uint8_t v5[] = { HEAD(5), 1, 1, 1, 14, 0, 0, 0, 0, 1, 0, 0, 0, 5 };
	static const uint8_t v4[] = { HEAD(4), 1, 1, 0, 0, 5, 14, 0, 0, 0, 0 };
	const uint8_t *bufs[2] = { v5, v4 };
	size_t lens[2] = { sizeof(v5), sizeof(v4) };
	for (int i = 0; i < 2; i++) {
		CHECK_EQ_INT(codec__decode(c, bufs[i], lens[i], b), 0);
		CHECK_EQ_INT(profile__nsamples(b), 1);
		if (profile__nsamples(b) == 1) {
			const struct pf_sample *x = profile__sample(b, 0);
			CHECK(x->pid == 7 && x->tid == 7 && x->kind == PF_KIND_CPU && x->value == 5 && x->stack == 0);
		}
	}
	/* An off-CPU entry in microseconds (value_unit 1000), thread with a name of its own: "" (id 0 + 1). */
	static const uint8_t off[] = { HEAD(5), 1, 0xe8, 0x07, 1, 14, 2, 0, 1, 0, 0, 1, 0, 0, 3 };
	CHECK_EQ_INT(codec__decode(c, off, sizeof(off), b), 0);
	if (profile__nsamples(b) == 1) {
		const struct pf_sample *x = profile__sample(b, 0);
		CHECK(x->pid == 7 && x->tid == 8 && x->kind == PF_KIND_OFFCPU && x->value == 3000);
	}
	/* Counts that do not sum to nsamples, a thread without entries, a thread name past the strings. */
	static const uint8_t more[] = { HEAD(5), 1, 1, 1, 14, 0, 0, 0, 0, 2, 0, 0, 0, 5 };
	static const uint8_t fewer[] = { HEAD(5), 2, 1, 1, 14, 0, 0, 0, 0, 1, 0, 0, 0, 5, 0, 5 };
	static const uint8_t empty[] = { HEAD(5), 1, 1, 2, 14, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 5 };
	static const uint8_t name[] = { HEAD(5), 1, 1, 1, 14, 0, 0, 2, 0, 1, 0, 0, 0, 5 };
	CHECK_EQ_INT(codec__decode(c, more, sizeof(more), b), -EBADMSG);
	CHECK_EQ_INT(codec__decode(c, fewer, sizeof(fewer), b), -EBADMSG);
	CHECK_EQ_INT(codec__decode(c, empty, sizeof(empty), b), -EBADMSG);
	CHECK_EQ_INT(codec__decode(c, name, sizeof(name), b), -EBADMSG);
	/* A payload version from the future. */
	static const uint8_t v6[] = { HEAD(6), 0 };
	CHECK_EQ_INT(codec__decode(c, v6, sizeof(v6), b), -EBADMSG);
#undef HEAD
}

/* A chain: each delta decodes on top of the records before it, and only there. */
static void test_chain(struct codec *c)
{
	struct codec *d;
	struct profile *a, *b, *other;
	uint8_t *enc[6];
	size_t len[6];
	int bad = 0;

	CHECK(!codec__new(&d));
	CHECK(!profile__new(&a) && !profile__new(&b) && !profile__new(&other));
	for (int round = 0; round < 50; round++) {
		char *want[6];
		for (int i = 0; i < 6; i++) {
			const uint8_t *buf;
			rnd_profile(a, 1 + (round + i) % 30);
			CHECK(!codec__encode_chain(c, a, i ? 1 : 0, &buf, &len[i]));
			enc[i] = malloc(len[i]);
			memcpy(enc[i], buf, len[i]);
			want[i] = canon(a);
		}
		/* key_ref is 1 + the key's offset: here the key is "at offset 0". */
		for (int i = 0; i < 6; i++) {
			if (codec__decode_chain(d, enc[i], len[i], i ? 100 + (uint64_t)i : 1, 0, b)) {
				bad++;
				continue;
			}
			char *got = canon(b);
			if (strcmp(got, want[i]))
				bad++;
			free(got);
		}
		/* A delta alone, into another profile, after a forget, or with its key elsewhere: refused. */
		CHECK_EQ_INT(codec__decode(d, enc[3], len[3], other), -EBADMSG);
		CHECK_EQ_INT(codec__decode_chain(d, enc[1], len[1], 2, 0, other), -ESTALE);
		CHECK(!codec__decode_chain(d, enc[0], len[0], 1, CODEC_TABLES_ONLY, b));
		codec__chain_forget(d);
		CHECK_EQ_INT(codec__decode_chain(d, enc[1], len[1], 2, 0, b), -ESTALE);
		CHECK(!codec__decode_chain(d, enc[0], len[0], 5, 0, b));
		CHECK_EQ_INT(codec__decode_chain(d, enc[1], len[1], 6, 0, b), -ESTALE); /* key at 0, not 4 */
		/* Skipping a delta that defined tables breaks the ones after it. */
		CHECK(!codec__decode_chain(d, enc[0], len[0], 1, 0, b));
		CHECK(!codec__decode_chain(d, enc[1], len[1], 2, CODEC_TABLES_ONLY, b));
		int r = codec__decode_chain(d, enc[3], len[3], 4, 0, b);
		CHECK(r == -ESTALE || r == 0); /* 0 only when record 2 defined nothing */
		for (int i = 0; i < 6; i++) {
			free(enc[i]);
			free(want[i]);
		}
	}
	CHECK_EQ_INT(bad, 0);
	profile__free(a);
	profile__free(b);
	profile__free(other);
	codec__free(d);
}

static void test_crc(void)
{
	CHECK_EQ_INT(crc32c(0, "123456789", 9), 0xe3069283);
	CHECK_EQ_INT(crc32c(crc32c(0, "1234", 4), "56789", 5), 0xe3069283);
	CHECK_EQ_INT(crc32c(0, "", 0), 0);
}

/*
 * Off-CPU and run-queue values in microseconds: each entry within a unit,
 * each thread's time by kind within half a unit of its exact sum (also
 * of many entries each under half a unit), on-CPU values exact.
 */
static void test_value_units(struct codec *c, struct profile *a, struct profile *b)
{
	enum { NP = 12, PER = 40 };
	const uint64_t unit = 1000;
	uint64_t want[NP * PER], sum[NP][PF_KIND_MAX];
	int entry_bad = 0, sum_bad = 0, cpu_bad = 0, exact_bad = 0;
	const uint8_t *buf;
	size_t len;
	char name[32];

	CHECK_EQ_INT(codec__set_value_unit(c, 2000000000ull), -EINVAL);
	for (int round = 0; round < 20; round++) {
		profile__reset(a);
		memset(sum, 0, sizeof(sum));
		for (int i = 0; i < NP * PER; i++) {
			uint32_t id, fr, st;
			snprintf(name, sizeof(name), "s%d", i);
			CHECK(!profile__intern_str(a, name, &id));
			CHECK(!profile__frame_add(a, &(struct pf_frame){ .name = id }, &fr));
			CHECK(!profile__stack_add(a, &fr, 1, &st));
			struct pf_sample x = { .pid = 100 + (uint32_t)(i / PER), .stack = st,
					       .kind = (uint32_t)below(PF_KIND_MAX) };
			x.tid = x.pid + (uint32_t)below(2);
			/* Under half a unit, about a unit, or long waits. */
			x.value = below(3) == 0 ? below(unit / 2) : below(2) ? below(3 * unit) : below(1ull << 40);
			want[i] = x.value;
			CHECK(!profile__add(a, &x));
		}
		for (int u = 0; u < 2; u++) {
			CHECK(!codec__set_value_unit(c, u ? unit : 0));
			CHECK(!codec__encode(c, a, &buf, &len));
			CHECK(!codec__decode(c, buf, len, b));
			CHECK_EQ_INT(profile__nsamples(b), NP * PER);
			int64_t diff[NP][2][PF_KIND_MAX];
			memset(diff, 0, sizeof(diff));
			for (size_t k = 0; k < profile__nsamples(b); k++) {
				const struct pf_sample *x = profile__sample(b, k);
				uint32_t n;
				const uint32_t *f = profile__stack(b, x->stack, &n);
				int i = n == 1 ? atoi(profile__str(b, profile__frame(b, f[0])->name) + 1) : 0;
				int64_t d = (int64_t)(x->value - want[i]);
				if (!u && d)
					exact_bad++;
				else if (x->kind == PF_KIND_CPU && d)
					cpu_bad++;
				else if (d <= -(int64_t)unit || d >= (int64_t)unit)
					entry_bad++;
				diff[x->pid - 100][x->tid - x->pid][x->kind] += d;
			}
			for (int pi = 0; pi < NP; pi++)
				for (int t = 0; t < 2; t++)
					for (int k = 0; k < PF_KIND_MAX; k++)
						if (diff[pi][t][k] < -(int64_t)unit / 2 || diff[pi][t][k] > (int64_t)unit / 2)
							sum_bad++;
		}
	}
	CHECK_EQ_INT(exact_bad, 0);
	CHECK_EQ_INT(cpu_bad, 0);
	CHECK_EQ_INT(entry_bad, 0);
	CHECK_EQ_INT(sum_bad, 0);
	CHECK(!codec__set_value_unit(c, 0));
}

int main(int argc, char **argv)
{
	struct codec *c;
	struct profile *a, *b;
	int iters = 2000;
	if (argc > 1) {
		char *end;
		errno = 0;
		long v = strtol(argv[1], &end, 10);
		if (errno || end == argv[1] || *end || v < 1 || v > 10000000) {
			fprintf(stderr, "usage: %s [iterations]\n", argv[0]);
			return 2;
		}
		iters = (int)v;
	}

	test_crc();
	CHECK(!codec__new(&c));
	CHECK(!profile__new(&a));
	CHECK(!profile__new(&b));
	test_varint_and_empty(c, a, b);
	test_thread_table(c, b);
	test_chain(c);
	test_value_units(c, a, b);

	int roundtrip_fail = 0, reencode_fail = 0, fixpoint_fail = 0, trunc_fail = 0, mut_ok = 0;
	for (int it = 0; it < iters; it++) {
		const uint8_t *buf;
		size_t len;

		rnd_profile(a, 1 + it % 60);
		if (codec__encode(c, a, &buf, &len)) {
			CHECK(0);
			continue;
		}
		uint8_t *enc = malloc(len + 1);
		memcpy(enc, buf, len);
		int err = codec__decode(c, enc, len, b);
		if (err) {
			CHECK_EQ_INT(err, 0);
			free(enc);
			continue;
		}
		char *ca = canon(a), *cb = canon(b);
		if (strcmp(ca, cb)) {
			if (!roundtrip_fail++)
				fprintf(stderr, "round trip differs:\n%s---\n%s", ca, cb);
		}
		free(ca);
		free(cb);
		/*
		 * Encoding the decoded profile again gives the same profile. (Not the
		 * same bytes: samples are written sorted, so a decoded profile meets
		 * its strings in another order.) Its bytes are a fixed point, though.
		 */
		const uint8_t *buf2;
		size_t len2;
		CHECK(!codec__encode(c, b, &buf2, &len2));
		uint8_t *enc2 = malloc(len2 ? len2 : 1);
		memcpy(enc2, buf2, len2);
		struct profile *b2;
		CHECK(!profile__new(&b2));
		if (codec__decode(c, enc2, len2, b2)) {
			reencode_fail++;
		} else {
			char *c1 = canon(b), *c2 = canon(b2);
			if (strcmp(c1, c2))
				reencode_fail++;
			free(c1);
			free(c2);
			const uint8_t *buf3;
			size_t len3;
			CHECK(!codec__encode(c, b2, &buf3, &len3));
			if (len3 != len2 || memcmp(buf3, enc2, len2))
				fixpoint_fail++;
		}
		profile__free(b2);
		free(enc2);
		/* Every proper prefix is rejected, never read past. */
		for (size_t cut = 0; cut < len; cut += 1 + len / 64) {
			uint8_t *t = malloc(cut ? cut : 1);
			memcpy(t, enc, cut);
			if (codec__decode(c, t, cut, b) != -EBADMSG)
				trunc_fail++;
			free(t);
		}
		/* Random byte changes: must not crash (ASan build), may decode. */
		for (int k = 0; k < 8 && len; k++) {
			size_t pos = below(len);
			uint8_t old = enc[pos];
			enc[pos] ^= (uint8_t)(1 + below(255));
			if (!codec__decode(c, enc, len, b))
				mut_ok++;
			enc[pos] = old;
		}
		free(enc);
	}
	CHECK_EQ_INT(roundtrip_fail, 0);
	CHECK_EQ_INT(reencode_fail, 0);
	CHECK_EQ_INT(fixpoint_fail, 0);
	CHECK_EQ_INT(trunc_fail, 0);
	printf("%d random profiles; %d mutated payloads still decoded\n", iters, mut_ok);

	profile__free(a);
	profile__free(b);
	codec__free(c);
	T_DONE();
}
