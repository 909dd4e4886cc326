#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lock.h"
#include "parse.h"

struct pidlock {
	int fd;
	char *path;
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

int pidlock__take(const char *dir, struct pidlock **out, pid_t *holder)
{
	struct pidlock *l = calloc(1, sizeof(*l));
	char buf[32];
	int err, n;

	*holder = 0;
	if (!l)
		return -ENOMEM;
	l->fd = -1;
	if (asprintf(&l->path, "%s/profd.pid", dir) < 0) {
		l->path = NULL;
		err = -ENOMEM;
		goto fail;
	}
	if (mkdir(dir, 0700) && errno != EEXIST) {
		err = -errno;
		goto fail;
	}
	for (int tries = 0;; tries++) {
		struct stat a, b;

		l->fd = open(l->path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
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
		if (!fstat(l->fd, &a) && !stat(l->path, &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
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
	free(l->path);
	free(l);
	return err;
}

void pidlock__free(struct pidlock *l)
{
	if (!l)
		return;
	/* Unlink while still holding the lock, so a starting profd never sees our stale pid. */
	unlink(l->path);
	close(l->fd);
	free(l->path);
	free(l);
}
