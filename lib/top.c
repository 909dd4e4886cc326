#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fold.h"
#include "profile.h"
#include "query.h"
#include "top.h"

struct top {
	struct profile *names; /* labels; entry i is string id i + 1 */
	struct top_entry *e;
	size_t n;
	uint64_t total;
};

static int entry_for(struct top *t, const char *label, size_t *cap, uint32_t **seen, uint32_t *out)
{
	uint32_t id;
	int err = profile__intern_str(t->names, *label ? label : "[unknown]", &id);

	if (err)
		return err;
	if (id > t->n) {
		if (id > *cap) {
			size_t nc = *cap ? *cap * 2 : 256;
			struct top_entry *ne = realloc(t->e, nc * sizeof(*ne));
			uint32_t *ns;

			if (!ne)
				return -ENOMEM;
			t->e = ne;
			ns = realloc(*seen, nc * sizeof(*ns));
			if (!ns)
				return -ENOMEM;
			*seen = ns;
			*cap = nc;
		}
		t->e[id - 1] = (struct top_entry){ 0 };
		(*seen)[id - 1] = 0;
		t->n = id;
	}
	*out = id - 1;
	return 0;
}

int top__new(const struct query *q, const struct profile *c, struct top **out)
{
	struct top *t = calloc(1, sizeof(*t));
	uint32_t *seen = NULL, *fmap = NULL;
	size_t cap = 0, nf = profile__nframes(c);
	char label[1024];
	int err = -ENOMEM;

	if (!t || profile__new(&t->names))
		goto fail;
	fmap = malloc((nf + 1) * sizeof(*fmap));
	if (!fmap)
		goto fail;
	for (size_t i = 0; i < nf; i++) {
		fold__frame_label(c, i, label, sizeof(label));
		err = entry_for(t, label, &cap, &seen, &fmap[i]);
		if (err)
			goto fail;
	}
	for (size_t i = 0; i < profile__nsamples(c); i++) {
		const struct pf_sample *s = profile__sample(c, i);
		uint64_t v = fold__printed_value(q, s->value);
		const uint32_t *fr;
		uint32_t n;

		if (!v)
			continue;
		t->total += v;
		fr = profile__stack(c, s->stack, &n);
		if (!n)
			continue;
		t->e[fmap[fr[n - 1]]].self += v;
		/* A recursive function counts once per stack: stamp entries with the sample. */
		for (uint32_t k = 0; k < n; k++) {
			uint32_t x = fmap[fr[k]];

			if (seen[x] == i + 1)
				continue;
			seen[x] = i + 1;
			t->e[x].total += v;
		}
	}
	for (size_t i = 0; i < t->n; i++)
		t->e[i].name = profile__str(t->names, i + 1);
	free(seen);
	free(fmap);
	*out = t;
	return 0;
fail:
	free(seen);
	free(fmap);
	top__free(t);
	return err;
}

void top__free(struct top *t)
{
	if (!t)
		return;
	profile__free(t->names);
	free(t->e);
	free(t);
}

static int by_self(const void *a, const void *b)
{
	const struct top_entry *x = a, *y = b;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int by_total(const void *a, const void *b)
{
	const struct top_entry *x = a, *y = b;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	return strcmp(x->name, y->name);
}

void top__sort(struct top *t, enum top_sort by)
{
	if (t->n)
		qsort(t->e, t->n, sizeof(*t->e), by == TOP_BY_TOTAL ? by_total : by_self);
}

size_t top__count(const struct top *t)
{
	return t->n;
}

const struct top_entry *top__entry(const struct top *t, size_t i)
{
	return i < t->n ? &t->e[i] : NULL;
}

uint64_t top__grand_total(const struct top *t)
{
	return t->total;
}
