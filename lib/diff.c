#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "fold.h"
#include "modframes.h"
#include "profile.h"

struct diff {
	struct fold_text *t; /* the lines' labels: a line is its text, without the text */
	struct diff_line *l;
	uint32_t *at;           /* fold_text line id -> index in l + 1; 0: not a line of the diff yet */
	size_t nat;
	unsigned __int128 *rem; /* scaling remainders, while building */
	size_t n, cap;
	uint64_t tbase, tcur;
	char *text; /* diff__stack's */
	size_t textlen;
};

/*
 * One side's folded lines as fold__write prints them, in its order (which
 * numbers the lines, and so breaks the scaling's ties), so that a diff
 * line is byte for byte the line `dump` prints; lines that print the same
 * add up.
 */
static int add_side(struct diff *d, const struct profile *c, int base)
{
	struct fold_line *fl = NULL;
	size_t nl = 0;
	int err = fold__text_lines(d->t, c, &fl, &nl);

	for (size_t i = 0; !err && i < nl; i++) {
		uint32_t id = fl[i].line;
		uint64_t v = fl[i].value;

		if (id >= d->nat) {
			size_t nn = (size_t)id * 2 + 64;
			uint32_t *na = realloc(d->at, nn * sizeof(*na));

			if (!na) {
				err = -ENOMEM;
				break;
			}
			memset(na + d->nat, 0, (nn - d->nat) * sizeof(*na));
			d->at = na;
			d->nat = nn;
		}
		if (!d->at[id]) {
			if (d->n == d->cap) {
				size_t nc = d->cap ? d->cap * 2 : 256;
				struct diff_line *nd = realloc(d->l, nc * sizeof(*nd));

				if (!nd) {
					err = -ENOMEM;
					break;
				}
				d->l = nd;
				d->cap = nc;
			}
			d->l[d->n] = (struct diff_line){ .line = id };
			d->at[id] = ++d->n;
		}
		if (base) {
			d->l[d->at[id] - 1].raw_base += v;
			d->tbase += v;
		} else {
			d->l[d->at[id] - 1].value += v;
			d->tcur += v;
		}
	}
	free(fl);
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

/* One side, folded by module first when either side has module frames. */
static int add_folded(struct diff *d, const struct profile *c, int by_module, int base)
{
	struct profile *m = NULL;
	int err = 0;

	if (by_module && (profile__new(&m) || (err = modframes__fold(m, c)))) {
		profile__free(m);
		return err ? err : -ENOMEM;
	}
	err = add_side(d, m ? m : c, base);
	profile__free(m);
	return err;
}

int diff__new(const struct query *q, const struct profile *base, const struct profile *cur, struct diff **out)
{
	struct diff *d = calloc(1, sizeof(*d));
	/*
	 * Named windows hold a module's frame ("[cc1]") where recent ones hold
	 * its pcs: one side with such frames folds the other the same way, so
	 * that the same code is the same line on both sides.
	 */
	int by_module = modframes__has(base) || modframes__has(cur);
	int err = -ENOMEM;

	if (!d || fold__text_new(q, &d->t))
		goto fail;
	err = add_folded(d, base, by_module, 1);
	if (!err)
		err = add_folded(d, cur, by_module, 0);
	if (!err && (!d->tbase || !d->tcur))
		err = -ENODATA;
	if (!err)
		err = scale(d);
	if (err)
		goto fail;
	free(d->at);
	d->at = NULL;
	*out = d;
	return 0;
fail:
	diff__free(d);
	return err;
}

void diff__free(struct diff *d)
{
	if (!d)
		return;
	fold__text_free(d->t);
	free(d->l);
	free(d->at);
	free(d->text);
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

const char *diff__stack(struct diff *d, size_t i)
{
	FILE *f;
	int err;

	if (i >= d->n)
		return NULL;
	free(d->text);
	d->text = NULL;
	f = open_memstream(&d->text, &d->textlen);
	if (!f)
		return NULL;
	err = fold__text_put(d->t, d->l[i].line, f);
	if (fclose(f) || err) {
		free(d->text);
		d->text = NULL;
	}
	return d->text;
}

static int line_cmp(const void *a, const void *b, void *arg)
{
	const struct diff_line *x = *(const struct diff_line *const *)a, *y = *(const struct diff_line *const *)b;

	if (x->value != y->value)
		return x->value > y->value ? -1 : 1;
	if (x->base != y->base)
		return x->base > y->base ? -1 : 1;
	return fold__text_cmp(arg, x->line, y->line);
}

int diff__write(const struct diff *d, FILE *f)
{
	const struct diff_line **v = malloc((d->n + 1) * sizeof(*v));
	int err = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < d->n; i++)
		v[i] = &d->l[i];
	qsort_r(v, d->n, sizeof(*v), line_cmp, d->t);
	for (size_t i = 0; i < d->n && !err; i++)
		if (!(err = fold__text_put(d->t, v[i]->line, f)) &&
		    fprintf(f, " %" PRIu64 " %" PRIu64 "\n", v[i]->base, v[i]->value) < 0)
			err = -EIO;
	free(v);
	return err ? err : ferror(f) ? -EIO : 0;
}
