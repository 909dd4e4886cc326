/* The control socket's protocol: one request line, a reply of "key\tvalue" lines. */
#ifndef PROFD_CTL_H
#define PROFD_CTL_H

#include <stddef.h>

#define CTL_MAX_REQUEST 256
#define CTL_MAX_REPLY (1 << 20)

/*
 * Sends request ("flush", "status", "reload") to the daemon at path and
 * returns its reply (malloc'd, NUL-terminated). -ENOENT/-ECONNREFUSED: no
 * daemon; -EACCES: not allowed; -EBUSY: its queue stayed full; -ETIMEDOUT.
 * A daemon at its connection cap replies "error\tbusy: ..." (ctl__busy).
 */
int ctl__call(const char *path, const char *request, char **reply, int timeout_ms);

/* Looks up "key\tvalue" in a reply; returns a malloc'd value or NULL. */
char *ctl__get(const char *reply, const char *key);

/* Whether err (from ctl__call) or reply says the daemon had no room for this client. */
int ctl__busy(int err, const char *reply);

#endif
