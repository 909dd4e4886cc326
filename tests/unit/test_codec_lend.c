/*
 * A key encoded with its profile lent as the chain's tables
 * (codec__encode_key_lent): the same bytes as a copied key, record for
 * record through the deltas after it, in a fraction of the memory.
 */
#include "codec.h"
#include "profile.h"
#include "t.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint32_t below(uint32_t n)
{
	return n ? (uint32_t)(rnd() % n) : 0;
}

#define NFUNC 3000

/*
 * A window of a build host: processes by name, stacks walked down a call
 * graph of NFUNC functions in 4 modules (shared prefixes, varied leaves),
 * pcs at varied offsets, on-CPU, off-CPU and run-queue entries. Frames
 * from `fresh` on are new to every window before (a module loaded late).
 */
static void window(struct profile *p, int samples, uint32_t fresh, int64_t start)
{
	static const char *comm[] = { "cc1plus", "cc1", "python3", "node", "postgres", "ld", "kworker/0:1" };
	static const char *mods[] = { "/usr/bin/cc1plus", "/usr/lib/libc.so.6", "/usr/bin/python3.11", "" };
	char buf[96];
	uint32_t frames[48];
	int bad = 0;

	profile__reset(p);
	struct pf_meta *m = profile__meta(p);
	m->start_ns = start;
	m->end_ns = start + 10000000000ll;
	m->frequency = 99;
	bad |= !!(profile__intern_str(p, "host1", &m->host));
	bad |= !!(profile__intern_str(p, "6.18.0", &m->kernel));
	bad |= !!(profile__intern_str(p, "cpu-clock", &m->event));
	bad |= !!(profile__counter_add(p, "lost_samples", below(3)));
	for (int i = 0; i < samples; i++) {
		uint32_t c = below(7), n = 4 + below(40), f = c * 97 % NFUNC;
		struct pf_sample s = { .pid = 1000 + c * 50 + below(50), .kind = below(10) < 7 ? PF_KIND_CPU : 1 + below(2) };
		s.tid = s.pid + below(3);
		bad |= !!(profile__intern_str(p, comm[c], &s.comm));
		snprintf(buf, sizeof(buf), "%s-%u", comm[c], s.tid - s.pid);
		bad |= !!(profile__intern_str(p, s.tid == s.pid ? comm[c] : buf, &s.thread));
		snprintf(buf, sizeof(buf), "/system.slice/unit%u.service", c);
		bad |= !!(profile__intern_str(p, buf, &s.cgroup));
		for (uint32_t k = 0; k < n; k++) {
			struct pf_frame fr = { .kind = f % 11 ? PF_FRAME_USER : PF_FRAME_KERNEL };
			uint32_t id = f < fresh || k < n - 1 ? f % fresh : f;
			snprintf(buf, sizeof(buf), "fn_%u_%s", id, id % 3 ? "parse" : "emit<std::string>");
			bad |= !!(profile__intern_str(p, buf, &fr.name));
			bad |= !!(profile__intern_str(p, mods[id % 4], &fr.module));
			fr.offset = 0x1000 + id * 64 + (k == n - 1 ? below(16) * 4 : 0);
			bad |= !!(profile__frame_add(p, &fr, &frames[k]));
			/* Down the graph: a few hot callees per function, a long tail. */
			f = (f * 31 + 1 + (below(4) ? below(3) : below(NFUNC))) % (fresh + 200);
		}
		bad |= !!(profile__stack_add(p, frames, n, &s.stack));
		s.value = s.kind == PF_KIND_CPU ? 1 + below(5) : 1000 + below(1000000);
		bad |= !!(profile__add(p, &s));
	}
}

/* Encodes w on both codecs, copied and lent (key) or as the same delta; 1 when the bytes are the same. */
static int same(struct codec *copy, struct codec *lend, struct profile *lent, const struct profile *w, int key)
{
	const uint8_t *a, *b;
	size_t na, nb;
	uint8_t *keep;
	int ok;

	CHECK(!codec__encode_chain(copy, w, key ? 0 : 1, &a, &na));
	keep = malloc(na);
	memcpy(keep, a, na);
	CHECK(!(key ? codec__encode_key_lent(lend, lent, &b, &nb) : codec__encode_chain(lend, w, 1, &b, &nb)));
	ok = na == nb && !memcmp(keep, b, na);
	free(keep);
	return ok;
}

int main(void)
{
	struct codec *copy, *lend, *d;
	struct profile *w, *merged, *pids, *out;
	const uint8_t *buf;
	size_t len;

	CHECK(!codec__new(&copy) && !codec__new(&lend) && !codec__new(&d));
	CHECK(!profile__new(&w) && !profile__new(&merged) && !profile__new(&pids) && !profile__new(&out));
	CHECK(!codec__set_value_unit(copy, 1000) && !codec__set_value_unit(lend, 1000));

	/* A summary's whole segment (by function and name) and its record with pids. */
	for (int i = 0; i < 30; i++) {
		window(w, 6000, NFUNC - 300 + 10 * (uint32_t)i, 10000000000ll * i);
		CHECK(!profile__merge_flags(merged, w, NULL, NULL, PF_MERGE_BY_FUNCTION | PF_MERGE_BY_NAME));
		CHECK(!profile__merge_flags(pids, w, NULL, NULL, PF_MERGE_BY_FUNCTION));
	}
	CHECK(profile__nstacks(merged) > 20000);

	/* The key: the same bytes, and no copy of the tables. */
	CHECK(same(copy, lend, merged, merged, 1));
	size_t mc = codec__mem_bytes(copy), ml = codec__mem_bytes(lend), mp = profile__mem_bytes(merged);
	printf("key: copying codec %zu bytes, lending codec %zu, the profile %zu\n", mc, ml, mp);
	CHECK(ml + mp / 3 < mc);

	/* Deltas: windows with frames and stacks new to the chain, the record with pids, an empty one. */
	for (int i = 0; i < 6; i++) {
		window(w, 3000, NFUNC + 40 * (uint32_t)i, 10000000000ll * (40 + i));
		CHECK(same(copy, lend, merged, w, 0));
	}
	CHECK(same(copy, lend, merged, pids, 0));
	profile__reset(w);
	CHECK(same(copy, lend, merged, w, 0));

	/* The lending codec's records decode as a chain, the last one to the profile encoded. */
	CHECK(!codec__encode_key_lent(lend, merged, &buf, &len));
	CHECK(!codec__decode_chain(d, buf, len, 1, 0, out));
	CHECK_EQ_INT(profile__nsamples(out), profile__nsamples(merged));
	window(w, 2000, NFUNC + 500, 10000000000ll * 50);
	CHECK(!codec__encode_chain(lend, w, 1, &buf, &len));
	CHECK(!codec__decode_chain(d, buf, len, 2, 0, out));
	CHECK_EQ_INT(profile__nsamples(out), profile__nsamples(w));

	/* The lent profile changed by someone else, or given back: deltas refused until a key. */
	uint32_t id;
	CHECK(!profile__intern_str(merged, "a string no record carries", &id));
	CHECK_EQ_INT(codec__encode_chain(lend, w, 1, &buf, &len), -ESTALE);
	CHECK_EQ_INT(codec__encode_chain(lend, w, 1, &buf, &len), -ESTALE);
	CHECK(same(copy, lend, merged, merged, 1));
	codec__lend_end(lend);
	CHECK_EQ_INT(codec__encode_chain(lend, w, 1, &buf, &len), -ESTALE);
	CHECK(!codec__encode_chain(lend, w, 0, &buf, &len));
	CHECK(!codec__encode_chain(lend, w, 1, &buf, &len));

	/* Two frames that read alike (one renamed as the other), both used: copied, the same bytes. */
	window(w, 2000, NFUNC, 0);
	struct pf_frame g = *profile__frame(w, 0);
	uint32_t fr[2] = { 0, 0 };
	CHECK(!profile__intern_str(w, "not named yet", &g.name));
	CHECK(!profile__frame_add(w, &g, &fr[1]));
	CHECK(!profile__frame_rename(w, fr[1], profile__frame(w, 0)->name));
	struct pf_sample s = { .pid = 1, .tid = 1, .kind = PF_KIND_CPU, .value = 1 };
	CHECK(!profile__stack_add(w, fr, 2, &s.stack));
	CHECK(!profile__add(w, &s));
	CHECK(same(copy, lend, w, w, 1));
	window(merged, 2000, NFUNC + 100, 0);
	CHECK(same(copy, lend, w, merged, 0));

	profile__free(w);
	profile__free(merged);
	profile__free(pids);
	profile__free(out);
	codec__free(copy);
	codec__free(lend);
	codec__free(d);
	T_DONE();
}
