/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The walker's per-process table entries, defined in both programs'
 * objects: user space hands the sampler's map to the process events before
 * they load, so the exec hook can write an entry for a process whose files
 * all have rows (bpf/events.bpf.c) that the walker reads (bpf/unwind.h).
 */
#ifndef PROFD_UMAPS_H
#define PROFD_UMAPS_H

#include "profd.h"

/* Sized by user space before load; 1 entry when DWARF unwinding is off. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct profd_umaps);
} umaps SEC(".maps");

#endif
