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

#include "common.h"
#include "ctl.h"
#include "export.h"
#include "parse.h"
#include "store.h"
#include "textesc.h"
#include "views.h"

/*
 * A request to profd; 0 with the reply, or EXIT_RUNTIME after saying on
 * one line why there is none (not running, busy, refused).
 */
static int ask(const struct global *g, const char *req, char **reply, int timeout_ms)
{
	int err = ctl__call(g->socket, req, reply, timeout_ms);
	char *e;

	if (ctl__busy(err, *reply)) {
		fprintf(stderr, "profctl: profd is busy: too many connections to %s; try again in a few seconds\n",
			g->socket);
	} else if (err) {
		fprintf(stderr, "profctl: cannot reach profd at %s: %s; is it running (systemctl status profd)?\n",
			g->socket, strerror(-err));
	} else if (strncmp(*reply, "ok", 2) && (e = ctl__get(*reply, "error"))) {
		fprintf(stderr, "profctl: profd could not %s: %s\n", req, e);
		free(e);
	} else {
		return 0;
	}
	free(*reply);
	*reply = NULL;
	return EXIT_RUNTIME;
}

/* flush and reload: one request, "ok" or one error line. */
static int simple_request(const struct global *g, int argc, char **argv, const char *help,
			  const char *done)
{
	char *reply = NULL;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(help, stdout);
		return 0;
	}
	if (argc > 1)
		return usage_error(argv[0], "unexpected argument '%s'", argv[1]);
	if (ask(g, argv[0], &reply, 10000))
		return EXIT_RUNTIME;
	if (strncmp(reply, "ok", 2)) {
		fprintf(stderr, "profctl: profd could not %s: unexpected reply\n", argv[0]);
		free(reply);
		return EXIT_RUNTIME;
	}
	printf("%s\n", done);
	free(reply);
	return 0;
}

static int cmd_flush(const struct global *g, int argc, char **argv)
{
	return simple_request(g, argc, argv,
			      "Usage: profctl flush\nAsks profd to write its open window now "
			      "(dump, top and diff do it themselves unless --no-flush).\n"
			      "Example:\n  profctl flush && profctl ls --since 1m\n", "flushed");
}

static int cmd_reload(const struct global *g, int argc, char **argv)
{
	return simple_request(g, argc, argv,
			      "Usage: profctl reload\nAsks profd to re-read its configuration file "
			      "(like SIGHUP); settings that need a restart are logged and shown\n"
			      "in 'profctl status' as config.restart_needed.\n"
			      "Example:\n  sudoedit /etc/profd/profd.conf && profctl reload\n", "reloaded");
}

static int cmd_status(const struct global *g, int argc, char **argv)
{
	char *reply = NULL;
	int json = 0, tty = isatty(STDOUT_FILENO);

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("Usage: profctl status [--json]\n"
			       "Shows profd's health and counters, through its control socket.\n"
			       "  --json  one JSON object (numbers as numbers)\n"
			       "Examples:\n  profctl status\n  profctl status --json | jq .samples_lost\n");
			return 0;
		} else {
			return usage_error("status", "unknown option '%s'", argv[i]);
		}
	}
	if (ask(g, "status", &reply, 5000))
		return EXIT_RUNTIME;
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
			/* Values name paths and processes: escaped (textesc.h). */
			char k[64], v[4096];

			textesc__copy(k, sizeof(k), l);
			textesc__copy(v, sizeof(v), tab + 1);
			printf(tty ? "%-26s %s\n" : "%s\t%s\n", k, v);
		}
	}
	if (json)
		printf("}\n");
	free(reply);
	return 0;
}

static int ls_cb(const struct store_window_info *w, void *arg)
{
	char a[32], b[32], n[24], l[24], by[24], wn[24];

	fmt_time(w->start_ns, a, sizeof(a));
	fmt_time(w->end_ns, b, sizeof(b));
	snprintf(n, sizeof(n), "%" PRIu64, w->samples);
	snprintf(l, sizeof(l), "%" PRIu64, w->lost);
	snprintf(by, sizeof(by), "%" PRIu64, w->bytes);
	snprintf(wn, sizeof(wn), "%" PRIu32, w->windows);
	return table__row(arg, a, b, n, l, by, wn, w->segment);
}

static void ls_usage(void)
{
	printf("Usage: profctl ls [--since WHEN] [--until WHEN]\n"
	       "Lists stored windows: time range, on-CPU samples, lost samples, bytes on disk,\n"
	       "flushed windows merged into it (1, or more once rolled up: see profd --rollup), segment.\n"
	       "WHEN: a duration back from now (90s, 10m, 2h, 7d) or a timestamp\n"
	       "(2026-11-30T09:00:00Z, '2026-11-30 09:00' local time). Default: everything.\n"
	       "Examples:\n  profctl ls\n  profctl ls --since 1h | awk -F'\\t' '{ s += $3 } END { print s }'\n");
}

static int cmd_ls(const struct global *g, int argc, char **argv)
{
	static const char *const hdr[] = { "START", "END", "SAMPLES", "LOST", "BYTES", "WINDOWS", "SEGMENT" };
	int64_t now = realtime_ns(), since = INT64_MIN, until = INT64_MAX;
	struct store *st = NULL;
	struct table *t;
	int ret, err;

	for (int i = 1; i < argc; i++) {
		const char *o = argv[i];

		if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
			ls_usage();
			return 0;
		} else if (!strcmp(o, "--since") || !strcmp(o, "--until")) {
			if (i + 1 >= argc)
				return usage_error("ls", "option %s needs a value", o);
			if (parse_when(argv[++i], now, o[2] == 's' ? &since : &until))
				return usage_error("ls", "invalid WHEN '%s': expected 90s, 10m, 2h, 7d or "
						   "2026-11-30T09:00:00Z", argv[i]);
		} else {
			return usage_error("ls", "unknown option '%s'", o);
		}
	}
	ret = open_store(g, &st);
	if (ret)
		return ret;
	t = table__new(7, hdr, "  rrrr");
	err = t ? store__list(st, since, until, ls_cb, t) : -ENOMEM;
	if (err) {
		fprintf(stderr, "profctl: listing %s failed: %s\n", g->state_dir, strerror(-err));
		ret = EXIT_RUNTIME;
	} else {
		table__print(t, stdout);
		ret = close_output(stdout, NULL);
	}
	table__free(t);
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
		"  dump     a time window's profile: folded, pprof, speedscope or SVG flame graph\n"
		"  top      functions by self and total share\n"
		"  diff     compare two windows: differential folded or SVG\n"
		"  ls       list stored windows\n"
		"  status   profd's health and counters\n"
		"  flush    ask profd to write its open window now\n"
		"  reload   ask profd to re-read its configuration\n"
		"  export   push stored windows to Pyroscope\n"
		"\n"
		"Global options:\n"
		"  --state-dir DIR   stored profiles (default /var/lib/profd)\n"
		"  --socket PATH     profd's control socket (default /run/profd/profd.sock)\n"
		"\n"
		"Run 'profctl COMMAND --help' for a command's options. Examples:\n"
		"  profctl top --since 10m\n"
		"  profctl dump --since '2026-11-30 03:10' --until '2026-11-30 03:15' -o cpu.svg\n");
}

int main(int argc, char **argv)
{
	struct global g = { .state_dir = "/var/lib/profd", .socket = "/run/profd/profd.sock" };
	static const struct { const char *name; int (*fn)(const struct global *, int, char **); } cmds[] = {
		{ "dump", cmd_dump }, { "top", cmd_top }, { "diff", cmd_diff }, { "ls", cmd_ls }, { "status", cmd_status }, { "flush", cmd_flush },
		{ "reload", cmd_reload }, { "export", cmd_export },
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
	return usage_error(NULL, "unknown command '%s' (dump, top, diff, ls, status, flush, reload, export)", argv[i]);
}
