#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "server.h"

#define MAX_CLIENTS 32
#define CLIENT_TIMEOUT_MS 2000
/* A deferred request waits for its answer (a flush coalesced with the last, under 1 s). */
#define DEFER_TIMEOUT_MS 5000
/*
 * Connections one user other than root may hold, and slots only root may
 * take: a user who holds connections (or opens them as fast as they close)
 * cannot keep root's `profctl status` out.
 */
#define MAX_PER_UID 8
#define ROOT_SLOTS 8
#define BUSY_REPLY "error\tbusy: too many connections to profd's socket; try again\n"

struct client {
	int fd;
	uid_t uid;
	bool deferred;
	int64_t deadline_ms;
	size_t len;
	char req[CTL_MAX_REQUEST];
	char *reply;
	size_t rlen, rsent;
};

struct server {
	int fd, epfd;
	char *path;
	server_handler_fn fn;
	void *arg;
	struct client clients[MAX_CLIENTS];
	uint64_t busy;
};

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int server__open(const char *path, int epfd, server_handler_fn fn, void *arg, struct server **out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct epoll_event ev = { .events = EPOLLIN };
	struct server *s;
	mode_t old;
	int err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->epfd = epfd;
	s->fn = fn;
	s->arg = arg;
	for (int i = 0; i < MAX_CLIENTS; i++)
		s->clients[i].fd = -1;
	s->path = strdup(path);
	s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (!s->path || s->fd < 0) {
		err = s->path ? -errno : -ENOMEM;
		goto fail;
	}
	strcpy(sa.sun_path, path);
	/* A stale socket from a crashed run: only ever unlink a socket, never a file. */
	{
		struct stat st;

		if (!lstat(path, &st) && S_ISSOCK(st.st_mode))
			unlink(path);
	}
	old = umask(0117);
	err = bind(s->fd, (struct sockaddr *)&sa, sizeof(sa)) ? -errno : 0;
	umask(old);
	if (err)
		goto fail;
	/* A client told "busy" is accepted first: a long queue keeps root's connect from EAGAIN under a flood. */
	if (listen(s->fd, SOMAXCONN)) {
		err = -errno;
		goto fail;
	}
	ev.data.ptr = s;
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, s->fd, &ev)) {
		err = -errno;
		goto fail;
	}
	*out = s;
	return 0;
fail:
	if (s->fd >= 0)
		close(s->fd);
	free(s->path);
	free(s);
	return err;
}

static void drop(struct server *s, struct client *c)
{
	epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c->reply);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

void server__free(struct server *s)
{
	if (!s)
		return;
	for (int i = 0; i < MAX_CLIENTS; i++)
		if (s->clients[i].fd >= 0)
			drop(s, &s->clients[i]);
	close(s->fd);
	unlink(s->path);
	free(s->path);
	free(s);
}

/* A free slot for a client of uid, or NULL: the server or that user is at its cap. */
static struct client *slot_for(struct server *s, uid_t uid)
{
	struct client *free_slot = NULL;
	int used = 0, mine = 0;

	for (int i = 0; i < MAX_CLIENTS; i++) {
		struct client *c = &s->clients[i];

		if (c->fd < 0) {
			free_slot = free_slot ? free_slot : c;
			continue;
		}
		used++;
		mine += c->uid == uid;
	}
	if (uid && (mine >= MAX_PER_UID || used >= MAX_CLIENTS - ROOT_SLOTS))
		return NULL;
	return free_slot;
}

/*
 * A bounded number per turn: a client that reconnects as fast as it is
 * refused would otherwise keep the loop here; the listening socket stays
 * readable and comes back at the next epoll_wait.
 */
#define ACCEPTS_PER_TURN 64

static void accept_all(struct server *s)
{
	for (int n = 0; n < ACCEPTS_PER_TURN; n++) {
		int fd = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct epoll_event ev = { .events = EPOLLIN };
		struct ucred cred;
		socklen_t len = sizeof(cred);
		struct client *c;

		if (fd < 0)
			return;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) || len != sizeof(cred)) {
			close(fd);
			continue;
		}
		c = slot_for(s, cred.uid);
		if (!c) {
			/* Told, not just closed: profctl says busy, not "not running". A full buffer loses the line only. */
			(void)!send(fd, BUSY_REPLY, sizeof(BUSY_REPLY) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
			close(fd);
			s->busy++;
			continue;
		}
		c->fd = fd;
		c->uid = cred.uid;
		c->deferred = false;
		c->len = 0;
		c->deadline_ms = mono_ms() + CLIENT_TIMEOUT_MS;
		ev.data.ptr = c;
		if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev)) {
			close(fd);
			c->fd = -1;
		}
	}
}

static void write_reply(struct server *s, struct client *c)
{
	while (c->rsent < c->rlen) {
		ssize_t w = send(c->fd, c->reply + c->rsent, c->rlen - c->rsent, MSG_NOSIGNAL);

		if (w < 0) {
			if (errno == EAGAIN) {
				struct epoll_event ev = { .events = EPOLLOUT, .data.ptr = c };

				epoll_ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &ev);
				return;
			}
			break;
		}
		c->rsent += w;
	}
	drop(s, c);
}

/* Sends reply (malloc'd, owned from here on); NULL (out of memory) drops the client. */
static void start_reply(struct server *s, struct client *c, char *reply)
{
	c->reply = reply;
	if (!reply) {
		drop(s, c);
		return;
	}
	c->rlen = strlen(reply);
	c->rsent = 0;
	write_reply(s, c);
}

static void read_request(struct server *s, struct client *c)
{
	char *nl;
	ssize_t r;
	int ret;

	r = recv(c->fd, c->req + c->len, sizeof(c->req) - 1 - c->len, 0);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		drop(s, c);
		return;
	}
	c->len += r;
	c->req[c->len] = 0;
	nl = strchr(c->req, '\n');
	if (!nl) {
		if (c->len >= sizeof(c->req) - 1)
			drop(s, c); /* over the request bound */
		return;
	}
	*nl = 0;
	ret = s->fn(c->req, c->uid, &c->reply, s->arg);
	if (ret == SERVER_DEFER && !c->reply) {
		struct epoll_event ev = { .events = 0, .data.ptr = c };

		/* Nothing more is read from it; a hang-up still drops it. */
		c->deferred = true;
		c->deadline_ms = mono_ms() + DEFER_TIMEOUT_MS;
		epoll_ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &ev);
		return;
	}
	if (ret || !c->reply) {
		free(c->reply);
		c->reply = NULL;
		start_reply(s, c, strdup("error\tinternal error\n"));
		return;
	}
	start_reply(s, c, c->reply);
}

int server__dispatch(struct server *s, void *tag, uint32_t events)
{
	if (tag == s) {
		accept_all(s);
		return 1;
	}
	for (int i = 0; i < MAX_CLIENTS; i++) {
		struct client *c = &s->clients[i];

		if (tag != c)
			continue;
		if (c->fd < 0)
			return 1;
		if (c->reply)
			write_reply(s, c);
		else if (c->deferred)
			drop(s, c); /* hung up while waiting */
		else if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
			read_request(s, c);
		return 1;
	}
	return 0;
}

void server__reap(struct server *s, int64_t now_ms)
{
	for (int i = 0; i < MAX_CLIENTS; i++) {
		struct client *c = &s->clients[i];

		if (c->fd < 0 || now_ms <= c->deadline_ms)
			continue;
		/*
		 * The deadline is for clients that send nothing. When the loop itself
		 * was busy past it, a whole request may be waiting unread: serve it.
		 */
		if (!c->reply && !c->deferred)
			read_request(s, c);
		if (c->fd >= 0 && !c->reply)
			drop(s, c);
	}
}

void server__answer_deferred(struct server *s, const char *reply)
{
	for (int i = 0; i < MAX_CLIENTS; i++) {
		struct client *c = &s->clients[i];

		if (c->fd < 0 || !c->deferred)
			continue;
		c->deferred = false;
		start_reply(s, c, strdup(reply));
	}
}

uint64_t server__busy(const struct server *s)
{
	return s->busy;
}
