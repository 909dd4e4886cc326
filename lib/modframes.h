/* Module frames: what named windows of the store hold for unnamed frames (docs/FORMAT.md). */
#ifndef PROFD_MODFRAMES_H
#define PROFD_MODFRAMES_H

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
/* Whether p holds a frame modframes__fold() made. */
int modframes__has(const struct profile *p);

#endif
