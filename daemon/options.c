#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "cgroups.h"
#include "config.h"
#include "log.h"
#include "options.h"
#include "parse.h"

#define MS 1000000LL
#define SEC 1000000000LL

enum kind { K_STR, K_UINT, K_DUR, K_SIZE, K_BOOL, K_UNWIND, K_LEVEL, K_RUNQ_STACK };

enum {
	LIVE = 1,      /* a reload applies it without a restart */
	FLAG_ONLY = 2, /* not a config key */
};

struct opt_def {
	const char *key; /* config key; the flag is --key */
	enum kind kind;
	size_t off, width;
	uint64_t min, max; /* numbers, durations (ns) and sizes; strings: min 1 = not empty */
	unsigned flags;
	const char *arg;
	const char *help;
};

#define F(field) offsetof(struct profd_opts, field), sizeof(((struct profd_opts *)0)->field)

/*
 * The one definition of every setting. Adding a setting: a field in struct
 * profd_opts, its default in options_defaults() and one line here; the flag,
 * the config key, --help, --print-config, `profctl status` and reload follow.
 */
static const struct opt_def defs[] = {
	{ "config", K_STR, F(config), 1, 0, FLAG_ONLY, "FILE",
	  "configuration file (default " PROFD_DEFAULT_CONFIG ", when it exists)" },
	{ "state-dir", K_STR, F(state_dir), 1, 0, 0, "DIR", "where profiles are stored" },
	{ "socket", K_STR, F(socket), 1, 0, 0, "PATH", "control socket" },
	{ "socket-group", K_STR, F(socket_group), 0, 0, LIVE, "GROUP",
	  "group that may use the control socket (status only; flush and reload are root's); empty: profd's own group" },
	{ "state-group", K_STR, F(state_group), 0, 0, 0, "GROUP",
	  "group that may read the stored profiles (profctl export as a user); empty: profd's user and root only" },
	{ "frequency", K_UINT, F(frequency), 1, 10000, LIVE, "HZ", "samples per second per CPU" },
	{ "flush-interval", K_DUR, F(flush_interval_ns), 100 * MS, 86400 * SEC, LIVE, "DUR",
	  "write the open window this often" },
	{ "drain-interval", K_DUR, F(drain_interval_ns), 10 * MS, 60 * SEC, LIVE, "DUR",
	  "read the kernel maps this often" },
	{ "retention", K_DUR, F(retention_ns), 60 * SEC, 3650 * 86400 * SEC, LIVE, "DUR",
	  "delete windows older than this" },
	{ "max-disk", K_SIZE, F(max_disk), 1 << 20, 1ULL << 50, LIVE, "SIZE",
	  "keep the state directory under this size" },
	{ "unwind", K_UNWIND, F(unwind), 0, 0, 0, "fp|dwarf|auto", "user stack unwinding" },
	{ "unwind-memory", K_SIZE, F(unwind_memory), 1 << 20, 1ULL << 34, 0, "SIZE",
	  "kernel memory for DWARF unwind tables" },
	{ "unwind-snapshots", K_STR, F(unwind_snapshots), 0, 0, FLAG_ONLY, "PID:FILE",
	  "test mode: append the DWARF walker's snapshots of PID's samples to FILE "
	  "(tests/tools/unwind_check)" },
	{ "offcpu", K_BOOL, F(offcpu), 0, 0, 0, "yes|no", "record where threads block (off-CPU time)" },
	{ "offcpu-min", K_DUR, F(offcpu_min_ns), 0, SEC, 0, "DUR",
	  "shorter blocks and run-queue waits are not counted" },
	{ "offcpu-stack-interval", K_DUR, F(offcpu_stack_interval_ns), 0, SEC, 0, "DUR",
	  "a thread blocking again this soon from the same place reuses its stacks (0: always capture)" },
	{ "offcpu-pids", K_STR, F(offcpu_pids), 0, 0, 0, "PID,...",
	  "record off-CPU time of these processes only, selected in the kernel (empty: all)" },
	{ "offcpu-cgroups", K_STR, F(offcpu_cgroups), 0, 0, 0, "PATH,...",
	  "record off-CPU time in these cgroup v2 paths and below only (as profctl --cgroup spells them)" },
	{ "offcpu-sample", K_UINT, F(offcpu_sample), 1, 1000000, 0, "N",
	  "record 1 in N switch-outs of each thread, its time x N (1: every one)" },
	{ "offcpu-max-rate", K_UINT, F(offcpu_max_rate), 0, 100000000, 0, "N",
	  "a CPU switching more often per second samples its frequent switchers' switch-outs, "
	  "weighted (0: never)" },
	{ "runqueue-stack", K_RUNQ_STACK, F(runqueue_stack), 0, 0, 0, "entry|kernel|user",
	  "stacks of run-queue waits: the kernel entry frame, kernel frames only, or with the preempted user stack" },
	{ "counts-entries", K_UINT, F(counts_entries), 64, 1 << 24, 0, "N",
	  "kernel counts map entries per generation" },
	{ "stacks-entries", K_UINT, F(stacks_entries), 64, 1 << 22, 0, "N",
	  "kernel stacks map entries per generation" },
	{ "max-files", K_UINT, F(max_files), 16, 65536, 0, "N", "ELF files held in the symbol cache" },
	{ "symbol-cache", K_SIZE, F(symbol_cache), 1 << 20, 1ULL << 40, 0, "SIZE",
	  "memory for the symbols of the files in the symbol cache" },
	{ "max-pids", K_UINT, F(max_pids), 16, 1 << 20, 0, "N", "processes whose mappings are cached" },
	{ "cache-memory", K_SIZE, F(cache_memory), 8 << 20, 1ULL << 40, 0, "SIZE",
	  "one budget for everything cached: symbols, process mappings, perf maps (a file may take 1/4, a process's mappings 1/16)" },
	{ "zstd-level", K_UINT, F(zstd_level), 1, 19, LIVE, "N", "compression level of stored windows" },
	{ "rollup", K_BOOL, F(rollup), 0, 0, LIVE, "yes|no",
	  "merge windows older than 1 h into 1 min windows, older than 1 day into 10 min ones" },
	{ "rollup-pressure", K_UINT, F(rollup_pressure), 0, 100, LIVE, "PCT",
	  "past this share of max-disk (percent), windows older than 1 h move to the next rollup tier "
	  "ahead of their age, oldest first, before retention removes any (0: by age only)" },
	{ "summary-memory", K_SIZE, F(summary_memory), 1 << 20, 1ULL << 40, 0, "SIZE",
	  "memory for merging an hour's summary or a day file: past it an hour's summary drops its copy "
	  "with pids, then is not built, and a day file is not built (queries read the windows or the "
	  "hours instead)" },
	{ "rollup-by-name", K_DUR, F(rollup_by_name_ns), 0, 3650 * 86400 * SEC, 0, "DUR",
	  "rollups of windows older than this keep process names and functions, not pids and pcs "
	  "(0: keep them at every age)" },
	{ "call-pcs", K_BOOL, F(call_pcs), 0, 0, 0, "yes|no",
	  "windows as flushed keep the pc of every calling frame (no: a leaf's pc, callers by "
	  "function, about a quarter fewer bytes)" },
	{ "leaf-pcs", K_BOOL, F(leaf_pcs), 0, 0, 0, "yes|no",
	  "windows as flushed keep the pc a named leaf frame was sampled at (no: named leaves by "
	  "function as callers, names and shares the same, about a tenth fewer bytes; pprof "
	  "addresses and lines inside a leaf function are lost)" },
	{ "python-free-hook", K_BOOL, F(python_free_hook), 0, 0, 0, "yes|no",
	  "count the code object frees of each CPython process that has lived python-free-hook-after "
	  "and is being sampled (a uprobe on code_dealloc in that process only: a trap per free) so "
	  "that samples name code objects seen before without reading them (no: read them at every "
	  "sample)" },
	{ "python-free-hook-after", K_DUR, F(python_free_hook_after_ns), 0, 3600 * SEC, 0, "DUR",
	  "how long a CPython process lives before its frees are counted (0: at its first sample)" },
	{ "python-free-hook-max-rate", K_UINT, F(python_free_hook_max_rate), 0, 100000000, 0, "N",
	  "code object frees per second above which a process's count stops, over 4 s (0: no bound)" },
	{ "log-level", K_LEVEL, F(log_level), 0, 0, LIVE, "LEVEL", "error, warning, info or debug" },
};
#define NDEFS (sizeof(defs) / sizeof(defs[0]))

void options_defaults(struct profd_opts *o)
{
	*o = (struct profd_opts){
		.state_dir = "/var/lib/profd",
		.socket = "/run/profd/profd.sock",
		.frequency = 99,
		.flush_interval_ns = 10 * SEC,
		.drain_interval_ns = SEC,
		.retention_ns = 7 * 86400 * SEC,
		.max_disk = 1ULL << 30,
		.unwind = UNWIND_AUTO,
		.unwind_memory = 16 << 20,
		.offcpu = 1,
		.offcpu_min_ns = 1000,
		.offcpu_stack_interval_ns = MS,
		.offcpu_sample = 1,
		.offcpu_max_rate = 10000,
		.log_level = LOG_LVL_INFO,
		.counts_entries = 16384,
		.stacks_entries = 8192,
		.max_files = 256,
		.symbol_cache = 24 << 20,
		.max_pids = 1024,
		.cache_memory = 64 << 20,
		.summary_memory = 64 << 20,
		.zstd_level = 9,
		.runqueue_stack = RUNQ_STACK_ENTRY,
		.rollup = 1,
		.leaf_pcs = 1,
		.rollup_pressure = 75,
		.rollup_by_name_ns = 3600 * SEC,
		.python_free_hook = 1,
		.python_free_hook_after_ns = 2 * SEC,
		.python_free_hook_max_rate = 2000,
	};
}

static void *field(const struct profd_opts *o, const struct opt_def *d)
{
	return (char *)o + d->off;
}

static uint64_t get_num(const struct profd_opts *o, const struct opt_def *d)
{
	if (d->width == 4)
		return *(uint32_t *)field(o, d);
	return *(uint64_t *)field(o, d);
}

static void set_num(struct profd_opts *o, const struct opt_def *d, uint64_t v)
{
	if (d->width == 4)
		*(uint32_t *)field(o, d) = (uint32_t)v;
	else
		*(uint64_t *)field(o, d) = v;
}

/* Durations and sizes in the largest unit that is exact, so they parse back unchanged. */
static void fmt_duration(int64_t ns, char *buf, size_t len)
{
	static const struct { const char *u; int64_t ns; } units[] = {
		{ "d", 86400 * SEC }, { "h", 3600 * SEC }, { "m", 60 * SEC }, { "s", SEC },
		{ "ms", MS }, { "us", 1000 },
	};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (ns % units[i].ns == 0) {
			snprintf(buf, len, "%lld%s", (long long)(ns / units[i].ns), units[i].u);
			return;
		}
	}
	snprintf(buf, len, "%lldus", (long long)(ns / 1000));
}

static void fmt_size(uint64_t v, char *buf, size_t len)
{
	static const char units[] = "TGMK";

	for (int i = 0; i < 4; i++) {
		unsigned shift = 10 * (4 - i);

		if (v && v % (1ULL << shift) == 0) {
			snprintf(buf, len, "%llu%c", (unsigned long long)(v >> shift), units[i]);
			return;
		}
	}
	snprintf(buf, len, "%llu", (unsigned long long)v);
}

static void fmt_value(const struct profd_opts *o, const struct opt_def *d, char *buf, size_t len)
{
	static const char *const unwind[] = { "auto", "fp", "dwarf" };
	static const char *const runq[] = { "kernel", "user", "entry" };
	int i;

	switch (d->kind) {
	case K_STR: snprintf(buf, len, "%s", (const char *)field(o, d)); break;
	case K_UINT: snprintf(buf, len, "%llu", (unsigned long long)get_num(o, d)); break;
	case K_DUR: fmt_duration((int64_t)get_num(o, d), buf, len); break;
	case K_SIZE: fmt_size(get_num(o, d), buf, len); break;
	case K_BOOL: snprintf(buf, len, "%s", get_num(o, d) ? "yes" : "no"); break;
	case K_UNWIND:
		i = (int)get_num(o, d);
		snprintf(buf, len, "%s", i >= 0 && i < 3 ? unwind[i] : "?");
		break;
	case K_RUNQ_STACK:
		i = (int)get_num(o, d);
		snprintf(buf, len, "%s", i >= 0 && i < 3 ? runq[i] : "?");
		break;
	case K_LEVEL:
		i = (int)get_num(o, d);
		snprintf(buf, len, "%s", i <= LOG_LVL_ERR ? "error" : i == LOG_LVL_WARN ? "warning" :
					 i == LOG_LVL_INFO ? "info" : "debug");
		break;
	}
}

static int range_err(const struct opt_def *d, char *why, size_t len)
{
	char a[32], b[32];

	if (d->kind == K_DUR) {
		fmt_duration(d->min, a, sizeof(a));
		fmt_duration(d->max, b, sizeof(b));
	} else if (d->kind == K_SIZE) {
		fmt_size(d->min, a, sizeof(a));
		fmt_size(d->max, b, sizeof(b));
	} else {
		snprintf(a, sizeof(a), "%llu", (unsigned long long)d->min);
		snprintf(b, sizeof(b), "%llu", (unsigned long long)d->max);
	}
	snprintf(why, len, "expected %s from %s to %s",
		 d->kind == K_DUR ? "a duration" : d->kind == K_SIZE ? "a size" : "a whole number", a, b);
	return -EINVAL;
}

static int set_value(struct profd_opts *o, const struct opt_def *d, const char *val, char *why, size_t len)
{
	uint64_t v;
	int64_t ns;
	int i;

	switch (d->kind) {
	case K_STR:
		if (strlen(val) >= d->width)
			return snprintf(why, len, "longer than %zu bytes", d->width - 1), -EINVAL;
		if (d->min && !*val)
			return snprintf(why, len, "must not be empty"), -EINVAL;
		/* Checked here so a bad group is refused where it was written, not at bind time. */
		if ((field(o, d) == o->socket_group || field(o, d) == o->state_group) && *val && !getgrnam(val))
			return snprintf(why, len, "no group named '%s'", val), -EINVAL;
		if (field(o, d) == o->offcpu_pids && options_each_pid(val, NULL, NULL, why, len))
			return -EINVAL;
		if (field(o, d) == o->offcpu_cgroups && options_each_cgroup(val, NULL, NULL, why, len))
			return -EINVAL;
		if (field(o, d) == o->unwind_snapshots && *val &&
		    options_snapshots(val, NULL, NULL))
			return snprintf(why, len, "expected PID:FILE"), -EINVAL;
		strcpy(field(o, d), val);
		return 0;
	case K_UINT:
		if (parse_u64(val, &v) || v < d->min || v > d->max)
			return range_err(d, why, len);
		set_num(o, d, v);
		return 0;
	case K_DUR:
		if (parse_duration_ns(val, &ns)) {
			snprintf(why, len, "expected a duration like 500ms, 10s, 5m, 2h, 7d");
			return -EINVAL;
		}
		if (ns < (int64_t)d->min || ns > (int64_t)d->max)
			return range_err(d, why, len);
		set_num(o, d, (uint64_t)ns);
		return 0;
	case K_SIZE:
		if (parse_size(val, &v)) {
			snprintf(why, len, "expected a size like 512M or 1G");
			return -EINVAL;
		}
		if (v < d->min || v > d->max)
			return range_err(d, why, len);
		set_num(o, d, v);
		return 0;
	case K_BOOL:
		if (!strcasecmp(val, "yes") || !strcasecmp(val, "true") || !strcasecmp(val, "on") || !strcmp(val, "1"))
			set_num(o, d, 1);
		else if (!strcasecmp(val, "no") || !strcasecmp(val, "false") || !strcasecmp(val, "off") || !strcmp(val, "0"))
			set_num(o, d, 0);
		else
			return snprintf(why, len, "expected yes or no"), -EINVAL;
		return 0;
	case K_UNWIND:
		if (!strcmp(val, "auto"))
			set_num(o, d, UNWIND_AUTO);
		else if (!strcmp(val, "fp"))
			set_num(o, d, UNWIND_FP);
		else if (!strcmp(val, "dwarf"))
			set_num(o, d, UNWIND_DWARF);
		else
			return snprintf(why, len, "expected fp, dwarf or auto"), -EINVAL;
		return 0;
	case K_RUNQ_STACK:
		if (!strcmp(val, "kernel"))
			set_num(o, d, RUNQ_STACK_KERNEL);
		else if (!strcmp(val, "user"))
			set_num(o, d, RUNQ_STACK_USER);
		else if (!strcmp(val, "entry"))
			set_num(o, d, RUNQ_STACK_ENTRY);
		else
			return snprintf(why, len, "expected entry, kernel or user"), -EINVAL;
		return 0;
	case K_LEVEL:
		if (log_parse_level(val, &i))
			return snprintf(why, len, "expected error, warning, info or debug"), -EINVAL;
		set_num(o, d, (uint64_t)i);
		return 0;
	}
	return -EINVAL;
}

/* Calls fn for each comma-separated item of list (spaces around items allowed; empty items refused). */
static int each_item(const char *list, int (*fn)(const char *item, void *arg), void *arg, char *why, size_t len)
{
	char item[4096];
	const char *p = list;

	while (*p) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		int err;

		while (n && (*p == ' ' || *p == '\t'))
			p++, n--;
		while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (!n)
			return snprintf(why, len, "empty item in a comma-separated list"), -EINVAL;
		if (n >= sizeof(item))
			return snprintf(why, len, "item longer than %zu bytes", sizeof(item) - 1), -EINVAL;
		memcpy(item, p, n);
		item[n] = 0;
		err = fn(item, arg);
		if (err)
			return err;
		p += strcspn(p, ",");
		if (*p)
			p++;
	}
	return 0;
}

struct each_ctx {
	int (*pid_fn)(uint32_t pid, void *arg);
	int (*cg_fn)(uint64_t id, unsigned level, void *arg);
	void *arg;
	char *why;
	size_t len;
};

static int one_pid(const char *item, void *arg)
{
	struct each_ctx *c = arg;
	uint64_t v;

	/* 4194304: PID_MAX_LIMIT, the largest pid_max the kernel accepts. */
	if (parse_u64(item, &v) || v < 1 || v > 4194304)
		return snprintf(c->why, c->len, "'%.32s' is not a process id", item), -EINVAL;
	return c->pid_fn ? c->pid_fn((uint32_t)v, c->arg) : 0;
}

static int one_cgroup(const char *item, void *arg)
{
	struct each_ctx *c = arg;
	char *root = cgroups__mount(), path[8192], real[PATH_MAX];
	size_t rl = root ? strlen(root) : 0;
	unsigned level = 0;
	struct statfs sf;
	struct stat st;
	int ret = 0;

	if (!root)
		return -ENOMEM;
	/* Paths as profctl --cgroup and the stored profiles spell them: below the mount; or the full path. */
	if (!strncmp(item, root, rl) && (item[rl] == '/' || !item[rl]))
		snprintf(path, sizeof(path), "%s", item);
	else
		snprintf(path, sizeof(path), "%s%s%s", root, *item == '/' ? "" : "/", item);
	/* The level is counted on the resolved path: "a/../b" and symlinks must not skew it. */
	if (!realpath(path, real) || stat(real, &st) || !S_ISDIR(st.st_mode)) {
		snprintf(c->why, c->len, "no cgroup directory %.200s", path);
		ret = -EINVAL;
	} else if (statfs(real, &sf) || sf.f_type != CGROUP2_SUPER_MAGIC ||
		   strncmp(real, root, rl) || (real[rl] != '/' && real[rl])) {
		snprintf(c->why, c->len, "%.200s is not in the cgroup v2 hierarchy (%s)", real, root);
		ret = -EINVAL;
	}
	for (const char *q = real + rl; !ret && *q; q++)
		level += *q == '/';
	/* The BPF side looks at 32 ancestor levels. */
	if (!ret && level >= 32) {
		snprintf(c->why, c->len, "%.200s is nested deeper than 31 levels", real);
		ret = -EINVAL;
	}
	free(root);
	if (ret)
		return ret;
	return c->cg_fn ? c->cg_fn(st.st_ino, level, c->arg) : 0;
}

int options_each_pid(const char *list, int (*fn)(uint32_t pid, void *arg), void *arg, char *why, size_t len)
{
	struct each_ctx c = { .pid_fn = fn, .arg = arg, .why = why, .len = len };

	return each_item(list, one_pid, &c, why, len);
}

int options_each_cgroup(const char *list, int (*fn)(uint64_t id, unsigned level, void *arg), void *arg,
			char *why, size_t len)
{
	struct each_ctx c = { .cg_fn = fn, .arg = arg, .why = why, .len = len };

	return each_item(list, one_cgroup, &c, why, len);
}

static int config_set(const char *key, const char *val, char *why, size_t len, void *arg)
{
	for (size_t i = 0; i < NDEFS; i++) {
		if (strcmp(defs[i].key, key) || (defs[i].flags & FLAG_ONLY))
			continue;
		if (set_value(arg, &defs[i], val, why, len)) {
			char msg[256];

			/* Prefix the value the reason is about: "invalid value 'x': ...". */
			snprintf(msg, sizeof(msg), "invalid value '%.64s': %s", val, why);
			snprintf(why, len, "%s", msg);
			return -EINVAL;
		}
		return 0;
	}
	snprintf(why, len, "unknown key; see profd --help for the keys");
	return -ENOENT;
}

static void usage(FILE *f)
{
	struct profd_opts def;

	options_defaults(&def);
	fprintf(f,
		"Usage: profd [OPTIONS]\n"
		"Always-on whole-host sampling profiler. Samples every CPU, folds stacks in\n"
		"the kernel, symbolizes them on the host and stores compressed windows.\n"
		"\n"
		"Every option is also a key of the configuration file (\"frequency = 49\");\n"
		"flags win over the file. Settings marked * are applied live on SIGHUP or\n"
		"`reload`; the others need a restart.\n"
		"\n");
	for (size_t i = 0; i < NDEFS; i++) {
		const struct opt_def *d = &defs[i];
		char flag[64], val[64] = "", lim[96] = "";

		if (d->kind == K_BOOL)
			snprintf(flag, sizeof(flag), "--%s, --no-%s", d->key, d->key);
		else
			snprintf(flag, sizeof(flag), "--%s %s", d->key, d->arg);
		if (d->kind == K_UINT)
			snprintf(lim, sizeof(lim), ", %llu..%llu", (unsigned long long)d->min,
				 (unsigned long long)d->max);
		if (!(d->flags & FLAG_ONLY))
			fmt_value(&def, d, val, sizeof(val));
		fprintf(f, "  %-26s %c %s%s", flag, d->flags & LIVE ? '*' : ' ', d->help, lim);
		if (d->flags & FLAG_ONLY)
			fputc('\n', f);
		else
			fprintf(f, " (default %s)\n", *val ? val : "none");
	}
	fprintf(f,
		"  %-26s   print the effective settings as a configuration file and exit\n"
		"  %-26s   this help\n"
		"\n"
		"DUR: 500ms, 10s, 5m, 2h, 7d. SIZE: bytes or 64K, 512M, 1G, 1T.\n"
		"Signals: SIGHUP re-reads the configuration; SIGTERM and SIGINT write the open\n"
		"window and exit. Exit status: 0 clean stop, 1 runtime error, 2 bad usage or\n"
		"configuration (each error is one line on stderr).\n"
		"\n"
		"Example: profd --state-dir /var/lib/profd --flush-interval 10s\n",
		"--print-config", "-h, --help");
}

/*
 * The effective settings as a documented config file: a setting at its
 * default stays commented out, so a later default still reaches it.
 * systemd/profd.conf is this output for the defaults.
 */
static void print_config(const struct profd_opts *o, FILE *f)
{
	struct profd_opts def;

	options_defaults(&def);
	fprintf(f,
		"# profd configuration: \"key = value\", one per line; '#' starts a comment.\n"
		"# Every key is also a command-line flag (--key value), and flags win.\n"
		"# An unknown key or a bad value stops profd with the file, line and key.\n"
		"# A reload (SIGHUP, systemctl reload profd) applies the keys marked [live]\n"
		"# and logs the others as needing a restart.\n"
		"# DUR: 500ms, 10s, 5m, 2h, 7d. SIZE: bytes or 64K, 512M, 1G, 1T.\n"
		"# Commented-out lines show the defaults.\n");
	for (size_t i = 0; i < NDEFS; i++) {
		const struct opt_def *d = &defs[i];
		char val[4096], dval[4096];

		if (d->flags & FLAG_ONLY)
			continue;
		fmt_value(o, d, val, sizeof(val));
		fmt_value(&def, d, dval, sizeof(dval));
		fprintf(f, "\n# %s%s", d->help, d->flags & LIVE ? " [live]" : "");
		if (d->kind == K_UINT)
			fprintf(f, "; %llu..%llu", (unsigned long long)d->min, (unsigned long long)d->max);
		else if (d->kind != K_STR)
			fprintf(f, "; %s", d->arg);
		fprintf(f, "\n%s%s = %s\n", strcmp(val, dval) ? "" : "#", d->key, val);
	}
}

struct flag_val {
	const struct opt_def *d;
	const char *val;
};

int options_load(struct profd_opts *o, int argc, char **argv, char *err, size_t errlen)
{
	enum { O_HELP = 1, O_PRINT, O_BASE = 256, O_NEG = 512 };
	struct option lo[2 * NDEFS + 3];
	struct flag_val *fv = calloc(argc > 0 ? argc : 1, sizeof(*fv));
	const char *config = NULL;
	char why[256];
	size_t n = 0, nfv = 0;
	int c, ret = 0, help = 0, print = 0;

	if (!fv)
		return snprintf(err, errlen, "out of memory"), -ENOMEM;
	for (size_t i = 0; i < NDEFS; i++) {
		lo[n++] = (struct option){ defs[i].key, defs[i].kind == K_BOOL ? optional_argument : required_argument,
					   0, O_BASE + (int)i };
		if (defs[i].kind == K_BOOL) {
			static char neg[NDEFS][40];

			snprintf(neg[i], sizeof(neg[i]), "no-%s", defs[i].key);
			lo[n++] = (struct option){ neg[i], no_argument, 0, O_NEG + (int)i };
		}
	}
	lo[n++] = (struct option){ "help", no_argument, 0, O_HELP };
	lo[n++] = (struct option){ "print-config", no_argument, 0, O_PRINT };
	lo[n] = (struct option){ 0 };

	/* First pass: collect, so the config file is read before any flag applies. */
	opterr = 0;
	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
		if (c == 'h' || c == O_HELP) {
			help = 1;
		} else if (c == O_PRINT) {
			print = 1;
		} else if (c >= O_NEG) {
			fv[nfv++] = (struct flag_val){ &defs[c - O_NEG], "no" };
		} else if (c >= O_BASE) {
			const struct opt_def *d = &defs[c - O_BASE];

			if (d->off == offsetof(struct profd_opts, config))
				config = optarg;
			else
				fv[nfv++] = (struct flag_val){ d, optarg ? optarg : "yes" };
		} else if (c == ':') {
			snprintf(err, errlen, "option %s needs a value; see profd --help", argv[optind - 1]);
			ret = -EINVAL;
			goto out;
		} else {
			snprintf(err, errlen, "unknown option '%s'; see profd --help", argv[optind - 1]);
			ret = -EINVAL;
			goto out;
		}
	}
	if (optind < argc) {
		snprintf(err, errlen, "unexpected argument '%s'; see profd --help", argv[optind]);
		ret = -EINVAL;
		goto out;
	}
	if (help) {
		usage(stdout);
		ret = 1;
		goto out;
	}

	if (config && !*config) {
		snprintf(err, errlen, "--config needs a file name; see profd --help");
		ret = -EINVAL;
		goto out;
	}
	o->config[0] = 0;
	ret = config_read(config ? config : PROFD_DEFAULT_CONFIG, config_set, o, err, errlen);
	if (ret == -ENOENT && !config) {
		ret = 0; /* the default file is optional; a named one is not */
	} else if (ret) {
		ret = -EINVAL;
		goto out;
	} else {
		snprintf(o->config, sizeof(o->config), "%s", config ? config : PROFD_DEFAULT_CONFIG);
	}

	for (size_t i = 0; i < nfv; i++) {
		if (set_value(o, fv[i].d, fv[i].val, why, sizeof(why))) {
			snprintf(err, errlen, "invalid value '%.64s' for --%s: %s; see profd --help", fv[i].val,
				 fv[i].d->key, why);
			ret = -EINVAL;
			goto out;
		}
	}
	if (print) {
		print_config(o, stdout);
		ret = 1;
	}
out:
	free(fv);
	return ret;
}

int options_parse(struct profd_opts *o, int argc, char **argv)
{
	char err[512];
	int ret = options_load(o, argc, argv, err, sizeof(err));

	if (ret < 0)
		fprintf(stderr, "profd: %s\n", err);
	return ret;
}

void options_foreach(const struct profd_opts *o, options_fn fn, void *arg)
{
	for (size_t i = 0; i < NDEFS; i++) {
		char val[4096];

		if (defs[i].flags & FLAG_ONLY)
			continue;
		fmt_value(o, &defs[i], val, sizeof(val));
		fn(defs[i].key, val, arg);
	}
}

void options_diff(const struct profd_opts *a, const struct profd_opts *b, options_diff_fn fn, void *arg)
{
	for (size_t i = 0; i < NDEFS; i++) {
		char va[4096], vb[4096];

		if (defs[i].flags & FLAG_ONLY)
			continue;
		fmt_value(a, &defs[i], va, sizeof(va));
		fmt_value(b, &defs[i], vb, sizeof(vb));
		if (strcmp(va, vb))
			fn(defs[i].key, va, vb, !!(defs[i].flags & LIVE), arg);
	}
}

int options_snapshots(const char *s, uint32_t *pid, const char **path)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end != ':' || !end[1] || !v || v > UINT32_MAX)
		return -EINVAL;
	if (pid)
		*pid = (uint32_t)v;
	if (path)
		*path = end + 1;
	return 0;
}
