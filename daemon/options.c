#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "options.h"
#include "parse.h"

#define MIN_FREQ 1
#define MAX_FREQ 10000

void options_defaults(struct profd_opts *o)
{
	*o = (struct profd_opts){
		.config = NULL,
		.state_dir = "/var/lib/profd",
		.socket = "/run/profd/profd.sock",
		.frequency = 99,
		.flush_interval_ns = 10 * 1000000000LL,
		.drain_interval_ns = 1000000000LL,
		.retention_ns = 7 * 86400 * 1000000000LL,
		.max_disk = 1ULL << 30,
		.unwind = UNWIND_AUTO,
		.offcpu = 1,
		.log_level = LOG_LVL_INFO,
		.counts_entries = 16384,
		.stacks_entries = 8192,
		.max_files = 256,
		.max_pids = 1024,
		.zstd_level = 3,
	};
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: profd [OPTIONS]\n"
		"Always-on whole-host sampling profiler. Samples every CPU, folds stacks in\n"
		"the kernel, symbolizes them on the host and stores compressed windows.\n"
		"\n"
		"  --config FILE          configuration file (key = value)\n"
		"  --state-dir DIR        where profiles are stored (default /var/lib/profd)\n"
		"  --socket PATH          control socket (default /run/profd/profd.sock)\n"
		"  --frequency HZ         samples per second per CPU, %d..%d (default 99)\n"
		"  --flush-interval DUR   write a window this often (default 10s)\n"
		"  --drain-interval DUR   read kernel maps this often (default 1s)\n"
		"  --retention DUR        delete windows older than this (default 7d)\n"
		"  --max-disk SIZE        keep the state dir under this size (default 1G)\n"
		"  --unwind fp|dwarf|auto user stack unwinding (default auto)\n"
		"  --no-offcpu            do not record off-CPU time\n"
		"  --counts-entries N     kernel counts map entries per generation (default 16384)\n"
		"  --stacks-entries N     kernel stacks map entries per generation (default 8192)\n"
		"  --zstd-level N         compression level 1..19 (default 3)\n"
		"  --log-level LEVEL      error, warning, info, debug (default info)\n"
		"  -h, --help             this help\n"
		"\n"
		"Example: profd --state-dir /var/lib/profd --flush-interval 10s\n",
		MIN_FREQ, MAX_FREQ);
}

static int bad(const char *opt, const char *val, const char *why)
{
	fprintf(stderr, "profd: invalid value '%s' for %s: %s; see profd --help\n", val, opt, why);
	return -EINVAL;
}

static int duration_opt(const char *name, const char *val, int64_t min, int64_t *out)
{
	int64_t d;

	if (parse_duration_ns(val, &d))
		return bad(name, val, "expected a duration like 500ms, 10s, 5m, 2h, 7d");
	if (d < min)
		return bad(name, val, "too short");
	*out = d;
	return 0;
}

static int u32_opt(const char *name, const char *val, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v;

	if (parse_u64(val, &v) || v < min || v > max) {
		char why[96];

		snprintf(why, sizeof(why), "expected a whole number from %llu to %llu",
			 (unsigned long long)min, (unsigned long long)max);
		return bad(name, val, why);
	}
	*out = v;
	return 0;
}

int options_parse(struct profd_opts *o, int argc, char **argv)
{
	enum { O_CONFIG = 256, O_STATE, O_SOCKET, O_FREQ, O_FLUSH, O_DRAIN, O_RET, O_DISK,
	       O_UNWIND, O_NOOFF, O_LOG, O_COUNTS, O_STACKS, O_ZSTD };
	static const struct option lo[] = {
		{ "config", required_argument, 0, O_CONFIG },
		{ "state-dir", required_argument, 0, O_STATE },
		{ "socket", required_argument, 0, O_SOCKET },
		{ "frequency", required_argument, 0, O_FREQ },
		{ "flush-interval", required_argument, 0, O_FLUSH },
		{ "drain-interval", required_argument, 0, O_DRAIN },
		{ "retention", required_argument, 0, O_RET },
		{ "max-disk", required_argument, 0, O_DISK },
		{ "unwind", required_argument, 0, O_UNWIND },
		{ "no-offcpu", no_argument, 0, O_NOOFF },
		{ "log-level", required_argument, 0, O_LOG },
		{ "counts-entries", required_argument, 0, O_COUNTS },
		{ "stacks-entries", required_argument, 0, O_STACKS },
		{ "zstd-level", required_argument, 0, O_ZSTD },
		{ "help", no_argument, 0, 'h' },
		{ 0 },
	};
	uint64_t v;
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
		switch (c) {
		case O_CONFIG: o->config = optarg; break;
		case O_STATE: o->state_dir = optarg; break;
		case O_SOCKET: o->socket = optarg; break;
		case O_FREQ:
			if (u32_opt("--frequency", optarg, MIN_FREQ, MAX_FREQ, &v))
				return -EINVAL;
			o->frequency = v;
			break;
		case O_FLUSH:
			if (duration_opt("--flush-interval", optarg, 100000000LL, &o->flush_interval_ns))
				return -EINVAL;
			break;
		case O_DRAIN:
			if (duration_opt("--drain-interval", optarg, 10000000LL, &o->drain_interval_ns))
				return -EINVAL;
			break;
		case O_RET:
			if (duration_opt("--retention", optarg, 60000000000LL, &o->retention_ns))
				return -EINVAL;
			break;
		case O_DISK:
			if (parse_size(optarg, &o->max_disk))
				return bad("--max-disk", optarg, "expected a size like 512M or 1G");
			if (o->max_disk < (1ULL << 20))
				return bad("--max-disk", optarg, "at least 1M");
			break;
		case O_UNWIND:
			if (!strcmp(optarg, "auto"))
				o->unwind = UNWIND_AUTO;
			else if (!strcmp(optarg, "fp"))
				o->unwind = UNWIND_FP;
			else if (!strcmp(optarg, "dwarf"))
				o->unwind = UNWIND_DWARF;
			else
				return bad("--unwind", optarg, "expected fp, dwarf or auto");
			break;
		case O_NOOFF: o->offcpu = 0; break;
		case O_LOG:
			if (log_parse_level(optarg, &o->log_level))
				return bad("--log-level", optarg, "expected error, warning, info or debug");
			break;
		case O_COUNTS:
			if (u32_opt("--counts-entries", optarg, 64, 1 << 24, &v))
				return -EINVAL;
			o->counts_entries = v;
			break;
		case O_STACKS:
			if (u32_opt("--stacks-entries", optarg, 64, 1 << 22, &v))
				return -EINVAL;
			o->stacks_entries = v;
			break;
		case O_ZSTD:
			if (u32_opt("--zstd-level", optarg, 1, 19, &v))
				return -EINVAL;
			o->zstd_level = v;
			break;
		case 'h':
			usage(stdout);
			return 1;
		case ':':
			fprintf(stderr, "profd: option %s needs a value; see profd --help\n", argv[optind - 1]);
			return -EINVAL;
		default:
			fprintf(stderr, "profd: unknown option '%s'; see profd --help\n", argv[optind - 1]);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "profd: unexpected argument '%s'; see profd --help\n", argv[optind]);
		return -EINVAL;
	}
	return 0;
}
