/* String table: one growable buffer of NUL-terminated names. */
#include "strtab.h"
#include "hashbytes.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* 32-bit sizes keep the object small: every cached ELF file and perf map holds one. */
struct strtab {
	char *buf;
	uint32_t len, cap;
	uint32_t first, max;
	uint32_t *index;      /* strtab__intern's: offset + 1 per slot, 0 empty; NULL until the first intern */
	uint32_t nslots, nused;
};

int strtab__new(size_t first, size_t max, struct strtab **out)
{
	struct strtab *t;

	if (max > UINT32_MAX - 1)
		max = UINT32_MAX - 1;
	if (first == 0 || first > max)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->first = (uint32_t)first;
	t->max = (uint32_t)max;
	*out = t;
	return 0;
}

void strtab__free(struct strtab *t)
{
	if (!t)
		return;
	free(t->buf);
	free(t->index);
	free(t);
}

int strtab__add(struct strtab *t, const char *s, size_t len, uint32_t *off)
{
	size_t need;

	if (len >= (size_t)(t->max - t->len))
		return -EFBIG;
	need = t->len + len + 1;
	if (need > t->cap) {
		size_t ncap = t->cap ? t->cap : t->first;
		char *nb;

		while (ncap < need)
			ncap *= 2;
		if (ncap > t->max)
			ncap = t->max;
		nb = realloc(t->buf, ncap);
		if (!nb)
			return -ENOMEM;
		t->buf = nb;
		t->cap = (uint32_t)ncap;
	}
	memcpy(t->buf + t->len, s, len);
	t->buf[t->len + len] = 0;
	*off = t->len;
	t->len = (uint32_t)need;
	return 0;
}

const char *strtab__str(const struct strtab *t, uint32_t off)
{
	return t->buf + off;
}

static bool same(const struct strtab *t, uint32_t off, const char *s, size_t len)
{
	return off + len < t->len && !memcmp(t->buf + off, s, len) && t->buf[off + len] == 0;
}

/*
 * The first index: a slot per 8 bytes of the first buffer, 16 to 1024. A
 * process's mappings name a handful of paths and are interned per exec,
 * where a 4 KB index zeroed each time cost more than the names.
 */
static uint32_t first_slots(const struct strtab *t)
{
	uint32_t n = 16;

	while (n < 1024 && n * 8 < t->first)
		n *= 2;
	return n;
}

/* Doubles the index (or makes the first one) and re-inserts every name already interned. */
static int index_grow(struct strtab *t)
{
	uint32_t n = t->nslots ? t->nslots * 2 : first_slots(t), *ni;

	if (t->nslots >= (1u << 30))
		return -EFBIG;
	ni = calloc(n, sizeof(*ni));
	if (!ni)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->nslots; i++) {
		uint32_t v = t->index[i], off, h;

		if (!v)
			continue;
		off = v - 1;
		h = (uint32_t)hashbytes__hash(t->buf + off, strlen(t->buf + off));
		while (ni[h & (n - 1)])
			h++;
		ni[h & (n - 1)] = v;
	}
	free(t->index);
	t->index = ni;
	t->nslots = n;
	return 0;
}

int strtab__intern(struct strtab *t, const char *s, size_t len, uint32_t *off)
{
	uint32_t h, slot;
	int err;

	if ((t->nused + 1) * 2 > t->nslots && (err = index_grow(t)))
		return err;
	h = (uint32_t)hashbytes__hash(s, len);
	for (;; h++) {
		slot = h & (t->nslots - 1);
		if (!t->index[slot])
			break;
		if (same(t, t->index[slot] - 1, s, len)) {
			*off = t->index[slot] - 1;
			return 0;
		}
	}
	err = strtab__add(t, s, len, off);
	if (err)
		return err;
	t->index[slot] = *off + 1;
	t->nused++;
	return 0;
}

void strtab__reset(struct strtab *t)
{
	t->len = 0;
	if (t->index)
		memset(t->index, 0, t->nslots * sizeof(*t->index));
	t->nused = 0;
}

void strtab__shrink(struct strtab *t)
{
	char *nb;

	free(t->index);
	t->index = NULL;
	t->nslots = t->nused = 0;
	if (t->len == t->cap)
		return;
	if (t->len == 0) {
		free(t->buf);
		t->buf = NULL;
		t->cap = 0;
		return;
	}
	nb = realloc(t->buf, t->len);
	if (nb) {
		t->buf = nb;
		t->cap = t->len;
	}
}

size_t strtab__len(const struct strtab *t)
{
	return t->len;
}

size_t strtab__mem_bytes(const struct strtab *t)
{
	return sizeof(*t) + t->cap + (size_t)t->nslots * sizeof(*t->index);
}
