/*
 * Unwind tables built from open files on worker threads. Every worker takes
 * the smallest file waiting; the first takes only files up to small_bytes,
 * so a small file (a new program, libc) never waits behind libLLVM (100 MB,
 * 0.4 s) or cc1. A finished build waits on a done list and makes an eventfd
 * readable; the caller takes it from there in its own thread.
 */
#ifndef PROFD_TABLEBUILD_H
#define PROFD_TABLEBUILD_H

#include <stdint.h>

struct tablebuild;
struct unwind_table;

/* At most this many workers. */
#define TABLEBUILD_MAX_WORKERS 8

/* A finished build. */
struct tablebuild_done {
	void *arg;               /* as submitted */
	const char *path;        /* as submitted; valid until the next take or free */
	struct unwind_table *ut; /* the caller's now; NULL when err */
	int err;                 /* 0 or unwind_table__open_fd's -errno */
	int64_t ns;              /* time the build took (CLOCK_MONOTONIC) */
};

/* nworkers: 1 to TABLEBUILD_MAX_WORKERS; small_bytes: the first worker's limit (0: none). */
int tablebuild__new(unsigned nworkers, uint64_t small_bytes, struct tablebuild **out);
/*
 * Stops the workers (each ends the build it has begun); waiting builds and
 * done ones are dropped.
 */
void tablebuild__free(struct tablebuild *b);

/*
 * Readable once a build finished: an eventfd (non-blocking) whose counter
 * the caller reads. Written under the lock __take takes, so a build taken
 * may leave a write behind. The caller may write it to wake itself.
 */
int tablebuild__fd(const struct tablebuild *b);

/*
 * Queues a build of the file open at fd, size bytes (it orders the queue),
 * taken: closed once built, or now on error. path names it for the caller
 * (copied; NULL: none). 0, -ENOMEM.
 */
int tablebuild__submit(struct tablebuild *b, int fd, uint64_t size, const char *path, void *arg);

/* 1: the oldest finished build is in *d; 0: none finished. */
int tablebuild__take(struct tablebuild *b, struct tablebuild_done *d);

#endif
