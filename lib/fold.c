#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fold.h"
#include "profile.h"
#include "query.h"
#include "textesc.h"

/* Names come from other processes: no control character reaches a terminal (textesc.h). */
static void escape(char *buf, size_t len)
{
	if (textesc__inplace(buf, len))
		snprintf(buf, len, "[unprintable]");
}

void fold__frame_label(const struct profile *p, uint32_t frame, char *buf, size_t len)
{
	const struct pf_frame *f = profile__frame(p, frame);
	const char *name, *mod, *base;

	if (!f) {
		snprintf(buf, len, "[unknown]");
		return;
	}
	name = profile__str(p, f->name);
	mod = profile__str(p, f->module);
	if (*name) {
		snprintf(buf, len, "%s%s", name, f->kind == PF_FRAME_KERNEL ? "_[k]" : "");
		escape(buf, len);
		return;
	}
	if (!*mod) {
		snprintf(buf, len, "[unknown]");
		return;
	}
	base = strrchr(mod, '/');
	base = base ? base + 1 : mod;
	snprintf(buf, len, "[%s+0x%" PRIx64 "]%s", base, f->offset,
		 f->kind == PF_FRAME_KERNEL ? "_[k]" : "");
	escape(buf, len);
}

int fold__collapse(const struct query *q, const struct profile *src, struct profile *dst)
{
	const struct pf_meta *sm = profile__meta_const(src);
	uint32_t *buf = NULL, *fmap = NULL;
	size_t nf = profile__nframes(src);
	struct pf_sizes z;
	uint64_t period_ns = sm->frequency ? 1000000000ULL / sm->frequency : 10101010ULL;
	int err = -ENOMEM;

	buf = malloc(sizeof(*buf) * FOLD_MAX_FRAMES);
	fmap = malloc(sizeof(*fmap) * (nf ? nf : 1));
	if (!buf || !fmap)
		goto out;
	memset(fmap, 0xff, sizeof(*fmap) * (nf ? nf : 1));
	/* A line per sample at most, each of its sample's frames at most: dst's tables never outgrow src's. */
	profile__sizes(src, &z);
	if (z.stacks > z.samples + 1)
		z.stacks = z.samples + 1;
	err = profile__reserve(dst, &z);
	if (err)
		goto out;
	*profile__meta(dst) = (struct pf_meta){ .start_ns = sm->start_ns, .end_ns = sm->end_ns,
						 .frequency = sm->frequency };
	err = profile__intern_str(dst, profile__str(src, sm->host), &profile__meta(dst)->host);
	if (err)
		goto out;

	for (size_t i = 0; i < profile__nsamples(src); i++) {
		const struct pf_sample *s = profile__sample(src, i);
		struct pf_sample d = { 0 };
		const uint32_t *fr;
		uint32_t n, m = 0;

		if (!query__keep(src, s, (void *)q))
			continue;
		fr = profile__stack(src, s->stack, &n);
		if (n > FOLD_MAX_FRAMES)
			n = FOLD_MAX_FRAMES;
		for (uint32_t k = 0; k < n; k++) {
			const struct pf_frame *f = profile__frame(src, fr[k]);

			if (q->no_kernel && f->kind == PF_FRAME_KERNEL)
				continue;
			if (fmap[fr[k]] == UINT32_MAX) {
				struct pf_frame g = *f;

				err = profile__intern_str(dst, profile__str(src, f->name), &g.name);
				if (!err)
					err = profile__intern_str(dst, profile__str(src, f->module), &g.module);
				/*
				 * Unnamed frames keep module+offset; named ones fold by name
				 * alone, and so do frames of no known file: all print
				 * "[unknown]", and one printed line must be one sample.
				 */
				if (f->name || !f->module) {
					g.module = 0;
					g.offset = 0;
				}
				if (!err)
					err = profile__frame_add(dst, &g, &fmap[fr[k]]);
				if (err)
					goto out;
			}
			buf[m++] = fmap[fr[k]];
		}
		err = profile__stack_add(dst, buf, m, &d.stack);
		if (!err)
			err = profile__intern_str(dst, profile__str(src, s->comm), &d.comm);
		if (!err && q->threads)
			err = profile__intern_str(dst, profile__str(src, s->thread), &d.thread);
		if (err)
			goto out;
		d.kind = q->type == QUERY_CPU ? PF_KIND_CPU : PF_KIND_OFFCPU;
		d.value = s->value;
		if (q->type == QUERY_WALL && s->kind == PF_KIND_CPU)
			d.value = s->value * period_ns;
		err = profile__add(dst, &d);
		if (err)
			goto out;
	}
	err = 0;
out:
	free(buf);
	free(fmap);
	return err;
}

uint64_t fold__printed_value(const struct query *q, uint64_t v)
{
	return q->type == QUERY_CPU ? v : (v + 500) / 1000;
}

/*
 * Printed lines as sequences of labels: a label is interned once by its
 * text (a string of p, and a frame of p named by it, so that label ids are
 * frame ids), a line is a stack of p. Labels hold no ';' (the separator),
 * so two lines print the same exactly when they are the same stack, and
 * a day's lines cost their label ids, not their tens of megabytes of text.
 */
struct fold_text {
	const struct query *q;
	struct profile *p;
	/* The collapsed profile whose frames and names are mapped below. */
	const struct profile *src;
	uint64_t src_gen;
	uint32_t *fmap, *smap; /* its frame and string ids -> label ids; UINT32_MAX: not yet */
	size_t nf, ns;
	uint32_t *buf;
	size_t bufcap;
	uint32_t *len; /* label id -> length of its text */
	size_t lencap;
};

int fold__text_new(const struct query *q, struct fold_text **out)
{
	struct fold_text *t = calloc(1, sizeof(*t));

	if (!t || profile__new(&t->p)) {
		free(t);
		return -ENOMEM;
	}
	t->q = q;
	*out = t;
	return 0;
}

void fold__text_free(struct fold_text *t)
{
	if (!t)
		return;
	profile__free(t->p);
	free(t->fmap);
	free(t->smap);
	free(t->buf);
	free(t->len);
	free(t);
}

/* Room for n elements of elem bytes in *v (twice that, so that growing one at a time stays cheap). */
static int grow(void **v, size_t *cap, size_t n, size_t elem)
{
	void *m;

	if (n <= *cap)
		return 0;
	if (n > SIZE_MAX / 2 / elem)
		return -ENOMEM;
	m = realloc(*v, n * 2 * elem);
	if (!m)
		return -ENOMEM;
	*v = m;
	*cap = n * 2;
	return 0;
}

static int label_id(struct fold_text *t, char *label, uint32_t *id)
{
	struct pf_frame f = { 0 };
	char *c = label;
	int err;

	/* ';' and ' ' are the format's separators: keep them out of names. */
	for (; *c; c++)
		if (*c == ';')
			*c = ':';
	err = profile__intern_str(t->p, label, &f.name);
	if (!err)
		err = profile__frame_add(t->p, &f, id);
	if (!err)
		err = grow((void **)&t->len, &t->lencap, (size_t)*id + 1, sizeof(*t->len));
	if (!err)
		t->len[*id] = (uint32_t)(c - label);
	return err;
}

static int fresh_map(uint32_t **map, size_t *n, size_t want)
{
	uint32_t *m = realloc(*map, (want ? want : 1) * sizeof(*m));

	if (!m)
		return -ENOMEM;
	memset(m, 0xff, (want ? want : 1) * sizeof(*m));
	*map = m;
	*n = want;
	return 0;
}

/* The maps of c: kept while the same profile, unchanged, is asked about. */
static int use_src(struct fold_text *t, const struct profile *c)
{
	int err;

	if (t->src == c && t->src_gen == profile__gen(c) && t->nf == profile__nframes(c) &&
	    t->ns == profile__nstrs(c))
		return 0;
	t->src = NULL;
	if ((err = fresh_map(&t->fmap, &t->nf, profile__nframes(c))) ||
	    (err = fresh_map(&t->smap, &t->ns, profile__nstrs(c))))
		return err;
	t->src = c;
	t->src_gen = profile__gen(c);
	return 0;
}

static int root_label(struct fold_text *t, const struct profile *c, uint32_t str, uint32_t *id)
{
	char label[1024];
	const char *r;
	int err;

	if (str < t->ns && t->smap[str] != UINT32_MAX) {
		*id = t->smap[str];
		return 0;
	}
	r = profile__str(c, str);
	/* A process or thread with no name must not leave an empty field. */
	snprintf(label, sizeof(label), "%s", *r ? r : "[unknown]");
	escape(label, sizeof(label));
	err = label_id(t, label, id);
	if (!err && str < t->ns)
		t->smap[str] = *id;
	return err;
}

int fold__text_line(struct fold_text *t, const struct profile *c, const struct pf_sample *s, uint32_t *line)
{
	const uint32_t *fr;
	uint32_t nfr, m = 0;
	char label[1024];
	int err;

	if ((err = use_src(t, c)))
		return err;
	fr = profile__stack(c, s->stack, &nfr);
	if ((err = grow((void **)&t->buf, &t->bufcap, (size_t)nfr + 2, sizeof(*t->buf))))
		return err;
	/* Root labels (process, then thread) first, then frames. */
	if ((err = root_label(t, c, s->comm, &t->buf[m++])))
		return err;
	if (t->q->threads && (err = root_label(t, c, s->thread, &t->buf[m++])))
		return err;
	for (uint32_t k = 0; k < nfr; k++) {
		uint32_t f = fr[k];

		if (f < t->nf && t->fmap[f] != UINT32_MAX) {
			t->buf[m++] = t->fmap[f];
			continue;
		}
		fold__frame_label(c, f, label, sizeof(label));
		if ((err = label_id(t, label, &t->buf[m])))
			return err;
		if (f < t->nf)
			t->fmap[f] = t->buf[m];
		m++;
	}
	return profile__stack_add(t->p, t->buf, m, line);
}

/*
 * The order strcmp gives two lines whose first difference is labels x and
 * y (different ids: labels are interned by text, so their texts differ,
 * here or at one's end, where a line that goes on has its ';').
 */
static int label_cmp(const struct fold_text *t, uint32_t x, uint32_t y, int x_more, int y_more)
{
	const unsigned char *u = (const unsigned char *)profile__str(t->p, profile__frame(t->p, x)->name);
	const unsigned char *v = (const unsigned char *)profile__str(t->p, profile__frame(t->p, y)->name);
	unsigned cu, cv;
	size_t i = 0;

	while (u[i] && u[i] == v[i])
		i++;
	cu = u[i] ? u[i] : x_more ? ';' : 0;
	cv = v[i] ? v[i] : y_more ? ';' : 0;
	return cu < cv ? -1 : cu > cv;
}

/* The order strcmp gives the two lines' texts. */
int fold__text_cmp(const struct fold_text *t, uint32_t a, uint32_t b)
{
	uint32_t na, nb;
	const uint32_t *x = profile__stack(t->p, a, &na), *y = profile__stack(t->p, b, &nb);

	for (uint32_t k = 0; k < na && k < nb; k++)
		if (x[k] != y[k])
			return label_cmp(t, x[k], y[k], k + 1 < na, k + 1 < nb);
	return na < nb ? -1 : na > nb;
}

int fold__text_put(const struct fold_text *t, uint32_t line, FILE *f)
{
	uint32_t n;
	const uint32_t *x = profile__stack(t->p, line, &n);

	for (uint32_t k = 0; k < n; k++) {
		const char *l = profile__str(t->p, profile__frame(t->p, x[k])->name);

		if ((k && putc(';', f) == EOF) || fputs(l, f) == EOF)
			return -EIO;
	}
	return 0;
}

static int line_cmp(const void *a, const void *b, void *arg)
{
	const struct fold_line *x = a, *y = b;

	if (x->value != y->value)
		return x->value > y->value ? -1 : 1;
	return fold__text_cmp(arg, x->line, y->line);
}

int fold__text_lines(struct fold_text *t, const struct profile *c, struct fold_line **out, size_t *nout)
{
	size_t n = profile__nsamples(c), nl = 0;
	struct fold_line *lines = malloc((n ? n : 1) * sizeof(*lines));
	int err = 0;

	if (!lines)
		return -ENOMEM;
	for (size_t i = 0; i < n && !err; i++) {
		const struct pf_sample *s = profile__sample(c, i);
		uint64_t v = fold__printed_value(t->q, s->value);

		if (!v)
			continue;
		err = fold__text_line(t, c, s, &lines[nl].line);
		lines[nl++].value = v;
	}
	if (err) {
		free(lines);
		return err;
	}
	qsort_r(lines, nl, sizeof(*lines), line_cmp, t);
	*out = lines;
	*nout = nl;
	return 0;
}

/*
 * fold__write's lines: a sample of the collapsed profile and its printed
 * value. Its labels are those of c's frames and names (t's maps), so a
 * line needs no stack of its own: the lines of a day are as many stacks
 * as c holds, and a copy of them would be megabytes more memory touched.
 */
struct wline {
	const struct pf_sample *s;
	uint64_t value;
};

struct wctx {
	const struct fold_text *t;
	const struct profile *c;
};

/* The k-th label of sample s's line: its roots (process, then thread), then its frames fr. */
static uint32_t wlabel(const struct fold_text *t, const struct pf_sample *s, const uint32_t *fr, uint32_t nroot,
		       uint32_t k)
{
	if (k < nroot)
		return t->smap[k ? s->thread : s->comm];
	return t->fmap[fr[k - nroot]];
}

/* As line_cmp over fold__text_line's lines: value descending, then text. */
static int wline_cmp(const void *a, const void *b, void *arg)
{
	const struct wline *x = a, *y = b;
	const struct wctx *w = arg;
	uint32_t nroot = w->t->q->threads ? 2 : 1, nx, ny;
	const uint32_t *fx, *fy;

	if (x->value != y->value)
		return x->value > y->value ? -1 : 1;
	fx = profile__stack(w->c, x->s->stack, &nx);
	fy = profile__stack(w->c, y->s->stack, &ny);
	nx += nroot;
	ny += nroot;
	for (uint32_t k = 0; k < nx && k < ny; k++) {
		uint32_t lx = wlabel(w->t, x->s, fx, nroot, k), ly = wlabel(w->t, y->s, fy, nroot, k);

		if (lx != ly)
			return label_cmp(w->t, lx, ly, k + 1 < nx, k + 1 < ny);
	}
	return nx < ny ? -1 : nx > ny;
}

/* Maps the labels of sample s's line in t (fold__text_line without interning the line). */
static int wline_labels(struct fold_text *t, const struct profile *c, const struct pf_sample *s)
{
	const uint32_t *fr;
	uint32_t nfr, id;
	char label[1024];
	int err;

	if ((err = root_label(t, c, s->comm, &id)) || (t->q->threads && (err = root_label(t, c, s->thread, &id))))
		return err;
	fr = profile__stack(c, s->stack, &nfr);
	for (uint32_t k = 0; k < nfr; k++) {
		if (t->fmap[fr[k]] != UINT32_MAX)
			continue;
		fold__frame_label(c, fr[k], label, sizeof(label));
		if ((err = label_id(t, label, &t->fmap[fr[k]])))
			return err;
	}
	return 0;
}

int fold__write(const struct query *q, const struct profile *c, FILE *f)
{
	size_t n = profile__nsamples(c), nl = 0, cap = 0;
	char *text = NULL;
	struct wline *lines = malloc((n ? n : 1) * sizeof(*lines));
	struct fold_text *t = NULL;
	int err = lines ? fold__text_new(q, &t) : -ENOMEM;

	if (!err)
		err = use_src(t, c);
	for (size_t i = 0; i < n && !err; i++) {
		const struct pf_sample *s = profile__sample(c, i);
		uint64_t v = fold__printed_value(q, s->value);

		if (!v)
			continue;
		err = wline_labels(t, c, s);
		lines[nl++] = (struct wline){ s, v };
	}
	if (!err)
		qsort_r(lines, nl, sizeof(*lines), wline_cmp, &(struct wctx){ t, c });
	/* A line is put together first and written at once: a day prints millions of labels. */
	for (size_t i = 0; i < nl && !err; i++) {
		const uint32_t *fr;
		uint32_t nfr, nroot = q->threads ? 2 : 1;
		size_t at = 0;

		fr = profile__stack(c, lines[i].s->stack, &nfr);
		for (uint32_t k = 0; k < nfr + nroot && !err; k++) {
			uint32_t l = wlabel(t, lines[i].s, fr, nroot, k);

			/* Room for this label, its ';' and the value's " %llu\n" after the last. */
			if (!(err = grow((void **)&text, &cap, at + t->len[l] + 24, 1))) {
				if (k)
					text[at++] = ';';
				memcpy(text + at, profile__str(t->p, profile__frame(t->p, l)->name), t->len[l]);
				at += t->len[l];
			}
		}
		if (!err)
			at += (size_t)snprintf(text + at, 24, " %" PRIu64 "\n", lines[i].value);
		if (!err && fwrite(text, 1, at, f) != at)
			err = -EIO;
	}
	if (!err)
		err = ferror(f) ? -EIO : 0;
	fold__text_free(t);
	free(lines);
	free(text);
	return err;
}
