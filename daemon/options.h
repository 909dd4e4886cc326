/* profd's settings: defaults, command-line flags (and the config file, later keys alike). */
#ifndef PROFD_OPTIONS_H
#define PROFD_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

enum unwind_mode { UNWIND_AUTO = 0, UNWIND_FP = 1, UNWIND_DWARF = 2 };

struct profd_opts {
	const char *config;
	const char *state_dir;
	const char *socket;
	unsigned frequency;
	int64_t flush_interval_ns;
	int64_t drain_interval_ns;
	int64_t retention_ns;
	uint64_t max_disk;
	int unwind;
	int offcpu;
	int log_level;
	uint32_t counts_entries;
	uint32_t stacks_entries;
	size_t max_files;
	size_t max_pids;
	int zstd_level;
};

void options_defaults(struct profd_opts *o);
/*
 * Parses argv over o. Returns 0, 1 when --help/--version was printed (exit
 * 0), or -EINVAL after printing a one-line error (exit 2).
 */
int options_parse(struct profd_opts *o, int argc, char **argv);

#endif
