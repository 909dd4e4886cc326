#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "notify.h"
#include "parse.h"

int notify_send(const char *msg)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t len;
	int fd, err = 0;

	if (!path || !*path)
		return 0;
	if ((path[0] != '/' && path[0] != '@') || strlen(path) >= sizeof(sa.sun_path))
		return -EINVAL;
	memcpy(sa.sun_path, path, strlen(path));
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = 0; /* abstract namespace */
	len = offsetof(struct sockaddr_un, sun_path) + strlen(path);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa, len) < 0)
		err = -errno;
	close(fd);
	return err;
}

int notify_sendf(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return notify_send(buf);
}

int64_t notify_watchdog_ns(void)
{
	const char *us = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
	uint64_t v, p;

	if (!us || parse_u64(us, &v) || v == 0 || v > INT64_MAX / 1000)
		return 0;
	/* WATCHDOG_PID names the process systemd watches; a child that inherited it is not it. */
	if (pid && (parse_u64(pid, &p) || p != (uint64_t)getpid()))
		return 0;
	return (int64_t)v * 1000;
}
