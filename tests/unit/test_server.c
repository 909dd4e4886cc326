/*
 * server: requests and replies over a real socket, driven by epoll in this
 * process: the handler's view, internal errors, deferred answers, requests
 * over the bound, silent clients reaped, a full server saying busy.
 */
#include "ctl.h"
#include "server.h"
#include "t.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static char dir[] = "/tmp/test_server.XXXXXX";
static char path[64];
static unsigned calls;
static uid_t last_uid;
static char last_req[CTL_MAX_REQUEST];

static int handler(const char *req, uid_t uid, char **reply, void *arg)
{
	calls++;
	last_uid = uid;
	snprintf(last_req, sizeof(last_req), "%s", req);
	if (!strcmp(req, "fail"))
		return -EIO;
	if (!strcmp(req, "later"))
		return SERVER_DEFER;
	return asprintf(reply, "ok\t%s\n", req) < 0 ? -ENOMEM : 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Runs the server's side for ms milliseconds, and on until a turn finds nothing to do. */
static void pump(struct server *s, int epfd, int ms)
{
	struct epoll_event ev[16];
	int64_t end = now_ms() + ms;
	int n;

	do {
		n = epoll_wait(epfd, ev, 16, 5);
		for (int i = 0; i < n; i++)
			server__dispatch(s, ev[i].data.ptr, ev[i].events);
	} while (n > 0 || now_ms() < end);
}

static int client(const char *req)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (req && send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* What the server sent so far; *closed once it closed the connection. */
static const char *reply_of(int fd, bool *closed)
{
	static char buf[512];
	size_t len = 0;
	ssize_t r;

	*closed = false;
	while ((r = recv(fd, buf + len, sizeof(buf) - 1 - len, MSG_DONTWAIT)) > 0)
		len += (size_t)r;
	/* Closed with part of a request unread, the socket is reset rather than ended. */
	*closed = r == 0 || (r < 0 && errno == ECONNRESET);
	buf[len] = 0;
	return buf;
}

static void test_requests(struct server *s, int epfd)
{
	bool closed = false;
	int a = client("status\n"), b = client("fail\n"), c;

	CHECK(a >= 0 && b >= 0);
	pump(s, epfd, 100);
	CHECK_EQ_STR(reply_of(a, &closed), "ok\tstatus\n");
	CHECK(closed);
	CHECK_EQ_STR(last_req, "fail");
	CHECK_EQ_INT(last_uid, getuid());
	CHECK_EQ_STR(reply_of(b, &closed), "error\tinternal error\n");
	CHECK(closed);
	close(a);
	close(b);
	/* A request in two pieces is one request. */
	c = client("flu");
	pump(s, epfd, 30);
	CHECK(send(c, "sh\n", 3, MSG_NOSIGNAL) == 3);
	pump(s, epfd, 50);
	CHECK_EQ_STR(reply_of(c, &closed), "ok\tflush\n");
	close(c);
}

static void test_deferred(struct server *s, int epfd)
{
	bool closed = true;
	int a = client("later\n"), b = client("later\n");

	pump(s, epfd, 100);
	CHECK_EQ_STR(reply_of(a, &closed), "");
	CHECK(!closed);
	server__answer_deferred(s, "ok\tflushed\n");
	pump(s, epfd, 50);
	CHECK_EQ_STR(reply_of(a, &closed), "ok\tflushed\n");
	CHECK(closed);
	CHECK_EQ_STR(reply_of(b, &closed), "ok\tflushed\n");
	close(a);
	close(b);
}

static void test_bounds(struct server *s, int epfd)
{
	char big[CTL_MAX_REQUEST + 10];
	bool closed = false;
	unsigned before = calls;
	int a, b;

	/* No newline within the bound: dropped, the handler never sees it. */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	a = client(big);
	/* Silent: dropped at its deadline. */
	b = client(NULL);
	pump(s, epfd, 100);
	CHECK_EQ_STR(reply_of(a, &closed), "");
	CHECK(closed);
	CHECK_EQ_STR(reply_of(b, &closed), "");
	CHECK(!closed);
	server__reap(s, now_ms() + 60000);
	reply_of(b, &closed);
	CHECK(closed);
	CHECK_EQ_INT(calls, before);
	close(a);
	close(b);
}

/* Every slot taken: the next client is told, not just closed. */
static void test_busy(struct server *s, int epfd)
{
	enum { N = 40 };
	int fds[N];
	int told = 0, served = 0;
	bool closed = false;

	for (int i = 0; i < N; i++) {
		fds[i] = client(NULL);
		pump(s, epfd, 0);
	}
	pump(s, epfd, 50);
	for (int i = 0; i < N; i++) {
		const char *r = reply_of(fds[i], &closed);

		told += closed && !strncmp(r, "error\tbusy", 10);
	}
	CHECK(told > 0);
	CHECK_EQ_INT(server__busy(s), told);
	for (int i = 0; i < N; i++) {
		if (fds[i] >= 0 && send(fds[i], "x\n", 2, MSG_NOSIGNAL) == 2)
			served++;
	}
	pump(s, epfd, 100);
	for (int i = 0; i < N; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
	}
	CHECK(served >= N - told);
}

int main(void)
{
	struct server *s = NULL;
	char longpath[200];
	struct stat st;
	int epfd = epoll_create1(EPOLL_CLOEXEC), fd;

	if (!mkdtemp(dir) || epfd < 0) {
		perror("set-up");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/sock", dir);
	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[sizeof(longpath) - 1] = 0;
	CHECK_EQ_INT(server__open(longpath, epfd, handler, NULL, &s), -ENAMETOOLONG);
	/* A regular file in the way is never removed. */
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	CHECK(fd >= 0);
	close(fd);
	CHECK_EQ_INT(server__open(path, epfd, handler, NULL, &s), -EADDRINUSE);
	unlink(path);
	CHECK_EQ_INT(server__open(path, epfd, handler, NULL, &s), 0);
	if (!s)
		T_DONE();
	/* 0660: the umask at bind time, whatever the caller's. */
	CHECK(!stat(path, &st) && S_ISSOCK(st.st_mode) && (st.st_mode & 0777) == 0660);
	test_requests(s, epfd);
	test_deferred(s, epfd);
	test_bounds(s, epfd);
	test_busy(s, epfd);
	server__free(s);
	CHECK(access(path, F_OK) && errno == ENOENT);
	/* A stale socket from a crashed run is replaced. */
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	{
		struct sockaddr_un sa = { .sun_family = AF_UNIX };

		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
		CHECK(fd >= 0 && !bind(fd, (struct sockaddr *)&sa, sizeof(sa)));
	}
	close(fd);
	s = NULL;
	CHECK_EQ_INT(server__open(path, epfd, handler, NULL, &s), 0);
	server__free(s);
	close(epfd);
	rmdir(dir);
	T_DONE();
}
