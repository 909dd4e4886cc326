/* String table: one growable buffer of NUL-terminated names. */
#include "strtab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* 32-bit sizes keep the object small: every cached ELF file and perf map holds one. */
struct strtab {
	char *buf;
	uint32_t len, cap;
	uint32_t first, max;
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

void strtab__reset(struct strtab *t)
{
	t->len = 0;
}

void strtab__shrink(struct strtab *t)
{
	char *nb;

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
	return sizeof(*t) + t->cap;
}
