/*
 * Storage benchmark: writes 24 h of realistic 10 s windows into a fresh
 * store, then times queries over it.
 *
 *   store_bench [-d DIR] [-H HOURS] [-c BUSY_CPUS] [-l ZSTD_LEVEL] [-M MAX_MB] [-q]
 *   store_bench -a DIR | -L DIR | -W DIR | -S DIR | -Q DIR | -r DIR  (a kept store)
 *   SUM_ONLY=1 store_bench -r DIR: the summaries of DIR's windows as flushed alone, and their peak RSS
 *
 * "Realistic": a build host with compilers (cc1, deep and varied C++ frames),
 * interpreters (python3, node), a database, a web server and kernel threads;
 * stacks are random walks down per-process call trees (so prefixes repeat the
 * way real ones do), leaves hit varying pcs, compiler pids churn every
 * minute, and a share of samples is off-CPU with ns values. Each busy CPU
 * yields 990 samples per window (99 Hz x 10 s).
 *
 * Prints: writer CPU and wall time per window, bytes per window and per
 * CPU-hour, then store__list / store__read (decode + merge, like
 * `profctl dump`) times for the last 10 min and the whole 24 h.
 * -M: a max-disk of MAX_MB (10^6 bytes), with store__retain after each
 * window as profd calls it; then also the history kept (the oldest
 * window's age) and the windows by level.
 */
#include "codec.h"
#include "profile.h"
#include "store.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#define SEC 1000000000ll
#define WINDOW (10 * SEC)

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}
static uint32_t below(uint32_t n) { return n ? (uint32_t)(rnd() % n) : 0; }
/* Geometric child choice: a few hot paths and a long tail. */
static uint32_t skewed(uint32_t n)
{
	uint32_t i = 0;
	while (i + 1 < n && below(100) < 45)
		i++;
	return i;
}

struct node {
	char name[96];
	int module;
	uint64_t offset;
	int nchild;
	struct node *child;
};

struct proc {
	const char *comm;
	const char *modules[3];
	int weight;        /* share of CPU samples */
	int depth;         /* typical stack depth */
	int fanout;
	int kernel_share;  /* % of samples with kernel frames on top */
	int churn;         /* new pid every window with this probability (%) */
	int threads;
	uint32_t pid;
	struct node root;
};

static const char *const words[] = { "parse", "expr", "decl", "lower", "fold", "emit", "tree",
	"ssa", "rtl", "alias", "hash", "insert", "lookup", "visit", "eval", "frame", "call",
	"dispatch", "object", "dict", "alloc", "gc", "mark", "sweep", "index", "scan", "btree",
	"page", "buffer", "lock", "socket", "read", "write", "poll", "epoll", "json", "string" };
#define NW (sizeof(words) / sizeof(words[0]))

static void mkname(char *buf, size_t n, int cxx)
{
	if (cxx)
		snprintf(buf, n, "%s::%s_%s<%s>::%s%u", words[below(NW)], words[below(NW)], words[below(NW)],
			 words[below(NW)], words[below(NW)], below(50));
	else
		snprintf(buf, n, "%s_%s_%s%u", words[below(NW)], words[below(NW)], words[below(NW)], below(100));
}

/* Bushy near the root (main, dispatch), then mostly a chain, as real call trees: a few thousand leaves. */
static void build(struct node *nd, int level, int depth, int fanout, int cxx, int nmod)
{
	if (level >= depth)
		return;
	nd->nchild = level < 3 ? 1 + (int)below((uint32_t)fanout) : 1 + (below(6) == 0);
	nd->child = calloc((size_t)nd->nchild, sizeof(*nd->child));
	for (int i = 0; i < nd->nchild; i++) {
		struct node *c = &nd->child[i];
		mkname(c->name, sizeof(c->name), cxx);
		c->module = (int)below((uint32_t)nmod);
		c->offset = 0x1000 + (rnd() & 0x7ffff0);
		build(c, level + 1 + (int)below(2), depth, fanout, cxx, nmod);
	}
}

static struct proc procs[] = {
	{ "cc1plus", { "/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus", "/usr/lib/x86_64-linux-gnu/libc.so.6" }, 30, 30, 5, 10, 30, 1, 0, { { 0 }, 0, 0, 0, NULL } },
	{ "cc1", { "/usr/lib/gcc/x86_64-linux-gnu/12/cc1", "/usr/lib/x86_64-linux-gnu/libc.so.6" }, 15, 26, 5, 10, 30, 1, 0, { { 0 }, 0, 0, 0, NULL } },
	{ "python3", { "/usr/bin/python3.11", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/python3.11/lib-dynload/_json.so" }, 15, 40, 4, 15, 2, 4, 0, { { 0 }, 0, 0, 0, NULL } },
	{ "node", { "/usr/bin/node", "/usr/lib/x86_64-linux-gnu/libc.so.6" }, 10, 35, 4, 20, 1, 8, 0, { { 0 }, 0, 0, 0, NULL } },
	{ "postgres", { "/usr/lib/postgresql/15/bin/postgres", "/usr/lib/x86_64-linux-gnu/libc.so.6" }, 12, 22, 4, 35, 5, 1, 0, { { 0 }, 0, 0, 0, NULL } },
	{ "nginx", { "/usr/sbin/nginx", "/usr/lib/x86_64-linux-gnu/libssl.so.3", "/usr/lib/x86_64-linux-gnu/libc.so.6" }, 8, 16, 3, 50, 0, 4, 0, { { 0 }, 0, 0, 0, NULL } },
	{ "ld", { "/usr/bin/x86_64-linux-gnu-ld.bfd", "/usr/lib/x86_64-linux-gnu/libbfd-2.40-system.so" }, 5, 20, 4, 20, 40, 1, 0, { { 0 }, 0, 0, 0, NULL } },
	{ "kworker/u16:2", { "" }, 5, 0, 0, 100, 0, 1, 0, { { 0 }, 0, 0, 0, NULL } },
};
#define NPROC (sizeof(procs) / sizeof(procs[0]))
static struct node kernel_root;

static void add_sample(struct profile *p, struct proc *pr, uint32_t kind, uint64_t value, uint32_t strs[3])
{
	uint32_t frames[96], n = 0, sid, mods[3], name;
	struct node *nd = &pr->root;

	for (int m = 0; m < 3 && pr->modules[m]; m++)
		profile__intern_str(p, pr->modules[m], &mods[m]);
	while (nd->nchild && n < 60) {
		nd = &nd->child[skewed((uint32_t)nd->nchild)];
		profile__intern_str(p, nd->name, &name);
		struct pf_frame f = { .name = name, .module = mods[nd->module], .offset = nd->offset };
		/* the leaf is wherever the pc was: one of many addresses in the function */
		if (!nd->nchild && kind == 0)
			f.offset += below(64) * 4;
		profile__frame_add(p, &f, &frames[n++]);
	}
	if (!pr->root.nchild || below(100) < (uint32_t)pr->kernel_share) {
		struct node *k = &kernel_root;
		while (k->nchild && n < 90) {
			k = &k->child[skewed((uint32_t)k->nchild)];
			profile__intern_str(p, k->name, &name);
			struct pf_frame f = { .name = name, .offset = 0xffffffff81000000ull + k->offset,
					      .kind = PF_FRAME_KERNEL };
			profile__frame_add(p, &f, &frames[n++]);
		}
	}
	profile__stack_add(p, frames, n, &sid);
	uint32_t tid = pr->pid + below((uint32_t)pr->threads);
	char tname[32];
	uint32_t thread = strs[0];
	if (pr->threads > 1) {
		snprintf(tname, sizeof(tname), "%s-w%u", pr->comm, tid - pr->pid);
		profile__intern_str(p, tname, &thread);
	}
	struct pf_sample s = { .pid = pr->pid, .tid = tid, .comm = strs[0], .thread = thread,
			       .cgroup = strs[1], .stack = sid, .kind = kind, .value = value };
	profile__add(p, &s);
}

static void make_window(struct profile *p, int64_t start, int cpus)
{
	uint32_t host, kern, ev, strs[NPROC][3];
	char cg[128];

	profile__reset(p);
	profile__intern_str(p, "build-host-17", &host);
	profile__intern_str(p, "6.1.0-28-amd64", &kern);
	profile__intern_str(p, "cpu-cycles", &ev);
	for (size_t i = 0; i < NPROC; i++) {
		if (below(100) < (uint32_t)procs[i].churn)
			procs[i].pid = 1000 + below(4000000);
		profile__intern_str(p, procs[i].comm, &strs[i][0]);
		snprintf(cg, sizeof(cg), "/system.slice/%s.service", procs[i].comm);
		profile__intern_str(p, cg, &strs[i][1]);
	}
	int total_w = 0;
	for (size_t i = 0; i < NPROC; i++)
		total_w += procs[i].weight;
	int n = cpus * 990;
	for (int k = 0; k < n; k++) {
		int w = (int)below((uint32_t)total_w);
		size_t i = 0;
		while (w >= procs[i].weight)
			w -= procs[i++].weight;
		add_sample(p, &procs[i], PF_KIND_CPU, 1, strs[i]);
	}
	/* off-CPU: fewer, heavier entries (blocked in read, futex, poll) */
	for (int k = 0; k < n / 8; k++) {
		size_t i = below(NPROC);
		add_sample(p, &procs[i], PF_KIND_OFFCPU, 1000 + below(50000000), strs[i]);
	}
	profile__counter_add(p, "bpf_samples", (uint64_t)n);
	if (below(10) == 0)
		profile__counter_add(p, "stacks_dropped_hash_clash", below(5));
	struct pf_meta *m = profile__meta(p);
	m->start_ns = start;
	m->end_ns = start + WINDOW;
	m->host = host;
	m->kernel = kern;
	m->event = ev;
	m->frequency = 99;
}

static double now(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct agg {
	struct profile *merged;
	int windows;
	uint64_t bytes;
};

static int on_info(const struct store_window_info *w, void *arg)
{
	struct agg *a = arg;
	a->windows++;
	a->bytes += w->bytes;
	return 0;
}

static int rm_cb(const char *p, const struct stat *sb, int type, struct FTW *ftw)
{
	return remove(p);
}

struct span {
	int64_t oldest;
	uint64_t by_level[4], bytes_by_level[4];
};

static int on_span(const struct store_window_info *w, void *arg)
{
	struct span *sp = arg;
	int l = w->level < 3 ? w->level : 3;

	if (w->start_ns < sp->oldest)
		sp->oldest = w->start_ns;
	sp->by_level[l]++;
	sp->bytes_by_level[l] += w->bytes;
	return 0;
}

static void query(struct store *s, const char *label, int64_t since, int64_t until, int reps)
{
	double best_list = 1e9, best_read = 1e9, best_cpu = 1e9;
	struct agg a;
	for (int r = 0; r < reps; r++) {
		memset(&a, 0, sizeof(a));
		double t = now(CLOCK_MONOTONIC);
		store__list(s, since, until, on_info, &a);
		t = now(CLOCK_MONOTONIC) - t;
		if (t < best_list)
			best_list = t;
		int listed = a.windows;
		memset(&a, 0, sizeof(a));
		profile__new(&a.merged);
		t = now(CLOCK_MONOTONIC);
		double c = now(CLOCK_PROCESS_CPUTIME_ID);
		struct store_stats st0, st1;
		store__stats(s, &st0);
		/* As profctl dump/top/diff do without --pid. */
		int err = store__merge(s, since, until, PF_MERGE_BY_FUNCTION | PF_MERGE_BY_NAME, NULL, NULL, a.merged);
		store__stats(s, &st1);
		t = now(CLOCK_MONOTONIC) - t;
		c = now(CLOCK_PROCESS_CPUTIME_ID) - c;
		if (c < best_cpu)
			best_cpu = c;
		if (err)
			fprintf(stderr, "read: %s\n", strerror(-err));
		if (t < best_read)
			best_read = t;
		if (r == reps - 1)
			printf("%-8s %5d records listed (%llu decoded)   list %8.2f ms   read+merge %8.1f ms (CPU %8.1f ms)   (%zu stacks, %zu samples merged)\n",
			       label, listed, (unsigned long long)(st1.records_decoded - st0.records_decoded),
			       best_list * 1e3, best_read * 1e3, best_cpu * 1e3, profile__nstacks(a.merged),
			       profile__nsamples(a.merged));
		profile__free(a.merged);
	}
}

/*
 * -x: what cross-window compression would buy. Compresses each window's
 * payload alone and with the previous window's payload as a zstd prefix
 * (what a keyframe/delta record scheme would do), without writing.
 */
static int experiment(int nwin, int cpus, int level)
{
	struct codec *c;
	struct profile *p;
	ZSTD_CCtx *z = ZSTD_createCCtx();
	uint8_t *prev = NULL, *out = NULL;
	size_t prevlen = 0, cap = 0;
	double alone = 0, chained = 0, raw = 0;

	codec__new(&c);
	profile__new(&p);
	ZSTD_CCtx_setParameter(z, ZSTD_c_compressionLevel, level ? level : 3);
	for (int i = 0; i < nwin; i++) {
		const uint8_t *buf;
		size_t len;
		make_window(p, (int64_t)i * WINDOW, cpus);
		codec__encode(c, p, &buf, &len);
		if (ZSTD_compressBound(len) > cap) {
			cap = ZSTD_compressBound(len);
			out = realloc(out, cap);
		}
		raw += (double)len;
		alone += (double)ZSTD_compress2(z, out, cap, buf, len);
		if (prev) {
			ZSTD_CCtx_refPrefix(z, prev, prevlen);
			chained += (double)ZSTD_compress2(z, out, cap, buf, len);
		}
		prev = realloc(prev, len);
		memcpy(prev, buf, len);
		prevlen = len;
	}
	printf("per window: raw payload %.0f B, zstd alone %.0f B, zstd with previous window as prefix %.0f B\n",
	       raw / nwin, alone / nwin, chained / (nwin - 1));
	ZSTD_freeCCtx(z);
	free(prev);
	free(out);
	codec__free(c);
	profile__free(p);
	return 0;
}


/* ---- -a DIR: where the bytes of an existing store go ---- */

struct section_walk {
	const uint8_t *p, *end;
};

static uint64_t walk_u(struct section_walk *w)
{
	uint64_t x = 0;
	for (int sh = 0; w->p < w->end && sh < 64; sh += 7) {
		uint8_t b = *w->p++;
		x |= (uint64_t)(b & 0x7f) << sh;
		if (!(b & 0x80))
			break;
	}
	return x;
}

enum { SEC_STR, SEC_META, SEC_FRAMES, SEC_STACKS, SEC_SAMPLES, NSEC };
static const char *const sec_names[NSEC] = { "strings", "meta+counters", "frames", "stacks", "samples" };

/* Section boundaries of a key payload (docs/FORMAT.md). */
static void v1_sections(const uint8_t *buf, size_t len, size_t off[NSEC + 1])
{
	struct section_walk w = { buf, buf + len };
	if (walk_u(&w) >= 2) /* the chain: key_ref and the table sizes before the record */
		for (int i = 0; i < 4; i++)
			walk_u(&w);
	off[SEC_STR] = (size_t)(w.p - buf);
	uint64_t n = walk_u(&w);
	for (uint64_t i = 0; i < n; i++)
		w.p += walk_u(&w);
	off[SEC_META] = (size_t)(w.p - buf);
	for (int i = 0; i < 6; i++)
		walk_u(&w);
	n = walk_u(&w);
	for (uint64_t i = 0; i < 2 * n; i++)
		walk_u(&w);
	off[SEC_FRAMES] = (size_t)(w.p - buf);
	n = walk_u(&w);
	for (uint64_t i = 0; i < 4 * n; i++)
		walk_u(&w);
	off[SEC_STACKS] = (size_t)(w.p - buf);
	n = walk_u(&w);
	for (uint64_t i = 0; i < n; i++) {
		walk_u(&w);
		uint64_t m = walk_u(&w);
		for (uint64_t j = 0; j < m; j++)
			walk_u(&w);
	}
	off[SEC_SAMPLES] = (size_t)(w.p - buf);
	off[NSEC] = len;
}

/*
 * The sample section of a payload cut into its columns (offsets from
 * its start into cols[], the column count returned): version 4 has eight
 * columns of nsamples each after nsamples and value_unit.
 */
static const char *const col_names_v4[] = { "(counts)", "kind", "stack", "value", "pid", "tid", "comm",
					    "thread", "cgroup" };
static const char *const col_names_v5[] = { "(counts)", "pid", "tid", "comm", "thread", "cgroup",
					    "entries by kind", "stack", "value" };
static const char *const *col_names = col_names_v4;
static int sample_columns(int version, const uint8_t *buf, size_t len, size_t cols[17])
{
	struct section_walk w = { buf, buf + len };
	uint64_t n = walk_u(&w);
	walk_u(&w);
	if (version >= 5) {
		uint64_t nt = walk_u(&w);
		static const int per[] = { 1, 1, 1, 1, 1, PF_KIND_MAX, -1, -1 };
		col_names = col_names_v5;
		cols[0] = 0;
		for (int c = 1; c <= 8; c++) {
			cols[c] = (size_t)(w.p - buf);
			uint64_t m = per[c - 1] < 0 ? n : nt * (uint64_t)per[c - 1];
			for (uint64_t i = 0; i < m; i++)
				walk_u(&w);
		}
		cols[9] = len;
		return 9;
	}
	cols[0] = 0;
	for (int c = 1; c <= 8; c++) {
		cols[c] = (size_t)(w.p - buf);
		for (uint64_t i = 0; i < n; i++)
			walk_u(&w);
	}
	cols[9] = len;
	return 9;
}

struct an {
	struct codec *codec;
	ZSTD_CCtx *z;
	uint8_t *out, *prev;
	size_t cap, prevlen;
	struct profile *seen, *tmp, *roll1, *roll10, *own;
	int nroll1, nroll10, groups1, groups10;
	int64_t first, last;
	double win, disk, raw, zall, sec[NSEC], chained;
	double ent[PF_KIND_MAX], vals_cpu;
	double nstr, nframes, nstacks, new_str, new_frames, new_stacks;
	double pids, tids, entries_by_pid;
	double no_off, by_pid, by_func, roll1_bytes, roll10_bytes;
	double pid_new;
	struct codec *chain;
	double csec[NSEC], craw;
	double ccol[16];       /* sample columns of the chained records, each compressed alone */
	int ncol;
	uint32_t *lastpids;
	size_t nlastpids;
};

static double zsize(struct an *a, const uint8_t *buf, size_t len)
{
	if (ZSTD_compressBound(len) > a->cap) {
		a->cap = ZSTD_compressBound(len);
		a->out = realloc(a->out, a->cap);
	}
	return (double)ZSTD_compress2(a->z, a->out, a->cap, buf, len);
}

static double enc_size(struct an *a, const struct profile *p)
{
	const uint8_t *buf;
	size_t len;
	if (codec__encode(a->codec, p, &buf, &len))
		return 0;
	return zsize(a, buf, len) + 64;
}

static int keep_onlycpu(const struct profile *p, const struct pf_sample *s, void *arg)
{
	return s->kind == PF_KIND_CPU;
}

static int cmp_u32(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	return a < b ? -1 : a > b;
}

static size_t distinct(uint32_t *v, size_t n)
{
	size_t d = 0;
	qsort(v, n, sizeof(*v), cmp_u32);
	for (size_t i = 0; i < n; i++)
		if (!i || v[i] != v[i - 1])
			d++;
	return d;
}

/* Copies p's samples into dst (accumulating), with threads folded into their process when fold. */
static void copy_into(struct profile *dst, const struct profile *p, int fold)
{
	uint32_t fr[256];
	for (size_t i = 0; i < profile__nsamples(p); i++) {
		struct pf_sample x = *profile__sample(p, i);
		uint32_t n;
		const uint32_t *f = profile__stack(p, x.stack, &n);
		if (n > 256)
			n = 256;
		for (uint32_t k = 0; k < n; k++) {
			struct pf_frame g = *profile__frame(p, f[k]);
			profile__intern_str(dst, profile__str(p, g.name), &g.name);
			profile__intern_str(dst, profile__str(p, g.module), &g.module);
			profile__frame_add(dst, &g, &fr[k]);
		}
		profile__stack_add(dst, fr, n, &x.stack);
		if (fold) {
			x.tid = x.pid;
			x.thread = x.comm;
		}
		profile__intern_str(dst, profile__str(p, x.comm), &x.comm);
		profile__intern_str(dst, profile__str(p, x.thread), &x.thread);
		profile__intern_str(dst, profile__str(p, x.cgroup), &x.cgroup);
		profile__add(dst, &x);
	}
	struct pf_meta *m = profile__meta(dst);
	const struct pf_meta *sm = profile__meta_const(p);
	if (!m->start_ns || sm->start_ns < m->start_ns)
		m->start_ns = sm->start_ns;
	if (sm->end_ns > m->end_ns)
		m->end_ns = sm->end_ns;
	m->frequency = sm->frequency;
	profile__intern_str(dst, profile__str(p, sm->host), &m->host);
	profile__intern_str(dst, profile__str(p, sm->kernel), &m->kernel);
	profile__intern_str(dst, profile__str(p, sm->event), &m->event);
	for (size_t i = 0; i < profile__ncounters(p); i++)
		profile__counter_add(dst, profile__str(p, profile__counter(p, i)->name), profile__counter(p, i)->value);
}

/* How many of p's strings, frames and stacks seen already holds (by content); adds them. */
static void count_new(struct an *a, const struct profile *p)
{
	size_t s0 = profile__nstrs(a->seen), f0 = profile__nframes(a->seen), k0 = profile__nstacks(a->seen);
	/* Every string, frame and stack of the window, used or not: the encoder writes them all. */
	for (size_t i = 0; i < profile__nstrs(p); i++) {
		uint32_t id;
		profile__intern_str(a->seen, profile__str(p, (uint32_t)i), &id);
	}
	uint32_t *fmap = malloc((profile__nframes(p) + 1) * sizeof(*fmap)), fr[256];
	for (size_t i = 0; i < profile__nframes(p); i++) {
		struct pf_frame g = *profile__frame(p, (uint32_t)i);
		profile__intern_str(a->seen, profile__str(p, g.name), &g.name);
		profile__intern_str(a->seen, profile__str(p, g.module), &g.module);
		profile__frame_add(a->seen, &g, &fmap[i]);
	}
	for (size_t i = 0; i < profile__nstacks(p); i++) {
		uint32_t n, id;
		const uint32_t *f = profile__stack(p, (uint32_t)i, &n);
		if (n > 256)
			n = 256;
		for (uint32_t k = 0; k < n; k++)
			fr[k] = fmap[f[k]];
		profile__stack_add(a->seen, fr, n, &id);
	}
	free(fmap);
	a->new_str += (double)(profile__nstrs(a->seen) - s0);
	a->new_frames += (double)(profile__nframes(a->seen) - f0);
	a->new_stacks += (double)(profile__nstacks(a->seen) - k0);
}

static int an_window(const struct store_window_info *w, const struct profile *chain_p, void *arg)
{
	struct an *a = arg;
	/* A decoded record of a chain holds the chain's tables: count only what this window uses. */
	profile__reset(a->own);
	copy_into(a->own, chain_p, 0);
	const struct profile *p = a->own;
	const uint8_t *buf;
	size_t len, off[NSEC + 1];

	if (!a->win)
		a->first = w->start_ns;
	a->last = w->end_ns;
	a->win++;
	a->disk += (double)w->bytes;
	codec__encode(a->codec, p, &buf, &len);
	a->raw += (double)len;
	a->zall += zsize(a, buf, len);
	v1_sections(buf, len, off);
	for (int i = 0; i < NSEC; i++)
		a->sec[i] += zsize(a, buf + off[i], off[i + 1] - off[i]);
	if (a->prev) {
		ZSTD_CCtx_refPrefix(a->z, a->prev, a->prevlen);
		a->chained += zsize(a, buf, len);
	} else {
		a->chained += zsize(a, buf, len);
	}
	/* The same window as a record of a chain of 30, as the writer does. */
	{
		const uint8_t *cb;
		size_t cl, co[NSEC + 1];
		if (!codec__encode_chain(a->chain, p, (uint64_t)a->win % 30 != 1, &cb, &cl)) {
			a->craw += (double)cl;
			v1_sections(cb, cl, co);
			for (int i = 0; i < NSEC; i++)
				a->csec[i] += zsize(a, cb + co[i], co[i + 1] - co[i]);
			size_t cols[17];
			int nc = sample_columns(cb[0], cb + co[SEC_SAMPLES], co[NSEC] - co[SEC_SAMPLES], cols);
			a->ncol = nc;
			for (int i = 0; i < nc; i++)
				a->ccol[i] += zsize(a, cb + co[SEC_SAMPLES] + cols[i], cols[i + 1] - cols[i]);
		}
	}
	a->prev = realloc(a->prev, len);
	memcpy(a->prev, buf, len);
	a->prevlen = len;

	size_t ns = profile__nsamples(p);
	uint32_t *pids = malloc((ns + 1) * sizeof(*pids)), *keys = malloc((ns + 1) * sizeof(*keys));
	for (size_t i = 0; i < ns; i++) {
		const struct pf_sample *x = profile__sample(p, i);
		a->ent[x->kind]++;
		if (x->kind == PF_KIND_CPU)
			a->vals_cpu += (double)x->value;
		pids[i] = x->pid;
		keys[i] = x->tid;
	}
	size_t np = distinct(pids, ns);
	a->pids += (double)np;
	a->tids += (double)distinct(keys, ns);
	size_t newp = 0;
	for (size_t i = 0; i < ns; i++)
		if ((!i || pids[i] != pids[i - 1]) &&
		    !bsearch(&pids[i], a->lastpids, a->nlastpids, sizeof(uint32_t), cmp_u32))
			newp++;
	a->pid_new += (double)newp;
	free(a->lastpids);
	a->lastpids = malloc((np + 1) * sizeof(uint32_t));
	a->nlastpids = 0;
	for (size_t i = 0; i < ns; i++)
		if (!i || pids[i] != pids[i - 1])
			a->lastpids[a->nlastpids++] = pids[i];
	free(pids);
	free(keys);

	a->nstr += (double)profile__nstrs(p);
	a->nframes += (double)profile__nframes(p);
	a->nstacks += (double)profile__nstacks(p);
	count_new(a, p);

	profile__reset(a->tmp);
	profile__merge(a->tmp, p, keep_onlycpu, NULL);
	a->no_off += enc_size(a, a->tmp);
	profile__reset(a->tmp);
	copy_into(a->tmp, p, 1);
	a->by_pid += enc_size(a, a->tmp);
	a->entries_by_pid += (double)profile__nsamples(a->tmp);
	profile__reset(a->tmp);
	profile__merge_flags(a->tmp, p, NULL, NULL, PF_MERGE_BY_FUNCTION);
	a->by_func += enc_size(a, a->tmp);

	/* Rollups: 6 windows into one (1 min), 60 into one (10 min). */
	copy_into(a->roll1, p, 0);
	if (++a->nroll1 == 6) {
		a->roll1_bytes += enc_size(a, a->roll1);
		a->groups1++;
		profile__reset(a->roll1);
		a->nroll1 = 0;
	}
	copy_into(a->roll10, p, 0);
	if (++a->nroll10 == 60) {
		a->roll10_bytes += enc_size(a, a->roll10);
		a->groups10++;
		profile__reset(a->roll10);
		a->nroll10 = 0;
	}
	return 0;
}

struct rewrite {
	struct store *out;
	struct profile *tmp;
	int drop_kind; /* -1: keep all; PF_KIND_MAX: keep on-CPU only; RUNQ_KERNEL: see below */
};

/* Run-queue entries with their kernel frames only, as `runqueue-stack=kernel` records them. */
#define RUNQ_KERNEL (-2)

static int keep_rewrite(const struct profile *p, const struct pf_sample *s, void *arg)
{
	const struct rewrite *rw = arg;
	return rw->drop_kind == PF_KIND_MAX ? s->kind == PF_KIND_CPU : (int)s->kind != rw->drop_kind;
}

/* dst (reset first): p with every run-queue entry's user frames dropped. */
static void runq_kernel_only(struct profile *dst, const struct profile *p)
{
	uint32_t fr[256];

	profile__reset(dst);
	for (size_t i = 0; i < profile__nsamples(p); i++) {
		struct pf_sample x = *profile__sample(p, i);
		uint32_t n, m = 0;
		const uint32_t *f = profile__stack(p, x.stack, &n);
		if (n > 256)
			n = 256;
		for (uint32_t k = 0; k < n; k++) {
			struct pf_frame g = *profile__frame(p, f[k]);
			if (x.kind == PF_KIND_RUNQ && g.kind != PF_FRAME_KERNEL)
				continue;
			profile__intern_str(dst, profile__str(p, g.name), &g.name);
			profile__intern_str(dst, profile__str(p, g.module), &g.module);
			profile__frame_add(dst, &g, &fr[m++]);
		}
		profile__stack_add(dst, fr, m, &x.stack);
		profile__intern_str(dst, profile__str(p, x.comm), &x.comm);
		profile__intern_str(dst, profile__str(p, x.thread), &x.thread);
		profile__intern_str(dst, profile__str(p, x.cgroup), &x.cgroup);
		profile__add(dst, &x);
	}
	struct pf_meta *m = profile__meta(dst);
	const struct pf_meta *sm = profile__meta_const(p);
	m->start_ns = sm->start_ns;
	m->end_ns = sm->end_ns;
	m->frequency = sm->frequency;
	profile__intern_str(dst, profile__str(p, sm->host), &m->host);
	profile__intern_str(dst, profile__str(p, sm->kernel), &m->kernel);
	profile__intern_str(dst, profile__str(p, sm->event), &m->event);
	for (size_t i = 0; i < profile__ncounters(p); i++)
		profile__counter_add(dst, profile__str(p, profile__counter(p, i)->name), profile__counter(p, i)->value);
}

static int rewrite_window(const struct store_window_info *w, const struct profile *p, void *arg)
{
	struct rewrite *rw = arg;
	if (rw->drop_kind == -1)
		return store__append(rw->out, p);
	if (rw->drop_kind == RUNQ_KERNEL) {
		runq_kernel_only(rw->tmp, p);
		return store__append(rw->out, rw->tmp);
	}
	profile__reset(rw->tmp);
	profile__merge(rw->tmp, p, keep_rewrite, rw);
	return store__append(rw->out, rw->tmp);
}

/* Off-CPU and run-queue values as profd writes them (microseconds); VALUE_UNIT=1: nanoseconds. */
static uint64_t value_unit(void)
{
	return getenv("VALUE_UNIT") ? strtoull(getenv("VALUE_UNIT"), NULL, 10) : 1000;
}

/*
 * A copy of dir's segments rolled up as profd does once every window is
 * old enough for one tier of window_ns (named: merged by function and
 * name, unnamed frames folded into their modules), then summarised.
 */
static double roll_seg_bytes; /* segment bytes of the last roll_copy */

/* Bytes of dir's files whose names start with prefix. */
static double prefix_bytes(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[4096];
	struct stat st;
	double n = 0;

	while (d && (de = readdir(d)))
		if (!strncmp(de->d_name, prefix, strlen(prefix))) {
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			if (!stat(path, &st))
				n += (double)st.st_size;
		}
	if (d)
		closedir(d);
	return n;
}

static int roll_copy(const char *dir, int64_t window_ns, int named, double ph, double flushed)
{
	char tmp[] = "/var/tmp/profd-roll.XXXXXX", cmd[1024];
	struct store *s;
	if (!mkdtemp(tmp))
		return 1;
	snprintf(cmd, sizeof(cmd), "cp '%s'/seg-*.pfd '%s'/", dir, tmp);
	if (system(cmd))
		return 1;
	/* ROLL_LEVEL, FOLD_SHARE and ROLL_CHAIN (records per chain): what-ifs for the writer's defaults. */
	/* window_ns 0: no rollup, the summaries of the windows as flushed alone. */
	struct store_opts wo = { .dir = tmp, .writer = 1, .rollup = { { 1, window_ns } }, .no_rollup = !window_ns,
				 .rollup_chain_records = getenv("ROLL_CHAIN") ? (uint32_t)atoi(getenv("ROLL_CHAIN")) : 0,
				 .named_age_ns = named ? 1 : -1,
				 .rollup_zstd_level = getenv("ROLL_LEVEL") ? atoi(getenv("ROLL_LEVEL")) : 0,
				 .fold_share = getenv("FOLD_SHARE") ? atoll(getenv("FOLD_SHARE")) : 0,
				 .value_unit_ns = value_unit() };
	double worst = 0, worst_wall = 0, worst_nodec = 0;
	/* SLOW_MS: each call over this many ms of CPU printed, with what it did. */
	double slow = getenv("SLOW_MS") ? atof(getenv("SLOW_MS")) : 0;
	struct store_stats st;
	if (store__open(&wo, &s))
		return 1;
	for (int i = 0; i < 100000; i++) {
		uint64_t before, after;
		store__stats(s, &st);
		before = st.rollups + st.summaries_built + st.records_decoded;
		double c0 = now(CLOCK_THREAD_CPUTIME_ID), w0 = now(CLOCK_MONOTONIC);
		if (store__compact(s, INT64_MAX / 2))
			break;
		double c1 = now(CLOCK_THREAD_CPUTIME_ID) - c0, w1 = now(CLOCK_MONOTONIC) - w0;
		if (c1 > worst)
			worst = c1;
		if (w1 > worst_wall)
			worst_wall = w1;
		uint64_t decoded = st.records_decoded, built = st.summaries_built + st.rollups + st.days_built;
		uint64_t threaded = st.records_threaded + st.reads_threaded;
		store__stats(s, &st);
		if (slow > 0 && c1 * 1e3 > slow)
			printf("    call %d: %.1f ms CPU, %.1f ms wall; %llu records decoded, %llu threads started, "
			       "%llu files finished\n", i, c1 * 1e3, w1 * 1e3,
			       (unsigned long long)(st.records_decoded - decoded),
			       (unsigned long long)(st.records_threaded + st.reads_threaded - threaded),
			       (unsigned long long)(st.summaries_built + st.rollups + st.days_built - built));
		/* Calls that decoded no record: writes, and a day file's merges of summaries. */
		if (st.records_decoded == decoded && c1 > worst_nodec)
			worst_nodec = c1;
		/* A record encoded on the store's thread: called again a millisecond later, as a loop would. */
		if (st.encoding) {
			nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
			i--;
			continue;
		}
		after = st.rollups + st.summaries_built + st.records_decoded;
		if (after == before && i > 50 && !(i % 50)) {
			uint64_t again = after;
			for (int j = 0; j < 50 && again == after; j++) {
				store__compact(s, INT64_MAX / 2);
				store__stats(s, &st);
				again = st.rollups + st.summaries_built + st.records_decoded;
				if (st.encoding) {
					nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
					j--;
				}
			}
			if (again == after)
				break;
		}
	}
	store__stats(s, &st);
	double seg = (double)(st.bytes_on_disk - st.summary_bytes);
	roll_seg_bytes = seg;
	if (window_ns)
		printf("  rolled up into %lld s windows, %s: ", (long long)(window_ns / SEC), named ? "named" : "lossless");
	else
		printf("  as flushed, summaries built: ");
	/* Day files are summaries too (bytes_on_disk, summary_bytes): a store shorter than a day has one for its part. */
	double day = prefix_bytes(tmp, "day-"), sum = (double)st.summary_bytes - day;
	printf("segments %.2f MB/hour (%.1f%% of as flushed, %llu bytes), "
	       "summaries %.2f MB/hour (%.0f bytes, %llu built) + day files %.2f MB/hour (%.0f bytes); "
	       "%llu segments rolled up; on-CPU samples folded %.2f%%; longest call %.1f ms CPU, %.1f ms wall; "
	       "decoding no record %.1f ms CPU; %llu records encoded off the calling thread, %llu read\n",
	       seg * ph, flushed > 0 ? 100 * seg / flushed : 0, (unsigned long long)seg, sum * ph, sum,
	       (unsigned long long)st.summaries_built, day * ph, day, (unsigned long long)st.rollups,
	       st.cpu_named ? 100.0 * st.cpu_folded / st.cpu_named : 0, worst * 1e3, worst_wall * 1e3, worst_nodec * 1e3,
	       (unsigned long long)st.records_threaded, (unsigned long long)st.reads_threaded);
	/* PERF_Z: perf record -z's bytes per hour on the same load (MiB here are 2^20 bytes, as "MB/hour"). */
	if (getenv("PERF_Z") && atof(getenv("PERF_Z")) > 0) {
		double pz = atof(getenv("PERF_Z")) / 1048576;
		printf("    x perf -z (%.1f MiB/hour): segments %.1fx, + summaries %.1fx (%.2f MiB/hour), "
		       "+ day files %.1fx (%.2f MiB/hour)\n", pz, pz / (seg * ph), pz / ((seg + sum) * ph),
		       (seg + sum) * ph, pz / ((double)st.bytes_on_disk * ph), (double)st.bytes_on_disk * ph);
	}
	store__close(s);
	if (getenv("KEEP_ROLL"))
		printf("  kept in %s\n", tmp);
	else
		nftw(tmp, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

static int analyse(const char *dir)
{
	struct store *s;
	struct store_opts o = { .dir = dir };
	struct an a = { 0 };
	int err = store__open(&o, &s);
	if (err) {
		fprintf(stderr, "store__open %s: %s\n", dir, strerror(-err));
		return 1;
	}
	codec__new(&a.codec);
	codec__new(&a.chain);
	codec__set_value_unit(a.chain, value_unit()); /* as the store writes values */
	a.z = ZSTD_createCCtx();
	ZSTD_CCtx_setParameter(a.z, ZSTD_c_compressionLevel, 3);
	profile__new(&a.seen);
	profile__new(&a.own);
	profile__new(&a.tmp);
	profile__new(&a.roll1);
	profile__new(&a.roll10);
	err = store__read(s, INT64_MIN, INT64_MAX, an_window, &a);
	if (err || !a.win) {
		fprintf(stderr, "read: %s (%g windows)\n", strerror(-err), a.win);
		return 1;
	}
	double n = a.win, hours = (double)(a.last - a.first) / 3.6e12, mb = 1048576;
	double ph = 1 / hours / mb; /* bytes over the run -> MB per hour */
	printf("%s: %.0f windows over %.1f min; %.0f B on disk per window, %.1f MB/hour\n", dir, n,
	       hours * 60, a.disk / n, a.disk * ph);
	printf("per window: %.0f entries (cpu %.0f, offcpu %.0f, runq %.0f), %.0f on-CPU samples; %.0f pids (%.0f not in the previous window), %.0f tids\n",
	       (a.ent[0] + a.ent[1] + a.ent[2]) / n, a.ent[0] / n, a.ent[1] / n, a.ent[2] / n, a.vals_cpu / n,
	       a.pids / n, a.pid_new / n, a.tids / n);
	printf("tables per window: %.0f strings (%.0f new to the run), %.0f frames (%.0f new), %.0f stacks (%.0f new)\n",
	       a.nstr / n, a.new_str / n, a.nframes / n, a.new_frames / n, a.nstacks / n, a.new_stacks / n);
	printf("payload: raw %.0f B, zstd %.0f B per window; sections compressed alone (B per window, share):\n",
	       a.raw / n, a.zall / n);
	double secsum = 0;
	for (int i = 0; i < NSEC; i++)
		secsum += a.sec[i];
	double csum = 0;
	for (int i = 0; i < NSEC; i++)
		csum += a.csec[i];
	for (int i = 0; i < NSEC; i++)
		printf("  %-14s %8.0f  %4.1f%%    in chains of 30: %8.0f  %4.1f%%\n", sec_names[i], a.sec[i] / n,
		       100 * a.sec[i] / secsum, a.csec[i] / n, 100 * a.csec[i] / csum);
	printf("  raw in chains: %.0f B per window\n", a.craw / n);
	printf("  sample columns of the chained records, each compressed alone (B per window):");
	for (int i = 0; i < a.ncol; i++)
		printf(" %s %.0f", col_names[i], a.ccol[i] / n);
	printf("\n");
	printf("what-if, MB/hour: as stored %.2f | zstd with previous window as prefix %.2f | on-CPU entries only %.2f |\n"
	       "  threads folded into processes %.2f (%.0f entries per window) | merged by function %.2f |\n"
	       "  1-min rollup %.2f | 10-min rollup %.2f\n",
	       a.disk * ph, a.chained * ph, a.no_off * ph, a.by_pid * ph, a.entries_by_pid / n, a.by_func * ph,
	       a.groups1 ? a.roll1_bytes / a.groups1 * 60 / mb : 0, a.groups10 ? a.roll10_bytes / a.groups10 * 6 / mb : 0);
	store__close(s);

	/* The same windows written again by this writer (chains), whole and without each kind. */
	static const int drops[] = { -1, PF_KIND_RUNQ, PF_KIND_OFFCPU, PF_KIND_MAX, RUNQ_KERNEL, -1, -1, -1 };
	static const char *const drop_names[] = { "every entry", "without run-queue entries",
						  "without off-CPU entries", "on-CPU entries only",
						  "run-queue entries' kernel frames only",
						  "every entry, callers by function (zstd 3)",
						  "callers by function, run-queue entries by kernel entry (zstd 3)",
						  "callers by function, run-queue entries by kernel entry, zstd 9 "
						  "(profd's default)" };
	char kdir[] = "/var/tmp/profd-runqk.XXXXXX";
	double whole = 0, kernel_only = 0;
	for (int k = 0; k < 8; k++) {
		char tmp[] = "/var/tmp/profd-rewrite.XXXXXX";
		char *out = k == 4 ? kdir : tmp;
		struct store *in;
		struct store_stats st;
		struct rewrite rw = { .drop_kind = drops[k] };
		if (!mkdtemp(out))
			return 1;
		struct store_opts ro = { .dir = dir }, wo = { .dir = out, .writer = 1, .no_rollup = 1,
							      .value_unit_ns = value_unit(),
							      .calls_by_function = k >= 5,
							      .runq_entry_frame = k >= 6,
							      .zstd_level = k >= 7 ? 9 : 3 };
		if (store__open(&ro, &in) || store__open(&wo, &rw.out) || profile__new(&rw.tmp))
			return 1;
		double c0 = now(CLOCK_THREAD_CPUTIME_ID);
		store__read(in, INT64_MIN, INT64_MAX, rewrite_window, &rw);
		double cpu = now(CLOCK_THREAD_CPUTIME_ID) - c0;
		store__stats(rw.out, &st);
		printf("written again by this writer (chains of 30), %s: %.2f MB/hour (%llu bytes,"
		       " %.1f bytes per on-CPU sample; read and write %.2f ms CPU per window)\n", drop_names[k],
		       (double)st.bytes_on_disk * ph, (unsigned long long)st.bytes_on_disk,
		       a.vals_cpu > 0 ? st.bytes_on_disk / a.vals_cpu : 0, cpu / a.win * 1e3);
		if (k == 0)
			whole = (double)st.bytes_on_disk;
		if (k == 4)
			kernel_only = (double)st.bytes_on_disk;
		store__close(in);
		store__close(rw.out);
		profile__free(rw.tmp);
		if (k != 4)
			nftw(tmp, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	}

	/* Rollups of the store as it is, and of its copy with run-queue entries' kernel frames only. */
	static const int64_t lens[] = { 60 * SEC, 600 * SEC };
	printf("rollups of the store as flushed (%.0f bytes):\n", a.disk);
	for (int k = 0; k < 4; k++)
		if (roll_copy(dir, lens[k % 2], k >= 2, ph, a.disk))
			return 1;
	printf("rollups of the store with run-queue entries' kernel frames only (%.0f bytes, %.1f%% of the "
	       "store written again whole):\n", kernel_only, whole > 0 ? 100 * kernel_only / whole : 0);
	for (int k = 2; k < 4; k++)
		if (roll_copy(kdir, lens[k % 2], 1, ph, kernel_only))
			return 1;
	nftw(kdir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}


/* ---- -L DIR: levers measured on the same windows (re-encoded in chains of 30) ---- */

/*
 * What a flushed window keeps, each variant written as the writer does
 * (microseconds, previous record as prefix, zstd level 3):
 *   XF_FUNC    named native frames by function (offset 0; Python frames whole)
 *   XF_RQLEAF  run-queue entries keep their leaf frame only
 *   XF_RQNONE  run-queue entries keep no stack (the thread's wait only)
 *   XF_OFFKERN off-CPU entries keep their user frames and one kernel leaf
 *   XF_TAIL    off-CPU and run-queue entries under 1/10,000 of their kind folded
 *   XF_RQDROP  no run-queue entries (a bound, not a candidate)
 */
#include "modframes.h"
enum { XF_FUNC = 1, XF_RQLEAF = 2, XF_RQNONE = 4, XF_OFFKERN = 8, XF_TAIL = 16, XF_RQDROP = 32,
       XF_CPUONLY = 64, XF_MOD = 128, XF_TAILNC = 256, XF_LEAFPC = 512, XF_MODIN = 1024, XF_RQROOT = 2048 };
static const struct {
	const char *name;
	uint64_t unit;
	int pre, level;
	unsigned xf;
} lev_v[] = {
	{ "ns, no prefix (format 4 writer)", 0, 0, 3, 0 },
	{ "us + previous record as prefix (this writer)", 1000, 1, 3, 0 },
	{ "us + prefix, zstd level 9", 1000, 1, 9, 0 },
	{ "(a) frames by function", 1000, 1, 3, XF_FUNC },
	{ "(a') unnamed frames as module frames", 1000, 1, 3, XF_MOD },
	{ "(a)+(a')", 1000, 1, 3, XF_FUNC | XF_MOD },
	{ "(b) run-queue: leaf frame only", 1000, 1, 3, XF_RQLEAF },
	{ "(b) run-queue: no stack", 1000, 1, 3, XF_RQNONE },
	{ "(b) off-CPU: one kernel frame", 1000, 1, 3, XF_OFFKERN },
	{ "(b) off+rq tails folded (a' on them)", 1000, 1, 3, XF_TAILNC },
	{ "(b) all tails folded (a' on all)", 1000, 1, 3, XF_TAIL },
	{ "(a)+(b) func, rq leaf", 1000, 1, 3, XF_FUNC | XF_RQLEAF },
	{ "(a)+(b) func, off+rq tails", 1000, 1, 3, XF_FUNC | XF_TAILNC },
	{ "(a)+(b) func, rq leaf, off+rq tails", 1000, 1, 3, XF_FUNC | XF_RQLEAF | XF_TAILNC },
	{ "(a)+(a')+(b) func, mod, rq leaf", 1000, 1, 3, XF_FUNC | XF_MOD | XF_RQLEAF },
	{ "(a)+(a')+(b) func, mod, rq leaf, tails", 1000, 1, 3, XF_FUNC | XF_MOD | XF_RQLEAF | XF_TAILNC },
	{ "(a)+(a')+(b) ... at zstd level 9", 1000, 1, 9, XF_FUNC | XF_MOD | XF_RQLEAF | XF_TAILNC },
	{ "(a) by function, leaf pc kept", 1000, 1, 3, XF_FUNC | XF_LEAFPC },
	{ "(a') module frames, leaf pc kept", 1000, 1, 3, XF_MODIN | XF_LEAFPC },
	{ "(a)+(a') leaf pc kept", 1000, 1, 3, XF_FUNC | XF_MODIN | XF_LEAFPC },
	{ "(a)+(a') leaf pc kept, rq leaf", 1000, 1, 3, XF_FUNC | XF_MODIN | XF_LEAFPC | XF_RQLEAF },
	{ "(a)+(a') leaf pc kept, rq kernel root only", 1000, 1, 3, XF_FUNC | XF_MODIN | XF_LEAFPC | XF_RQROOT },
	{ "(a)+(a') leaf pc kept, rq leaf, level 9", 1000, 1, 9, XF_FUNC | XF_MODIN | XF_LEAFPC | XF_RQLEAF },
	{ "(a)+(a') leaf pc kept, rq leaf, tails", 1000, 1, 3,
	  XF_FUNC | XF_MODIN | XF_LEAFPC | XF_RQLEAF | XF_TAILNC },
	{ "bound: no run-queue entries", 1000, 1, 3, XF_RQDROP },
	{ "bound: on-CPU only", 1000, 1, 3, XF_CPUONLY },
	{ "bound: on-CPU only, by function, mod", 1000, 1, 3, XF_FUNC | XF_MOD | XF_CPUONLY },
};
#define NLEV ((int)(sizeof(lev_v) / sizeof(lev_v[0])))

static int keep_cpu(const struct profile *p, const struct pf_sample *s, void *arg)
{
	return (s->kind == PF_KIND_CPU) == (arg != NULL);
}

/* dst (reset first): p with what xf drops dropped. */
static void xform(struct profile *dst, struct profile *tmp, const struct profile *p, unsigned xf)
{
	uint32_t fr[256];
	profile__reset(dst);
	for (size_t i = 0; i < profile__nsamples(p); i++) {
		struct pf_sample x = *profile__sample(p, i);
		uint32_t n, m = 0;
		const uint32_t *f = profile__stack(p, x.stack, &n);
		if ((xf & XF_RQDROP) && x.kind == PF_KIND_RUNQ)
			continue;
		if ((xf & XF_CPUONLY) && x.kind != PF_KIND_CPU)
			continue;
		if (n > 256)
			n = 256;
		uint32_t from = 0;
		if (x.kind == PF_KIND_RUNQ && (xf & XF_RQNONE))
			from = n;
		else if (x.kind == PF_KIND_RUNQ && (xf & XF_RQLEAF) && n)
			from = n - 1;
		uint32_t to = n;
		if (x.kind == PF_KIND_RUNQ && (xf & XF_RQROOT) && n) {
			while (from < n && profile__frame(p, f[from])->kind != PF_FRAME_KERNEL)
				from++;
			to = from < n ? from + 1 : n;
		}
		int kern_kept = 0;
		uint32_t lastmod = UINT32_MAX;
		for (uint32_t k = from; k < to; k++) {
			struct pf_frame g = *profile__frame(p, f[k]);
			int leaf = k + 1 == n;
			if ((xf & XF_MODIN) && !g.name && g.kind == PF_FRAME_USER && !(leaf && (xf & XF_LEAFPC))) {
				const char *mod = profile__str(p, g.module), *b = strrchr(mod, '/');
				char nm[300];
				snprintf(nm, sizeof(nm), "[%s]", *mod ? (b ? b + 1 : mod) : "unknown");
				if (lastmod == g.module)
					continue;
				lastmod = g.module;
				profile__intern_str(dst, nm, &g.name);
				profile__intern_str(dst, mod, &g.module);
				g.offset = 0;
				profile__frame_add(dst, &g, &fr[m++]);
				continue;
			}
			lastmod = UINT32_MAX;
			if (x.kind == PF_KIND_OFFCPU && (xf & XF_OFFKERN) && g.kind == PF_FRAME_KERNEL &&
			    k + 1 < n) {
				if (kern_kept)
					continue;
				kern_kept = 1; /* the outermost kernel frame: the system call */
			}
			profile__intern_str(dst, profile__str(p, g.name), &g.name);
			profile__intern_str(dst, profile__str(p, g.module), &g.module);
			if ((xf & XF_FUNC) && g.name && g.kind != PF_FRAME_PY && !(leaf && (xf & XF_LEAFPC)))
				g.offset = 0;
			profile__frame_add(dst, &g, &fr[m++]);
		}
		profile__stack_add(dst, fr, m, &x.stack);
		profile__intern_str(dst, profile__str(p, x.comm), &x.comm);
		profile__intern_str(dst, profile__str(p, x.thread), &x.thread);
		profile__intern_str(dst, profile__str(p, x.cgroup), &x.cgroup);
		profile__add(dst, &x);
	}
	struct pf_meta *mt = profile__meta(dst);
	const struct pf_meta *sm = profile__meta_const(p);
	mt->start_ns = sm->start_ns;
	mt->end_ns = sm->end_ns;
	mt->frequency = sm->frequency;
	profile__intern_str(dst, profile__str(p, sm->host), &mt->host);
	profile__intern_str(dst, profile__str(p, sm->kernel), &mt->kernel);
	profile__intern_str(dst, profile__str(p, sm->event), &mt->event);
	for (size_t i = 0; i < profile__ncounters(p); i++)
		profile__counter_add(dst, profile__str(p, profile__counter(p, i)->name), profile__counter(p, i)->value);
	uint64_t moved[PF_KIND_MAX];
	if (xf & XF_MOD) {
		profile__reset(tmp);
		profile__merge(tmp, dst, NULL, NULL);
		modframes__fold(dst, tmp);
	}
	if (xf & XF_TAIL) {
		profile__reset(tmp);
		profile__merge(tmp, dst, NULL, NULL);
		modframes__fold_tail(dst, tmp, 10000, moved);
	}
	if (xf & XF_TAILNC) {
		static struct profile *nc, *fnc;
		if (!nc) {
			profile__new(&nc);
			profile__new(&fnc);
		}
		profile__reset(tmp);
		profile__merge(tmp, dst, keep_cpu, (void *)1);
		profile__reset(nc);
		profile__merge(nc, dst, keep_cpu, NULL);
		profile__meta(nc)->start_ns = 0;
		modframes__fold_tail(fnc, nc, 10000, moved);
		profile__merge(tmp, fnc, NULL, NULL);
		profile__reset(dst);
		profile__merge(dst, tmp, NULL, NULL);
	}
}
struct lev {
	struct codec *c[NLEV];
	ZSTD_CCtx *z[NLEV];
	struct profile *own, *q, *t;
	uint8_t *hist[NLEV][4], *out, *cat;
	size_t histlen[NLEV][4], cap, catcap;
	double bytes[NLEV], cpu[NLEV], ent[NLEV], frames[NLEV];
	int win;
};

static int lev_window(const struct store_window_info *w, const struct profile *chain_p, void *arg)
{
	struct lev *l = arg;
	int pos = l->win % 30;
	profile__reset(l->own);
	copy_into(l->own, chain_p, 0);
	for (int v = 0; v < NLEV; v++) {
		xform(l->q, l->t, l->own, lev_v[v].xf);
		l->ent[v] += (double)profile__nsamples(l->q);
		l->frames[v] += (double)profile__nframes(l->q);
		codec__set_value_unit(l->c[v], lev_v[v].unit);
		const uint8_t *buf;
		size_t len;
		double c0 = now(CLOCK_THREAD_CPUTIME_ID);
		if (codec__encode_chain(l->c[v], l->q, pos ? 1 : 0, &buf, &len))
			return -1;
		if (ZSTD_compressBound(len) > l->cap) {
			l->cap = ZSTD_compressBound(len);
			l->out = realloc(l->out, l->cap);
		}
		/* The chain's earlier records, oldest first, as one prefix. */
		int np = pos < lev_v[v].pre ? pos : lev_v[v].pre;
		size_t catlen = 0;
		for (int k = np; k >= 1; k--)
			catlen += l->histlen[v][k - 1];
		if (catlen > l->catcap)
			l->cat = realloc(l->cat, l->catcap = catlen);
		catlen = 0;
		for (int k = np; k >= 1; k--) {
			memcpy(l->cat + catlen, l->hist[v][k - 1], l->histlen[v][k - 1]);
			catlen += l->histlen[v][k - 1];
		}
		if (np)
			ZSTD_CCtx_refPrefix(l->z[v], l->cat, catlen);
		size_t z = ZSTD_compress2(l->z[v], l->out, l->cap, buf, len);
		l->cpu[v] += now(CLOCK_THREAD_CPUTIME_ID) - c0;
		l->bytes[v] += (double)z + 64;
		free(l->hist[v][3]);
		memmove(&l->hist[v][1], &l->hist[v][0], 3 * sizeof(l->hist[v][0]));
		memmove(&l->histlen[v][1], &l->histlen[v][0], 3 * sizeof(l->histlen[v][0]));
		l->hist[v][0] = malloc(len);
		memcpy(l->hist[v][0], buf, len);
		l->histlen[v][0] = len;
	}
	l->win++;
	return 0;
}

static int levers(const char *dir)
{
	struct store *s;
	struct store_opts o = { .dir = dir };
	struct lev l = { 0 };
	if (store__open(&o, &s))
		return 1;
	for (int v = 0; v < NLEV; v++) {
		codec__new(&l.c[v]);
		l.z[v] = ZSTD_createCCtx();
		ZSTD_CCtx_setParameter(l.z[v], ZSTD_c_compressionLevel, lev_v[v].level);
	}
	profile__new(&l.q);
	profile__new(&l.t);
	profile__new(&l.own);
	store__read(s, INT64_MIN, INT64_MAX, lev_window, &l);
	for (int v = 0; v < NLEV; v++)
		printf("%-44s %9.0f B (%+.1f%% vs this writer), %.0f entries %.0f frames per window,"
		       " %.2f ms encode+zstd\n", lev_v[v].name, l.bytes[v],
		       100 * (l.bytes[v] / l.bytes[1] - 1), l.ent[v] / l.win, l.frames[v] / l.win,
		       l.cpu[v] / l.win * 1e3);
	store__close(s);
	return 0;
}

/*
 * -W DIR: bytes of a named window against the CPU time it holds: DIR
 * rolled up by name into windows of k flushed windows, k growing. A
 * 64-CPU host's named minute holds 32x the CPU time of this VM's.
 */
static int widths(const char *dir)
{
	struct store *s;
	struct store_opts o = { .dir = dir };
	struct agg a = { 0 };
	static const int ks[] = { 1, 2, 3, 6, 12, 24, 48, 96 };

	if (store__open(&o, &s))
		return 1;
	store__list(s, INT64_MIN, INT64_MAX, on_info, &a);
	store__close(s);
	printf("%d windows of 10 s, %llu bytes as flushed\n", a.windows, (unsigned long long)a.bytes);
	for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]) && ks[i] <= a.windows; i++) {
		if (roll_copy(dir, ks[i] * WINDOW, 1, 0, (double)a.bytes))
			return 1;
		double n = (double)a.windows / ks[i];
		printf("k=%d flushed windows per named window: %.0f bytes per named window (%.1f KB per 10 s of "
		       "the VM's CPUs)\n", ks[i], roll_seg_bytes / n, roll_seg_bytes / a.windows / 1024);
	}
	return 0;
}

static int last_end(const struct store_window_info *w, void *arg)
{
	*(int64_t *)arg = w->end_ns;
	return 0;
}

/*
 * -S DIR: the background work of a writer over DIR (a copy: it is rolled
 * up, summarised and its days built), every store__compact call timed in
 * CPU, by what it finished: the longest call of each kind; the peak RSS.
 */
static int steps_only(const char *dir)
{
	struct store *s;
	struct store_opts o = { .dir = dir, .writer = 1 };
	struct store_stats a, b;
	double worst[4] = { 0 }, total[4] = { 0 };
	unsigned long calls[4] = { 0 }, over[3] = { 0 };
	static const char *const kind[4] = { "rollup", "summary", "day", "no file finished" };
	static const double limit[3] = { 50e-3, 70e-3, 100e-3 };
	/* STEPS_TRACE set: each call's CPU on stderr, to line up with an instrumented build's. */
	int idle = 0, trace = getenv("STEPS_TRACE") != NULL;

	if (store__open(&o, &s))
		return 1;
	while (idle < 200) {
		store__stats(s, &a);
		double c0 = now(CLOCK_THREAD_CPUTIME_ID);
		if (store__compact(s, INT64_MAX / 4))
			return 1;
		double c = now(CLOCK_THREAD_CPUTIME_ID) - c0;
		if (trace)
			fprintf(stderr, "CALL %.2f ms\n", c * 1e3);
		for (int l = 0; l < 3; l++)
			over[l] += c > limit[l];
		store__stats(s, &b);
		int k = b.rollups > a.rollups ? 0 : b.summaries_built > a.summaries_built ? 1 :
			b.days_built > a.days_built ? 2 : 3;
		/* An unfinished step is work too: count it with the kind it ends in, below. */
		idle = k == 3 && c < 1e-3 ? idle + 1 : 0;
		calls[k]++;
		total[k] += c;
		if (c > worst[k])
			worst[k] = c;
	}
	for (int k = 0; k < 4; k++)
		printf("%-19s %6lu calls, %8.1f ms CPU in all, longest call %6.1f ms\n", kind[k], calls[k],
		       total[k] * 1e3, worst[k] * 1e3);
	printf("calls over 50 / 70 / 100 ms CPU: %lu / %lu / %lu\n", over[0], over[1], over[2]);
	store__close(s);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("peak RSS %ld KB\n", ru.ru_maxrss);
	return 0;
}

/* -r DIR: the rollups of -a alone (a kept store's segments), and the peak RSS. */
static int an_span(const struct store_window_info *w, void *arg)
{
	double *v = arg; /* first start, last end, bytes */
	if (v[0] == 0 || (double)w->start_ns < v[0])
		v[0] = (double)w->start_ns;
	if ((double)w->end_ns > v[1])
		v[1] = (double)w->end_ns;
	v[2] += (double)w->bytes;
	return 0;
}

static int rollups_only(const char *dir)
{
	struct store *s;
	struct store_opts o = { .dir = dir };
	double v[3] = { 0 };
	static const int64_t lens[] = { 60 * SEC, 600 * SEC };

	if (store__open(&o, &s))
		return 1;
	store__list(s, INT64_MIN, INT64_MAX, an_span, v);
	store__close(s);
	if (v[1] <= v[0])
		return 1;
	double ph = 1 / ((v[1] - v[0]) / 3.6e12) / 1048576;
	printf("rollups of %s as flushed (%.0f bytes, %.2f MB/hour):\n", dir, v[2], v[2] * ph);
	if (roll_copy(dir, 0, 0, ph, v[2]))
		return 1;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	/* The summaries' peak alone (the tiers' runs after it can only raise it): SUM_ONLY stops here. */
	printf("peak RSS after the summaries %.1f MB\n", ru.ru_maxrss / 1024.0);
	if (getenv("SUM_ONLY"))
		return 0;
	for (int k = 0; k < 4; k++)
		if (roll_copy(dir, lens[k % 2], k >= 2, ph, v[2]))
			return 1;
	getrusage(RUSAGE_SELF, &ru);
	printf("peak RSS %.1f MB\n", ru.ru_maxrss / 1024.0);
	return 0;
}

/* -Q DIR: the queries alone, over a store kept with -k, ending at its last window. */
static int query_only(const char *dir)
{
	struct store *s;
	struct store_opts ro = { .dir = dir };
	int64_t end = 0;

	if (store__open(&ro, &s))
		return 1;
	store__list(s, INT64_MIN, INT64_MAX, last_end, &end);
	query(s, "10m", end - 600 * SEC, end, 3);
	query(s, "1h", end - 3600 * SEC, end, 3);
	query(s, "25h", end - 90000 * SEC, end, 3);
	query(s, "7d", end - 7 * 86400 * SEC, end, 3);
	store__close(s);
	return 0;
}

static void usage(const char *argv0)
{
	fprintf(stderr, "usage: %s [-d DIR] [-H HOURS] [-c BUSY_CPUS] [-l ZSTD_LEVEL] [-k] [-x] [-R] [-C CHAIN] [-M MAX_MB] | -a DIR | -r DIR\n"
		"  -R: no rollups; -C: records per chain (1: keys only); -a: where the bytes of a store go\n"
		"  -L: encodings compared on a store's windows;"
		" -W: named window bytes by the time they hold;\n"
		"  -r: -a's rollups alone (ROLL_LEVEL, FOLD_SHARE, ROLL_CHAIN: what-ifs), with the peak RSS\n", argv0);
	exit(2);
}

static int num(const char *s, long lo, long hi, const char *argv0)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		usage(argv0);
	return (int)v;
}

int main(int argc, char **argv)
{
	char dirbuf[] = "/var/tmp/profd-bench.XXXXXX";
	const char *dir = NULL;
	int hours = 24, cpus = 4, level = 0, keep = 0, exper = 0, norollup = 0, chain = 0, max_mb = 0, c;

	while ((c = getopt(argc, argv, "a:d:H:c:l:kxRC:Q:S:L:W:M:r:")) != -1) {
		switch (c) {
		case 'a': return analyse(optarg);
		case 'Q': return query_only(optarg);
		case 'r': return rollups_only(optarg);
		case 'S': return steps_only(optarg);
		case 'L': return levers(optarg);
		case 'W': return widths(optarg);
		case 'd': dir = optarg; break;
		case 'H': hours = num(optarg, 1, 24 * 365, argv[0]); break;
		case 'c': cpus = num(optarg, 1, 1024, argv[0]); break;
		case 'l': level = num(optarg, -5, 22, argv[0]); break;
		case 'k': keep = 1; break;
		case 'x': exper = 1; break;
		case 'R': norollup = 1; break;
		case 'C': chain = num(optarg, 1, 100000, argv[0]); break;
		case 'M': max_mb = num(optarg, 1, 1000000, argv[0]); break;
		default: usage(argv[0]);
		}
	}
	if (!dir) {
		if (!mkdtemp(dirbuf)) {
			perror("mkdtemp");
			return 1;
		}
		dir = dirbuf;
	}
	for (size_t i = 0; i < NPROC; i++) {
		procs[i].pid = 1000 + below(4000000);
		build(&procs[i].root, 0, procs[i].depth, procs[i].fanout, i < 2 || i == 3, procs[i].modules[2] ? 3 : procs[i].modules[1] ? 2 : 1);
	}
	build(&kernel_root, 0, 14, 3, 0, 1);
	if (exper) {
		if (dir == dirbuf)
			rmdir(dir);
		return experiment(30, cpus, level);
	}

	struct store *s;
	struct store_opts o = { .dir = dir, .writer = 1, .zstd_level = level, .no_rollup = norollup,
				.chain_records = (uint32_t)chain, .max_bytes = (uint64_t)max_mb * 1000000 };
	int err = store__open(&o, &s);
	if (err) {
		fprintf(stderr, "store__open %s: %s\n", dir, strerror(-err));
		return 1;
	}
	struct profile *p;
	profile__new(&p);
	int nwin = hours * 360;
	int64_t t0 = (int64_t)time(NULL) * SEC - (int64_t)nwin * WINDOW;
	double cpu = 0, wall = 0, gen = 0, roll = 0, roll_max = 0, roll_wall_max = 0, kind_max[4] = { 0 };
	size_t samples = 0, stacks = 0;
	for (int i = 0; i < nwin; i++) {
		double g = now(CLOCK_PROCESS_CPUTIME_ID);
		make_window(p, t0 + (int64_t)i * WINDOW, cpus);
		gen += now(CLOCK_PROCESS_CPUTIME_ID) - g;
		samples += profile__nsamples(p);
		stacks += profile__nstacks(p);
		double c0 = now(CLOCK_PROCESS_CPUTIME_ID), w0 = now(CLOCK_MONOTONIC);
		err = store__append(s, p);
		cpu += now(CLOCK_PROCESS_CPUTIME_ID) - c0;
		wall += now(CLOCK_MONOTONIC) - w0;
		if (err) {
			fprintf(stderr, "append: %s\n", strerror(-err));
			return 1;
		}
		/* As profd does after each flush. */
		if (max_mb && (err = store__retain(s, t0 + (int64_t)(i + 1) * WINDOW))) {
			fprintf(stderr, "retain: %s\n", strerror(-err));
			return 1;
		}
		struct store_stats sa, sb;
		store__stats(s, &sa);
		/* The calling thread's CPU: a record encoded on the store's thread runs alongside. */
		c0 = now(CLOCK_THREAD_CPUTIME_ID);
		double w1 = now(CLOCK_MONOTONIC);
		err = store__compact(s, t0 + (int64_t)(i + 1) * WINDOW);
		c0 = now(CLOCK_THREAD_CPUTIME_ID) - c0;
		if (now(CLOCK_MONOTONIC) - w1 > roll_wall_max)
			roll_wall_max = now(CLOCK_MONOTONIC) - w1;
		store__stats(s, &sb);
		roll += c0;
		if (c0 > roll_max)
			roll_max = c0;
		/* By what the call finished: a rollup, a summary, a day file, or none (a step inside one). */
		int k = sb.rollups > sa.rollups ? 0 : sb.summaries_built > sa.summaries_built ? 1 :
			sb.days_built > sa.days_built ? 2 : 3;
		if (c0 > kind_max[k])
			kind_max[k] = c0;
		if (err) {
			fprintf(stderr, "compact: %s\n", strerror(-err));
			return 1;
		}
	}
	struct store_stats st;
	store__stats(s, &st);
	printf("store %s: %d windows (%d h, %d busy CPUs at 99 Hz), zstd level %d\n", dir, nwin, hours, cpus,
	       level ? level : 3);
	printf("per window: %zu distinct samples, %zu stacks; %.0f bytes on disk\n", samples / (size_t)nwin,
	       stacks / (size_t)nwin, (double)st.bytes_written / nwin);
	printf("writer per window: %.2f ms CPU (encode+zstd+crc), %.2f ms wall incl. fdatasync\n",
	       cpu / nwin * 1e3, wall / nwin * 1e3);
	printf("bytes per CPU-hour as flushed: %.3f MB; on disk after rollups %.3f MB per CPU-hour, %.1f MB in %llu segments\n",
	       (double)st.bytes_written / (hours * cpus) / 1e6, (double)st.bytes_on_disk / (hours * cpus) / 1e6,
	       (double)st.bytes_on_disk / 1e6, (unsigned long long)st.segments);
	printf("rollups: %llu segments, %llu windows merged, %.2f s CPU in all (%.0f ms per rollup)\n",
	       (unsigned long long)st.rollups, (unsigned long long)st.windows_rolled, roll,
	       st.rollups ? roll / (double)st.rollups * 1e3 : 0);
	printf("summaries: %llu files, %.1f MB (%.1f%% of the store); longest store__compact call %.0f ms CPU\n",
	       (unsigned long long)st.summaries, (double)st.summary_bytes / 1e6,
	       st.bytes_on_disk ? 100.0 * (double)st.summary_bytes / (double)st.bytes_on_disk : 0, roll_max * 1e3);
	printf("longest call that finished a rollup %.0f ms, a summary %.0f ms, a day file %.0f ms, none %.0f ms CPU; "
	       "longest %.0f ms wall; %llu records encoded off the calling thread, %llu read\n",
	       kind_max[0] * 1e3, kind_max[1] * 1e3, kind_max[2] * 1e3, kind_max[3] * 1e3, roll_wall_max * 1e3,
	       (unsigned long long)st.records_threaded, (unsigned long long)st.reads_threaded);
	if (max_mb) {
		struct span sp = { .oldest = INT64_MAX };
		int64_t tend = t0 + (int64_t)nwin * WINDOW;
		store__list(s, INT64_MIN, INT64_MAX, on_span, &sp);
		printf("max-disk %d MB: %.1f MB on disk (%.1f%%), %llu segments removed; history kept %.2f h "
		       "(oldest window's start)\n", max_mb, (double)st.bytes_on_disk / 1e6,
		       100.0 * (double)st.bytes_on_disk / ((double)max_mb * 1e6),
		       (unsigned long long)st.segments_removed, (double)(tend - sp.oldest) / 3600e9);
		for (int l = 0; l < 4; l++)
			printf("  level %d: %llu windows, %.1f MB\n", l, (unsigned long long)sp.by_level[l],
			       (double)sp.bytes_by_level[l] / 1e6);
	}
	store__close(s);

	/* Cold-ish: a fresh reader, as profctl is. */
	struct store_opts ro = { .dir = dir };
	if ((err = store__open(&ro, &s))) {
		fprintf(stderr, "store__open: %s\n", strerror(-err));
		return 1;
	}
	int64_t end = t0 + (int64_t)nwin * WINDOW;
	query(s, "10m", end - 600 * SEC, end, 3);
	query(s, "1h", end - 3600 * SEC, end, 3);
	query(s, "25h", end - 90000 * SEC, end, 3);
	query(s, "7d", end - 7 * 86400 * SEC, end, 3);
	store__close(s);
	profile__free(p);
	if (!keep && dir == dirbuf)
		nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}
