/*
 * Paths of files as /proc showed them, by (dev, inode), hanging off the
 * file cache: an exec event lists a new image's mappings by key alone and
 * is named from here, without a read of /proc. At most max paths; beyond,
 * the one learned first goes.
 */
#ifndef PROFD_FILENAMES_H
#define PROFD_FILENAMES_H

#include <stddef.h>
#include <stdint.h>

struct filecache;
struct filenames;
struct procmaps;

/* fc outlives the names. 0, -ENOMEM, or -ENOSPC (no slot left in fc). */
int filenames__new(struct filecache *fc, size_t max, struct filenames **out);
void filenames__free(struct filenames *n);

/* The paths of pm's file mappings (not deleted files: their path names another). */
void filenames__learn(struct filenames *n, const struct procmaps *pm);
/* NULL: not known. Valid until the next learn. */
const char *filenames__get(const struct filenames *n, uint64_t dev, uint64_t ino);

#endif
