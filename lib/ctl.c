#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int wait_fd(int fd, short ev, int64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = ev };
	int64_t left = deadline - now_ms();
	int r;

	if (left <= 0)
		return -ETIMEDOUT;
	r = poll(&p, 1, (int)left);
	if (r < 0)
		return -errno;
	return r ? 0 : -ETIMEDOUT;
}

int ctl__call(const char *path, const char *request, char **reply, int timeout_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int64_t deadline = now_ms() + timeout_ms;
	size_t len = 0, cap = 4096, rl = strlen(request), sent = 0;
	char *buf = NULL;
	int fd = -1, err;

	if (strlen(path) >= sizeof(sa.sun_path) || rl + 1 > CTL_MAX_REQUEST)
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/*
	 * A full listen queue answers EAGAIN at once, with nothing to wait on:
	 * try again a few times within the deadline, then say busy.
	 */
	while (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) && errno != EINPROGRESS) {
		struct timespec pause = { 0, 20 * 1000000 };

		err = errno == EAGAIN ? -EBUSY : -errno;
		if (err != -EBUSY || now_ms() + 20 >= deadline)
			goto out;
		nanosleep(&pause, NULL);
	}
	while (sent <= rl) {
		const char *chunk = sent < rl ? request + sent : "\n";
		size_t clen = sent < rl ? rl - sent : 1;
		ssize_t w;

		err = wait_fd(fd, POLLOUT, deadline);
		if (err)
			goto out;
		w = send(fd, chunk, clen, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			/* A daemon with no room replies and closes before reading: the reply may wait. */
			if (errno == EPIPE || errno == ECONNRESET)
				break;
			err = -errno;
			goto out;
		}
		sent += w;
	}
	buf = malloc(cap);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t r;

		err = wait_fd(fd, POLLIN, deadline);
		if (err)
			goto out;
		if (len + 1 >= cap) {
			char *nb;

			if (cap >= CTL_MAX_REPLY) {
				err = -EMSGSIZE;
				goto out;
			}
			nb = realloc(buf, cap * 2);
			if (!nb) {
				err = -ENOMEM;
				goto out;
			}
			buf = nb;
			cap *= 2;
		}
		r = recv(fd, buf + len, cap - len - 1, 0);
		if (r < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			/* Closed with our request unread: what came before the reset is the reply. */
			if (errno == ECONNRESET && len)
				break;
			err = -errno;
			goto out;
		}
		if (r == 0)
			break;
		len += r;
	}
	buf[len] = 0;
	*reply = buf;
	buf = NULL;
	err = 0;
out:
	free(buf);
	close(fd);
	return err;
}

char *ctl__get(const char *reply, const char *key)
{
	size_t kl = strlen(key);

	for (const char *l = reply; l && *l;) {
		const char *nl = strchr(l, '\n');
		size_t ll = nl ? (size_t)(nl - l) : strlen(l);

		if (ll > kl && !strncmp(l, key, kl) && l[kl] == '\t')
			return strndup(l + kl + 1, ll - kl - 1);
		l = nl ? nl + 1 : NULL;
	}
	return NULL;
}

int ctl__busy(int err, const char *reply)
{
	return err == -EBUSY || (!err && reply && !strncmp(reply, "error\tbusy", 10));
}
