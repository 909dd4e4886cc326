/* The state directory: append-only segment files of compressed windows, an index, retention. */
#ifndef PROFD_STORE_H
#define PROFD_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"

struct store;

/* Windows that ended age_ns ago or more are merged into windows of window_ns. */
struct store_rollup {
	int64_t age_ns, window_ns;
};
#define STORE_MAX_TIERS 4

/* Steps of a rollup, for crash tests (store_opts.crash_point). */
enum {
	STORE_CRASH_ROLL_WRITING = 1, /* the temporary file has its first record */
	STORE_CRASH_ROLL_WRITTEN,     /* it is complete and synced */
	STORE_CRASH_ROLL_RENAMED,     /* it replaced the segment; the directory is not synced yet */
};

struct store_opts {
	const char *dir;
	int writer;               /* 1: profd (creates dir 0700, recovers torn tails); 0: reader */
	/* Writer: the directory 0750 and the segments 0640, of this group, for readers that are not root. */
	int group_read;
	unsigned group_gid;
	int zstd_level;           /* 0: default */
	int rollup_zstd_level;    /* rolled-up segments and day files; 0: default (19) */
	int64_t max_age_ns;       /* retention by age; 0: none */
	uint64_t max_bytes;       /* retention by total size; 0: none */
	uint64_t segment_bytes;   /* start a new segment past this size; 0: default */
	int64_t segment_span_ns;  /* or past this time span; 0: default */
	uint32_t chain_records;   /* records per chain (key + deltas); 0: default (30); 1: keys only */
	/* Rollup tiers, ages ascending (window_ns 0 ends the list); all zero: 1 h -> 1 min, 1 day -> 10 min. */
	struct store_rollup rollup[STORE_MAX_TIERS];
	int no_rollup;
	/*
	 * Rollups into windows that ended this long ago or more also merge by
	 * function and process name (pid and tid 0, a named frame's offset 0),
	 * as summaries do: docs/FORMAT.md, "Rollups". 0: default (1 h, every
	 * default tier); < 0: rollups are lossless apart from time.
	 */
	int64_t named_age_ns;
	/*
	 * Past this share of max_bytes (percent), sealed segments older than
	 * the first tier's age are rolled up into their next tier ahead of
	 * their age, oldest first, before retention by size has to remove
	 * them (docs/FORMAT.md, "Rollups by pressure"); 0: default (75);
	 * < 0: by age only.
	 */
	int rollup_pressure_pct;
	uint32_t compact_windows; /* flushed windows one store__compact call reads; 0: default (20 or 30) */
	/*
	 * Thread CPU time one store__compact call stops at, about (a step stops
	 * before a record or a piece of a record's compression that would take
	 * it past this); 0: default (50 ms; none with compact_windows).
	 */
	int64_t compact_cpu_ns;
	/*
	 * Rollups', summaries' and days' records of a profile at least this big
	 * (samples + 4 x stacks, about what encoding it costs) are encoded on a
	 * thread of their own while store__compact calls return, and written
	 * by a later call; 0: default (131072, some 30 ms of encoding); < 0:
	 * always in the calling thread. The files are the same either way.
	 * A day file's merge of a segment's summary record of at least this
	 * many raw bytes runs on such a thread too, and so does a summary's
	 * first read of its segment (decode and merge), a call's records at a
	 * time, when their raw bytes add up to a quarter of this or more.
	 */
	int64_t encode_thread_min;
	/*
	 * Memory a summary's or a day's merged profiles may take (bytes, as
	 * profile__mem_bytes counts): past it a summary drops its record with
	 * pids, then is not built, and a day file is not built (queries read
	 * what they stand for); 0: default (64 MiB).
	 */
	uint64_t summary_mem_max;
	/*
	 * Records per chain in rolled-up segments (docs/FORMAT.md, "Chains");
	 * 0: default (60, an hour of 1-minute windows).
	 */
	uint32_t rollup_chain_records;
	/*
	 * Named windows fold each entry under 1/fold_share of its kind's total
	 * into its callers (docs/FORMAT.md, "Rollups"); 0: default (10000);
	 * < 0: they fold nothing.
	 */
	int64_t fold_share;
	/*
	 * Off-CPU and run-queue values are written in units of this many ns,
	 * rounded with the error carried within each thread and kind
	 * (docs/FORMAT.md, "Value units"); 0: nanoseconds, exact.
	 */
	uint64_t value_unit_ns;
	/*
	 * Windows appended keep their leaf frames as they are and their callers
	 * by function: a named caller at one pc per function, a run of unnamed
	 * callers in one module as its module frame (docs/FORMAT.md, "Callers
	 * by function"); 0: every frame as appended.
	 */
	int calls_by_function;
	/*
	 * With calls_by_function: a named leaf (user, kernel or JIT) is written
	 * at its function's one pc as well (docs/FORMAT.md, "Callers by
	 * function"): names and shares unchanged, the pc inside the leaf
	 * function lost; 0: leaves as appended.
	 */
	int leaf_by_function;
	/*
	 * Run-queue entries of windows appended keep their stack up to its
	 * first kernel frame, the kernel entry they were preempted in
	 * (docs/FORMAT.md, "Run-queue entries by kernel entry"); 0: their
	 * stacks as appended.
	 */
	int runq_entry_frame;
	/* Tests only: called at each step of a rollup (STORE_CRASH_*), e.g. to die there. */
	void (*crash_point)(void *arg, int step);
	void *crash_arg;
	/* Non-fatal damage found while opening or reading (corrupt record, torn tail). */
	void (*warn)(void *arg, const char *msg);
	void *warn_arg;
};

struct store_window_info {
	int64_t start_ns, end_ns;   /* CLOCK_REALTIME */
	uint64_t samples;           /* on-CPU samples in the window */
	uint64_t lost;              /* samples lost, all reasons */
	uint64_t bytes;             /* record size on disk */
	const char *segment;        /* file name inside the state dir */
	uint64_t offset;            /* record offset in that file */
	uint32_t windows;           /* flushed windows merged into this one (1 unless rolled up) */
	int level;                  /* 0: as flushed; n: rolled up by tier n */
	int summary;                /* a summary record (STORE_READ_SUMMARIES): merged by function and name */
};

struct store_stats {
	uint64_t windows_written, bytes_written, write_errors, windows_dropped;
	uint64_t segments, bytes_on_disk, segments_removed, corrupt_records;
	uint64_t rollups, windows_rolled; /* segments rewritten, windows merged into them */
	uint64_t summaries, summary_bytes; /* summary files on disk (bytes_on_disk counts them too) */
	uint64_t summaries_built;          /* summary files written by this writer */
	uint64_t days, days_built;         /* day summary files on disk, written by this writer */
	uint64_t records_decoded;          /* records this store decoded (queries, rollups, summaries) */
	uint64_t cpu_folded, cpu_named;    /* named windows written: on-CPU samples under "[folded]", all */
	/* Records encoded, and day merges, on a thread of their own (store_opts.encode_thread_min); 1 while one is. */
	uint64_t records_threaded, encoding;
	/* store_opts.summary_mem_max: summaries written without pids, summaries and days not built. */
	uint64_t summaries_no_pids, summaries_over_mem, days_over_mem;
	/* The largest merged profiles by name (summaries and days) and with pids, bytes. */
	uint64_t summary_mem_peak, summary_pids_mem_peak;
	/* A summary's reads of its segment's records on that thread (encoding is 1 meanwhile too). */
	uint64_t reads_threaded;
};

int store__open(const struct store_opts *o, struct store **out);
void store__close(struct store *s);

/* Appends one window as a record (encode, compress, checksum, write). */
int store__append(struct store *s, const struct profile *window);
/* Removes whole segments, oldest first, past the age or size limit. */
int store__retain(struct store *s, int64_t now_ns);
/*
 * One bounded step of background work: rolls up a sealed segment that is
 * old enough for a tier it is not at yet (merges its windows into the
 * tier's longer ones and swaps the file) or, with no rollup due, writes the
 * summary file of a sealed segment that has none, or else the day summary
 * of a past UTC day whose segments all have theirs. Call it often (each
 * flush); it does nothing when nothing is due.
 */
int store__compact(struct store *s, int64_t now_ns);

typedef int (*store_info_fn)(const struct store_window_info *w, void *arg);
typedef int (*store_window_fn)(const struct store_window_info *w, const struct profile *p, void *arg);
/* Windows overlapping [since, until), oldest first, from the index (no decompression). */
int store__list(struct store *s, int64_t since, int64_t until, store_info_fn fn, void *arg);
/* The same windows decoded; p is valid only during the call. A non-zero return from fn stops and is returned. */
int store__read(struct store *s, int64_t since, int64_t until, store_window_fn fn, void *arg);
/*
 * STORE_READ_SUMMARIES: fn may get summary records (w->summary) in place of
 * the records they cover: the same samples merged by function and process
 * name (pid and tid 0, a named frame's offset 0), over a whole segment or
 * 10 minutes of it, only where all they cover overlaps [since, until).
 * For callers that merge with PF_MERGE_BY_FUNCTION | PF_MERGE_BY_NAME:
 * the result is then the same, read from far fewer records. Windows come
 * in no particular order.
 */
#define STORE_READ_SUMMARIES 1u
int store__read_flags(struct store *s, int64_t since, int64_t until, unsigned flags, store_window_fn fn,
		      void *arg);
/*
 * The windows of [since, until) merged into dst with profile__merge_flags
 * (pf_flags, keep, arg). With PF_MERGE_BY_FUNCTION | PF_MERGE_BY_NAME it
 * reads summaries where it can and decodes them straight into dst. With
 * PF_MERGE_BY_FUNCTION alone (a query by pid) it reads no named window:
 * they hold no pids.
 */
int store__merge(struct store *s, int64_t since, int64_t until, unsigned pf_flags, profile_keep_fn keep,
		 void *arg, struct profile *dst);

void store__stats(const struct store *s, struct store_stats *out);

#endif
