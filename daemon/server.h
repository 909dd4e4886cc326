/* The control socket: non-blocking, bounded requests, a deadline per client. */
#ifndef PROFD_SERVER_H
#define PROFD_SERVER_H

#include <stdint.h>

struct server;

/* Handles one request line; writes the reply (malloc'd) into *reply. */
typedef int (*server_handler_fn)(const char *request, char **reply, void *arg);

int server__open(const char *path, int epfd, server_handler_fn fn, void *arg, struct server **out);
void server__free(struct server *s);
/* Called for every epoll event whose data.ptr is owned by the server; returns 1 if it was ours. */
int server__dispatch(struct server *s, void *tag, uint32_t events);
/* Drops clients past their deadline. */
void server__reap(struct server *s, int64_t now_ms);

#endif
