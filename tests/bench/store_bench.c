/*
 * Storage benchmark: writes 24 h of realistic 10 s windows into a fresh
 * store, then times queries over it.
 *
 *   store_bench [-d DIR] [-H HOURS] [-c BUSY_CPUS] [-l ZSTD_LEVEL] [-q]
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
 */
#include "codec.h"
#include "profile.h"
#include "store.h"

#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static int on_window(const struct store_window_info *w, const struct profile *p, void *arg)
{
	struct agg *a = arg;
	a->windows++;
	a->bytes += w->bytes;
	return profile__merge_flags(a->merged, p, NULL, NULL, PF_MERGE_BY_FUNCTION); /* as profctl does */
}

static int rm_cb(const char *p, const struct stat *sb, int type, struct FTW *ftw)
{
	return remove(p);
}

static void query(struct store *s, const char *label, int64_t since, int64_t until, int reps)
{
	double best_list = 1e9, best_read = 1e9;
	struct agg a;
	for (int r = 0; r < reps; r++) {
		memset(&a, 0, sizeof(a));
		double t = now(CLOCK_MONOTONIC);
		store__list(s, since, until, on_info, &a);
		t = now(CLOCK_MONOTONIC) - t;
		if (t < best_list)
			best_list = t;
		memset(&a, 0, sizeof(a));
		profile__new(&a.merged);
		t = now(CLOCK_MONOTONIC);
		int err = store__read(s, since, until, on_window, &a);
		t = now(CLOCK_MONOTONIC) - t;
		if (err)
			fprintf(stderr, "read: %s\n", strerror(-err));
		if (t < best_read)
			best_read = t;
		if (r == reps - 1)
			printf("%-8s %5d windows %9.1f KB   list %8.2f ms   read+merge %8.1f ms   (%zu stacks merged)\n",
			       label, a.windows, a.bytes / 1024.0, best_list * 1e3, best_read * 1e3,
			       profile__nstacks(a.merged));
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

static void usage(const char *argv0)
{
	fprintf(stderr, "usage: %s [-d DIR] [-H HOURS] [-c BUSY_CPUS] [-l ZSTD_LEVEL] [-k] [-x]\n", argv0);
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
	int hours = 24, cpus = 4, level = 0, keep = 0, exper = 0, c;

	while ((c = getopt(argc, argv, "d:H:c:l:kx")) != -1) {
		switch (c) {
		case 'd': dir = optarg; break;
		case 'H': hours = num(optarg, 1, 24 * 365, argv[0]); break;
		case 'c': cpus = num(optarg, 1, 1024, argv[0]); break;
		case 'l': level = num(optarg, -5, 22, argv[0]); break;
		case 'k': keep = 1; break;
		case 'x': exper = 1; break;
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
	struct store_opts o = { .dir = dir, .writer = 1, .zstd_level = level };
	int err = store__open(&o, &s);
	if (err) {
		fprintf(stderr, "store__open %s: %s\n", dir, strerror(-err));
		return 1;
	}
	struct profile *p;
	profile__new(&p);
	int nwin = hours * 360;
	int64_t t0 = (int64_t)time(NULL) * SEC - (int64_t)nwin * WINDOW;
	double cpu = 0, wall = 0, gen = 0;
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
	}
	struct store_stats st;
	store__stats(s, &st);
	printf("store %s: %d windows (%d h, %d busy CPUs at 99 Hz), zstd level %d\n", dir, nwin, hours, cpus,
	       level ? level : 3);
	printf("per window: %zu distinct samples, %zu stacks; %.0f bytes on disk\n", samples / (size_t)nwin,
	       stacks / (size_t)nwin, (double)st.bytes_written / nwin);
	printf("writer per window: %.2f ms CPU (encode+zstd+crc), %.2f ms wall incl. fdatasync\n",
	       cpu / nwin * 1e3, wall / nwin * 1e3);
	printf("bytes per CPU-hour: %.3f MB; total %.1f MB in %llu segments\n",
	       (double)st.bytes_written / (hours * cpus) / 1e6, (double)st.bytes_on_disk / 1e6,
	       (unsigned long long)st.segments);
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
	query(s, "24h", end - 86400 * SEC, end, 1);
	store__close(s);
	profile__free(p);
	if (!keep && dir == dirbuf)
		nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}
