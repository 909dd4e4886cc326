#include <errno.h>
#include <stdlib.h>

#include "filecache.h"

#define MIN_BUCKETS 256

struct fent {
	struct fent *next;
	uint64_t dev, ino;
	void *data[FILECACHE_SLOTS];
};

struct slot {
	filecache_drop_fn drop;
	void *arg;
};

struct filecache {
	struct fent **b;
	size_t nb, n;
	struct slot slots[FILECACHE_SLOTS];
	int nslots;
};

static size_t bucket(size_t nb, uint64_t dev, uint64_t ino)
{
	uint64_t x = dev * 0x9e3779b97f4a7c15ULL ^ ino;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (size_t)x & (nb - 1);
}

static struct fent **where(const struct filecache *c, uint64_t dev, uint64_t ino)
{
	struct fent **pp = &c->b[bucket(c->nb, dev, ino)];

	while (*pp && ((*pp)->dev != dev || (*pp)->ino != ino))
		pp = &(*pp)->next;
	return pp;
}

int filecache__new(struct filecache **out)
{
	struct filecache *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	*out = c;
	return 0;
}

void filecache__free(struct filecache *c)
{
	struct fent *e;

	if (!c)
		return;
	for (size_t i = 0; i < c->nb; i++) {
		while ((e = c->b[i])) {
			c->b[i] = e->next;
			for (int k = 0; k < c->nslots; k++)
				if (e->data[k] && c->slots[k].drop)
					c->slots[k].drop(e->data[k], c->slots[k].arg);
			free(e);
		}
	}
	free(c->b);
	free(c);
}

int filecache__slot(struct filecache *c, filecache_drop_fn drop, void *arg)
{
	if (c->nslots == FILECACHE_SLOTS)
		return -ENOSPC;
	c->slots[c->nslots] = (struct slot){ drop, arg };
	return c->nslots++;
}

void *filecache__get(const struct filecache *c, uint64_t dev, uint64_t ino, int slot)
{
	struct fent *e = c->nb ? *where(c, dev, ino) : NULL;

	return e ? e->data[slot] : NULL;
}

/* Twice the buckets once files outnumber them; a failed grow keeps the chains longer. */
static void grow(struct filecache *c)
{
	size_t nb = c->nb ? c->nb * 2 : MIN_BUCKETS;
	struct fent **b = calloc(nb, sizeof(*b));

	if (!b)
		return;
	for (size_t i = 0; i < c->nb; i++) {
		for (struct fent *e = c->b[i], *nx; e; e = nx) {
			nx = e->next;
			e->next = b[bucket(nb, e->dev, e->ino)];
			b[bucket(nb, e->dev, e->ino)] = e;
		}
	}
	free(c->b);
	c->b = b;
	c->nb = nb;
}

int filecache__set(struct filecache *c, uint64_t dev, uint64_t ino, int slot, void *data)
{
	struct fent **pp, *e;

	if (data && c->n >= c->nb)
		grow(c);
	if (!c->nb)
		return data ? -ENOMEM : 0;
	pp = where(c, dev, ino);
	e = *pp;
	if (!e && !data)
		return 0;
	if (!e) {
		if (!(e = calloc(1, sizeof(*e))))
			return -ENOMEM;
		e->dev = dev;
		e->ino = ino;
		*pp = e;
		c->n++;
	}
	e->data[slot] = data;
	if (!data) {
		for (int k = 0; k < FILECACHE_SLOTS; k++)
			if (e->data[k])
				return 0;
		*pp = e->next;
		free(e);
		c->n--;
	}
	return 0;
}

size_t filecache__count(const struct filecache *c)
{
	return c->n;
}
