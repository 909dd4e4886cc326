/*
 * ELF symbol reads on a worker thread. libLLVM's symbols take a second or
 * more to read on a loaded host; read in the event loop, that second is a
 * turn in which nothing is drained or served. A read waits in a bounded
 * queue, oldest first; a finished one waits on a done list the caller
 * polls from its own thread (it has drains to do anyway).
 */
#ifndef PROFD_SYMLOAD_H
#define PROFD_SYMLOAD_H

#include <stddef.h>
#include <stdint.h>

struct elfsym;
struct symload;

/* Reads waiting or running at most: one more is refused (-EBUSY). */
#define SYMLOAD_MAX_JOBS 64

/* A finished read. */
struct symload_done {
	uint64_t key;      /* as submitted */
	struct elfsym *es; /* the caller's now; NULL when err */
	int err;           /* 0 or elfsym__open_fd_max's -errno */
	int64_t ns;        /* time the read took (CLOCK_MONOTONIC) */
};

/*
 * max_done_bytes: the worker reads on only while the finished reads not
 * taken yet hold less (one at least), so that what it holds is bounded
 * however slowly the caller takes: under max_done_bytes plus two reads.
 */
int symload__new(size_t max_done_bytes, struct symload **out);
/* Stops the worker (it ends the read it has begun); waiting and finished reads are dropped. */
void symload__free(struct symload *l);

/*
 * Queues a read of the ELF file open at fd within max_bytes
 * (elfsym__open_fd_max), taken on success (closed once read); on error the caller keeps it.
 * 0, -ENOMEM, -EBUSY (SYMLOAD_MAX_JOBS not taken yet).
 */
int symload__submit(struct symload *l, int fd, size_t max_bytes, uint64_t key);

/* 1: the oldest finished read is in *d; 0: none finished. */
int symload__take(struct symload *l, struct symload_done *d);

/* Reads submitted and not taken yet. */
unsigned symload__pending(const struct symload *l);

#endif
