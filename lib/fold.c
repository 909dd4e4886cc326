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
