/* CPython processes for the BPF frame walker (py_procs) and their frames' names at drain time (py_syms). */
#ifndef PROFD_PYPROCS_H
#define PROFD_PYPROCS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <linux/types.h>

struct filecache;
struct procmaps;
struct procreg;
struct profd_bpf;
struct profile;
struct pyprocs;
struct symbolizer;

/*
 * Before load: benchmark mode from PROFD_COST_PID=PID[,PID2] (the BPF time
 * of each process's samples, in status as sample_cost_* and sample_cost_*_2;
 * the Python frame walk is timed apart for PID only); nothing otherwise.
 */
void pyprocs__configure(struct profd_bpf *skel);
/*
 * The walker's maps for process events to share (events__open): its
 * CPython processes, whose entries the kernel side deletes as an image
 * goes and makes at an exec of an interpreter file probed before (and a
 * fork of a CPython process), those files, the generations that an
 * insert bumps, and the per-CPU notes of pids without an entry.
 */
struct pyprocs_fds {
	int procs, files, gen, none;
};
void pyprocs__share(struct profd_bpf *skel, struct pyprocs_fds *out);
/*
 * What is found of each process hangs off its record in reg (which keeps
 * it while the symbols or events do), each interpreter file's probe off
 * its entry in fc; both outlive the pyprocs.
 */
/*
 * The count of code object frees (bpf/pyfree.bpf.c), per process: a
 * uprobe on code_dealloc that traps in that process only, made for a
 * CPython process that has lived after_ns and is being sampled, so that
 * short scripts and idle services never trap. At most PYPROCS_FREE_LINKS
 * at once; a process freeing more than max_rate code objects a second
 * (0: no bound) loses its hook and is checked by content again.
 */
#define PYPROCS_FREE_LINKS 256
struct pyprocs_hook_opts {
	bool on;
	int64_t after_ns;
	uint32_t max_rate;
};
int pyprocs__new(struct profd_bpf *skel, struct procreg *reg, struct filecache *fc,
		 const struct pyprocs_hook_opts *hook, struct pyprocs **out);
void pyprocs__free(struct pyprocs *p);

/*
 * pid's mappings were read (exec, re-capture): a CPython among them is made
 * known to the walker. exec: read for its exec event (the image is as old
 * as the event, whatever /proc says of the process).
 */
void pyprocs__maps(struct pyprocs *p, uint32_t pid, uint64_t start_code, const struct procmaps *maps,
		   bool exec);
/*
 * A pid seen in a drain: looked at (from the symbolizer's mappings) unless
 * it is known to run CPython or was looked at less than a second ago.
 */
void pyprocs__seen(struct pyprocs *p, struct symbolizer *sym, uint32_t pid);
/* pid exited at time_ns (CLOCK_MONOTONIC, the exit event's). */
void pyprocs__exit(struct pyprocs *p, uint32_t pid, uint64_t time_ns);

/*
 * Turns a drained user stack with Python frames into window frame ids,
 * root first. native() gives the id of a native frame (is_ret: not the
 * leaf). out holds n entries at least. Returns 0 or -errno.
 */
typedef int (*pyprocs_native_fn)(void *arg, uint64_t ip, uint32_t is_ret, uint32_t *id);
int pyprocs__stack(struct pyprocs *p, struct profile *window, uint32_t pid, const __u64 *ips, uint32_t n,
		   pyprocs_native_fn native, void *arg, uint32_t *out, uint32_t *nout);

/* `profctl status` lines (name TAB value); p NULL: nothing. */
void pyprocs__print_status(const struct pyprocs *p, FILE *f);

#endif
