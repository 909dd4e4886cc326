#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "buildid.h"
#include "common.h"
#include "diff.h"
#include "flamegraph.h"
#include "fold.h"
#include "parse.h"
#include "pprof.h"
#include "profile.h"
#include "query.h"
#include "speedscope.h"
#include "store.h"
#include "top.h"
#include "views.h"

#define FILTER_HELP \
	"Filters:\n" \
	"  --since WHEN, --until WHEN  time range [since, until); default: the last 10 minutes\n" \
	"  --pid N                     a process (repeatable)\n" \
	"  --comm NAME                 process name, exact or glob ('nginx*')\n" \
	"  --cgroup PATH|UNIT          cgroup path prefix (/system.slice) or unit (nginx.service)\n" \
	"  --type cpu|offcpu|runq|wall on-CPU samples (default), blocked, run-queue or all time (us)\n" \
	"  --threads                   thread name after the process name\n" \
	"  --no-kernel                 drop kernel frames\n" \
	"  --no-flush                  do not ask profd to write its open window first\n" \
	"WHEN: a duration back from now (90s, 10m, 2h, 7d) or a timestamp: RFC 3339\n" \
	"(2026-11-30T09:00:00Z, 2026-11-30T09:00:00+02:00) or '2026-11-30 09:00[:SS]' local time.\n"

static void dump_usage(FILE *f)
{
	fprintf(f,
		"Usage: profctl dump [FILTERS] [--format folded|pprof|speedscope|svg] [-o FILE]\n"
		"Prints the stored profile of a time window.\n"
		"Formats:\n"
		"  folded      'process;root;...;leaf value' lines (default), for FlameGraph and grep\n"
		"  pprof       gzipped profile.proto, for go tool pprof, Pyroscope, Parca\n"
		"  speedscope  JSON for https://www.speedscope.app\n"
		"  svg         interactive flame graph: hover, click to zoom, Search (regex)\n"
		"Without --format, -o FILE picks it from the name: .pb.gz/.pprof, .json, .svg.\n"
		FILTER_HELP
		"Examples:\n"
		"  profctl dump --since 10m\n"
		"  profctl dump --since '2026-11-30 03:00' --until '2026-11-30 03:15' --comm nginx\n"
		"  profctl dump --pid 1234 --threads -o out.folded\n"
		"  profctl dump --since 1h -o cpu.svg                      # open in a browser\n"
		"  profctl dump --since 1h --format pprof -o cpu.pb.gz && go tool pprof -top cpu.pb.gz\n");
}

static void top_usage(FILE *f)
{
	fprintf(f,
		"Usage: profctl top [FILTERS] [--limit N] [--sort self|total]\n"
		"Functions by self share (the function itself was running) and total share\n"
		"(it was on the stack), like perf report without and with --children.\n"
		"  --limit N          rows to print (default 25; 0: all)\n"
		"  --sort self|total  order (default self)\n"
		FILTER_HELP
		"Examples:\n"
		"  profctl top --since 5m\n"
		"  profctl top --comm postgres --sort total --limit 10\n");
}

static void diff_usage(FILE *f)
{
	fprintf(f,
		"Usage: profctl diff --base-since WHEN [--base-until WHEN] [FILTERS] [--format folded|svg] [-o FILE]\n"
		"Compares a before window (--base-since/--base-until) with an after window\n"
		"(--since/--until), with the before side scaled to the same total.\n"
		"  folded  'stack before after' lines (FlameGraph's difffolded convention)\n"
		"  svg     differential flame graph: widths from after, red grew, blue shrank\n"
		FILTER_HELP
		"Examples:\n"
		"  profctl diff --base-since 2h --base-until 1h --since 1h\n"
		"  profctl diff --base-since '2026-11-30 09:00' --base-until '2026-11-30 09:10' \\\n"
		"               --since '2026-11-30 10:00' --until '2026-11-30 10:10' -o deploy.svg\n");
}

/* Options shared by dump, top and diff. */
struct view_opts {
	struct query q;
	uint32_t pids[256];
	const char *format;
	const char *out;
	int no_flush;
	uint64_t limit;
	int sort;
	int64_t base_since, base_until;
	int has_base;
};

enum { V_DUMP, V_TOP, V_DIFF };

static const char *format_from_name(const char *out)
{
	size_t n = out ? strlen(out) : 0;

#define ENDS(s) (n >= sizeof(s) - 1 && !strcmp(out + n - (sizeof(s) - 1), s))
	if (ENDS(".pb.gz") || ENDS(".pprof") || ENDS(".pb"))
		return "pprof";
	if (ENDS(".json"))
		return "speedscope";
	if (ENDS(".svg"))
		return "svg";
#undef ENDS
	return "folded";
}

static int bad_when(const char *cmd, const char *opt, const char *val)
{
	fprintf(stderr, "profctl %s: invalid %s '%s': expected 90s, 10m, 2h, 7d, 2026-11-30T09:00:00Z "
		"or '2026-11-30 09:00'; see profctl %s --help\n", cmd, opt, val, cmd);
	return EXIT_USAGE;
}

static int check_range(const char *cmd, const char *what, int64_t since, int64_t until, int64_t now)
{
	char a[32], b[32];

	if (until > since)
		return 0;
	fmt_time(since, a, sizeof(a));
	fmt_time(until, b, sizeof(b));
	if (since > now)
		fprintf(stderr, "profctl %s: %s starts in the future (%s); give a time before now\n",
			cmd, what, a);
	else
		fprintf(stderr, "profctl %s: empty %s: until (%s) must be later than since (%s)\n",
			cmd, what, b, a);
	return EXIT_USAGE;
}

static int parse_view(const char *cmd, int kind, int argc, char **argv, struct view_opts *v,
		      void (*usage)(FILE *))
{
	enum { O_SINCE = 256, O_UNTIL, O_PID, O_COMM, O_CGROUP, O_TYPE, O_THREADS, O_NOKERNEL,
	       O_FORMAT, O_NOFLUSH, O_LIMIT, O_SORT, O_BSINCE, O_BUNTIL };
	static const struct option lo[] = {
		{ "since", required_argument, 0, O_SINCE },
		{ "until", required_argument, 0, O_UNTIL },
		{ "pid", required_argument, 0, O_PID },
		{ "comm", required_argument, 0, O_COMM },
		{ "cgroup", required_argument, 0, O_CGROUP },
		{ "type", required_argument, 0, O_TYPE },
		{ "threads", no_argument, 0, O_THREADS },
		{ "no-kernel", no_argument, 0, O_NOKERNEL },
		{ "format", required_argument, 0, O_FORMAT },
		{ "no-flush", no_argument, 0, O_NOFLUSH },
		{ "limit", required_argument, 0, O_LIMIT },
		{ "sort", required_argument, 0, O_SORT },
		{ "base-since", required_argument, 0, O_BSINCE },
		{ "base-until", required_argument, 0, O_BUNTIL },
		{ "output", required_argument, 0, 'o' },
		{ "help", no_argument, 0, 'h' },
		{ 0 },
	};
	int64_t now = clock__ns(CLOCK_REALTIME);
	const char *since = "10m", *until = NULL, *bsince = NULL, *buntil = NULL;
	uint64_t pid;
	int c, ret;

	v->limit = 25;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:h", lo, NULL)) != -1) {
		switch (c) {
		case O_SINCE: since = optarg; break;
		case O_UNTIL: until = optarg; break;
		case O_PID:
			if (parse_u64(optarg, &pid) || pid == 0 || pid > UINT32_MAX)
				return usage_error(cmd, "invalid --pid '%s': expected a process id", optarg);
			if (v->q.npids >= sizeof(v->pids) / sizeof(v->pids[0]))
				return usage_error(cmd, "too many --pid options (at most 256)%s", "");
			v->pids[v->q.npids++] = pid;
			break;
		case O_COMM: v->q.comm = optarg; break;
		case O_CGROUP: v->q.cgroup = optarg; break;
		case O_TYPE:
			if (query__parse_type(optarg, &v->q.type))
				return usage_error(cmd, "invalid --type '%s': expected cpu, offcpu, runq or wall", optarg);
			break;
		case O_THREADS: v->q.threads = 1; break;
		case O_NOKERNEL: v->q.no_kernel = 1; break;
		case O_NOFLUSH: v->no_flush = 1; break;
		case O_FORMAT:
			if (kind == V_TOP)
				return usage_error(cmd, "unknown option '%s'", "--format");
			v->format = optarg;
			break;
		case 'o':
			if (kind == V_TOP)
				return usage_error(cmd, "unknown option '%s'", "-o");
			v->out = optarg;
			break;
		case O_LIMIT:
			if (kind != V_TOP)
				return usage_error(cmd, "unknown option '%s' (top has it)", "--limit");
			if (parse_u64(optarg, &v->limit))
				return usage_error(cmd, "invalid --limit '%s': expected a number of rows", optarg);
			break;
		case O_SORT:
			if (kind != V_TOP)
				return usage_error(cmd, "unknown option '%s' (top has it)", "--sort");
			if (!strcmp(optarg, "self"))
				v->sort = TOP_BY_SELF;
			else if (!strcmp(optarg, "total"))
				v->sort = TOP_BY_TOTAL;
			else
				return usage_error(cmd, "invalid --sort '%s': expected self or total", optarg);
			break;
		case O_BSINCE:
		case O_BUNTIL:
			if (kind != V_DIFF)
				return usage_error(cmd, "unknown option '%s' (diff has it)", argv[optind - 1]);
			if (c == O_BSINCE)
				bsince = optarg;
			else
				buntil = optarg;
			break;
		case 'h': usage(stdout); return -1;
		case ':': return usage_error(cmd, "option %s needs a value", argv[optind - 1]);
		default: return usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	v->q.pids = v->pids;
	if (parse_when(since, now, &v->q.since_ns))
		return bad_when(cmd, "--since", since);
	v->q.until_ns = now + 1;
	if (until && parse_when(until, now, &v->q.until_ns))
		return bad_when(cmd, "--until", until);
	ret = check_range(cmd, "time range (--since/--until)", v->q.since_ns, v->q.until_ns, now);
	if (ret)
		return ret;
	if (kind == V_DIFF) {
		if (!bsince)
			return usage_error(cmd, "missing --base-since: which window is 'before'?%s", "");
		if (parse_when(bsince, now, &v->base_since))
			return bad_when(cmd, "--base-since", bsince);
		v->base_until = v->q.since_ns;
		if (buntil && parse_when(buntil, now, &v->base_until))
			return bad_when(cmd, "--base-until", buntil);
		ret = check_range(cmd, "base range (--base-since/--base-until)", v->base_since,
				  v->base_until, now);
		if (ret)
			return ret;
		v->has_base = 1;
	}
	if (!v->format)
		v->format = format_from_name(v->out);
	return 0;
}

struct merge_ctx {
	struct profile *acc;
	struct query *q;
	unsigned flags;
};

/*
 * Whether a view's merge by function can key samples by what a folded
 * line prints (PF_MERGE_BY_LABEL, no pid, no cgroup), so that the merged
 * profile is the collapsed one (fold__collapse) as it is: not when
 * collapsing drops frames (--no-kernel), converts values (wall) or
 * kinds (run-queue, shown as off-CPU), or keeps pids apart (--pid).
 */
static int merge_folds(const struct query *q)
{
	return !q->no_kernel && !q->npids && (q->type == QUERY_CPU || q->type == QUERY_OFFCPU);
}

/*
 * Reads, filters and merges the windows of [since, until) into *out. Views
 * that print functions merge by function (PF_MERGE_BY_FUNCTION: small
 * tables over hours); pprof keeps each pc, so that its locations have real
 * addresses a backend can re-symbolize with the mapping's build-id.
 * Without --pid those views print no pid either: they merge by name too and
 * read the store's summaries, so a day costs about what its answer holds.
 */
static int load_range(const struct global *g, struct store *st, struct query *q, int64_t since,
		      int64_t until, const char *what, unsigned flags, struct profile **out)
{
	struct query rq = *q;
	struct merge_ctx m = { .q = &rq, .flags = flags };
	int err;

	rq.since_ns = since;
	rq.until_ns = until;
	if ((flags & PF_MERGE_BY_FUNCTION) && !q->npids)
		m.flags |= PF_MERGE_BY_NAME;
	/* Folded views print thread names only with --threads: without, a process's threads are one. */
	if ((flags & PF_MERGE_BY_FUNCTION) && !q->threads)
		m.flags |= PF_MERGE_NO_THREAD;
	if ((flags & PF_MERGE_BY_FUNCTION) && merge_folds(q))
		m.flags |= PF_MERGE_BY_LABEL | PF_MERGE_NO_CGROUP;
	if (profile__new(&m.acc)) {
		fprintf(stderr, "profctl: out of memory\n");
		return EXIT_RUNTIME;
	}
	err = store__merge(st, since, until, m.flags, query__keep, m.q, m.acc);
	if (err) {
		fprintf(stderr, "profctl: reading %s failed: %s\n", g->state_dir, strerror(-err));
		profile__free(m.acc);
		return EXIT_RUNTIME;
	}
	if (!profile__nsamples(m.acc)) {
		explain_empty(st, since, until, what);
		profile__free(m.acc);
		return EXIT_RUNTIME;
	}
	*out = m.acc;
	return 0;
}

/*
 * The collapsed profile of merged (load_range's, by function): merged
 * itself (*out == merged) when its merge already keyed samples by their
 * folded line, no stack runs past what a folded line keeps and the
 * writer reads only the samples and what they refer to (as_is; not
 * speedscope, which lists every frame of the profile in id order).
 */
static int collapse(const struct query *q, const struct profile *merged, int as_is, struct profile **out)
{
	struct query cq = *q;
	int deep = 0;

	for (size_t i = 0; as_is && merge_folds(q) && i < profile__nsamples(merged) && !deep; i++) {
		uint32_t n;

		profile__stack(merged, profile__sample(merged, i)->stack, &n);
		deep = n > FOLD_MAX_FRAMES;
	}
	if (as_is && merge_folds(q) && !deep) {
		*out = (struct profile *)merged;
		return 0;
	}
	/* Merged samples passed the filters already; a cgroup the merge dropped would fail them now. */
	if (merge_folds(q))
		cq.cgroup = NULL;
	if (profile__new(out) || fold__collapse(&cq, merged, *out)) {
		fprintf(stderr, "profctl: out of memory folding the profile\n");
		return EXIT_RUNTIME;
	}
	return 0;
}

static const char *unit_name(const struct query *q)
{
	return q->type == QUERY_CPU ? "samples" : "us";
}

static const char *kind_title(const struct query *q)
{
	switch (q->type) {
	case QUERY_OFFCPU: return "Off-CPU";
	case QUERY_RUNQ: return "Run-queue";
	case QUERY_WALL: return "Wall-clock";
	default: return "CPU";
	}
}

/* "host web-1, 2026-11-30 09:00:00 to 2026-11-30 09:10:00" from the merged windows. */
static void describe(const struct profile *p, char *buf, size_t len)
{
	const struct pf_meta *m = profile__meta_const(p);
	const char *host = profile__str(p, m->host);
	char a[32], b[32];

	fmt_time(m->start_ns, a, sizeof(a));
	fmt_time(m->end_ns, b, sizeof(b));
	snprintf(buf, len, "host %s, %s to %s", *host ? host : "?", a, b);
}

int cmd_dump(const struct global *g, int argc, char **argv)
{
	struct view_opts v = { 0 };
	struct profile *merged = NULL, *folded = NULL;
	struct flamegraph *fg = NULL;
	struct store *st = NULL;
	char desc[256], title[64];
	FILE *f = NULL;
	int ret, err = 0, fmt;

	ret = parse_view("dump", V_DUMP, argc, argv, &v, dump_usage);
	if (ret)
		return ret < 0 ? 0 : ret;
	if (!strcmp(v.format, "folded"))
		fmt = 0;
	else if (!strcmp(v.format, "pprof"))
		fmt = 1;
	else if (!strcmp(v.format, "speedscope"))
		fmt = 2;
	else if (!strcmp(v.format, "svg"))
		fmt = 3;
	else
		return usage_error("dump", "unknown --format '%s': expected folded, pprof, speedscope or svg",
				   v.format);
	if (fmt == 1 && (!v.out || !strcmp(v.out, "-")) && isatty(STDOUT_FILENO))
		return usage_error("dump", "pprof is gzipped binary%s: give -o FILE or redirect the output", "");
	if (!v.no_flush)
		request_flush(g);
	ret = open_store(g, &st);
	if (ret)
		return ret;
	ret = load_range(g, st, &v.q, v.q.since_ns, v.q.until_ns, "",
			 fmt == 1 ? 0 : PF_MERGE_BY_FUNCTION, &merged);
	if (ret)
		goto out;
	if (fmt != 1) {
		ret = collapse(&v.q, merged, fmt != 2, &folded);
		if (ret)
			goto out;
	}
	f = open_output(v.out);
	if (!f) {
		ret = EXIT_RUNTIME;
		goto out;
	}
	describe(merged, desc, sizeof(desc));
	snprintf(title, sizeof(title), "%s flame graph", kind_title(&v.q));
	switch (fmt) {
	case 0: err = fold__write(&v.q, folded, f); break;
	case 1: {
		const struct pf_meta *m = profile__meta_const(merged);
		struct buildid_ctx bc = { .not_after_ns = m->start_ns,
					  .kernel_release = profile__str(merged, m->kernel) };

		err = pprof__write_opts(&v.q, merged, &(struct pprof_opts){ .build_id = buildid__lookup,
					.arg = &bc }, f);
		break;
	}
	case 2: err = speedscope__write(&v.q, folded, desc, f); break;
	case 3:
		err = flamegraph__new(&fg);
		if (!err)
			err = flamegraph__add(fg, &v.q, folded, 0);
		if (!err)
			err = flamegraph__write(fg, &(struct fg_opts){ .title = title, .subtitle = desc,
						.unit = unit_name(&v.q) }, f);
		break;
	}
	ret = close_output(f, v.out);
	if (err && !ret) {
		fprintf(stderr, "profctl: writing %s failed: %s\n", v.out ? v.out : "the output", strerror(-err));
		ret = EXIT_RUNTIME;
	}
out:
	flamegraph__free(fg);
	store__close(st);
	if (folded != merged)
		profile__free(folded);
	profile__free(merged);
	return ret;
}

static void fmt_pct(uint64_t v, uint64_t total, char *buf, size_t len)
{
	snprintf(buf, len, "%.2f%%", total ? 100.0 * v / total : 0.0);
}

int cmd_top(const struct global *g, int argc, char **argv)
{
	static const char *const hdr[] = { "SELF", "SELF%", "TOTAL", "TOTAL%", "FUNCTION" };
	struct view_opts v = { 0 };
	struct profile *merged = NULL, *folded = NULL;
	struct store *st = NULL;
	struct table *t = NULL;
	struct top *top = NULL;
	int ret;

	ret = parse_view("top", V_TOP, argc, argv, &v, top_usage);
	if (ret)
		return ret < 0 ? 0 : ret;
	if (!v.no_flush)
		request_flush(g);
	ret = open_store(g, &st);
	if (ret)
		return ret;
	ret = load_range(g, st, &v.q, v.q.since_ns, v.q.until_ns, "", PF_MERGE_BY_FUNCTION, &merged);
	if (!ret)
		ret = collapse(&v.q, merged, 1, &folded);
	if (ret)
		goto out;
	t = table__new(5, hdr, "rrrr");
	if (!t || top__new(&v.q, folded, &top)) {
		fprintf(stderr, "profctl: out of memory\n");
		ret = EXIT_RUNTIME;
		goto out;
	}
	top__sort(top, v.sort);
	for (size_t i = 0; i < top__count(top) && (!v.limit || i < v.limit); i++) {
		const struct top_entry *e = top__entry(top, i);
		uint64_t gt = top__grand_total(top);
		char s[24], sp[16], tt[24], tp[16];

		if (!e->total)
			break;
		snprintf(s, sizeof(s), "%" PRIu64, e->self);
		snprintf(tt, sizeof(tt), "%" PRIu64, e->total);
		fmt_pct(e->self, gt, sp, sizeof(sp));
		fmt_pct(e->total, gt, tp, sizeof(tp));
		if (table__row(t, s, sp, tt, tp, e->name)) {
			fprintf(stderr, "profctl: out of memory\n");
			ret = EXIT_RUNTIME;
			goto out;
		}
	}
	table__print(t, stdout);
	ret = close_output(stdout, NULL);
out:
	table__free(t);
	top__free(top);
	store__close(st);
	if (folded != merged)
		profile__free(folded);
	profile__free(merged);
	return ret;
}

int cmd_diff(const struct global *g, int argc, char **argv)
{
	struct view_opts v = { 0 };
	struct profile *m[2] = { 0 }, *c[2] = { 0 };
	struct flamegraph *fg = NULL;
	struct diff *d = NULL;
	struct store *st = NULL;
	char desc[512], a[128], b[128], title[64];
	FILE *f = NULL;
	int ret, err = 0, svg;

	ret = parse_view("diff", V_DIFF, argc, argv, &v, diff_usage);
	if (ret)
		return ret < 0 ? 0 : ret;
	if (strcmp(v.format, "folded") && strcmp(v.format, "svg"))
		return usage_error("diff", "unknown --format '%s': expected folded or svg", v.format);
	svg = !strcmp(v.format, "svg");
	if (!v.no_flush)
		request_flush(g);
	ret = open_store(g, &st);
	if (ret)
		return ret;
	/* Each side folded before the next is read: one merged profile at a time. */
	for (int i = 0; i < 2 && !ret; i++) {
		ret = i ? load_range(g, st, &v.q, v.q.since_ns, v.q.until_ns, "", PF_MERGE_BY_FUNCTION, &m[i]) :
			  load_range(g, st, &v.q, v.base_since, v.base_until, " in the base window",
				     PF_MERGE_BY_FUNCTION, &m[i]);
		if (!ret)
			ret = collapse(&v.q, m[i], 1, &c[i]);
		if (c[i] != m[i])
			profile__free(m[i]);
		m[i] = NULL;
	}
	if (ret)
		goto out;
	f = open_output(v.out);
	if (!f) {
		ret = EXIT_RUNTIME;
		goto out;
	}
	if (svg) {
		/* A folded profile keeps the host and time range it was folded from. */
		describe(c[0], a, sizeof(a));
		describe(c[1], b, sizeof(b));
		snprintf(desc, sizeof(desc), "before: %s; after: %s", a, b);
		snprintf(title, sizeof(title), "Differential %s flame graph", kind_title(&v.q));
		err = flamegraph__new(&fg);
		if (!err)
			err = flamegraph__add(fg, &v.q, c[1], 0);
		if (!err)
			err = flamegraph__add(fg, &v.q, c[0], 1);
		if (!err)
			err = flamegraph__write(fg, &(struct fg_opts){ .title = title, .subtitle = desc,
						.unit = unit_name(&v.q) }, f);
	} else {
		err = diff__new(&v.q, c[0], c[1], &d);
		if (!err)
			err = diff__write(d, f);
	}
	ret = close_output(f, v.out);
	if (err && !ret) {
		fprintf(stderr, "profctl: writing %s failed: %s\n", v.out ? v.out : "the output", strerror(-err));
		ret = EXIT_RUNTIME;
	}
out:
	diff__free(d);
	flamegraph__free(fg);
	store__close(st);
	for (int i = 0; i < 2; i++) {
		profile__free(m[i]);
		profile__free(c[i]);
	}
	return ret;
}
