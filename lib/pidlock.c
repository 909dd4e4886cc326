#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pidlock.h"
#include "parse.h"

#define PIDFILE "profd.pid"

struct pidlock {
	int fd, dfd;
};

static pid_t read_pid(int fd)
{
	char buf[32];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	uint64_t v;

	if (n <= 0)
		return 0;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	if (parse_u64(buf, &v) || v == 0 || v > 0x7fffffff)
		return 0;
	return (pid_t)v;
}

/*
 * The directory itself, never what a symbolic link in its place points at:
 * root following one would take over a directory elsewhere. Only the last
 * component is checked; links above it are the administrator's.
 */
int pidlock__open_dir(const char *dir)
{
	struct stat st;
	int fd;

	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	if (!lstat(dir, &st) && S_ISLNK(st.st_mode))
		return -ELOOP;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int pidlock__take(const char *dir, struct pidlock **out, pid_t *holder)
{
	struct pidlock *l = calloc(1, sizeof(*l));
	char buf[32];
	int err, n;

	*holder = 0;
	if (!l)
		return -ENOMEM;
	l->fd = -1;
	l->dfd = pidlock__open_dir(dir);
	if (l->dfd < 0) {
		err = l->dfd;
		goto fail;
	}
	for (int tries = 0;; tries++) {
		struct stat a, b;

		l->fd = openat(l->dfd, PIDFILE, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
		if (l->fd < 0) {
			err = -errno;
			goto fail;
		}
		/* flock, not a pid check: the kernel drops it when the holder dies, however it dies. */
		if (flock(l->fd, LOCK_EX | LOCK_NB)) {
			err = errno == EWOULDBLOCK ? -EBUSY : -errno;
			if (err == -EBUSY)
				*holder = read_pid(l->fd);
			goto fail;
		}
		/* The holder unlinks on exit: a lock on a file no longer at the path guards nothing. */
		if (!fstat(l->fd, &a) && !fstatat(l->dfd, PIDFILE, &b, AT_SYMLINK_NOFOLLOW) && a.st_dev == b.st_dev &&
		    a.st_ino == b.st_ino)
			break;
		close(l->fd);
		l->fd = -1;
		if (tries == 10) {
			err = -EBUSY;
			goto fail;
		}
	}
	n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (ftruncate(l->fd, 0) || pwrite(l->fd, buf, n, 0) != n) {
		err = errno ? -errno : -EIO;
		goto fail;
	}
	*out = l;
	return 0;
fail:
	if (l->fd >= 0)
		close(l->fd);
	if (l->dfd >= 0)
		close(l->dfd);
	free(l);
	return err;
}

void pidlock__free(struct pidlock *l)
{
	if (!l)
		return;
	/* Unlink while still holding the lock, so a starting profd never sees our stale pid. */
	unlinkat(l->dfd, PIDFILE, 0);
	close(l->fd);
	close(l->dfd);
	free(l);
}
