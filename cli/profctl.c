/* profctl: questions about stored profiles, and the daemon's control socket. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "fold.h"
#include "parse.h"
#include "profile.h"
#include "query.h"
#include "store.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

struct global {
	const char *state_dir;
	const char *socket;
};

static int64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void fmt_time(int64_t ns, char *buf, size_t len)
{
	time_t t = ns / 1000000000;
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
}

static int usage_error(const char *cmd, const char *fmt, const char *arg)
{
	fprintf(stderr, "profctl%s%s: ", cmd ? " " : "", cmd ? cmd : "");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "; see profctl %s%s--help\n", cmd ? cmd : "", cmd ? " " : "");
	return EXIT_USAGE;
}

static void store_warn(void *arg, const char *msg)
{
	(void)arg;
	fprintf(stderr, "profctl: warning: %s\n", msg);
}

/* Opens the store for reading, with a one-line error naming the fix. */
static int open_store(const struct global *g, struct store **st)
{
	struct store_opts so = { .dir = g->state_dir, .writer = 0, .warn = store_warn };
	int err;

	if (access(g->state_dir, R_OK | X_OK)) {
		err = errno;
		if (err == ENOENT)
			fprintf(stderr, "profctl: state directory %s does not exist: is profd running, "
				"or is it another --state-dir?\n", g->state_dir);
		else
			fprintf(stderr, "profctl: cannot read state directory %s: %s; run as root "
				"(it is 0700, owned by profd's user)\n", g->state_dir, strerror(err));
		return EXIT_RUNTIME;
	}
	err = store__open(&so, st);
	if (err) {
		fprintf(stderr, "profctl: cannot open state directory %s: %s\n", g->state_dir,
			strerror(-err));
		return EXIT_RUNTIME;
	}
	return 0;
}

/* Asks the daemon to write its open window; says so when it is not running. */
static void request_flush(const struct global *g)
{
	char *reply = NULL;
	int err = ctl__call(g->socket, "flush", &reply, 5000);

	if (err == -ENOENT || err == -ECONNREFUSED)
		fprintf(stderr, "profctl: profd is not running (no socket at %s); reading what is stored\n",
			g->socket);
	else if (err)
		fprintf(stderr, "profctl: could not ask profd to flush (%s): %s; the last seconds may be missing\n",
			g->socket, strerror(-err));
	free(reply);
}

struct merge_ctx {
	struct profile *acc;
	struct query *q;
	size_t windows;
};

static int merge_window(const struct store_window_info *w, const struct profile *p, void *arg)
{
	struct merge_ctx *m = arg;

	(void)w;
	m->windows++;
	return profile__merge(m->acc, p, query__keep, m->q);
}

struct range_ctx {
	int64_t first, last;
	size_t n;
};

static int range_cb(const struct store_window_info *w, void *arg)
{
	struct range_ctx *r = arg;

	if (!r->n || w->start_ns < r->first)
		r->first = w->start_ns;
	if (w->end_ns > r->last)
		r->last = w->end_ns;
	r->n++;
	return 0;
}

static void explain_empty(struct store *st, const struct query *q)
{
	struct range_ctx r = { 0 };
	char a[32], b[32], c[32], d[32];

	fmt_time(q->since_ns, a, sizeof(a));
	fmt_time(q->until_ns, b, sizeof(b));
	store__list(st, INT64_MIN, INT64_MAX, range_cb, &r);
	if (!r.n) {
		fprintf(stderr, "profctl: no samples between %s and %s: nothing is stored yet\n", a, b);
		return;
	}
	fmt_time(r.first, c, sizeof(c));
	fmt_time(r.last, d, sizeof(d));
	fprintf(stderr, "profctl: no matching samples between %s and %s; stored windows span %s to %s\n",
		a, b, c, d);
}

static void dump_usage(FILE *f)
{
	fprintf(f,
		"Usage: profctl dump [--since WHEN] [--until WHEN] [--pid N]... [--comm NAME]\n"
		"                    [--cgroup PATH|UNIT] [--type cpu|offcpu|runq|wall] [--threads]\n"
		"                    [--no-kernel] [--format folded] [-o FILE] [--no-flush]\n"
		"Prints the stored profile of a time window as folded stacks.\n"
		"WHEN: a duration back from now (90s, 10m, 2h, 7d) or a timestamp\n"
		"(2026-11-30T09:00:00Z, '2026-11-30 09:00' in local time). Default: --since 10m.\n"
		"Examples:\n"
		"  profctl dump --since 10m\n"
		"  profctl dump --since '2026-11-30 03:00' --until '2026-11-30 03:15' --comm nginx\n"
		"  profctl dump --pid 1234 --threads -o out.folded\n");
}

/* Options shared by dump and top: the query and where output goes. */
struct view_opts {
	struct query q;
	uint32_t pids[256];
	const char *format;
	const char *out;
	int no_flush;
};

static int parse_view(const char *cmd, int argc, char **argv, struct view_opts *v, void (*usage)(FILE *))
{
	enum { O_SINCE = 256, O_UNTIL, O_PID, O_COMM, O_CGROUP, O_TYPE, O_THREADS, O_NOKERNEL,
	       O_FORMAT, O_NOFLUSH };
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
		{ "output", required_argument, 0, 'o' },
		{ "help", no_argument, 0, 'h' },
		{ 0 },
	};
	int64_t now = realtime_ns();
	const char *since = "10m", *until = NULL;
	uint64_t pid;
	int c;

	v->format = "folded";
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
		case O_FORMAT: v->format = optarg; break;
		case O_NOFLUSH: v->no_flush = 1; break;
		case 'o': v->out = optarg; break;
		case 'h': usage(stdout); return -1;
		case ':': return usage_error(cmd, "option %s needs a value", argv[optind - 1]);
		default: return usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	v->q.pids = v->pids;
	if (parse_when(since, now, &v->q.since_ns))
		return usage_error(cmd, "invalid --since '%s': expected 90s, 10m, 2h, 7d or 2026-11-30T09:00:00Z", since);
	v->q.until_ns = now + 1;
	if (until && parse_when(until, now, &v->q.until_ns))
		return usage_error(cmd, "invalid --until '%s': expected 90s, 10m, 2h, 7d or 2026-11-30T09:00:00Z", until);
	if (v->q.until_ns <= v->q.since_ns)
		return usage_error(cmd, "empty time range: --until%s must be later than --since", "");
	return 0;
}

/* Reads, filters and merges the windows of the query into *out. */
static int load(const struct global *g, struct view_opts *v, struct profile **out)
{
	struct merge_ctx m = { .q = &v->q };
	struct store *st = NULL;
	int ret, err;

	if (!v->no_flush)
		request_flush(g);
	ret = open_store(g, &st);
	if (ret)
		return ret;
	if (profile__new(&m.acc)) {
		store__close(st);
		return EXIT_RUNTIME;
	}
	err = store__read(st, v->q.since_ns, v->q.until_ns, merge_window, &m);
	if (err) {
		fprintf(stderr, "profctl: reading %s failed: %s\n", g->state_dir, strerror(-err));
		ret = EXIT_RUNTIME;
	} else if (!profile__nsamples(m.acc)) {
		explain_empty(st, &v->q);
		ret = EXIT_RUNTIME;
	}
	store__close(st);
	if (ret) {
		profile__free(m.acc);
		return ret;
	}
	*out = m.acc;
	return 0;
}

static FILE *open_output(const char *path)
{
	FILE *f;

	if (!path || !strcmp(path, "-"))
		return stdout;
	f = fopen(path, "we");
	if (!f)
		fprintf(stderr, "profctl: cannot write %s: %s\n", path, strerror(errno));
	return f;
}

static int close_output(FILE *f, const char *path)
{
	if (f == stdout)
		return fflush(f) ? EXIT_RUNTIME : 0;
	if (fclose(f)) {
		fprintf(stderr, "profctl: writing %s failed: %s\n", path, strerror(errno));
		return EXIT_RUNTIME;
	}
	return 0;
}

static int cmd_dump(const struct global *g, int argc, char **argv)
{
	struct view_opts v = { 0 };
	struct profile *merged = NULL, *folded = NULL;
	FILE *f;
	int ret, err;

	ret = parse_view("dump", argc, argv, &v, dump_usage);
	if (ret)
		return ret < 0 ? 0 : ret;
	if (strcmp(v.format, "folded"))
		return usage_error("dump", "unknown --format '%s': expected folded", v.format);
	ret = load(g, &v, &merged);
	if (ret)
		return ret;
	if (profile__new(&folded) || fold__collapse(&v.q, merged, folded)) {
		fprintf(stderr, "profctl: out of memory folding the profile\n");
		ret = EXIT_RUNTIME;
		goto out;
	}
	f = open_output(v.out);
	if (!f) {
		ret = EXIT_RUNTIME;
		goto out;
	}
	err = fold__write(&v.q, folded, f);
	ret = close_output(f, v.out);
	if (err && !ret) {
		fprintf(stderr, "profctl: writing output failed: %s\n", strerror(-err));
		ret = EXIT_RUNTIME;
	}
out:
	profile__free(folded);
	profile__free(merged);
	return ret;
}

static int cmd_flush(const struct global *g, int argc, char **argv)
{
	char *reply = NULL;
	int err;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("Usage: profctl flush\nAsks profd to write its open window now.\n");
		return 0;
	}
	if (argc > 1)
		return usage_error("flush", "unexpected argument '%s'", argv[1]);
	err = ctl__call(g->socket, "flush", &reply, 10000);
	if (err) {
		fprintf(stderr, "profctl: cannot reach profd at %s: %s; is it running (systemctl status profd)?\n",
			g->socket, strerror(-err));
		return EXIT_RUNTIME;
	}
	if (strncmp(reply, "ok", 2)) {
		char *e = ctl__get(reply, "error");

		fprintf(stderr, "profctl: profd could not flush: %s\n", e ? e : reply);
		free(e);
		free(reply);
		return EXIT_RUNTIME;
	}
	printf("flushed\n");
	free(reply);
	return 0;
}

static int cmd_status(const struct global *g, int argc, char **argv)
{
	char *reply = NULL;
	int json = 0, err;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("Usage: profctl status [--json]\nShows profd's health and counters.\n");
			return 0;
		} else {
			return usage_error("status", "unknown option '%s'", argv[i]);
		}
	}
	err = ctl__call(g->socket, "status", &reply, 5000);
	if (err) {
		fprintf(stderr, "profctl: cannot reach profd at %s: %s; is it running (systemctl status profd)?\n",
			g->socket, strerror(-err));
		return EXIT_RUNTIME;
	}
	if (json)
		putchar('{');
	for (char *l = reply, *nl; l && *l; l = nl) {
		char *tab;

		nl = strchr(l, '\n');
		if (nl)
			*nl++ = 0;
		tab = strchr(l, '\t');
		if (!tab)
			continue;
		*tab = 0;
		if (json) {
			int numeric = tab[1] && strspn(tab + 1, "0123456789") == strlen(tab + 1);

			printf("%s\"%s\":", l == reply ? "" : ",", l);
			if (numeric) {
				printf("%s", tab + 1);
			} else {
				putchar('"');
				for (const char *p = tab + 1; *p; p++) {
					if (*p == '"' || *p == '\\')
						putchar('\\');
					if ((unsigned char)*p >= 0x20)
						putchar(*p);
				}
				putchar('"');
			}
		} else {
			printf("%-26s %s\n", l, tab + 1);
		}
	}
	if (json)
		printf("}\n");
	free(reply);
	return 0;
}

static int ls_cb(const struct store_window_info *w, void *arg)
{
	char a[32], b[32];

	(void)arg;
	fmt_time(w->start_ns, a, sizeof(a));
	fmt_time(w->end_ns, b, sizeof(b));
	printf("%-19s  %-19s  %9" PRIu64 "  %6" PRIu64 "  %8" PRIu64 "  %s\n", a, b, w->samples, w->lost,
	       w->bytes, w->segment);
	return 0;
}

static int cmd_ls(const struct global *g, int argc, char **argv)
{
	int64_t now = realtime_ns(), since = INT64_MIN, until = INT64_MAX;
	struct store *st = NULL;
	int ret;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("Usage: profctl ls [--since WHEN] [--until WHEN]\nLists stored windows: time range, samples, lost samples, bytes.\n");
			return 0;
		} else if (!strcmp(argv[i], "--since") && i + 1 < argc) {
			if (parse_when(argv[++i], now, &since))
				return usage_error("ls", "invalid --since '%s'", argv[i]);
		} else if (!strcmp(argv[i], "--until") && i + 1 < argc) {
			if (parse_when(argv[++i], now, &until))
				return usage_error("ls", "invalid --until '%s'", argv[i]);
		} else {
			return usage_error("ls", "unknown option '%s'", argv[i]);
		}
	}
	ret = open_store(g, &st);
	if (ret)
		return ret;
	printf("%-19s  %-19s  %9s  %6s  %8s  %s\n", "START", "END", "SAMPLES", "LOST", "BYTES", "SEGMENT");
	ret = store__list(st, since, until, ls_cb, NULL) ? EXIT_RUNTIME : 0;
	store__close(st);
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: profctl [--state-dir DIR] [--socket PATH] COMMAND [OPTIONS]\n"
		"Answers questions about the profiles profd stored on this host.\n"
		"\n"
		"Commands:\n"
		"  dump     print a time window's profile (folded stacks)\n"
		"  ls       list stored windows\n"
		"  status   profd's health and counters\n"
		"  flush    ask profd to write its open window now\n"
		"\n"
		"Global options:\n"
		"  --state-dir DIR   stored profiles (default /var/lib/profd)\n"
		"  --socket PATH     profd's control socket (default /run/profd/profd.sock)\n"
		"\n"
		"Run 'profctl COMMAND --help' for a command's options. Example:\n"
		"  profctl dump --since 10m\n");
}

int main(int argc, char **argv)
{
	struct global g = { .state_dir = "/var/lib/profd", .socket = "/run/profd/profd.sock" };
	static const struct { const char *name; int (*fn)(const struct global *, int, char **); } cmds[] = {
		{ "dump", cmd_dump }, { "ls", cmd_ls }, { "status", cmd_status }, { "flush", cmd_flush },
	};
	int i = 1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--state-dir") && i + 1 < argc) {
			g.state_dir = argv[++i];
		} else if (!strncmp(argv[i], "--state-dir=", 12)) {
			g.state_dir = argv[i] + 12;
		} else if (!strcmp(argv[i], "--socket") && i + 1 < argc) {
			g.socket = argv[++i];
		} else if (!strncmp(argv[i], "--socket=", 9)) {
			g.socket = argv[i] + 9;
		} else {
			return usage_error(NULL, "unknown option '%s'", argv[i]);
		}
	}
	if (i >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	for (size_t k = 0; k < sizeof(cmds) / sizeof(cmds[0]); k++)
		if (!strcmp(argv[i], cmds[k].name))
			return cmds[k].fn(&g, argc - i, argv + i);
	return usage_error(NULL, "unknown command '%s' (dump, ls, status, flush)", argv[i]);
}
