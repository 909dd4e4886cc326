/* systemd's notify protocol over $NOTIFY_SOCKET, by hand (no libsystemd). */
#ifndef PROFD_NOTIFY_H
#define PROFD_NOTIFY_H

/* Sends "READY=1", "STATUS=...", etc. A no-op without $NOTIFY_SOCKET. */
int notify_send(const char *msg);

#endif
