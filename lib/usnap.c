#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "usnap.h"

/* A record's bytes before its stack. */
#define HEAD offsetof(struct profd_uevent, stack)

int usnap__write(int fd, const struct profd_uevent *ev)
{
	__u32 stack_len = ev->stack_len > PROFD_SNAP_STACK ? PROFD_SNAP_STACK : ev->stack_len;
	char head[HEAD];
	struct iovec iov[2] = { { head, HEAD }, { (void *)ev->stack, stack_len } };
	ssize_t n;

	/* The length stored is the length written: a reader finds the next record by it. */
	memcpy(head, ev, HEAD);
	memcpy(head + offsetof(struct profd_uevent, stack_len), &stack_len, sizeof(stack_len));
	n = writev(fd, iov, 2);
	if (n < 0)
		return -errno;
	return (size_t)n == HEAD + stack_len ? 0 : -EIO;
}

int usnap__read(int fd, uint64_t *off, struct profd_uevent *ev)
{
	ssize_t n = pread(fd, ev, HEAD, (off_t)*off);

	if (n < 0)
		return -errno;
	if ((size_t)n < HEAD)
		return 0;
	if (ev->type != PROFD_UEV_SNAPSHOT || ev->stack_len > PROFD_SNAP_STACK ||
	    ev->nframes > PROFD_MAX_DEPTH)
		return -EBADMSG;
	n = pread(fd, ev->stack, ev->stack_len, (off_t)(*off + HEAD));
	if (n < 0)
		return -errno;
	if ((size_t)n < ev->stack_len)
		return 0;
	*off += HEAD + ev->stack_len;
	return 1;
}
