/*
 * DWARF unwind tables in the kernel: builds the table of each executable
 * file a sampled process maps (lib/unwind_table), stores it once per file in
 * the BPF rows array, and describes each process's mappings in the umaps
 * map for bpf/unwind.h. A process is read at its exec (tables__exec, once
 * ld.so is done) and again when the walker asks (first sample, a pc outside
 * every known mapping, an exec seen by start_code); until a file's table is
 * there, its frames are walked by frame pointers, and so are a new
 * process's first milliseconds (ld.so) until its exec event comes. A child
 * not yet exec'd walks by its parent's tables. Builds run on two worker threads,
 * smallest file first, one of them for small files only, so a new program
 * or libc never waits behind libLLVM. A finished table's rows go into the
 * kernel at once when few (8,192), else after the turn's reads of new
 * processes' mappings, smallest table first, in steps of 65,536 rows for at most 10 ms a turn (a million rows
 * written at once held the event loop for hundreds of milliseconds on a
 * loaded host); once all are in, the entries of the processes that map it
 * are rewritten. Memory is bounded (rows
 * array): unused tables go first, then the largest ones in use; a table
 * nobody maps stays up to 5 minutes (256 of them at most), so the next run
 * of a program finds it, checked to be the same file. The rows live in the
 * kernel only: a table displaced or built without room is built again when
 * room comes.
 *
 * Where no table is loaded the walker uses frame pointers, not libunwind
 * (lib/lunwind stays the test oracle). Serving those samples with it would
 * take a second sampling path: the BPF program would have to send each one
 * (registers, 16 KB of stack, its kernel stack and labels) over a ring
 * buffer instead of counting it, and the daemon unwind and count it in the
 * window itself: perf's cost class, 2 MB/s per CPU at 99 Hz and tens of
 * microseconds of unwinding per sample, which the in-kernel walker exists to avoid. And
 * it would help little: a file without .eh_frame/.debug_frame has nothing
 * for libunwind either; what remains is the first milliseconds of a new
 * process, files displaced under a tight --unwind-memory (raise it), and
 * processes beyond --max-pids.
 */
#ifndef PROFD_TABLES_H
#define PROFD_TABLES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <linux/types.h>

#include "profd.h"

struct procmaps;
struct profd_bpf;
struct tables;

struct tables_opts {
	int enabled;           /* the DWARF walker runs; 0: bpf_get_stack (frame pointers) */
	uint64_t max_bytes;    /* rows array size */
	uint32_t max_pids;     /* umaps entries */
	uint32_t snapshot_pid; /* test mode: snapshots of this process's samples */
	int exit_events;       /* exits come through tables__exit: the periodic liveness scan is a backstop only */
};

struct tables_stats {
	uint64_t files;           /* files with a table in the kernel */
	uint64_t files_failed;    /* files without one: no unwind info, unreadable, over budget */
	uint64_t files_denied;    /* opens of /proc/PID/map_files refused for lack of privilege */
	bool map_files_denied;    /* profd's own map_files refused at start: no table can be built */
	uint64_t over_budget;     /* tables that did not fit in the rows array */
	uint64_t rows_used, rows_cap;
	uint64_t rows_unused;     /* of rows_used, tables no process maps: kept for reuse, evicted first */
	uint64_t kernel_bytes;    /* rows array + umaps + ring buffer, allocated */
	uint64_t pids;            /* processes described in umaps */
	uint64_t pid_loads;       /* entries written from mappings (exec, re-captures, the walker's requests) */
	uint64_t maps_reads;      /* of them, mappings read here: the others came from process events' captures */
	uint64_t maps_inherited;  /* forked children's requests given their parent's snapshot (waiting the grace) */
	uint64_t maps_captured;   /* requests of other processes given process events' capture of their image */
	uint64_t evictions;       /* tables dropped after no process mapped them */
	uint64_t displaced;       /* tables in use unloaded to make room for a smaller one */
	uint64_t rebuilds;        /* tables built again from their file to come back (rows are not kept in user space) */
	uint64_t build_us_total;  /* time spent building tables (worker threads) */
	uint64_t builds_pending;  /* files waiting for or in a build */
	uint64_t turn_ns_max;     /* longest tables__poll: what the tables cost the event loop at once */
	/* Of a tables__poll, the longest time spent in each part (they need not be of the same turn). */
	uint64_t turn_requests_ns_max; /* the walker's requests, taken */
	uint64_t turn_builds_ns_max; /* collecting finished builds, queueing planned re-reads */
	uint64_t turn_loads_ns_max;  /* reading processes' mappings, building small files in the loop */
	uint64_t turn_rows_ns_max;   /* writing large tables' rows into the kernel, a step per turn */
	uint64_t turn_write_ns_max;  /* rewriting the entries of processes whose files changed */
	uint64_t turn_rereads_ns_max; /* the walker's re-reads, last: each asks process events for a capture */
	uint64_t rows_steps;      /* steps of large tables' row writes (each bounded) */
	uint64_t load_wait_ns_max; /* longest wait of a walker's request (a sampled process), queued to served */
	uint64_t requests_dropped; /* exec-time reads not done: too many, or too old (the walker asks when it samples one) */
	uint64_t file_checks;     /* unused tables checked before reuse (the file may be another) */
	uint64_t file_checks_by_path; /* of them, settled by the file's path, without /proc */
	uint64_t file_checks_by_inode; /* of them, settled by the inode the exec event read */
	uint64_t ufiles_put;      /* files told to the exec hook (rows, or no unwind info) */
	uint64_t ufiles_entries_dropped; /* entries the hook wrote, dropped when their file's rows went */
	uint64_t exec_written;    /* execs whose entry the hook wrote: no load here */
	uint64_t timer_turns;     /* turns that found the tables' timer expired (planned re-reads, waits) */
	uint64_t requests_new;    /* the walker's requests for a process without an entry */
	uint64_t requests_new_lingering; /* of them, lingering: see NEW_PID_LINGER_NS */
	uint64_t requests_exited; /* of them, for a process whose exit came first: dropped */
	uint64_t requests_refresh; /* the walker's requests for a pc outside the entry's mappings */
	uint64_t stat_reads;      /* /proc/PID/stat reads for a load's start time and code */
	uint64_t bpf[PROFD_UCNT_MAX];
};

/* Between __open() and __load(): sizes the maps, sets the walker's rodata. */
void tables__configure(struct profd_bpf *skel, const struct tables_opts *o);
/* After __load(). */
int tables__new(struct profd_bpf *skel, const struct tables_opts *o, struct tables **out);
void tables__free(struct tables *t);

/* Readable when the walker asked for something; then call tables__poll: requests read, -errno. */
int tables__fd(const struct tables *t);
int tables__poll(struct tables *t);
/*
 * pid has just exec'd (exec 1) or ld.so has mapped its libraries since
 * (exec 0), as process events tell: maps is what they read then (a
 * reference is kept until served; NULL: read them here, and after an exec
 * again 5 ms later), start_time (clock ticks after boot) and start_code
 * the image's (0: read /proc/PID/stat). Queued only: the caller runs
 * tables__poll once its batch of events is done.
 */
void tables__exec(struct tables *t, uint32_t pid, int exec, uint64_t start_time, uint64_t start_code,
		  struct procmaps *maps);
/*
 * pid has exited at time_ns (CLOCK_MONOTONIC; process events): any request
 * for it goes now, not at the next gc. The walker's exit hook dropped its
 * umaps entry in the kernel; one written since is dropped here.
 */
void tables__exit(struct tables *t, uint32_t pid, uint64_t time_ns);
/* Periodic upkeep: forgets exited processes, evicts unused tables, retries refreshes and tables without room. */
void tables__gc(struct tables *t);

/*
 * The walker met a pc outside pid's known mappings: fn reads them and hands
 * them to tables__exec (exec 0), with the start time and code given. Without
 * fn the tables read /proc themselves.
 */
typedef void (*tables_reread_fn)(uint32_t pid, uint64_t start_time, uint64_t start_code, void *arg);
void tables__on_reread(struct tables *t, tables_reread_fn fn, void *arg);

/*
 * Exec events come ns after the exec with the mappings (events__exec_delay_ns):
 * the walker's requests for a process exec'd since then wait for them
 * rather than wake the daemon.
 */
void tables__exec_delay(struct tables *t, uint64_t ns);

/* Test mode (snapshot_pid): each snapshot of that process's samples, as the walker sent it. */
typedef void (*tables_snapshot_fn)(const struct profd_uevent *ev, void *arg);
void tables__on_snapshot(struct tables *t, tables_snapshot_fn fn, void *arg);

/*
 * Before the first poll (both outlive the tables): per process state hangs
 * off the registry's records (a forked child takes its parent's snapshot),
 * each file's table off the file cache's entry the symbols share.
 */
struct filecache;
struct procreg;
int tables__use_registry(struct tables *t, struct procreg *reg, struct filecache *fc);
void tables__stats(const struct tables *t, struct tables_stats *st);
/*
 * The exec hook's files (events__ufiles): from now on each file with rows
 * (or without unwind info) is written there, and taken out before its rows
 * go to another file. seq: the hook's sequence number, odd meanwhile.
 */
void tables__share_ufiles(struct tables *t, int ufiles_fd, uint64_t *seq);
/*
 * An exec whose entry the exec hook wrote from maps: no load, but its
 * files count as used now (the least recently used unused tables go
 * first), and the process is not ours (its entry goes with its exit).
 */
void tables__exec_written(struct tables *t, uint32_t pid, const struct procmaps *maps);
/* `profctl status` lines (name TAB value); t NULL: frame pointers only. */
void tables__print_status(const struct tables *t, FILE *f);

#endif
