#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "filecache.h"
#include "filenames.h"
#include "procmaps.h"

struct key {
	uint64_t dev, ino;
};

struct filenames {
	struct filecache *fc;
	int slot;
	struct key *ring; /* keys in the order learned: the first goes first */
	size_t max, head, n;
};

int filenames__new(struct filecache *fc, size_t max, struct filenames **out)
{
	struct filenames *n = calloc(1, sizeof(*n));

	if (!n || !max || !(n->ring = calloc(max, sizeof(*n->ring)))) {
		free(n);
		return -ENOMEM;
	}
	n->fc = fc;
	n->max = max;
	n->slot = filecache__slot(fc, NULL, NULL);
	if (n->slot < 0) {
		int err = n->slot;

		filenames__free(n);
		return err;
	}
	*out = n;
	return 0;
}

static void forget_first(struct filenames *n)
{
	struct key *k = &n->ring[n->head];

	free(filecache__get(n->fc, k->dev, k->ino, n->slot));
	filecache__set(n->fc, k->dev, k->ino, n->slot, NULL);
	n->head = (n->head + 1) % n->max;
	n->n--;
}

void filenames__free(struct filenames *n)
{
	if (!n)
		return;
	while (n->slot >= 0 && n->n)
		forget_first(n);
	free(n->ring);
	free(n);
}

static void learn_one(struct filenames *n, const struct procmap *m)
{
	char *old = filecache__get(n->fc, m->dev, m->inode, n->slot), *copy;

	if (old && !strcmp(old, m->path))
		return;
	if (!(copy = strdup(m->path)))
		return;
	if (old) {
		/* The same file under another name (a rename, a bind mount): the newest. */
		free(old);
		filecache__set(n->fc, m->dev, m->inode, n->slot, copy);
		return;
	}
	if (n->n == n->max)
		forget_first(n);
	if (filecache__set(n->fc, m->dev, m->inode, n->slot, copy)) {
		free(copy);
		return;
	}
	n->ring[(n->head + n->n++) % n->max] = (struct key){ m->dev, m->inode };
}

void filenames__learn(struct filenames *n, const struct procmaps *pm)
{
	for (size_t i = 0; i < procmaps__count(pm); i++) {
		const struct procmap *m = procmaps__get(pm, i);

		/* A path with a newline came from PROCMAP_QUERY raw. */
		if (!(m->flags & (PROCMAP_ANON | PROCMAP_DELETED)) && m->path &&
		    !strchr(m->path, '\n'))
			learn_one(n, m);
	}
}

const char *filenames__get(const struct filenames *n, uint64_t dev, uint64_t ino)
{
	return filecache__get(n->fc, dev, ino, n->slot);
}
