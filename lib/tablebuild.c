#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <libelf.h>

#include "tablebuild.h"
#include "unwind_table.h"

/* A worker sees only fd, size and the results; arg and path belong to the caller. */
struct job {
	struct job *next;
	int fd;
	uint64_t size;
	struct tablebuild_done d;
	char *path;
};

struct worker {
	struct tablebuild *b;
	pthread_t th;
	bool small_only;
	bool started;
};

struct tablebuild {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct job *todo;
	struct job *done, **done_tail; /* oldest first */
	struct job *taken; /* the last one handed out: its path lives until the next take */
	uint64_t small_bytes;
	bool stop;
	int efd;
	unsigned nworkers;
	struct worker w[TABLEBUILD_MAX_WORKERS];
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void job_free(struct job *j)
{
	if (!j)
		return;
	if (j->fd >= 0)
		close(j->fd);
	unwind_table__free(j->d.ut);
	free(j->path);
	free(j);
}

/* The smallest waiting job this worker may take, unlinked; NULL: none. */
static struct job *job_take(struct tablebuild *b, bool small_only)
{
	struct job **best = NULL, *j;

	for (struct job **p = &b->todo; *p; p = &(*p)->next)
		if ((!small_only || (*p)->size <= b->small_bytes) &&
		    (!best || (*p)->size < (*best)->size))
			best = p;
	if (!best)
		return NULL;
	j = *best;
	*best = j->next;
	return j;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct tablebuild *b = w->b;
	uint64_t one = 1;

	pthread_mutex_lock(&b->mu);
	while (!b->stop) {
		struct job *j = job_take(b, w->small_only);
		int64_t t0;
		ssize_t r;

		if (!j) {
			pthread_cond_wait(&b->cv, &b->mu);
			continue;
		}
		pthread_mutex_unlock(&b->mu);
		t0 = now_ns();
		j->d.err = unwind_table__open_fd(j->fd, &j->d.ut);
		j->d.ns = now_ns() - t0;
		close(j->fd);
		j->fd = -1;
		pthread_mutex_lock(&b->mu);
		j->next = NULL;
		*b->done_tail = j;
		b->done_tail = &j->next;
		r = write(b->efd, &one, sizeof(one));
		(void)r; /* fails only when the counter is full: readable anyway */
	}
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

int tablebuild__new(unsigned nworkers, uint64_t small_bytes, struct tablebuild **out)
{
	struct tablebuild *b;
	int err;

	if (!nworkers || nworkers > TABLEBUILD_MAX_WORKERS)
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	pthread_mutex_init(&b->mu, NULL);
	pthread_cond_init(&b->cv, NULL);
	b->done_tail = &b->done;
	b->small_bytes = small_bytes;
	b->nworkers = nworkers;
	b->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (b->efd < 0) {
		err = -errno;
		goto fail;
	}
	/* Before any thread: libelf's one-time set-up is not for concurrent callers. */
	elf_version(EV_CURRENT);
	for (unsigned i = 0; i < nworkers; i++) {
		b->w[i] = (struct worker){ .b = b, .small_only = i == 0 && small_bytes };
		err = -pthread_create(&b->w[i].th, NULL, worker_main, &b->w[i]);
		if (err)
			goto fail;
		b->w[i].started = true;
	}
	*out = b;
	return 0;
fail:
	tablebuild__free(b);
	return err;
}

void tablebuild__free(struct tablebuild *b)
{
	struct job *j;

	if (!b)
		return;
	pthread_mutex_lock(&b->mu);
	b->stop = true;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
	for (unsigned i = 0; i < b->nworkers; i++)
		if (b->w[i].started)
			pthread_join(b->w[i].th, NULL);
	while ((j = b->todo)) {
		b->todo = j->next;
		job_free(j);
	}
	while ((j = b->done)) {
		b->done = j->next;
		job_free(j);
	}
	job_free(b->taken);
	if (b->efd >= 0)
		close(b->efd);
	pthread_mutex_destroy(&b->mu);
	pthread_cond_destroy(&b->cv);
	free(b);
}

int tablebuild__fd(const struct tablebuild *b)
{
	return b->efd;
}

int tablebuild__submit(struct tablebuild *b, int fd, uint64_t size, const char *path, void *arg)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j || (path && !(j->path = strdup(path)))) {
		free(j);
		close(fd);
		return -ENOMEM;
	}
	j->fd = fd;
	j->size = size;
	j->d.arg = arg;
	j->d.path = j->path;
	pthread_mutex_lock(&b->mu);
	j->next = b->todo;
	b->todo = j;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
	return 0;
}

int tablebuild__take(struct tablebuild *b, struct tablebuild_done *d)
{
	struct job *j;

	job_free(b->taken);
	pthread_mutex_lock(&b->mu);
	j = b->done;
	if (j) {
		b->done = j->next;
		if (!b->done)
			b->done_tail = &b->done;
	}
	pthread_mutex_unlock(&b->mu);
	b->taken = j;
	if (!j)
		return 0;
	*d = j->d;
	j->d.ut = NULL;
	return 1;
}
