#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "fold.h"
#include "modframes.h"
#include "profile.h"

struct diff {
	struct profile *stacks; /* folded line text; line i is string id i + 1 */
	struct diff_line *l;
	unsigned __int128 *rem; /* scaling remainders, while building */
	size_t n, cap;
	uint64_t tbase, tcur;
};

/*
 * Reads the profile's folded lines back from fold__write, so a diff line is
 * byte for byte the line `dump` prints.
 */
static int add_side(struct diff *d, const struct query *q, const struct profile *c, int base)
{
	char *buf = NULL, *line, *next;
	size_t len = 0;
	FILE *mf = open_memstream(&buf, &len);
	int err;

	if (!mf)
		return -ENOMEM;
	err = fold__write(q, c, mf);
	if (fclose(mf) && !err)
		err = -ENOMEM;
	for (line = buf; !err && line && *line; line = next) {
		char *sp;
		uint64_t v;
		uint32_t id;

		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		sp = strrchr(line, ' ');
		if (!sp)
			continue;
		*sp = 0;
		v = strtoull(sp + 1, NULL, 10); /* fold__write's own digits */
		err = profile__intern_str(d->stacks, line, &id);
		if (err)
			break;
		if (id > d->n) {
			if (id > d->cap) {
				size_t nc = d->cap ? d->cap * 2 : 256;
				struct diff_line *nl = realloc(d->l, nc * sizeof(*nl));

				if (!nl) {
					err = -ENOMEM;
					break;
				}
				d->l = nl;
				d->cap = nc;
			}
			d->l[id - 1] = (struct diff_line){ 0 };
			d->n = id;
		}
		if (base) {
			d->l[id - 1].raw_base += v;
			d->tbase += v;
		} else {
			d->l[id - 1].value += v;
			d->tcur += v;
		}
	}
	free(buf);
	return err;
}

static struct diff *rem_ctx; /* qsort has no context argument in C11 */

static int rem_cmp(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	if (rem_ctx->rem[x] != rem_ctx->rem[y])
		return rem_ctx->rem[x] > rem_ctx->rem[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int scale(struct diff *d)
{
	size_t *order = malloc((d->n + 1) * sizeof(*order)), k = 0;
	uint64_t sum = 0;

	d->rem = malloc((d->n + 1) * sizeof(*d->rem));
	if (!order || !d->rem) {
		free(order);
		return -ENOMEM;
	}
	for (size_t i = 0; i < d->n; i++) {
		unsigned __int128 x = (unsigned __int128)d->l[i].raw_base * d->tcur;

		d->l[i].base = x / d->tbase;
		d->rem[i] = x % d->tbase;
		sum += d->l[i].base;
		if (d->l[i].raw_base)
			order[k++] = i;
	}
	rem_ctx = d;
	qsort(order, k, sizeof(*order), rem_cmp);
	rem_ctx = NULL;
	/* The floors fall short by less than one per line: hand the rest to the largest remainders. */
	for (size_t j = 0; sum < d->tcur && j < k; j++, sum++)
		d->l[order[j]].base++;
	free(order);
	free(d->rem);
	d->rem = NULL;
	return 0;
}

int diff__new(const struct query *q, const struct profile *base, const struct profile *cur, struct diff **out)
{
	struct diff *d = calloc(1, sizeof(*d));
	struct profile *fb = NULL, *fc = NULL;
	int err = -ENOMEM;

	if (!d || profile__new(&d->stacks))
		goto fail;
	/*
	 * Named windows hold a module's frame ("[cc1]") where recent ones hold
	 * its pcs: one side with such frames folds the other the same way, so
	 * that the same code is the same line on both sides.
	 */
	if (modframes__has(base) || modframes__has(cur)) {
		if (profile__new(&fb) || profile__new(&fc) || (err = modframes__fold(fb, base)) ||
		    (err = modframes__fold(fc, cur)))
			goto fail;
		base = fb;
		cur = fc;
	}
	err = add_side(d, q, base, 1);
	if (!err)
		err = add_side(d, q, cur, 0);
	profile__free(fb);
	profile__free(fc);
	fb = fc = NULL;
	if (!err && (!d->tbase || !d->tcur))
		err = -ENODATA;
	if (!err)
		err = scale(d);
	if (err)
		goto fail;
	for (size_t i = 0; i < d->n; i++)
		d->l[i].stack = profile__str(d->stacks, i + 1);
	*out = d;
	return 0;
fail:
	profile__free(fb);
	profile__free(fc);
	diff__free(d);
	return err;
}

void diff__free(struct diff *d)
{
	if (!d)
		return;
	profile__free(d->stacks);
	free(d->l);
	free(d->rem);
	free(d);
}

size_t diff__count(const struct diff *d)
{
	return d->n;
}

const struct diff_line *diff__line(const struct diff *d, size_t i)
{
	return i < d->n ? &d->l[i] : NULL;
}

void diff__totals(const struct diff *d, uint64_t *base, uint64_t *cur)
{
	*base = d->tbase;
	*cur = d->tcur;
}

static int line_cmp(const void *a, const void *b)
{
	const struct diff_line *x = *(const struct diff_line *const *)a, *y = *(const struct diff_line *const *)b;

	if (x->value != y->value)
		return x->value > y->value ? -1 : 1;
	if (x->base != y->base)
		return x->base > y->base ? -1 : 1;
	return strcmp(x->stack, y->stack);
}

int diff__write(const struct diff *d, FILE *f)
{
	const struct diff_line **v = malloc((d->n + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < d->n; i++)
		v[i] = &d->l[i];
	qsort(v, d->n, sizeof(*v), line_cmp);
	for (size_t i = 0; i < d->n; i++)
		fprintf(f, "%s %" PRIu64 " %" PRIu64 "\n", v[i]->stack, v[i]->base, v[i]->value);
	free(v);
	return ferror(f) ? -EIO : 0;
}
