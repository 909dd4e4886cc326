/* A profile: aggregated samples over interned strings, frames and stacks. */
#ifndef PROFD_PROFILE_H
#define PROFD_PROFILE_H

#include <stddef.h>
#include <stdint.h>

struct profile;

enum pf_frame_kind {
	PF_FRAME_USER = 0,   /* native code in a file mapping */
	PF_FRAME_KERNEL = 1, /* kernel or kernel module */
	PF_FRAME_JIT = 2,    /* named from a perf map */
	PF_FRAME_PY = 3,     /* a CPython function: name "qualname (file)", module its file, offset PF_PY_OFFSET() */
};

/* A Python frame's offset: its function's first line, and the line being run (0: not known). */
#define PF_PY_OFFSET(first, line) ((uint64_t)(uint32_t)(first) | (uint64_t)(uint32_t)(line) << 32)
#define PF_PY_FIRST(offset) ((uint32_t)(offset))
#define PF_PY_LINE(offset) ((uint32_t)((offset) >> 32))

enum pf_sample_kind {
	PF_KIND_CPU = 0,    /* value: samples */
	PF_KIND_OFFCPU = 1, /* value: nanoseconds blocked */
	PF_KIND_RUNQ = 2,   /* value: nanoseconds waiting for a CPU */
	PF_KIND_MAX,
};

/*
 * A frame. name is the symbol ("" when unknown); module the file path or
 * kernel module ("" when unknown); offset the file-relative offset inside
 * module, or the raw address when module is "". All three are what a user
 * needs to resolve a frame later.
 */
struct pf_frame {
	uint32_t name;   /* string id */
	uint32_t module; /* string id */
	uint64_t offset;
	uint32_t kind;   /* enum pf_frame_kind */
};

struct pf_sample {
	uint32_t pid, tid;
	uint32_t comm;    /* string id: process name */
	uint32_t thread;  /* string id: thread name */
	uint32_t cgroup;  /* string id: cgroup path ("" when unknown) */
	uint32_t stack;   /* stack id */
	uint32_t kind;    /* enum pf_sample_kind */
	uint64_t value;
};

struct pf_counter {
	uint32_t name; /* string id */
	uint64_t value;
};

/* Window metadata. Times are CLOCK_REALTIME nanoseconds, [start, end). */
struct pf_meta {
	int64_t start_ns, end_ns;
	uint32_t host, kernel, event; /* string ids */
	uint32_t frequency;           /* Hz */
};

int profile__new(struct profile **out);
void profile__free(struct profile *p);
/*
 * Table sizes: strings (and the bytes of their text, each with its NUL),
 * frames, stacks (and the frames they hold in all), samples.
 */
struct pf_sizes {
	size_t strs, str_bytes, frames, stacks, stack_frames, samples;
};
void profile__sizes(const struct profile *p, struct pf_sizes *out);
/*
 * Makes room for tables of at least these sizes in all, so that a caller
 * who knows what comes does not grow them (and rehash their indexes) step
 * by step. Ids and contents do not change. 0 or -ENOMEM.
 */
int profile__reserve(struct profile *p, const struct pf_sizes *n);
/* Drops samples, stacks, frames, strings and metadata; keeps allocations. */
void profile__reset(struct profile *p);
/* Drops samples, counters and metadata; strings, frames and stacks keep their ids. */
void profile__reset_samples(struct profile *p);
/*
 * Changes whenever ids may be reused (new, reset) and never repeats: an id
 * kept beside the generation it came from is valid while the two match.
 */
uint64_t profile__gen(const struct profile *p);
/* Heap bytes held (allocated capacity, used or not). */
size_t profile__mem_bytes(const struct profile *p);

/* Strings: id 0 is always "". */
int profile__intern(struct profile *p, const char *s, size_t len, uint32_t *id);
int profile__intern_str(struct profile *p, const char *s, uint32_t *id);
const char *profile__str(const struct profile *p, uint32_t id);
size_t profile__nstrs(const struct profile *p);

int profile__frame_add(struct profile *p, const struct pf_frame *f, uint32_t *id);
const struct pf_frame *profile__frame(const struct profile *p, uint32_t id);
/*
 * Gives frame id the name string name (its symbols came in after it was
 * interned unnamed). The stacks holding it keep it; a frame added later
 * with the new name may get an id of its own (the same frame twice reads
 * the same, and a merge makes them one). 0 or -EINVAL.
 */
int profile__frame_rename(struct profile *p, uint32_t id, uint32_t name);
size_t profile__nframes(const struct profile *p);

/* Stacks are frame ids, root first. Stack 0 is the empty stack. */
int profile__stack_add(struct profile *p, const uint32_t *frames, uint32_t n, uint32_t *id);
const uint32_t *profile__stack(const struct profile *p, uint32_t id, uint32_t *n);
size_t profile__nstacks(const struct profile *p);

/* Adds value to the sample with the same labels, stack and kind. */
int profile__add(struct profile *p, const struct pf_sample *s);
size_t profile__nsamples(const struct profile *p);
const struct pf_sample *profile__sample(const struct profile *p, size_t i);

struct pf_meta *profile__meta(struct profile *p);
const struct pf_meta *profile__meta_const(const struct profile *p);

/* Counters (losses, totals) by name; add accumulates. */
int profile__counter_add(struct profile *p, const char *name, uint64_t value);
size_t profile__ncounters(const struct profile *p);
const struct pf_counter *profile__counter(const struct profile *p, size_t i);
uint64_t profile__counter_get(const struct profile *p, const char *name);

/*
 * Merges src into dst, re-interning everything. dst remembers how src's ids
 * map to its own until either is reset, so merging a src whose tables only
 * grew since the last merge (profile__reset_samples) interns only what is new. keep() may reject a sample
 * (return 0); NULL keeps all. Metadata: dst's time range grows to cover
 * src's; counters add up; host/kernel/event are taken from src when dst has
 * none.
 */
typedef int (*profile_keep_fn)(const struct profile *src, const struct pf_sample *s, void *arg);
int profile__merge(struct profile *dst, const struct profile *src, profile_keep_fn keep, void *arg);

/*
 * PF_MERGE_BY_FUNCTION: a named frame keeps its module but not its offset, so
 * samples at different pcs of one function become one frame and their stacks
 * one stack. Every view prints functions; over hours of windows this keeps
 * the merged tables small (unnamed frames keep their offset: it is their name).
 */
#define PF_MERGE_BY_FUNCTION (1u << 0)
/*
 * PF_MERGE_BY_NAME: pid and tid become 0, so the samples of processes that
 * share a name, thread name, cgroup and stack become one. Every view but
 * pprof and --pid groups by those names; over days of short-lived
 * processes (compilers) this keeps a merged profile the size of its answer.
 */
#define PF_MERGE_BY_NAME (1u << 1)
/*
 * PF_MERGE_NO_THREAD: thread names become "" (after keep()), so the
 * samples of a process's threads that share a stack become one: for views
 * that print no thread name, whose answer does not depend on them.
 */
#define PF_MERGE_NO_THREAD (1u << 2)
/*
 * PF_MERGE_BY_LABEL (with PF_MERGE_BY_FUNCTION): frames keyed by what a
 * folded line prints of them (fold.h): a named frame by its name and kind
 * alone, an unnamed one of no known file by its kind. A folded view's
 * merged profile is then already folded by frame.
 */
#define PF_MERGE_BY_LABEL (1u << 3)
/* PF_MERGE_NO_CGROUP: cgroup paths become "" (after keep()), for views that print none. */
#define PF_MERGE_NO_CGROUP (1u << 4)
int profile__merge_flags(struct profile *dst, const struct profile *src, profile_keep_fn keep,
			 void *arg, unsigned flags);

/*
 * profile__merge_flags() (no keep()) with some of src's frames renamed:
 * as(src, id, &name, &len, arg) returns 1 for a frame merged as (name, len
 * bytes, valid until as() is called again; its module; offset 0; its kind),
 * the flags applying then as to any frame, 0 for a frame merged as it is,
 * or -errno, which the merge returns. In a stack, a renamed frame right
 * after a frame that reads the same (name, module, kind, offset 0) is left
 * out: a run of them is one frame. Answers are kept with the merge's other
 * maps, so as() must answer alike for a frame while src's ids stay.
 */
typedef int (*profile_rename_fn)(const struct profile *src, uint32_t frame, const char **name,
				 size_t *len, void *arg);
int profile__merge_renamed(struct profile *dst, const struct profile *src, unsigned flags,
			   profile_rename_fn as, void *arg);

#endif
