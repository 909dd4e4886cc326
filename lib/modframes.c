/* Module frames: a named window's unnamed frames folded into "[module]". */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "modframes.h"
#include "profile.h"

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

/* What modframes__fold() maps lazily: only what src's samples use is copied. */
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

int modframes__fold(struct profile *dst, const struct profile *src)
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

		if ((err = map_stack(&m, d.stack, &d.stack)) ||
		    (err = map_str(&m, d.comm, &d.comm)) ||
		    (err = map_str(&m, d.thread, &d.thread)) ||
		    (err = map_str(&m, d.cgroup, &d.cgroup)) || (err = profile__add(dst, &d)))
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
	if ((err = map_str(&m, sm->host, &dm->host)) ||
	    (err = map_str(&m, sm->kernel, &dm->kernel)))
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

/* A frame modframes__fold() made: a bracketed name at offset 0. */
static int is_module_frame(const struct profile *p, const struct pf_frame *f)
{
	const char *name = profile__str(p, f->name);
	size_t n = strlen(name);

	return f->offset == 0 && n >= 2 && name[0] == '[' && name[n - 1] == ']';
}

int modframes__has(const struct profile *p)
{
	for (size_t i = 0; i < profile__nframes(p); i++)
		if (is_module_frame(p, profile__frame(p, (uint32_t)i)))
			return 1;
	return 0;
}
