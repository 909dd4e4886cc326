/*
 * The process registry: one record per process profd knows of, written as
 * kernel events and reads of /proc come, read by whoever names or unwinds
 * its samples. A record holds who the process is (pid and start time, so a
 * reused pid is a new record), its ids, its mapping snapshot (shared with
 * its parent after fork until exec or a read of its own), whether it exited,
 * and when to look at it again. An exited process stays until the drain
 * after the one that follows its exit: samples taken in do_exit may come
 * after the event.
 */
#ifndef PROFD_PROCREG_H
#define PROFD_PROCREG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct procmaps;
struct procreg;

/* What /proc/PID/status and /proc/PID/root say, as process events carry them. */
struct procreg_ids {
	uint32_t uid;
	uint32_t nspid;   /* the pid in the process's own namespace */
	uint64_t root[3]; /* its root directory as statx keys it: mount id, st_dev, inode */
};

struct procreg_info {
	uint32_t pid;
	uint32_t ppid;          /* forked from it, with its image; 0: an image of its own */
	uint64_t start_time;    /* clock ticks after boot (/proc/PID/stat field 22); 0: unknown */
	uint64_t start_code;    /* the image's (field 26); 0: not known */
	struct procreg_ids ids;
	bool have_ids;
	bool exited;
};

struct procreg_stats {
	uint64_t records;      /* processes known now */
	uint64_t forgotten;    /* exited processes dropped after their last drain */
	uint64_t full;         /* records not kept: the registry was at its bound */
	uint64_t due_dropped;  /* looks not queued: too many at once */
	uint64_t maps_dropped; /* snapshots let go to stay within the budget */
	uint64_t maps_bytes;   /* snapshot bytes held (a shared one once per holder) */
};

/*
 * max: records kept at most (0: 1 << 20); beyond, a new process is not
 * remembered. maps_max: snapshot bytes kept (0: 16 MiB).
 */
int procreg__new(size_t max, size_t maps_max, struct procreg **out);
void procreg__free(struct procreg *r);

/* A new image under pid (exec): the record starts over. 0 or -ENOMEM/-ENOSPC. */
int procreg__exec(struct procreg *r, uint32_t pid, uint64_t start_time, uint64_t start_code,
		  const struct procreg_ids *ids);
/*
 * pid was forked by ppid: a new record with ppid's image, sharing its
 * snapshot. -ENOENT: ppid has no snapshot yet (the record is made all the
 * same; procreg__inherit shares one later).
 */
int procreg__fork(struct procreg *r, uint32_t ppid, uint32_t pid, uint64_t start_time,
		  const struct procreg_ids *ids);
/* A forked pid takes its parent's snapshot as the parent has it now. -ENOENT: none. */
int procreg__inherit(struct procreg *r, uint32_t pid);
/*
 * A sample of pid: 1 when it was not known (a record is made), 2 at the
 * first sample of a process known from an event (exec, fork), 0 after.
 */
int procreg__seen(struct procreg *r, uint32_t pid);
/*
 * pid's mappings as just read (a reference is kept): its own from now on.
 * -ENOENT: not known. Snapshots are kept within maps_max, the least
 * recently set let go first.
 */
int procreg__set_maps(struct procreg *r, uint32_t pid, struct procmaps *m);
/* pid's snapshot, a new reference (procmaps__free drops it). -ENOENT: none. */
int procreg__maps(const struct procreg *r, uint32_t pid, struct procmaps **out);
int procreg__info(const struct procreg *r, uint32_t pid, struct procreg_info *out);

/*
 * The process exited: its looks are called off; its snapshot stays until
 * it is forgotten (a record is made when not known, so that what a late
 * sample hangs off it goes too). -ENOSPC: too many exits wait, forget it now.
 */
int procreg__exit(struct procreg *r, uint32_t pid);
void procreg__forget(struct procreg *r, uint32_t pid);
/*
 * Around each drain. At its end, processes that exited before the previous
 * drain began are dropped, forget(pid) called for each first.
 */
void procreg__drain_begin(struct procreg *r);
void procreg__drain_end(struct procreg *r, void (*forget)(uint32_t pid, void *arg), void *arg);

/*
 * Looks again at pid at due_ns (CLOCK_MONOTONIC), the tries-th time, for
 * one kind of look: each reader plans and calls off its own. Dues of a
 * kind come out in time order (those due at once in the order given),
 * whatever delay each caller uses. A look whose process exec'd again,
 * exited or was forgotten meanwhile is not returned. -ENOSPC: too many wait.
 */
enum procreg_look {
	PROCREG_LOOK_CAPTURE, /* mappings and files again once ld.so mapped the libraries */
	PROCREG_LOOK_TABLES,  /* the unwind tables' read of the mappings */
	PROCREG_LOOKS
};
int procreg__due_at(struct procreg *r, int look, uint32_t pid, int64_t due_ns, uint32_t tries);
/* When the first look of that kind is due; 0: none. */
int64_t procreg__due_first(struct procreg *r, int look);
/* The first look of that kind due by now: 1 (pid, tries set), 0 none. */
int procreg__due_pop(struct procreg *r, int look, int64_t now_ns, uint32_t *pid, uint32_t *tries);
void procreg__due_cancel(struct procreg *r, int look, uint32_t pid);

/*
 * What a reader keeps per process (names, unwind tables) hangs off its
 * record in a slot of its own: one lookup by pid, and it goes with the
 * record (drop is called when the process is forgotten or starts over
 * with a new image, exec or fork). At most PROCREG_SLOTS readers.
 */
#define PROCREG_SLOTS 4
typedef void (*procreg_drop_fn)(uint32_t pid, void *data, void *arg);
/* A slot for one reader: its number, or -ENOSPC. */
int procreg__slot(struct procreg *r, procreg_drop_fn drop, void *arg);
/*
 * A slot whose data does not keep a record: for a reader that only notes
 * what it learnt of processes others keep (procreg__detach forgets a
 * record whose other slots are empty, and drops what this one holds).
 */
int procreg__slot_loose(struct procreg *r, procreg_drop_fn drop, void *arg);
/* pid's record, made when not known (a reader met it first, no event told). */
int procreg__touch(struct procreg *r, uint32_t pid);
/* NULL: not known, or nothing in that slot. */
void *procreg__data(const struct procreg *r, uint32_t pid, int slot);
/* Set without drop for what was there. -ENOENT: no record. */
int procreg__set_data(struct procreg *r, uint32_t pid, int slot, void *data);
/*
 * A reader lets go of pid (clears its slot, without a drop): a record
 * nobody told of (no event, no sample) that holds nothing more is
 * forgotten, so processes met only by readers stay within what they keep.
 */
void procreg__detach(struct procreg *r, uint32_t pid, int slot);
/*
 * fn for each record holding something in slot, until it returns non-zero
 * (returned). fn may forget that record, no other.
 */
typedef int (*procreg_each_fn)(uint32_t pid, void *data, void *arg);
int procreg__each(struct procreg *r, int slot, procreg_each_fn fn, void *arg);

void procreg__stats(const struct procreg *r, struct procreg_stats *out);

/*
 * Start time (field 22, clock ticks after boot) and the image's start_code
 * (field 26; NULL: not asked) from /proc/PID/stat, proc_fd being /proc.
 * 0 or -errno (-ENOENT: gone, -EINVAL: not a stat line).
 */
int procreg__read_stat(int proc_fd, uint32_t pid, uint64_t *start_time, uint64_t *start_code);
/*
 * A record made at a first sample or by a reader (a process older than
 * profd, or events not attached) has no identity: read it from /proc once.
 * 0, -ENOENT (no record), or read_stat's errors.
 */
int procreg__identify(struct procreg *r, int proc_fd, uint32_t pid);

#endif
