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
	uint64_t period_ns = sm->frequency ? 1000000000ULL / sm->frequency : 10101010ULL;
	int err = -ENOMEM;

	buf = malloc(sizeof(*buf) * 256);
	fmap = malloc(sizeof(*fmap) * (nf ? nf : 1));
	if (!buf || !fmap)
		goto out;
	memset(fmap, 0xff, sizeof(*fmap) * (nf ? nf : 1));
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
		if (n > 256)
			n = 256;
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

struct line {
	char *text;
	uint64_t value;
};

static int line_cmp(const void *a, const void *b)
{
	const struct line *x = a, *y = b;

	if (x->value != y->value)
		return x->value > y->value ? -1 : 1;
	return strcmp(x->text, y->text);
}

int fold__write(const struct query *q, const struct profile *c, FILE *f)
{
	size_t n = profile__nsamples(c), nl = 0;
	struct line *lines = calloc(n ? n : 1, sizeof(*lines));
	char *text = NULL, label[1024];
	size_t tlen = 0;
	FILE *mf = NULL;
	int err = -ENOMEM;

	if (!lines)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct pf_sample *s = profile__sample(c, i);
		uint64_t v = fold__printed_value(q, s->value);
		const uint32_t *fr;
		uint32_t nfr;

		if (!v)
			continue;
		mf = open_memstream(&text, &tlen);
		if (!mf)
			goto out;
		fr = profile__stack(c, s->stack, &nfr);
		/* Root labels (process, thread) first, then frames; -1 and -2 stand for them. */
		for (int64_t k = q->threads ? -2 : -1; k < (int64_t)nfr; k++) {
			if (k < 0) {
				const char *r = profile__str(c, k == -1 && q->threads ? s->thread : s->comm);

				/* A process or thread with no name must not leave an empty field. */
				snprintf(label, sizeof(label), "%s", *r ? r : "[unknown]");
				escape(label, sizeof(label));
			} else {
				fold__frame_label(c, fr[k], label, sizeof(label));
			}
			/* ';' and ' ' are the format's separators: keep them out of names. */
			for (char *p = label; *p; p++)
				if (*p == ';')
					*p = ':';
			fprintf(mf, "%s%s", k == (q->threads ? -2 : -1) ? "" : ";", label);
		}
		{
			int cerr = fclose(mf);

			mf = NULL;
			if (cerr)
				goto out;
		}
		lines[nl].text = text;
		lines[nl++].value = v;
		text = NULL;
	}
	qsort(lines, nl, sizeof(*lines), line_cmp);
	for (size_t i = 0; i < nl; i++)
		fprintf(f, "%s %" PRIu64 "\n", lines[i].text, lines[i].value);
	err = ferror(f) ? -EIO : 0;
out:
	if (mf)
		fclose(mf);
	free(text);
	for (size_t i = 0; i < nl; i++)
		free(lines[i].text);
	free(lines);
	return err;
}

/* "[base name of the module]", or the module itself when it is bracketed already ("[vdso]"). */
static int fold_label(struct profile *dst, const struct profile *src, const struct pf_frame *f,
		      uint32_t *name)
{
	const char *mod = profile__str(src, f->module), *base = strrchr(mod, '/');
	char buf[256];
	size_t n;

	base = base ? base + 1 : mod;
	n = strlen(base);
	if (!n)
		return profile__intern_str(dst, "[unknown]", name);
	if (base[0] == '[' && base[n - 1] == ']')
		return profile__intern(dst, base, n, name);
	if (n > sizeof(buf) - 3)
		n = sizeof(buf) - 3;
	buf[0] = '[';
	memcpy(buf + 1, base, n);
	buf[n + 1] = ']';
	return profile__intern(dst, buf, n + 2, name);
}

/* What fold__modules() maps lazily: only what src's samples use is copied. */
struct fold_map {
	const struct profile *src;
	struct profile *dst;
	uint32_t *str, *frame, *stack; /* src id -> dst id + 1; 0: not mapped yet */
	uint8_t *folded;               /* by src frame: it became a module frame */
	size_t nstr, nframes, nstacks;
	uint32_t *buf;
	uint32_t bufcap;
};

static int map_str(struct fold_map *m, uint32_t id, uint32_t *out)
{
	int err;

	if (id >= m->nstr)
		return -EINVAL;
	if (!m->str[id]) {
		if ((err = profile__intern_str(m->dst, profile__str(m->src, id), out)))
			return err;
		m->str[id] = *out + 1;
	}
	*out = m->str[id] - 1;
	return 0;
}

static int map_frame(struct fold_map *m, uint32_t id, uint32_t *out)
{
	const struct pf_frame *f;
	struct pf_frame d;
	int err;

	if (id >= m->nframes)
		return -EINVAL;
	if (m->frame[id]) {
		*out = m->frame[id] - 1;
		return 0;
	}
	f = profile__frame(m->src, id);
	d = (struct pf_frame){ .kind = f->kind, .offset = f->offset };
	if ((err = map_str(m, f->module, &d.module)))
		return err;
	if (profile__str(m->src, f->name)[0]) {
		err = map_str(m, f->name, &d.name);
	} else {
		m->folded[id] = 1;
		d.offset = 0;
		err = fold_label(m->dst, m->src, f, &d.name);
	}
	if (err || (err = profile__frame_add(m->dst, &d, out)))
		return err;
	m->frame[id] = *out + 1;
	return 0;
}

static int map_stack(struct fold_map *m, uint32_t id, uint32_t *out)
{
	const uint32_t *fr;
	uint32_t n, k, f, last = 0;
	int err;

	if (id >= m->nstacks)
		return -EINVAL;
	if (m->stack[id]) {
		*out = m->stack[id] - 1;
		return 0;
	}
	fr = profile__stack(m->src, id, &n);
	if (n > m->bufcap) {
		uint32_t *nb = realloc(m->buf, sizeof(*nb) * n);

		if (!nb)
			return -ENOMEM;
		m->buf = nb;
		m->bufcap = n;
	}
	for (k = 0, last = 0; k < n; k++) {
		if ((err = map_frame(m, fr[k], &f)))
			return err;
		if (last && m->folded[fr[k]] && m->buf[last - 1] == f)
			continue;
		m->buf[last++] = f;
	}
	if ((err = profile__stack_add(m->dst, m->buf, last, out)))
		return err;
	m->stack[id] = *out + 1;
	return 0;
}

int fold__modules(struct profile *dst, const struct profile *src)
{
	const struct pf_meta *sm = profile__meta_const(src);
	struct fold_map m = { .src = src, .dst = dst, .nstr = profile__nstrs(src),
			      .nframes = profile__nframes(src), .nstacks = profile__nstacks(src) };
	struct pf_meta *dm;
	int err = -ENOMEM;

	profile__reset(dst);
	m.str = calloc(m.nstr + 1, sizeof(*m.str));
	m.frame = calloc(m.nframes + 1, sizeof(*m.frame));
	m.stack = calloc(m.nstacks + 1, sizeof(*m.stack));
	m.folded = calloc(m.nframes + 1, sizeof(*m.folded));
	if (!m.str || !m.frame || !m.stack || !m.folded)
		goto out;
	for (size_t i = 0; i < profile__nsamples(src); i++) {
		struct pf_sample d = *profile__sample(src, i);

		if ((err = map_stack(&m, d.stack, &d.stack)) || (err = map_str(&m, d.comm, &d.comm)) ||
		    (err = map_str(&m, d.thread, &d.thread)) || (err = map_str(&m, d.cgroup, &d.cgroup)) ||
		    (err = profile__add(dst, &d)))
			goto out;
	}
	for (size_t i = 0; i < profile__ncounters(src); i++) {
		const struct pf_counter *c = profile__counter(src, i);

		if ((err = profile__counter_add(dst, profile__str(src, c->name), c->value)))
			goto out;
	}
	dm = profile__meta(dst);
	dm->start_ns = sm->start_ns;
	dm->end_ns = sm->end_ns;
	dm->frequency = sm->frequency;
	if ((err = map_str(&m, sm->host, &dm->host)) || (err = map_str(&m, sm->kernel, &dm->kernel)))
		goto out;
	err = map_str(&m, sm->event, &dm->event);
out:
	free(m.str);
	free(m.frame);
	free(m.stack);
	free(m.folded);
	free(m.buf);
	return err;
}

/* A frame fold__modules() made: a bracketed name at offset 0. */
static int is_module_frame(const struct profile *p, const struct pf_frame *f)
{
	const char *name = profile__str(p, f->name);
	size_t n = strlen(name);

	return f->offset == 0 && n >= 2 && name[0] == '[' && name[n - 1] == ']';
}

int fold__has_modules(const struct profile *p)
{
	for (size_t i = 0; i < profile__nframes(p); i++)
		if (is_module_frame(p, profile__frame(p, (uint32_t)i)))
			return 1;
	return 0;
}
