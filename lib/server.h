/* The control socket: non-blocking, bounded requests, a deadline per client. */
#ifndef PROFD_SERVER_H
#define PROFD_SERVER_H

#include <stdint.h>
#include <sys/types.h>

struct server;

/*
 * Handles one request line from a client whose user is uid (the kernel's
 * SO_PEERCRED, not a claim); writes the reply (malloc'd) into *reply and
 * returns 0, or returns SERVER_DEFER to answer later (server__answer_deferred).
 */
typedef int (*server_handler_fn)(const char *request, uid_t uid, char **reply, void *arg);
#define SERVER_DEFER 1

int server__open(const char *path, int epfd, server_handler_fn fn, void *arg, struct server **out);
void server__free(struct server *s);
/* Called for every epoll event whose data.ptr is owned by the server; returns 1 if it was ours. */
int server__dispatch(struct server *s, void *tag, uint32_t events);
/* Drops clients past their deadline. */
void server__reap(struct server *s, int64_t now_ms);
/* Sends reply to every client whose request was deferred. */
void server__answer_deferred(struct server *s, const char *reply);
/* Connections refused because the server or the client's user was at its cap. */
uint64_t server__busy(const struct server *s);

#endif
