#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "rowalloc.h"

struct extent {
	uint32_t start, len;
};

struct rowalloc {
	uint32_t cap, used;
	struct extent *free; /* sorted by start, never adjacent, never empty */
	size_t nfree, free_cap;
};

static int extent_insert(struct rowalloc *a, size_t at, struct extent e)
{
	if (a->nfree == a->free_cap) {
		size_t cap = a->free_cap ? a->free_cap * 2 : 64;
		struct extent *f = realloc(a->free, cap * sizeof(*f));

		if (!f)
			return -ENOMEM;
		a->free = f;
		a->free_cap = cap;
	}
	memmove(&a->free[at + 1], &a->free[at], (a->nfree - at) * sizeof(*a->free));
	a->free[at] = e;
	a->nfree++;
	return 0;
}

static void extent_remove(struct rowalloc *a, size_t i)
{
	memmove(&a->free[i], &a->free[i + 1], (a->nfree - i - 1) * sizeof(*a->free));
	a->nfree--;
}

int rowalloc__new(uint32_t cap, struct rowalloc **out)
{
	struct rowalloc *a;
	int err;

	if (!cap)
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->cap = cap;
	err = extent_insert(a, 0, (struct extent){ 0, cap });
	if (err) {
		rowalloc__free(a);
		return err;
	}
	*out = a;
	return 0;
}

void rowalloc__free(struct rowalloc *a)
{
	if (!a)
		return;
	free(a->free);
	free(a);
}

int rowalloc__copy(const struct rowalloc *a, struct rowalloc **out)
{
	struct rowalloc *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->cap = a->cap;
	c->used = a->used;
	c->free_cap = a->nfree ? a->nfree : 1;
	c->free = malloc(c->free_cap * sizeof(*c->free));
	if (!c->free) {
		free(c);
		return -ENOMEM;
	}
	memcpy(c->free, a->free, a->nfree * sizeof(*a->free));
	c->nfree = a->nfree;
	*out = c;
	return 0;
}

int rowalloc__alloc(struct rowalloc *a, uint32_t n, uint32_t *first)
{
	if (!n)
		return -EINVAL;
	for (size_t i = 0; i < a->nfree; i++) {
		if (a->free[i].len < n)
			continue;
		*first = a->free[i].start;
		a->free[i].start += n;
		a->free[i].len -= n;
		if (!a->free[i].len)
			extent_remove(a, i);
		a->used += n;
		return 0;
	}
	return -ENOSPC;
}

int rowalloc__release(struct rowalloc *a, uint32_t first, uint32_t n)
{
	size_t i = 0;
	bool left, right;
	int err;

	if (!n || first >= a->cap || n > a->cap - first)
		return -EINVAL;
	while (i < a->nfree && a->free[i].start < first)
		i++;
	if ((i > 0 && a->free[i - 1].start + a->free[i - 1].len > first) ||
	    (i < a->nfree && first + n > a->free[i].start))
		return -EINVAL;
	left = i > 0 && a->free[i - 1].start + a->free[i - 1].len == first;
	right = i < a->nfree && first + n == a->free[i].start;
	if (left) {
		a->free[i - 1].len += n;
		if (right) {
			a->free[i - 1].len += a->free[i].len;
			extent_remove(a, i);
		}
	} else if (right) {
		a->free[i].start = first;
		a->free[i].len += n;
	} else {
		err = extent_insert(a, i, (struct extent){ first, n });
		if (err)
			return err;
	}
	a->used -= n;
	return 0;
}

uint32_t rowalloc__used(const struct rowalloc *a)
{
	return a->used;
}

uint32_t rowalloc__ranges(const struct rowalloc *a)
{
	return (uint32_t)a->nfree;
}
