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
	PROFD_CNT_MAX,
};

#endif
