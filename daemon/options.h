/*
 * profd's settings. One table (options.c) defines each setting once: its
 * command-line flag --KEY, its config-file key KEY, its help, its limits and
 * whether a reload (SIGHUP) can change it live. Precedence: built-in default,
 * then the config file, then flags.
 */
#ifndef PROFD_OPTIONS_H
#define PROFD_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#define PROFD_DEFAULT_CONFIG "/etc/profd/profd.conf"

enum unwind_mode { UNWIND_AUTO = 0, UNWIND_FP = 1, UNWIND_DWARF = 2 };
/* Stacks of a run-queue wait: the preempted user stack is nearly always a new one. */
/* entry: kernel frames sampled, the store keeps the kernel entry frame (the default). */
enum runq_stack { RUNQ_STACK_KERNEL = 0, RUNQ_STACK_USER = 1, RUNQ_STACK_ENTRY = 2 };

/* Plain values and fixed buffers: a copy is an assignment, nothing to free. */
struct profd_opts {
	char config[4096];       /* the file that was read; "" when none */
	char state_dir[4096];
	char socket[108];        /* sizeof(sockaddr_un.sun_path) */
	char socket_group[64];   /* "" : root only */
	char state_group[64];    /* "" : the stored profiles are root's only */
	unsigned frequency;
	int64_t flush_interval_ns;
	int64_t drain_interval_ns;
	int64_t retention_ns;
	uint64_t max_disk;
	int unwind;
	uint64_t unwind_memory;  /* kernel memory for DWARF unwind tables (rows) */
	int offcpu;
	int64_t offcpu_min_ns;
	int64_t offcpu_stack_interval_ns;
	char offcpu_pids[1024];     /* "PID,..." : off-CPU of these processes only; "" : all */
	char offcpu_cgroups[4096];  /* "PATH,..." : of these cgroups and below only; "" : all */
	uint32_t offcpu_sample;     /* record 1 in N switch-outs of each thread */
	uint32_t offcpu_max_rate;   /* switch-outs per second per CPU recorded exactly (0: all) */
	int runqueue_stack;         /* enum runq_stack */
	int log_level;
	uint32_t counts_entries;
	uint32_t stacks_entries;
	size_t max_files;
	uint64_t symbol_cache;   /* bytes of parsed symbols kept (beside max_files) */
	size_t max_pids;
	uint64_t cache_memory;   /* one budget for the symbolizer's caches */
	int zstd_level;
	int rollup;
	unsigned rollup_pressure;   /* percent of max_disk past which rollups go ahead of age; 0: never */
	uint64_t summary_memory;    /* what a summary's or a day's merged profiles may take */
	int call_pcs;               /* flushed windows keep every caller's pc */
	int leaf_pcs;               /* flushed windows keep a named leaf's pc */
	int python_free_hook;       /* a uprobe on a long-lived CPython's code_dealloc (bpf/pyfree.bpf.c) */
	int64_t python_free_hook_after_ns;   /* its age before it is hooked */
	uint32_t python_free_hook_max_rate;  /* frees per second above which it is unhooked (0: none) */
	int64_t rollup_by_name_ns; /* 0: rollups keep pids and pcs at every age */
	char unwind_snapshots[4096]; /* test mode "PID:FILE"; "" : off */
};

void options_defaults(struct profd_opts *o);
/*
 * Defaults, then the config file (--config FILE, else /etc/profd/profd.conf
 * when it exists), then the flags in argv. Returns 0, 1 when --help was
 * printed (exit 0), or -EINVAL with a one-line reason in err (exit 2).
 */
int options_load(struct profd_opts *o, int argc, char **argv, char *err, size_t errlen);
/* options_load printing the reason to stderr as "profd: ...". */
int options_parse(struct profd_opts *o, int argc, char **argv);

/*
 * The items of --offcpu-pids (process ids) and --offcpu-cgroups (cgroup v2
 * directories, relative to the cgroup2 mount or under it: their id, the
 * inode number BPF sees, and their depth below the root), comma-separated. fn may
 * be NULL to only check. Returns 0, or -EINVAL with the reason in why.
 */
int options_each_pid(const char *list, int (*fn)(uint32_t pid, void *arg), void *arg, char *why, size_t len);
int options_each_cgroup(const char *list, int (*fn)(uint64_t id, unsigned level, void *arg), void *arg,
			char *why, size_t len);

/*
 * --unwind-snapshots "PID:FILE": the walker's snapshots of PID's samples go
 * to FILE (lib/usnap), for tests/tools/unwind_check. Sets *pid and *path
 * (inside s); -EINVAL when malformed. path may be NULL to only check.
 */
int options_snapshots(const char *s, uint32_t *pid, const char **path);

/* Every setting that has a config key, with its value as the config file would spell it. */
typedef void (*options_fn)(const char *key, const char *value, void *arg);
void options_foreach(const struct profd_opts *o, options_fn fn, void *arg);

/* Every setting that differs between a and b; live: a reload can apply it. */
typedef void (*options_diff_fn)(const char *key, const char *old, const char *new, int live, void *arg);
void options_diff(const struct profd_opts *a, const struct profd_opts *b, options_diff_fn fn, void *arg);

#endif
