/*
 * The windows as flushed of a kept store (SRC, e.g. size.sh's KEEP_STATE)
 * written again by this build's writer into a fresh store OUT, to compare
 * writers on the same windows (built against each writer's libprofd.a):
 *
 *   store_bench_rw SRC OUT [CHAIN_RECORDS]
 *
 * Environment: RW_CALLS=1 writes callers by function, as profd's writer
 * does (the windows are so already: the same bytes unless SRC holds
 * several writers' windows; the writer's CPU and memory as profd's);
 * RW_UNIT=NS writes off-CPU and run-queue values in units of NS (default
 * 1000); RW_LEAF=1 (a writer built with -DSTORE_LEAF_BY_FUNCTION) writes
 * named leaves by function (store_opts.leaf_by_function). The last two
 * change what is compared: with RW_LEAF the pcs of named native frames
 * are left out and entries that then have one stack may be one (each
 * window's value by thread, kind and stack of names, modules, kinds and
 * Python lines must match; entries of value 0 are not compared); with
 * RW_UNIT the values are left out, and each window's off-CPU and
 * run-queue totals are compared instead (the largest difference printed;
 * with both, every window differs by construction). RW_KINDS=LIST
 * (of cpu, offcpu, runq, comma-separated) writes only the entries of
 * those kinds of each window (cpu: what perf record keeps), and compares
 * those.
 *
 * Build: cc -O2 -std=gnu11 -D_GNU_SOURCE -Ilib [-DSTORE_LEAF_BY_FUNCTION]
 *   tests/bench/store_bench_rw.c LIB/libprofd.a -lzstd -lz -lm -llzma -lelf -pthread
 *
 * Prints the windows, on-CPU samples, the bytes of OUT's segments (and
 * per on-CPU sample), the writer's CPU per window (median, range, sum),
 * its peak RSS, and whether every window read back from OUT encodes to
 * the same bytes as the one read from SRC (lossless).
 * Windows go in as they were stored: their callers already by function.
 */
#include "codec.h"
#include "profile.h"
#include "store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define MAXW 100000

static int cmp_pcs = 1, cmp_values = 1;

struct rw {
	struct store *out;
	struct codec *codec;
	struct profile *kept;           /* RW_KINDS: each window's entries of those kinds */
	unsigned kinds;                 /* RW_KINDS as a mask of 1 << kind */
	double cpu[MAXW];
	uint64_t sum[MAXW];
	uint64_t tot[MAXW][2];          /* off-CPU and run-queue ns */
	uint64_t maxdiff, maxtot;       /* largest |difference| of a window's total, and that total */
	size_t n, nback, bad;
	uint64_t samples;
	int err;
};

static double now_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t mix(uint64_t h, uint64_t x)
{
	h = (h ^ x) * 0x100000001b3ull;
	return h ^ (h >> 29);
}

static uint64_t mix_str(uint64_t h, const char *t)
{
	for (; *t; t++)
		h = (h ^ (uint8_t)*t) * 0x100000001b3ull;
	return mix(h, 0xff);
}

/*
 * What a view can show of a window, whatever its ids: its metadata and
 * counters in order, and the sum over its entries of a hash of each
 * (pid, tid, kind, value, names, cgroup, frames by name, module, offset
 * and kind): the same windows, the same sums.
 */
static uint64_t window_sum(struct codec *c, const struct profile *p)
{
	const struct pf_meta *m = profile__meta_const(p);
	uint64_t h = mix(mix(0xcbf29ce484222325ull, (uint64_t)m->start_ns), (uint64_t)m->end_ns), sum = 0;
	h = mix_str(mix_str(mix_str(mix(h, m->frequency), profile__str(p, m->host)), profile__str(p, m->kernel)),
		    profile__str(p, m->event));
	for (size_t i = 0; i < profile__ncounters(p); i++)
		h = mix(mix_str(h, profile__str(p, profile__counter(p, i)->name)), profile__counter(p, i)->value);
	for (size_t i = 0; i < profile__nsamples(p); i++) {
		const struct pf_sample *x = profile__sample(p, i);
		uint64_t e = mix(mix(mix(mix(0x84222325cbf29ce4ull, x->pid), x->tid), x->kind),
				 cmp_values && cmp_pcs ? x->value : 0);
		e = mix_str(mix_str(mix_str(e, profile__str(p, x->comm)), profile__str(p, x->thread)),
			    profile__str(p, x->cgroup));
		uint32_t n;
		const uint32_t *f = profile__stack(p, x->stack, &n);
		for (uint32_t k = 0; k < n; k++) {
			const struct pf_frame *g = profile__frame(p, f[k]);
			int pc = g->kind != PF_FRAME_PY && profile__str(p, g->name)[0];
			e = mix(mix(mix_str(mix_str(e, profile__str(p, g->name)), profile__str(p, g->module)),
				    cmp_pcs || !pc ? g->offset : 0),
				g->kind);
		}
		/* Leaves by function merge entries: compare value-weighted sums then. */
		sum += cmp_pcs ? mix(e, n) : mix(mix(e, n), 0) * x->value;
	}
	return mix(h, sum);
}

static void totals(const struct profile *p, uint64_t t[2])
{
	t[0] = t[1] = 0;
	for (size_t i = 0; i < profile__nsamples(p); i++) {
		const struct pf_sample *x = profile__sample(p, i);
		if (x->kind == PF_KIND_OFFCPU || x->kind == PF_KIND_RUNQ)
			t[x->kind == PF_KIND_RUNQ] += x->value;
	}
}

static int keep_kind(const struct profile *src, const struct pf_sample *s, void *arg)
{
	(void)src;
	return s->kind < PF_KIND_MAX && (*(const unsigned *)arg >> s->kind & 1);
}

static int on_src(const struct store_window_info *w, const struct profile *p, void *arg)
{
	struct rw *rw = arg;
	if (w->level || rw->n == MAXW)
		return 0;
	if (rw->kept) {
		profile__reset(rw->kept);
		int err = profile__merge(rw->kept, p, keep_kind, &rw->kinds);
		if (err) {
			rw->err = err;
			return err;
		}
		p = rw->kept;
	}
	rw->sum[rw->n] = window_sum(rw->codec, p);
	totals(p, rw->tot[rw->n]);
	rw->samples += w->samples;
	double c0 = now_cpu();
	int err = store__append(rw->out, p);
	rw->cpu[rw->n++] = now_cpu() - c0;
	if (err && !rw->err)
		rw->err = err;
	return 0;
}

static int on_out(const struct store_window_info *w, const struct profile *p, void *arg)
{
	struct rw *rw = arg;
	if (rw->nback >= rw->n || window_sum(rw->codec, p) != rw->sum[rw->nback]) {
		rw->bad++;
	} else {
		uint64_t t[2];
		totals(p, t);
		for (int k = 0; k < 2; k++) {
			uint64_t a = t[k], b = rw->tot[rw->nback][k], d = a > b ? a - b : b - a;
			if (d > rw->maxdiff) {
				rw->maxdiff = d;
				rw->maxtot = b;
			}
		}
	}
	rw->nback++;
	return 0;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static struct rw rw;
	struct store *src;
	struct store_stats st;
	if (argc < 3) {
		fprintf(stderr, "usage: %s SRC OUT [CHAIN_RECORDS]\n", argv[0]);
		return 2;
	}
	struct store_opts so = { .dir = argv[1] };
	const char *unit = getenv("RW_UNIT"), *leaf = getenv("RW_LEAF"), *calls = getenv("RW_CALLS");
	struct store_opts wo = { .dir = argv[2], .writer = 1, .no_rollup = 1,
				 .value_unit_ns = unit ? strtoull(unit, NULL, 0) : 1000,
				 .chain_records = argc > 3 ? (uint32_t)atoi(argv[3]) : 0 };
	wo.calls_by_function = calls && atoi(calls);
	if (leaf && atoi(leaf)) {
#ifdef STORE_LEAF_BY_FUNCTION
		wo.calls_by_function = wo.leaf_by_function = 1;
		cmp_pcs = 0;
#else
		fprintf(stderr, "RW_LEAF: this writer has no leaf_by_function\n");
		return 2;
#endif
	}
	cmp_values = wo.value_unit_ns == 1000;
	const char *kinds = getenv("RW_KINDS");
	if (kinds && !*kinds)
		kinds = NULL;
	for (const char *k = kinds; k && *k; k += strcspn(k, ",") + (k[strcspn(k, ",")] == ',')) {
		size_t n = strcspn(k, ",");
		if (n == 3 && !strncmp(k, "cpu", n))
			rw.kinds |= 1u << PF_KIND_CPU;
		else if (n == 6 && !strncmp(k, "offcpu", n))
			rw.kinds |= 1u << PF_KIND_OFFCPU;
		else if (n == 4 && !strncmp(k, "runq", n))
			rw.kinds |= 1u << PF_KIND_RUNQ;
		else {
			fprintf(stderr, "RW_KINDS: %.*s is not one of cpu, offcpu, runq\n", (int)n, k);
			return 2;
		}
	}
	if (kinds && profile__new(&rw.kept)) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}
	if (store__open(&so, &src) || store__open(&wo, &rw.out) || codec__new(&rw.codec)) {
		fprintf(stderr, "cannot open %s or %s\n", argv[1], argv[2]);
		return 1;
	}
	if (store__read(src, INT64_MIN, INT64_MAX, on_src, &rw) || rw.err) {
		fprintf(stderr, "rewrite failed: %d\n", rw.err);
		return 1;
	}
	store__stats(rw.out, &st);
	store__close(rw.out);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double tot = 0;
	for (size_t i = 0; i < rw.n; i++)
		tot += rw.cpu[i];
	qsort(rw.cpu, rw.n, sizeof(double), cmp_d);
	/* An even count's median is the mean of its two middle values. */
	double med = !rw.n ? 0 : rw.n % 2 ? rw.cpu[rw.n / 2] : (rw.cpu[rw.n / 2 - 1] + rw.cpu[rw.n / 2]) / 2;
	struct store_opts ro = { .dir = argv[2] };
	if (store__open(&ro, &rw.out) || store__read(rw.out, INT64_MIN, INT64_MAX, on_out, &rw))
		return 1;
	store__close(rw.out);
	printf("windows %zu samples %llu bytes %llu per-sample %.3f writer-cpu-ms median %.2f min %.2f max %.2f "
	       "sum %.1f peak-rss-kb %ld read-back %zu differing %zu max-total-diff-ns %llu of %llu\n",
	       rw.n, (unsigned long long)rw.samples, (unsigned long long)st.bytes_written,
	       rw.samples ? (double)st.bytes_written / rw.samples : 0, med * 1e3,
	       rw.n ? rw.cpu[0] * 1e3 : 0, rw.n ? rw.cpu[rw.n - 1] * 1e3 : 0, tot * 1e3, ru.ru_maxrss, rw.nback,
	       rw.bad, (unsigned long long)rw.maxdiff, (unsigned long long)rw.maxtot);
	store__close(src);
	codec__free(rw.codec);
	if (rw.kept)
		profile__free(rw.kept);
	return rw.bad || rw.nback != rw.n;
}
