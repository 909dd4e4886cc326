/* Read-only opens of untrusted paths, with the file type checked before the open that reads. */
#include "safeopen.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#define READ_FLAGS (O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)

#define FUSE_SUPER_MAGIC 0x65735546

int safeopen__reopen(int pathfd, int flags, struct stat *st)
{
	char self[40];
	struct statfs sf;
	struct stat sb;
	int fd, err = 0;

	if (pathfd < 0)
		return pathfd;
	if (fstat(pathfd, &sb) < 0) {
		err = -errno;
		goto out;
	}
	if (!S_ISREG(sb.st_mode) || ((flags & SAFEOPEN_NO_FUSE) && !fstatfs(pathfd, &sf) && sf.f_type == FUSE_SUPER_MAGIC)) {
		err = -EINVAL;
		goto out;
	}
	/* The reopen goes through the inode already held: a rename or a new mount cannot swap it. */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pathfd);
	fd = open(self, READ_FLAGS);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	if (st)
		*st = sb;
	close(pathfd);
	return fd;
out:
	close(pathfd);
	return err;
}

static int open_path_in_root(int dirfd, const char *path, int flags)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS |
			   (flags & SAFEOPEN_NO_SYMLINKS ? RESOLVE_NO_SYMLINKS : 0),
	};
	int fd;

	fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	if (fd >= 0)
		return fd;
	if (errno != ENOSYS && errno != EPERM)
		return -errno;
	/* Before 5.6: no symlink followed in the last component; the root is then not enforced above it. */
	while (*path == '/')
		path++;
	fd = openat(dirfd, path, O_PATH | O_CLOEXEC | O_NOFOLLOW);
	return fd < 0 ? -errno : fd;
}

int safeopen__regular(int dirfd, const char *path, int flags, struct stat *st)
{
	int fd;

	if (flags & SAFEOPEN_IN_ROOT) {
		fd = open_path_in_root(dirfd, path, flags);
	} else {
		fd = openat(dirfd, path, O_PATH | O_CLOEXEC | (flags & SAFEOPEN_NOFOLLOW ? O_NOFOLLOW : 0));
		if (fd < 0)
			fd = -errno;
	}
	return safeopen__reopen(fd, flags, st);
}
