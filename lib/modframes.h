/* Module frames: what named windows of the store hold for unnamed frames (docs/FORMAT.md). */
#ifndef PROFD_MODFRAMES_H
#define PROFD_MODFRAMES_H

#include <stdint.h>

struct profile;

/*
 * dst (reset first): src with every unnamed frame folded into its module,
 * named "[cc1]" (the module's base name), offset 0, one frame for each run
 * of such frames in a stack; "[unknown]" without a module. Named windows
 * of the store are written so (docs/FORMAT.md, "Rollups"): with pids gone,
 * a stripped binary's return address names nothing a user can act on, the
 * module still says where the time went. Folding twice changes nothing.
 */
int modframes__fold(struct profile *dst, const struct profile *src);
/*
 * profile__merge_flags(dst, src folded as by modframes__fold(), NULL,
 * NULL, flags) in one pass, with no folded profile between them: dst is
 * the same, id for id. A named rollup merges a chain's windows so; what
 * dst remembers of src's ids (profile__merge()) spares each window what
 * the windows before it mapped.
 */
int modframes__fold_merge(struct profile *dst, const struct profile *src, unsigned flags);
/* The frame that stands for the folded calls of modframes__fold_tail(). */
#define MODFRAMES_FOLDED "[folded]"
/*
 * dst (reset first): src with the frames between the leaf of each entry
 * whose value is under 1/div of its sample kind's total in src and its
 * deepest caller whose calls add up to at least that share (the group's
 * root if none: kind, names, cgroup, pid and tid stay) replaced by one
 * frame MODFRAMES_FOLDED; an entry with none between keeps its stack.
 * Values and leaves stay, so self time by function is exact; *moved is
 * the value folded. A named window's long tail of stacks seen once is most
 * of its bytes (docs/FORMAT.md, "Rollups"). src's frames must be named
 * (modframes__fold() first): an unnamed one becomes its module's.
 */
int modframes__fold_tail(struct profile *dst, const struct profile *src, uint32_t div, uint64_t *moved);
/*
 * The same in two steps, each about half the work (a 10-minute window of
 * a 64-CPU host is 60-75 ms in one): tail_plan() sorts src's entries and
 * builds their call tree, tail_apply() writes dst from them; src must not
 * change in between.
 */
struct modtail;
int modframes__tail_new(struct modtail **out);
void modframes__tail_free(struct modtail *t);
int modframes__tail_plan(struct modtail *t, const struct profile *src, uint32_t div);
int modframes__tail_apply(struct modtail *t, struct profile *dst, uint64_t *moved);
/* Whether p holds a frame modframes__fold() made. */
int modframes__has(const struct profile *p);

/*
 * Windows as flushed (docs/FORMAT.md), as the flags ask:
 * MODCALLS_BY_FUNCTION, callers by function: leaves and Python frames as
 * they are, a named caller at one pc per function (the first met, the
 * same in every window while c lives, so a pprof address still resolves
 * to its function), a run of unnamed callers in one module as its module
 * frame ("[cc1]", as modframes__fold() names it);
 * MODCALLS_RUNQ_ENTRY, run-queue entries by kernel entry: a run-queue
 * entry's stack cut after its first (outermost) kernel frame, entries
 * that then have one stack merged.
 */
#define MODCALLS_BY_FUNCTION 1u
#define MODCALLS_RUNQ_ENTRY 2u
/*
 * With MODCALLS_BY_FUNCTION: a named leaf (not Python) at its function's
 * one pc too, as its callers; unnamed leaves keep their pc. Optional
 * because the pc inside a leaf function is what pprof addresses show; a
 * busy window's leaves sampled at new pcs are a tenth of its bytes.
 */
#define MODCALLS_LEAF_BY_FUNCTION 4u
struct modcalls;
int modframes__calls_new(struct modcalls **out, unsigned flags);
void modframes__calls_free(struct modcalls *c);
/* *out: src by function, owned by c until its next call. */
int modframes__calls(struct modcalls *c, const struct profile *src, const struct profile **out);

#endif
