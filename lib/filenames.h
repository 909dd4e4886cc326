/*
 * Paths of files as /proc showed them, by (dev, inode), hanging off the
 * file cache: an exec event lists a new image's mappings by key alone and
 * is named from here, without a read of /proc. A key alone does not tell
 * a file from the one given its inode number after it was deleted (ext4
 * gives the freed number to the next new file of its group): each path is
 * kept with its file's identity, and given only for that identity. At
 * most max paths; beyond, the one learned first goes.
 */
#ifndef PROFD_FILENAMES_H
#define PROFD_FILENAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct filecache;
struct filenames;
struct procmap;

/*
 * What stat says of the file, as the kernel keeps it: a new file under an
 * old inode number differs at least in its change time, which no user can
 * set (size and mtime can be copied: cp -p).
 */
struct filenames_id {
	uint64_t size;
	int64_t mtime_ns;
	int64_t ctime_ns;
};

/* fc outlives the names. 0, -ENOMEM, or -ENOSPC (no slot left in fc). */
int filenames__new(struct filecache *fc, size_t max, struct filenames **out);
void filenames__free(struct filenames *n);

/*
 * Whether m's path is one to learn: a file's (not anonymous, not deleted:
 * its path names another; no newline: PROCMAP_QUERY's raw name) and not
 * known for its key as it is (a name dropped as another file's is not).
 * False: no stat to take.
 */
bool filenames__wants(const struct filenames *n, const struct procmap *m);
/* m's path for its key, with id the identity of the file m maps. 0, -EINVAL (not wanted), -ENOMEM. */
int filenames__learn(struct filenames *n, const struct procmap *m, const struct filenames_id *id);
/*
 * The path learned for (dev, ino), valid until the next learn: 0, or
 * -ENOENT (not known), or -ESTALE: learned for a file of another
 * identity, the name is then dropped (the key's next learn takes it anew).
 */
int filenames__get(struct filenames *n, uint64_t dev, uint64_t ino, const struct filenames_id *id,
		   const char **path);

#endif
