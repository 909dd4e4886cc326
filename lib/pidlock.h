/* One profd per state directory: an flock'd file holding the owner's pid. */
#ifndef PROFD_PIDLOCK_H
#define PROFD_PIDLOCK_H

#include <sys/types.h>

struct pidlock;

/*
 * Creates dir (0700) when missing and opens it; -ELOOP when dir is a
 * symbolic link. Returns the descriptor.
 */
int pidlock__open_dir(const char *dir);
/*
 * Opens dir as pidlock__open_dir does, then takes dir/profd.pid and writes our
 * pid into it. -EBUSY when another process holds it: *holder is its pid (0
 * when unknown). Other -errno: the directory is not usable (-EACCES, -EROFS).
 */
int pidlock__take(const char *dir, struct pidlock **out, pid_t *holder);
/* Releases and removes the file. */
void pidlock__free(struct pidlock *l);

#endif
