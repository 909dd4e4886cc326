/*
 * Sampled stacks into a window (lib/profile). Each frame is named by a
 * symbolizer the caller hands in as callbacks (lib/symbolizer in profd, a
 * fake in tests) and interned once per drain: a drain meets the same frames
 * again and again (every stack of a thread shares its outer frames), and
 * naming and interning each occurrence was the largest part of profd's own
 * CPU time. The frame cache is direct-mapped by (pid, address, leaf or not);
 * a process's frames hold until the next drain (it may exec in between),
 * the kernel's until the window is reset (a new window numbers its frames
 * anew). A user frame missed there is looked up by its place in a loaded
 * file (the symbolizer's place callback), which holds for the window.
 * Off-CPU stacks lose the tracing glue at their kernel leaf.
 */
#ifndef PROFD_WINDOW_H
#define PROFD_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

struct profile;
struct sym;
struct window;

/*
 * The symbolizer: 0 with *out filled (unnamed frames included), or -errno.
 * place (optional) keys where a user address lies: *file nonzero names one
 * loaded file, and equal (file, offset, is_ret) always get the same frame
 * from user(), so the frame found for one process serves every other that
 * maps the file (a build host starts the same binaries a hundred times a
 * second). *file 0: not in a loaded file, named by user() alone.
 * later (optional) names a frame that user() gave back with sym.later set
 * (its file's symbols were still being read): 0 with *name, -EAGAIN while
 * the read goes on, another -errno when nothing names it.
 */
struct window_syms {
	int (*user)(void *arg, uint32_t pid, uint64_t ip, int is_ret, struct sym *out);
	int (*kernel)(void *arg, uint64_t ip, struct sym *out);
	void *arg;
	int (*place)(void *arg, uint32_t pid, uint64_t ip, int is_ret, uint64_t *file,
		     uint64_t *offset);
	int (*later)(void *arg, uint64_t file, uint64_t offset, int is_ret, const char **name);
};

struct window_sample {
	uint32_t pid, tid;
	uint32_t kind; /* enum pf_sample_kind */
	uint64_t value;
	const char *comm; /* comm_len bytes, not NUL-terminated */
	size_t comm_len;
	const char *thread;
	size_t thread_len;
	const char *cgroup;  /* NUL-terminated; NULL: none */
	const __u64 *ustack; /* leaf first, as the kernel reports them */
	uint32_t nustack;
	const uint32_t *user_ids; /* set: the user frames are these window frames, root first */
	uint32_t nuser_ids;
	const __u64 *kstack; /* leaf first */
	uint32_t nkstack;
};

struct window_stats {
	uint64_t frame_hits, frame_misses; /* frames found in the cache, and named and interned */
	uint64_t place_hits;               /* of the hits, found by their place in a file */
	uint64_t unplaced;                 /* of the misses, user frames in no loaded file */
	uint64_t glue_frames;              /* tracing glue left out of off-CPU stacks */
	uint64_t later_named;              /* frames named once their file's symbols were in */
	uint64_t later_unnamed;            /* frames whose file, once in, names nothing there */
	uint64_t later_dropped;            /* frames left unnamed: the window closed first, or too many waited */
	uint64_t later_waiting;            /* frames waiting for their file's symbols now */
};

/* Samples go into p, which the caller owns, resets and writes out. */
int window__new(struct profile *p, const struct window_syms *syms, struct window **out);
void window__free(struct window *w);

/* Forgets every cached frame: p was reset (frame ids restart). */
void window__clear(struct window *w);
/* A new drain: forgets the processes' frames (one may have exec'd); keeps the kernel's, places. */
void window__drain(struct window *w);

/*
 * One user frame of pid (is_ret: not the leaf) as a frame of p: from the
 * cache, or named and interned.
 */
int window__frame(struct window *w, uint32_t pid, uint64_t ip, int is_ret, uint32_t *id);
/* Starts the memory reads window__frame will make for these frames of pid (leaf first). */
void window__prefetch(const struct window *w, uint32_t pid, const __u64 *ips, uint32_t n);

/*
 * Adds one sample: its stack is the user frames, root first, then the kernel
 * frames from the entry to the leaf (PROFD_MAX_DEPTH of each at most). 0 or
 * -errno (-E2BIG for a longer stack).
 */
int window__add(struct window *w, const struct window_sample *s);

/*
 * Names the frames whose file's symbols came in since (the later
 * callback). Returns how many still wait: a window written now would
 * keep them unnamed.
 */
size_t window__settle(struct window *w);

void window__stats(const struct window *w, struct window_stats *st);

#endif
