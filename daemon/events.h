/*
 * Process events: exec and exit from BPF (bpf/events.bpf.c) keep the
 * symbolizer's view of each process right. A new image is captured (its
 * mappings read and its files parsed) once the dynamic loader has mapped
 * its libraries: the exec event waits in the kernel for that, so one
 * wake-up and one read serve each exec, and a process that lives 40 ms is
 * named at the next drain. Where the kernel cannot wait (no BPF timers),
 * the event comes at once and the image is captured again 5 ms later. A
 * process seen first in a drain is captured before its frames are
 * resolved; an exited process's table is dropped only after the drain that
 * symbolizes its last samples.
 */
#ifndef PROFD_EVENTS_H
#define PROFD_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct events;
struct procmaps;
struct symbolizer;

struct events_stats {
	uint64_t execs, exits, lost;   /* from the BPF program */
	uint64_t forks_seen;           /* processes forked, from the BPF program */
	uint64_t py_adopted;           /* CPython processes the BPF program made known at exec or fork */
	uint64_t forks;                /* fork events read */
	uint64_t forks_named;          /* forked children sampled, named by the parent's snapshot */
	uint64_t fork_parents_read;    /* forks whose parent was read at the fork (not read before) */
	uint64_t captures;             /* processes captured (exec, re-capture, first sight) */
	uint64_t captures_listed;      /* of them, from the exec event's list of mappings: no read of /proc */
	uint64_t exec_reads_saved;     /* exec events without a list dropped: the process exec'd again within the wait */
	uint64_t names_stale;          /* listed files whose path was learned for another file of the inode number */
	uint64_t names_learned;        /* paths learned from /proc reads, each with a stat of the file mapped */
	uint64_t lists_named_late;     /* exec lists named only once a read of /proc taught their files' paths */
	uint64_t names_unstated;       /* paths not learned: no stat of the file mapped (process gone, no access) */
	uint64_t capture_gone;         /* captures that found the process gone */
	uint64_t forgotten;            /* exited processes dropped after their last drain */
	uint64_t pending_dropped;      /* re-captures not queued: too many execs at once */
	uint64_t umaps_written;        /* walker entries the exec hook wrote from known files' rows */
	uint64_t umaps_undone;         /* of them, taken back: rows were taken from a file meanwhile */
	uint64_t lists_put_off;        /* exec lists made again a poll later: a writer of the mappings hid some */
	uint64_t lists_unsettled;      /* exec lists sent incomplete: such a writer, or the task exec'ing again */
};

/*
 * The events write reg (the symbolizer's registry too); the paths of files
 * they learn hang off fc. py: the walker's CPython maps to share
 * (pyprocs__share; NULL: none). Errors: -EPERM (no privilege), -ENOENT/-EOPNOTSUPP (kernel
 * lacks tp_btf).
 */
struct filecache;
struct procreg;
struct pyprocs_fds;
int events__open(struct symbolizer *sym, struct procreg *reg, struct filecache *fc,
		 const struct pyprocs_fds *py, int umaps_fd, struct events **out);
/*
 * umaps_fd (events__open; -1: none): the walker's map of process entries,
 * which the exec hook writes itself for a program whose files all have
 * rows in the map returned here (struct profd_ufile, the tables write it;
 * -1: not available). *seq: odd while the tables take rows away from a
 * file (tables__share_ufiles).
 */
int events__ufiles(struct events *e, uint64_t **seq);
void events__free(struct events *e);

/*
 * Readable when events or a due re-capture wait; then call events__dispatch,
 * which returns how many execs and re-captures it handled (<0: -errno).
 */
int events__fd(const struct events *e);
int events__dispatch(struct events *e);

/* Around each drain: before, events so far are handled; after, exited processes are forgotten. */
void events__drain_begin(struct events *e);
void events__drain_end(struct events *e);
/*
 * Handles waiting events and due re-captures without blocking: a drain calls
 * it between entries, so a long drain does not outlast a short process's life.
 */
void events__poll(struct events *e);
/* A drained sample of pid with a user stack: captures the process the first time. */
void events__seen(struct events *e, uint32_t pid);
/*
 * A new image as process events saw it: at its exec (exec 1) and at each
 * re-capture after it (exec 0), with the mappings that capture read, so
 * that the DWARF tables are read at exec and once the libraries are mapped
 * without reading /proc again.
 */
struct events_image {
	uint32_t pid;
	int exec;
	uint64_t start_time;   /* clock ticks after boot, as field 22 of /proc/PID/stat */
	uint64_t start_code;   /* the image's, as field 26 */
	struct procmaps *maps; /* lent for the call (procmaps__ref keeps it); NULL: could not be read */
	bool written;          /* the exec hook wrote the walker's entry from these mappings already */
};
typedef void (*events_maps_fn)(const struct events_image *im, void *arg);
/* Reads pid's mappings again now (the walker met a pc outside them); the maps callback gets them. */
void events__recapture(struct events *e, uint32_t pid, uint64_t start_time, uint64_t start_code);
void events__on_maps(struct events *e, events_maps_fn fn, void *arg);
/*
 * At most how long after an exec its event comes (0: at once). It waits
 * for ld.so to map the libraries: one wake-up and one read of the
 * mappings per exec.
 */
uint64_t events__exec_delay_ns(const struct events *e);
/* Called for each process exit as its event is read (DWARF tables drop the process at once); time_ns: CLOCK_MONOTONIC. */
typedef void (*events_exit_fn)(uint32_t pid, uint64_t time_ns, void *arg);
void events__on_exit(struct events *e, events_exit_fn fn, void *arg);

void events__stats(const struct events *e, struct events_stats *out);
/* `profctl status` lines (name TAB value); e NULL: events unavailable. */
void events__print_status(const struct events *e, FILE *f);

#endif
