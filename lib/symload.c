#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include <libelf.h>

#include "clock.h"
#include "elfsym.h"
#include "symload.h"

struct job {
	struct job *next;
	int fd;
	size_t max_bytes;
	size_t bytes; /* heap held by d.es */
	struct symload_done d;
};

struct symload {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct job *todo, **todo_tail; /* oldest first */
	struct job *done, **done_tail;
	size_t done_bytes;             /* heap held by the finished reads not taken */
	size_t max_done_bytes;
	unsigned njobs;                /* submitted, not taken */
	bool stop;
	bool started;
	pthread_t th;
};

static void job_free(struct job *j)
{
	if (j->fd >= 0)
		close(j->fd);
	elfsym__free(j->d.es);
	free(j);
}

static void *worker_main(void *arg)
{
	struct symload *l = arg;

	pthread_mutex_lock(&l->mu);
	while (!l->stop) {
		struct job *j = l->todo;
		int64_t t0;

		/* Finished reads wait to be taken: the next read waits while they hold max_done_bytes. */
		if (!j || (l->done && l->done_bytes >= l->max_done_bytes)) {
			pthread_cond_wait(&l->cv, &l->mu);
			continue;
		}
		l->todo = j->next;
		if (!l->todo)
			l->todo_tail = &l->todo;
		pthread_mutex_unlock(&l->mu);
		t0 = clock__mono_ns();
		j->d.err = elfsym__open_fd_max(j->fd, j->max_bytes, &j->d.es);
		j->d.ns = clock__mono_ns() - t0;
		j->bytes = j->d.es ? elfsym__mem_bytes(j->d.es) : 0;
		close(j->fd);
		j->fd = -1;
		pthread_mutex_lock(&l->mu);
		j->next = NULL;
		*l->done_tail = j;
		l->done_tail = &j->next;
		l->done_bytes += j->bytes;
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

int symload__new(size_t max_done_bytes, struct symload **out)
{
	struct symload *l = calloc(1, sizeof(*l));
	int err;

	if (!l)
		return -ENOMEM;
	l->max_done_bytes = max_done_bytes;
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cv, NULL);
	l->todo_tail = &l->todo;
	l->done_tail = &l->done;
	/* Before the thread: libelf's one-time set-up is not for concurrent callers. */
	elf_version(EV_CURRENT);
	err = -pthread_create(&l->th, NULL, worker_main, l);
	if (err) {
		symload__free(l);
		return err;
	}
	l->started = true;
	*out = l;
	return 0;
}

void symload__free(struct symload *l)
{
	struct job *j;

	if (!l)
		return;
	pthread_mutex_lock(&l->mu);
	l->stop = true;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
	if (l->started)
		pthread_join(l->th, NULL);
	while ((j = l->todo)) {
		l->todo = j->next;
		job_free(j);
	}
	while ((j = l->done)) {
		l->done = j->next;
		job_free(j);
	}
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->cv);
	free(l);
}

int symload__submit(struct symload *l, int fd, size_t max_bytes, uint64_t key)
{
	struct job *j;

	/* njobs changes only in this thread: read without the lock. */
	if (l->njobs >= SYMLOAD_MAX_JOBS)
		return -EBUSY;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->fd = fd;
	j->max_bytes = max_bytes;
	j->d.key = key;
	l->njobs++;
	pthread_mutex_lock(&l->mu);
	*l->todo_tail = j;
	l->todo_tail = &j->next;
	pthread_cond_signal(&l->cv);
	pthread_mutex_unlock(&l->mu);
	return 0;
}

int symload__take(struct symload *l, struct symload_done *d)
{
	struct job *j;

	if (!l->njobs)
		return 0;
	pthread_mutex_lock(&l->mu);
	j = l->done;
	if (j) {
		l->done = j->next;
		if (!l->done)
			l->done_tail = &l->done;
		l->done_bytes -= j->bytes;
		pthread_cond_signal(&l->cv);
	}
	pthread_mutex_unlock(&l->mu);
	if (!j)
		return 0;
	l->njobs--;
	*d = j->d;
	j->d.es = NULL;
	job_free(j);
	return 1;
}

unsigned symload__pending(const struct symload *l)
{
	return l->njobs;
}
