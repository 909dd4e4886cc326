/*
 * Opening files that untrusted processes name (mapped libraries, perf maps,
 * debug files in a container's root): the path is opened with O_PATH first
 * and reopened for reading only when fstat says it is a regular file, so a
 * FIFO (which would block), a device (whose driver's open would run) or a
 * socket is never opened for reading.
 */
#ifndef PROFD_SAFEOPEN_H
#define PROFD_SAFEOPEN_H

#include <sys/stat.h>

enum safeopen_flags {
	SAFEOPEN_IN_ROOT = 1 << 0,     /* resolve path inside dirfd as its root (symlinks included) */
	SAFEOPEN_NO_SYMLINKS = 1 << 1, /* no symlink anywhere in path */
	SAFEOPEN_NOFOLLOW = 1 << 2,    /* the last component is not followed (without IN_ROOT) */
	SAFEOPEN_NO_FUSE = 1 << 3,     /* refuse a file on FUSE: its server, any user, can stall a read for ever */
};

/*
 * Opens path (relative to dirfd) read-only, O_CLOEXEC | O_NONBLOCK |
 * O_NOCTTY. Returns the descriptor, -EINVAL when it is not a regular file
 * or (NO_FUSE) it is on FUSE (nothing was opened for reading then), or -errno. st, when not NULL,
 * receives its fstat.
 */
int safeopen__regular(int dirfd, const char *path, int flags, struct stat *st);

/* The same for a descriptor opened with O_PATH (taken, closed in every case). */
int safeopen__reopen(int pathfd, int flags, struct stat *st);

#endif
