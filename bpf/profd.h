/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Types shared by the BPF programs and user space: fixed-width only. */
#ifndef PROFD_BPF_H
#define PROFD_BPF_H

#define PROFD_MAX_DEPTH 127
#define PROFD_COMM_LEN 16

enum profd_kind {
	PROFD_KIND_CPU = 0,    /* value: samples */
	PROFD_KIND_OFFCPU = 1, /* value: nanoseconds blocked */
	PROFD_KIND_RUNQ = 2,   /* value: nanoseconds runnable, waiting for a CPU */
};

/*
 * A stack is identified by our own 64-bit hash of its frames; the stacks
 * map is keyed by it and the program compares frames on insert, so two
 * different stacks never share an id (a clash is counted and dropped).
 * The low bit of the id says user (0) or kernel (1); id 0 means "no stack".
 */
struct profd_stack {
	__u32 len;
	__u32 pad;
	__u64 ips[PROFD_MAX_DEPTH];
};

struct profd_key {
	__u32 pid;  /* tgid */
	__u32 tid;
	__u64 cgroup_id;
	__u64 ustack; /* 0: none */
	__u64 kstack; /* 0: none */
	__u32 kind;
	__u32 flags;  /* PROFD_F_* */
	char comm[PROFD_COMM_LEN];   /* process (group leader) name */
	char thread[PROFD_COMM_LEN]; /* thread name */
};

#define PROFD_F_USTACK_TRUNC (1u << 0)
#define PROFD_F_KSTACK_TRUNC (1u << 1)

/* Off-CPU selection in the kernel (offcpu_filter): a thread is recorded when any listed set holds it. */
#define PROFD_OFFCPU_F_PIDS (1u << 0)    /* its process is in offcpu_pids */
#define PROFD_OFFCPU_F_CGROUPS (1u << 1) /* it is in a cgroup of offcpu_cgroups or below one */

/* Loss and health counters: indexes into the program's .bss counters[]. */
enum profd_counter {
	PROFD_CNT_SAMPLES = 0,     /* perf samples seen by the program */
	PROFD_CNT_COUNTS_FULL,     /* counts map full: sample dropped */
	PROFD_CNT_STACKS_FULL,     /* stacks map full: stack dropped, sample kept without it */
	PROFD_CNT_USTACK_ERR,      /* bpf_get_stack failed for the user stack */
	PROFD_CNT_KSTACK_ERR,      /* bpf_get_stack failed for the kernel stack */
	PROFD_CNT_HASH_CLASH,      /* two different stacks hashed alike: stack dropped */
	PROFD_CNT_TRUNCATED,       /* stack deeper than PROFD_MAX_DEPTH */
	PROFD_CNT_NO_MAP,          /* no active generation (should not happen) */
	PROFD_CNT_IDLE,            /* samples in the idle task, not counted */
	/* off-CPU (sched_switch) */
	PROFD_CNT_OFFCPU_NO_STATE, /* no per-task state (allocation failed): a block not timed */
	PROFD_CNT_OFFCPU_SHORT,    /* blocks or waits below the minimum, not counted */
	PROFD_CNT_OFFCPU_CAPTURED, /* switch-outs that walked the stacks (the others reused them or were not sampled) */
	PROFD_CNT_OFFCPU_RATE_WINDOWS, /* per-CPU windows in which switch-outs were sampled (rate over the budget) */
	PROFD_CNT_OFFCPU_UNSEEN,   /* a wait whose end (the task's switch-in) was not seen nor inferred: not timed */
	PROFD_CNT_OFFCPU_INFERRED, /* waits whose switch-in was not traced, ended from the task's CPU time since */
	PROFD_CNT_OFFCPU_NOT_CAPTURED, /* a wait whose stacks were due and not captured: not counted */
	PROFD_CNT_OFFCPU_TAIL_FAILED,  /* the capture program could not be tail-called */
	PROFD_CNT_MAX,
};

/* --- DWARF unwinding: shared by bpf/unwind.h, lib/unwind_table.c, daemon/tables.c --- */

/*
 * One unwind row: from pc (an ELF virtual address of the file) up to the
 * next row's pc, how to find the caller. 8 bytes, so a 1 MB budget holds
 * 128 K rows (libc needs about 30 K). Rows of one file are sorted by pc and
 * stored contiguously in the rows array, after the file's bucket index
 * (struct profd_uindex); a NONE row closes a function.
 */
struct profd_urow {
	__u32 pc;
	__u16 cfa_off;  /* CFA = reg + cfa_off; DEREF_RBP: (__s16) offset */
	__u8 kind;      /* PROFD_UR_CFA_* | PROFD_UR_RBP_* << 4 */
	__s8 rbp_off;   /* RBP_AT_CFA: saved rbp at CFA + 8 * rbp_off; PLT: threshold */
};

/*
 * A file's block in the rows array, 8-byte slots: this header, the bucket
 * index, then the rows. The file's pcs from the first row's on are cut
 * into buckets of 1 << shift bytes; entry b of the index (nb + 1 __u32s,
 * two a slot, from slot 1) is the rows-relative index of the last row at
 * or below bucket b's start, entry nb the last row. The row covering a pc
 * of bucket b lies between entries b and b + 1, a handful of rows: the
 * walker searches those instead of the whole table (17 steps for
 * libpython, each a cache line of its own).
 */
struct profd_uindex {
	__u32 base;     /* the first row's pc: bucket 0 starts here */
	__u32 nb_shift; /* buckets << 8 | shift */
};
#define PROFD_UIDX_NB(h) ((h)->nb_shift >> 8)
#define PROFD_UIDX_SHIFT(h) ((h)->nb_shift & 255)
/* Slots of the header and index of nb buckets: the rows start this far into the block. */
#define PROFD_UIDX_SLOTS(nb) (1 + ((nb) + 2) / 2)

enum profd_ur_cfa {
	PROFD_UR_CFA_NONE = 0,  /* no unwind info here: frame pointers */
	PROFD_UR_CFA_RSP,       /* CFA = rsp + off */
	PROFD_UR_CFA_RBP,       /* CFA = rbp + off */
	PROFD_UR_CFA_PLT,       /* CFA = rsp + off + ((rip & 15) >= thr ? 8 : 0): PLT stubs */
	PROFD_UR_CFA_DEREF_RBP, /* CFA = *(rbp + off): stack realignment (gcc main) */
	PROFD_UR_CFA_SIGNAL,    /* rt_sigreturn trampoline: registers in the ucontext at rsp */
	PROFD_UR_CFA_END,       /* return address undefined: outermost frame (_start) */
	PROFD_UR_CFA_UNSUP,     /* a rule we cannot evaluate: the walk stops here */
};

enum profd_ur_rbp {
	PROFD_UR_RBP_SAME = 0,  /* caller's rbp is ours */
	PROFD_UR_RBP_AT_CFA,    /* saved at CFA + 8 * rbp_off */
	PROFD_UR_RBP_UNDEF,     /* unknown (undefined or a rule we do not evaluate) */
};

#define PROFD_UR_CFA(k) ((k) & 15)
#define PROFD_UR_RBP(k) ((k) >> 4)

/* Executable mappings of one process, sorted by start; value of the umaps map. */
#define PROFD_MAX_UMAPS 64
struct profd_umap {
	__u64 start, end;
	__u64 bias;       /* runtime address - ELF virtual address */
	__u32 first, count; /* the file's block: slots [first, first + count); count 0: frame pointers */
};
/* first, with count 0: the file's table is being built (frame pointers until then). */
#define PROFD_UMAP_PENDING 0xffffffffu

struct profd_umaps {
	__u32 n;          /* 0: tables not loaded yet (frame pointers) */
	__u32 refresh;    /* set by BPF when a pc fell outside every mapping */
	__u64 start_code; /* mm->start_code when loaded: a mismatch means exec, reload */
	struct profd_umap m[PROFD_MAX_UMAPS];
};

/* Ring buffer events from the walker to user space. */
enum profd_uevent_type {
	PROFD_UEV_NEW_PID = 1, /* a sampled process has no tables yet */
	PROFD_UEV_REFRESH,     /* a pc fell outside every known mapping (dlopen, exec) */
	PROFD_UEV_SNAPSHOT,    /* test mode: registers, stack copy and the walker's frames */
};

#define PROFD_SNAP_STACK 16384
/* Every frame had its tables (none walked by frame pointers for want of a table not loaded yet). */
#define PROFD_SNAP_F_TABLES 1
/* NEW_PID: the process exec'd a moment ago; its exec event, with the mappings, is on its way. */
#define PROFD_UEV_F_EXEC_DUE 1
/* NEW_PID: the walker walks the process by its parent's tables meanwhile (a forked child). */
#define PROFD_UEV_F_BORROWS 2
/* NEW_PID, with EXEC_DUE: the process has exec'd (not a forked child that may never exec). */
#define PROFD_UEV_F_EXECD 4
/* DWARF register numbers of x86-64: rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip. */
#define PROFD_SNAP_NREGS 17

struct profd_uevent {
	__u32 type;
	__u32 pid;
	__u32 tid;
	__u32 nframes;
	__u32 stack_len;   /* bytes copied from regs[7] (rsp) upwards */
	__u32 flags;       /* PROFD_SNAP_F_*, PROFD_UEV_F_* */
	__u64 time_ns;     /* bpf_ktime_get_ns() at the sample or request (CLOCK_MONOTONIC) */
	__u64 regs[PROFD_SNAP_NREGS];
	__u64 frames[PROFD_MAX_DEPTH];
	/* SNAPSHOT only; other events stop before regs. The extra page is slack for the
	 * page-wise copy, whose last read the verifier cannot prove ends at 16 KB. */
	__u8 stack[PROFD_SNAP_STACK + 4096];
};

enum profd_ucounter {
	PROFD_UCNT_WALKS = 0,   /* user stacks walked with tables */
	PROFD_UCNT_FRAMES_DWARF,/* frames recovered from unwind rows */
	PROFD_UCNT_FRAMES_FP,   /* frames recovered by frame pointers (no row) */
	PROFD_UCNT_UNSUP,       /* walks stopped at an unsupported rule */
	PROFD_UCNT_BAD_READ,    /* walks stopped at an unreadable stack word */
	PROFD_UCNT_NO_PID,      /* samples of processes whose tables were not loaded yet */
	PROFD_UCNT_PIDS_FULL,   /* umaps map full: process walked by frame pointers */
	PROFD_UCNT_EVENTS_LOST, /* ring buffer full: a load request or snapshot dropped */
	PROFD_UCNT_FRAMES_EARLY,/* frames walked by frame pointers because their table was not loaded yet */
	PROFD_UCNT_MAX,
};

/* --- end DWARF unwinding --- */

#endif
