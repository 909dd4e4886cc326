#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "filecache.h"
#include "filenames.h"
#include "procmaps.h"

struct key {
	uint64_t dev, ino;
};

/* A name dropped as another file's stays in the ring (its key's turn to go) until learned again. */
struct name {
	struct filenames_id id;
	bool stale;
	char path[];
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

static bool learnable(const struct procmap *m)
{
	return !(m->flags & (PROCMAP_ANON | PROCMAP_DELETED)) && m->inode && m->path && !strchr(m->path, '\n');
}

bool filenames__wants(const struct filenames *n, const struct procmap *m)
{
	const struct name *old;

	if (!learnable(m))
		return false;
	old = filecache__get(n->fc, m->dev, m->inode, n->slot);
	return !old || old->stale || strcmp(old->path, m->path);
}

int filenames__learn(struct filenames *n, const struct procmap *m, const struct filenames_id *id)
{
	struct name *old, *nm;
	size_t len;

	if (!learnable(m))
		return -EINVAL;
	old = filecache__get(n->fc, m->dev, m->inode, n->slot);
	len = strlen(m->path);
	if (!(nm = malloc(sizeof(*nm) + len + 1)))
		return -ENOMEM;
	nm->id = *id;
	nm->stale = false;
	memcpy(nm->path, m->path, len + 1);
	if (old) {
		/* The same file under another name (a rename, a bind mount), or a new file under the number. */
		free(old);
		filecache__set(n->fc, m->dev, m->inode, n->slot, nm);
		return 0;
	}
	if (n->n == n->max)
		forget_first(n);
	if (filecache__set(n->fc, m->dev, m->inode, n->slot, nm)) {
		free(nm);
		return -ENOMEM;
	}
	n->ring[(n->head + n->n++) % n->max] = (struct key){ m->dev, m->inode };
	return 0;
}

int filenames__get(struct filenames *n, uint64_t dev, uint64_t ino, const struct filenames_id *id,
		   const char **path)
{
	struct name *nm = filecache__get(n->fc, dev, ino, n->slot);

	if (!nm || nm->stale)
		return -ENOENT;
	if (nm->id.size != id->size || nm->id.mtime_ns != id->mtime_ns || nm->id.ctime_ns != id->ctime_ns) {
		nm->stale = true;
		return -ESTALE;
	}
	*path = nm->path;
	return 0;
}
