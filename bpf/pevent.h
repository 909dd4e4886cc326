/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Process events (exec, exit) from bpf/events.bpf.c to daemon/events.c: fixed-width types only. */
#ifndef PROFD_PEVENT_H
#define PROFD_PEVENT_H

enum profd_pev_type {
	PROFD_PEV_EXEC = 1, /* the process has a new image: its old mappings are stale */
	PROFD_PEV_EXIT = 2, /* the last thread of the process exited */
	PROFD_PEV_FORK = 3, /* a new process (not a thread), its parent's image until it execs */
	PROFD_PEV_WAKE = 4, /* pid 0: wakes user space for the events sent without a wake-up */
};

/* A file user space has a path for: its exec events can wait for a shared wake-up. */
struct profd_pev_file {
	__u64 ino;
	__u32 dev;     /* the kernel's dev_t (major << 20 | minor) */
	__u32 pad;
};

/*
 * The identity the path was learned with (known_files' value): an inode
 * number given to a new file after a delete keys another file, whose
 * change time (at least) differs.
 */
struct profd_pev_fileid {
	__u64 size;
	__s64 mtime_sec;
	__s64 ctime_sec;
	__u32 mtime_nsec;
	__u32 ctime_nsec;
};

struct profd_pev {
	__u32 type;
	__u32 pid;     /* tgid, as the root pid namespace sees it */
	__u64 time_ns; /* bpf_ktime_get_ns (CLOCK_MONOTONIC) */
	/*
	 * Exec and fork, the new image's (fork: the child's, whose image is
	 * its parent's): what /proc/PID/stat says (start_time there is in
	 * clock ticks).
	 */
	__u64 start_boottime_ns;
	__u64 start_code;
	/* Exec and fork: the real uid and the pid in its own namespace (/proc/PID/status). */
	__u32 uid;
	__u32 nspid;
	/*
	 * Exec and fork: the root directory as statx keys it, so that a known
	 * root needs no statx of /proc/PID/root: its mount id, the kernel's
	 * dev_t of its filesystem (major << 20 | minor) and its inode.
	 */
	__u32 root_mnt_id;
	__u32 root_dev;
	__u64 root_ino;
	__u32 ppid;    /* fork only: the parent's tgid */
	__u32 pad;
};

/*
 * An exec event sent once ld.so is done (bpf/events.bpf.c) lists the new
 * image's executable mappings, as the kernel's VMA iterator saw them, so
 * that user space need not read /proc/PID/maps for files it knows.
 */
#define PROFD_PEV_MAX_MAPS 32
#define PROFD_PEV_MAP_VDSO 1  /* [vdso] */
#define PROFD_PEV_MAP_ANON 2  /* no file: JIT code, [uprobes] */
#define PROFD_PEV_MAP_STAT 4  /* size, mtime and ctime are the inode's */
#define PROFD_PEV_MAPS_OK 1     /* the list is complete: no overflow, no deleted file, every VMA seen, the binary's listed */
#define PROFD_PEV_MAPS_EXITED 2 /* sent at the exit, before the event was due: the list is all there is */
#define PROFD_PEV_MAPS_NEW 4    /* lists a file user space has not said it knows (known_files), or knew as another */
#define PROFD_PEV_MAPS_UMAPS 8  /* the hook wrote the walker's umaps entry from ufiles: no table load */

struct profd_pev_map {
	__u64 start, end;
	__u64 offset;  /* file offset of start */
	__u64 ino;
	__u32 dev;     /* the kernel's dev_t (major << 20 | minor) */
	__u32 flags;   /* PROFD_PEV_MAP_* */
	/* PROFD_PEV_MAP_STAT: the inode's size, modification and change times, what stat would say */
	__u64 size;
	__s64 mtime_sec;
	__u32 mtime_nsec;
	__u32 ctime_nsec;
	__s64 ctime_sec;
};

struct profd_pev_exec {
	struct profd_pev ev;
	__u32 nmaps;
	__u32 maps_flags; /* PROFD_PEV_MAPS_* */
	struct profd_pev_map maps[PROFD_PEV_MAX_MAPS];
};

/*
 * Exec events wait for the new image's thread pointer (bpf/events.bpf.c)
 * while the process has run less than this many looks' time on a CPU, and
 * for this many looks at most: on a busy host a process may wait for a CPU
 * far longer than ld.so takes to run.
 */
#define PROFD_PEV_EXEC_POLLS 20
#define PROFD_PEV_EXEC_POLLS_MAX 250

/*
 * A file whose unwind table is in the walker's rows array (or that has no
 * usable unwind info: count 0), keyed by profd_pev_file ({0, 0}: the
 * [vdso]). daemon/tables.c writes it; the exec hook writes the umaps entry
 * of a process whose files all have one, so an exec of a known program
 * loads no table in user space. size and mtime are those of the file the
 * table was built from: an inode number given to another file since does
 * not match.
 */
#define PROFD_UFILE_SEGS 4
struct profd_ufile_seg {
	__u64 offset, filesz, vaddr; /* a PT_LOAD segment: file offset, size in the file, ELF address */
};

struct profd_ufile {
	__u64 size;
	__s64 mtime_sec;
	__u32 mtime_nsec;
	__u32 nsegs;
	__u32 first, count; /* as profd_umap's; count 0: frame pointers */
	struct profd_ufile_seg segs[PROFD_UFILE_SEGS];
};

enum profd_pev_counter {
	PROFD_PEV_CNT_EXEC = 0, /* exec events seen */
	PROFD_PEV_CNT_EXIT,     /* process exits seen */
	PROFD_PEV_CNT_LOST,     /* ring buffer full: an event dropped */
	PROFD_PEV_CNT_FORK,     /* processes forked (not threads, not vfork) */
	PROFD_PEV_CNT_PY_ADOPTED, /* CPython processes made known here, at exec or fork */
	PROFD_PEV_CNT_UMAPS,      /* umaps entries written here at exec (from ufiles) */
	PROFD_PEV_CNT_UMAPS_UNDONE, /* of them, taken back: user space unloaded a file meanwhile */
	PROFD_PEV_CNT_MAPS_PUT_OFF, /* exec lists made again a poll later: a writer of the mappings hid some */
	PROFD_PEV_CNT_MAPS_UNSETTLED, /* exec lists sent incomplete: such a writer and no look left, or the next image's */
	PROFD_PEV_CNT_MAX,
};

#endif
