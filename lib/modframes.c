/* Module frames: a named window's unnamed frames folded into "[module]". */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "modframes.h"
#include "profile.h"

#define LABEL_MAX 256

/*
 * "[base name of mod]", mod itself when bracketed already ("[vdso]"),
 * "[unknown]" for "": *len bytes at *out (buf, inside mod, or static).
 */
static void module_text(const char *mod, char buf[LABEL_MAX], const char **out, size_t *len)
{
	const char *base = strrchr(mod, '/');
	size_t n;

	base = base ? base + 1 : mod;
	n = strlen(base);
	if (!n) {
		*out = "[unknown]";
		*len = strlen(*out);
		return;
	}
	if (base[0] == '[' && base[n - 1] == ']') {
		*out = base;
		*len = n;
		return;
	}
	if (n > LABEL_MAX - 3)
		n = LABEL_MAX - 3;
	buf[0] = '[';
	memcpy(buf + 1, base, n);
	buf[n + 1] = ']';
	*out = buf;
	*len = n + 2;
}

static int module_label(struct profile *dst, const char *mod, uint32_t *name)
{
	char buf[LABEL_MAX];
	const char *text;
	size_t n;

	module_text(mod, buf, &text, &n);
	return profile__intern(dst, text, n, name);
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
		err = module_label(m->dst, profile__str(m->src, f->module), &d.name);
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

/* d's strings in dst's ids, then d added to dst (its stack mapped already). */
static int add_mapped(struct fold_map *m, struct profile *dst, struct pf_sample *d)
{
	int err;

	if ((err = map_str(m, d->comm, &d->comm)) || (err = map_str(m, d->thread, &d->thread)) ||
	    (err = map_str(m, d->cgroup, &d->cgroup)))
		return err;
	return profile__add(dst, d);
}

/* What a window carries beside its samples: counters and metadata. */
static int copy_rest(struct fold_map *m, const struct profile *src, struct profile *dst)
{
	const struct pf_meta *sm = profile__meta_const(src);
	struct pf_meta *dm;
	int err;

	for (size_t i = 0; i < profile__ncounters(src); i++) {
		const struct pf_counter *c = profile__counter(src, i);

		if ((err = profile__counter_add(dst, profile__str(src, c->name), c->value)))
			return err;
	}
	dm = profile__meta(dst);
	dm->start_ns = sm->start_ns;
	dm->end_ns = sm->end_ns;
	dm->frequency = sm->frequency;
	if ((err = map_str(m, sm->host, &dm->host)) || (err = map_str(m, sm->kernel, &dm->kernel)))
		return err;
	return map_str(m, sm->event, &dm->event);
}

/* src's samples folded into dst, whose samples (not tables) were reset: m maps all of src's ids. */
static int fold_samples(struct fold_map *m, const struct profile *src, struct profile *dst)
{
	int err;

	for (size_t i = 0; i < profile__nsamples(src); i++) {
		struct pf_sample d = *profile__sample(src, i);

		if ((err = map_stack(m, d.stack, &d.stack)) || (err = add_mapped(m, dst, &d)))
			return err;
	}
	return copy_rest(m, src, dst);
}

/* m's maps for all of src's ids, none mapped yet; reset dst. */
static int fold_map_init(struct fold_map *m, const struct profile *src, struct profile *dst)
{
	*m = (struct fold_map){ .src = src, .dst = dst, .nstr = profile__nstrs(src),
				.nframes = profile__nframes(src), .nstacks = profile__nstacks(src) };
	profile__reset(dst);
	m->str = calloc(m->nstr + 1, sizeof(*m->str));
	m->frame = calloc(m->nframes + 1, sizeof(*m->frame));
	m->stack = calloc(m->nstacks + 1, sizeof(*m->stack));
	m->folded = calloc(m->nframes + 1, sizeof(*m->folded));
	return m->str && m->frame && m->stack && m->folded ? 0 : -ENOMEM;
}

static void fold_map_free(struct fold_map *m)
{
	free(m->str);
	free(m->frame);
	free(m->stack);
	free(m->folded);
	free(m->buf);
}

int modframes__fold(struct profile *dst, const struct profile *src)
{
	struct fold_map m;
	int err = fold_map_init(&m, src, dst);

	if (!err)
		err = fold_samples(&m, src, dst);
	fold_map_free(&m);
	return err;
}

/* An unnamed frame of src is merged as its module's frame (profile__merge_renamed()). */
static int rename_unnamed(const struct profile *src, uint32_t id, const char **name, size_t *len, void *arg)
{
	const struct pf_frame *f = profile__frame(src, id);

	if (!f)
		return -EINVAL;
	if (profile__str(src, f->name)[0])
		return 0;
	module_text(profile__str(src, f->module), arg, name, len);
	return 1;
}

int modframes__fold_merge(struct profile *dst, const struct profile *src, unsigned flags)
{
	char buf[LABEL_MAX];

	return profile__merge_renamed(dst, src, flags, rename_unnamed, buf);
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

/* What modframes__fold_tail() sorts and walks: one entry of src. */
struct tail_ent {
	/*
	 * Its group's fields (kind, comm, thread, cgroup, pid, tid), then its
	 * stack's first four frames (0 past its end), packed in the order
	 * they sort: the sort (most of a 10-minute window's fold, 48,000
	 * entries on a 64-CPU host) compares them without a look at the sample
	 * or the stack, and most entries differ by then.
	 */
	uint64_t key[5];
	const struct pf_sample *s;
	const uint32_t *fr;
	uint32_t n;
	uint32_t node; /* its stack's node in the call tree of its group */
};

static void tail_key(struct tail_ent *e)
{
	const struct pf_sample *s = e->s;

	e->key[0] = (uint64_t)s->kind << 32 | s->comm;
	e->key[1] = (uint64_t)s->thread << 32 | s->cgroup;
	e->key[2] = (uint64_t)s->pid << 32 | s->tid;
	/* A stack that ends first has a 0 where the other has a frame: not after it. */
	for (uint32_t k = 0; k < 4; k += 2)
		e->key[3 + k / 2] = (uint64_t)(k < e->n ? e->fr[k] : 0) << 32 | (k + 1 < e->n ? e->fr[k + 1] : 0);
}

/* Group, then stack root first: the entries under one call path are next to each other. */
static int cmp_tail(const void *pa, const void *pb)
{
	const struct tail_ent *a = pa, *b = pb;
	uint32_t k;

	for (k = 0; k < 5; k++)
		if (a->key[k] != b->key[k])
			return a->key[k] < b->key[k] ? -1 : 1;
	for (k = 0; k < a->n && k < b->n; k++)
		if (a->fr[k] != b->fr[k])
			return a->fr[k] < b->fr[k] ? -1 : 1;
	return a->n < b->n ? -1 : a->n > b->n;
}

/* The call tree of each group: a node per distinct stack prefix, with the values under it. */
struct tail_tree {
	uint64_t *sum;
	uint32_t *parent, *depth;
	size_t n, cap;
};

static int tree_node(struct tail_tree *t, uint32_t parent, uint32_t depth, uint32_t *out)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;
		uint64_t *s = realloc(t->sum, cap * sizeof(*s));
		uint32_t *p, *d;

		if (!s)
			return -ENOMEM;
		t->sum = s;
		if (!(p = realloc(t->parent, cap * sizeof(*p))))
			return -ENOMEM;
		t->parent = p;
		if (!(d = realloc(t->depth, cap * sizeof(*d))))
			return -ENOMEM;
		t->depth = d;
		t->cap = cap;
	}
	t->sum[t->n] = 0;
	t->parent[t->n] = parent;
	t->depth[t->n] = depth;
	*out = (uint32_t)t->n++;
	return 0;
}

/* Builds the tree over e (sorted by cmp_tail) and sets each entry's node. */
static int tail_tree_build(struct tail_tree *t, struct tail_ent *e, size_t n, uint32_t maxn)
{
	uint32_t *path = malloc((size_t)(maxn + 1) * sizeof(*path)), l, d;
	int err = -ENOMEM;

	if (!path)
		return err;
	for (size_t i = 0; i < n; i++) {
		if (!i || memcmp(e[i - 1].key, e[i].key, 3 * sizeof(e[i].key[0]))) {
			if ((err = tree_node(t, UINT32_MAX, 0, &path[0])))
				goto out;
			l = 0;
		} else {
			for (l = 0; l < e[i - 1].n && l < e[i].n && e[i - 1].fr[l] == e[i].fr[l]; l++)
				;
		}
		for (d = l + 1; d <= e[i].n; d++)
			if ((err = tree_node(t, path[d - 1], d, &path[d])))
				goto out;
		for (d = 0; d <= e[i].n; d++)
			t->sum[path[d]] += e[i].s->value;
		e[i].node = path[e[i].n];
	}
	err = 0;
out:
	free(path);
	return err;
}

static int small(uint64_t v, uint64_t total, uint32_t div)
{
	return (unsigned __int128)v * div < total;
}

/* modframes__fold_tail() in two steps: the sort and the tree, then the folded profile. */
struct modtail {
	const struct profile *src;
	uint32_t div;
	struct tail_ent *e;
	size_t n;
	struct tail_tree t;
	uint64_t total[PF_KIND_MAX];
};

int modframes__tail_new(struct modtail **out)
{
	struct modtail *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	*out = t;
	return 0;
}

static void tail_clear(struct modtail *t)
{
	free(t->e);
	free(t->t.sum);
	free(t->t.parent);
	free(t->t.depth);
	*t = (struct modtail){ 0 };
}

void modframes__tail_free(struct modtail *t)
{
	if (!t)
		return;
	tail_clear(t);
	free(t);
}

int modframes__tail_plan(struct modtail *t, const struct profile *src, uint32_t div)
{
	size_t n = profile__nsamples(src);
	uint32_t maxn = 0;
	struct tail_ent *e;
	int err;

	tail_clear(t);
	if (!(e = t->e = calloc(n + 1, sizeof(*e))))
		return -ENOMEM;
	t->src = src;
	t->div = div;
	t->n = n;
	for (size_t i = 0; i < n; i++) {
		e[i].s = profile__sample(src, i);
		e[i].fr = profile__stack(src, e[i].s->stack, &e[i].n);
		tail_key(&e[i]);
		if (e[i].s->kind >= PF_KIND_MAX) {
			tail_clear(t);
			return -EINVAL;
		}
		t->total[e[i].s->kind] += e[i].s->value;
		if (e[i].n > maxn)
			maxn = e[i].n;
	}
	qsort(e, n, sizeof(*e), cmp_tail);
	if ((err = tail_tree_build(&t->t, e, n, maxn)))
		tail_clear(t);
	return err;
}

int modframes__tail_apply(struct modtail *mt, struct profile *dst, uint64_t *moved)
{
	const struct profile *src = mt->src;
	size_t n = mt->n;
	uint32_t div = mt->div;
	struct fold_map m = { 0 };
	struct tail_ent *e = mt->e;
	struct tail_tree t = mt->t;
	uint64_t *total = mt->total;
	uint32_t marker = 0, f;
	int err, have_marker = 0;

	if (!src)
		return -EINVAL;
	memset(moved, 0, PF_KIND_MAX * sizeof(*moved));
	if ((err = fold_map_init(&m, src, dst)))
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct pf_sample d = *e[i].s;
		uint64_t th = total[d.kind];
		uint32_t node = e[i].node, k, keep;

		keep = e[i].n;
		if (small(d.value, th, div) && e[i].n) {
			/* The deepest caller whose calls are not small themselves. */
			do
				node = t.parent[node];
			while (t.depth[node] && small(t.sum[node], th, div));
			keep = t.depth[node];
		}
		/* Only the frames between that caller and the leaf go. */
		if (keep + 1 >= e[i].n) {
			err = map_stack(&m, d.stack, &d.stack);
		} else {
			if (keep + 2 > m.bufcap) {
				uint32_t *nb = realloc(m.buf, sizeof(*nb) * (keep + 2));

				if (!nb) {
					err = -ENOMEM;
					goto out;
				}
				m.buf = nb;
				m.bufcap = keep + 2;
			}
			for (k = 0; k < keep; k++)
				if ((err = map_frame(&m, e[i].fr[k], &m.buf[k])))
					goto out;
			if (!have_marker) {
				struct pf_frame mf = { .kind = PF_FRAME_USER };

				if ((err = profile__intern_str(dst, "", &mf.module)) ||
				    (err = profile__intern_str(dst, MODFRAMES_FOLDED, &mf.name)) ||
				    (err = profile__frame_add(dst, &mf, &marker)))
					goto out;
				have_marker = 1;
			}
			/* A stack folded before keeps its one marker. */
			f = keep && m.buf[keep - 1] == marker ? keep : keep + 1;
			m.buf[keep] = marker;
			/* The leaf stays: self time by function is exact in a folded window. */
			if ((err = map_frame(&m, e[i].fr[e[i].n - 1], &m.buf[f])))
				goto out;
			if (m.buf[f] != marker)
				f++;
			err = profile__stack_add(dst, m.buf, f, &d.stack);
			moved[d.kind] += d.value;
		}
		if (err || (err = add_mapped(&m, dst, &d)))
			goto out;
	}
	err = copy_rest(&m, src, dst);
out:
	tail_clear(mt);
	fold_map_free(&m);
	return err;
}

int modframes__fold_tail(struct profile *dst, const struct profile *src, uint32_t div, uint64_t *moved)
{
	struct modtail t = { 0 };
	int err = modframes__tail_plan(&t, src, div);

	if (!err)
		err = modframes__tail_apply(&t, dst, moved);
	tail_clear(&t);
	return err;
}

/* ---- callers by function ---- */

/*
 * funcs holds one frame (kind, module, name, offset 0) per function met,
 * pc[id] the pc it is written with: the first one met, so that a function
 * is one frame in every window of a chain. Forgotten past CALLS_MAX_FUNCS.
 */
struct modcalls {
	unsigned flags;                  /* MODCALLS_* */
	struct profile *win, *funcs;
	uint64_t *pc;
	size_t pccap;
	uint32_t *caller, *leaf, *stack; /* window id -> written id + 1; 0: not yet */
	uint32_t *rqstack;               /* the same for stacks of run-queue entries, trimmed */
	uint32_t *str;                   /* window string id -> written id + 1; 0: not yet */
	size_t mapcap[5];
	uint32_t *buf;
	size_t bufcap;
};
#define CALLS_MAX_FUNCS (1u << 16)

int modframes__calls_new(struct modcalls **out, unsigned flags)
{
	struct modcalls *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->flags = flags;
	*out = c;
	return 0;
}

void modframes__calls_free(struct modcalls *c)
{
	if (!c)
		return;
	profile__free(c->win);
	profile__free(c->funcs);
	free(c->pc);
	free(c->caller);
	free(c->leaf);
	free(c->stack);
	free(c->rqstack);
	free(c->str);
	free(c->buf);
	free(c);
}

/* a (n items of size sz, zeroed) holds at least n items. */
static int calls_grow(void *a, size_t *cap, size_t n, size_t sz)
{
	void **pa = a;

	if (n <= *cap) {
		memset(*pa, 0, n * sz);
		return 0;
	}
	void *na = calloc(n, sz);
	if (!na)
		return -ENOMEM;
	free(*pa);
	*pa = na;
	*cap = n;
	return 0;
}

/*
 * A window string as written, mapped once per flush: a window names a few
 * modules, comms and cgroups in thousands of frames and samples.
 */
static int calls_str(struct modcalls *c, const struct profile *src, uint32_t id, uint32_t *out)
{
	int err;

	if (id < profile__nstrs(src) && c->str[id]) {
		*out = c->str[id] - 1;
		return 0;
	}
	err = profile__intern_str(c->win, profile__str(src, id), out);
	if (!err && id < profile__nstrs(src))
		c->str[id] = *out + 1;
	return err;
}

/* Window frame id as written: as a leaf (kept) or as a caller (by function). */
static int calls_frame(struct modcalls *c, const struct profile *src, uint32_t id, int leaf,
		       uint32_t *out, int *module)
{
	const struct pf_frame *f = profile__frame(src, id);
	uint32_t *map = leaf ? c->leaf : c->caller;
	struct pf_frame d;
	int err;

	*module = 0;
	if (!f)
		return -EINVAL;
	d = *f;
	if ((err = calls_str(c, src, f->module, &d.module)))
		return err;
	int named = profile__str(src, f->name)[0] != 0;

	if ((leaf && !(named && (c->flags & MODCALLS_LEAF_BY_FUNCTION))) || f->kind == PF_FRAME_PY ||
	    !(c->flags & MODCALLS_BY_FUNCTION)) {
		err = calls_str(c, src, f->name, &d.name);
	} else if (!named) {
		*module = 1;
		d.offset = 0;
		err = module_label(c->win, profile__str(src, f->module), &d.name);
	} else {
		struct pf_frame k = { .kind = f->kind };
		uint32_t fid;
		size_t had;

		if (profile__nframes(c->funcs) >= CALLS_MAX_FUNCS)
			profile__reset(c->funcs);
		had = profile__nframes(c->funcs);
		if ((err = profile__intern_str(c->funcs, profile__str(src, f->module), &k.module)) ||
		    (err = profile__intern_str(c->funcs, profile__str(src, f->name), &k.name)) ||
		    (err = profile__frame_add(c->funcs, &k, &fid)))
			return err;
		if (fid >= had) {
			if (fid >= c->pccap) {
				size_t ncap = c->pccap ? 2 * c->pccap : 1024;
				uint64_t *np = realloc(c->pc, ncap * sizeof(*np));

				if (!np)
					return -ENOMEM;
				c->pc = np;
				c->pccap = ncap;
			}
			c->pc[fid] = f->offset;
		}
		d.offset = c->pc[fid];
		err = profile__intern_str(c->win, profile__str(src, f->name), &d.name);
	}
	if (err || (err = profile__frame_add(c->win, &d, out)))
		return err;
	map[id] = *out + 1;
	return 0;
}

/*
 * The stack src's stack id is written as. A run-queue entry's (runq set,
 * with MODCALLS_RUNQ_ENTRY): its frames up to its first kernel frame, the
 * kernel entry (the interrupt or system call it was preempted in; every
 * such stack ends in the scheduler), which is then its leaf.
 */
static int calls_stack(struct modcalls *c, const struct profile *src, uint32_t id, int runq, uint32_t *out)
{
	uint32_t *smap = runq ? c->rqstack : c->stack;
	const uint32_t *fr;
	uint32_t n, m = 0, f;
	int err, module, last_module = 0;

	if (smap[id]) {
		*out = smap[id] - 1;
		return 0;
	}
	fr = profile__stack(src, id, &n);
	if (runq) {
		uint32_t k = 0;
		while (k < n && fr[k] < profile__nframes(src) && profile__frame(src, fr[k])->kind != PF_FRAME_KERNEL)
			k++;
		if (k < n)
			n = k + 1;
	}
	if (n > c->bufcap) {
		uint32_t *nb = realloc(c->buf, n * sizeof(*nb));

		if (!nb)
			return -ENOMEM;
		c->buf = nb;
		c->bufcap = n;
	}
	for (uint32_t k = 0; k < n; k++) {
		int leaf = k + 1 == n;
		uint32_t *map = leaf ? c->leaf : c->caller;

		if (fr[k] >= profile__nframes(src))
			return -EINVAL;
		if (map[fr[k]]) {
			f = map[fr[k]] - 1;
			module = !leaf && (c->flags & MODCALLS_BY_FUNCTION) &&
				 profile__frame(src, fr[k])->kind != PF_FRAME_PY &&
				 !profile__str(src, profile__frame(src, fr[k])->name)[0];
		} else if ((err = calls_frame(c, src, fr[k], leaf, &f, &module))) {
			return err;
		}
		/* A run of unnamed callers in one module is one module frame. */
		if (module && last_module && c->buf[m - 1] == f)
			continue;
		last_module = module;
		c->buf[m++] = f;
	}
	if ((err = profile__stack_add(c->win, c->buf, m, out)))
		return err;
	smap[id] = *out + 1;
	return 0;
}

int modframes__calls(struct modcalls *c, const struct profile *src, const struct profile **out)
{
	const struct pf_meta *sm = profile__meta_const(src);
	struct pf_meta *dm;
	size_t nf = profile__nframes(src) + 1, ns = profile__nstacks(src) + 1;
	int err;

	if ((!c->win && (err = profile__new(&c->win))) || (!c->funcs && (err = profile__new(&c->funcs))))
		return err;
	profile__reset(c->win);
	if ((err = calls_grow(&c->caller, &c->mapcap[0], nf, sizeof(uint32_t))) ||
	    (err = calls_grow(&c->leaf, &c->mapcap[1], nf, sizeof(uint32_t))) ||
	    (err = calls_grow(&c->stack, &c->mapcap[2], ns, sizeof(uint32_t))) ||
	    (err = calls_grow(&c->rqstack, &c->mapcap[3], ns, sizeof(uint32_t))) ||
	    (err = calls_grow(&c->str, &c->mapcap[4], profile__nstrs(src) + 1, sizeof(uint32_t))))
		return err;
	for (size_t i = 0; i < profile__nsamples(src); i++) {
		struct pf_sample d = *profile__sample(src, i);

		if (d.stack >= ns - 1 && d.stack)
			return -EINVAL;
		int runq = d.kind == PF_KIND_RUNQ && (c->flags & MODCALLS_RUNQ_ENTRY);

		if ((err = calls_stack(c, src, d.stack, runq, &d.stack)) ||
		    (err = calls_str(c, src, d.comm, &d.comm)) ||
		    (err = calls_str(c, src, d.thread, &d.thread)) ||
		    (err = calls_str(c, src, d.cgroup, &d.cgroup)) ||
		    (err = profile__add(c->win, &d)))
			return err;
	}
	for (size_t i = 0; i < profile__ncounters(src); i++) {
		const struct pf_counter *k = profile__counter(src, i);

		if ((err = profile__counter_add(c->win, profile__str(src, k->name), k->value)))
			return err;
	}
	dm = profile__meta(c->win);
	dm->start_ns = sm->start_ns;
	dm->end_ns = sm->end_ns;
	dm->frequency = sm->frequency;
	if ((err = profile__intern_str(c->win, profile__str(src, sm->host), &dm->host)) ||
	    (err = profile__intern_str(c->win, profile__str(src, sm->kernel), &dm->kernel)))
		return err;
	if ((err = profile__intern_str(c->win, profile__str(src, sm->event), &dm->event)))
		return err;
	*out = c->win;
	return 0;
}
