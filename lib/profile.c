#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "hashbytes.h"
#include "profile.h"

/*
 * Every table is an append-only array plus an open-addressing index of
 * (array position + 1). Strings live in one arena so a window of thousands of
 * frames costs a few allocations, not one per name.
 */
struct index {
	uint32_t *slots;
	size_t cap; /* power of two */
	size_t used;
};

/*
 * Maps from one source profile's ids to this profile's, kept between merges:
 * a reader decoding a chain of records into one profile (docs/FORMAT.md,
 * "Chains") passes the same source with grown tables every window, so each
 * string, frame and stack is interned once per chain, not once per window.
 * Valid while both generations match and the flags are the same.
 */
struct merge_cache {
	uint64_t src_gen, dst_gen;
	unsigned flags;
	profile_rename_fn as;          /* what renames src's frames; NULL: none does */
	uint32_t *smap, *fmap, *kmap; /* UINT32_MAX: not mapped yet */
	uint8_t *renamed;              /* by src frame, with as: as() renamed it */
	size_t ns, nf, nk, nr;         /* entries initialised */
	size_t scap, fcap, kcap, rcap;
	uint32_t *buf;
	size_t bufcap;
};

struct profile {
	/* Changes whenever ids may be reused (reset); never repeats, even across profiles. */
	uint64_t gen;

	char *arena;
	size_t arena_len, arena_cap;
	uint32_t *str_off;
	size_t nstr, str_cap;
	struct index str_idx;

	struct pf_frame *frames;
	size_t nframes, frames_cap;
	struct index frame_idx;

	uint32_t *stack_data; /* frames of all stacks */
	size_t stack_data_len, stack_data_cap;
	uint32_t *stack_off;  /* nstacks + 1 entries */
	size_t nstacks, stacks_cap;
	/*
	 * Each stack's hash (its low half, all a table of 2^32 slots or fewer
	 * uses): a rehash reads these, not every stack's frames (a chain's
	 * 200,000 stacks hashed again took 50-80 ms of one rollup step).
	 */
	uint32_t *stack_hashes;
	size_t stack_hashes_cap;
	struct index stack_idx;

	struct pf_sample *samples;
	size_t nsamples, samples_cap;
	struct index sample_idx;

	struct pf_counter *counters;
	size_t ncounters, counters_cap;

	struct pf_meta meta;

	struct merge_cache mc; /* this profile as a merge destination */
};

static uint64_t new_gen(void)
{
	static uint64_t next;

	return __atomic_add_fetch(&next, 1, __ATOMIC_RELAXED);
}

static int grow(void **ptr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *n;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 16;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2 / elem)
			return -ENOMEM;
		ncap *= 2;
	}
	n = realloc(*ptr, ncap * elem);
	if (!n)
		return -ENOMEM;
	*ptr = n;
	*cap = ncap;
	return 0;
}

typedef uint64_t (*hash_at_fn)(const struct profile *p, uint32_t i);

static int index_rehash(struct index *ix, const struct profile *p, hash_at_fn h, size_t ncap)
{
	uint32_t *ns = calloc(ncap, sizeof(*ns));

	if (!ns)
		return -ENOMEM;
	for (size_t i = 0; i < ix->cap; i++) {
		uint32_t v = ix->slots[i];
		size_t j;

		if (!v)
			continue;
		j = h(p, v - 1) & (ncap - 1);
		while (ns[j])
			j = (j + 1) & (ncap - 1);
		ns[j] = v;
	}
	free(ix->slots);
	ix->slots = ns;
	ix->cap = ncap;
	return 0;
}

static int index_reserve(struct index *ix, const struct profile *p, hash_at_fn h)
{
	if ((ix->used + 1) * 4 < ix->cap * 3)
		return 0;
	return index_rehash(ix, p, h, ix->cap ? ix->cap * 2 : 64);
}

/* Room for n entries in all without a rehash. */
static int index_presize(struct index *ix, const struct profile *p, hash_at_fn h, size_t n)
{
	size_t ncap = ix->cap ? ix->cap : 64;

	if (n > SIZE_MAX / 8)
		return -ENOMEM;
	while ((n + 1) * 4 >= ncap * 3)
		ncap *= 2;
	return ncap > ix->cap ? index_rehash(ix, p, h, ncap) : 0;
}

static void index_clear(struct index *ix)
{
	if (ix->slots)
		memset(ix->slots, 0, ix->cap * sizeof(*ix->slots));
	ix->used = 0;
}

/* ---- strings ---- */

static uint64_t str_hash_at(const struct profile *p, uint32_t i)
{
	const char *s = p->arena + p->str_off[i];

	return hashbytes__hash(s, strlen(s));
}

int profile__intern(struct profile *p, const char *s, size_t len, uint32_t *id)
{
	uint64_t h;
	size_t j;
	int err;

	if (!s)
		len = 0;
	/* An embedded NUL would make two different inputs one string: cut there. */
	if (len && memchr(s, 0, len))
		len = strlen(s);
	if (len > UINT32_MAX / 2)
		return -E2BIG;
	err = index_reserve(&p->str_idx, p, str_hash_at);
	if (err)
		return err;
	h = hashbytes__hash(s, len);
	for (j = h & (p->str_idx.cap - 1); p->str_idx.slots[j]; j = (j + 1) & (p->str_idx.cap - 1)) {
		uint32_t i = p->str_idx.slots[j] - 1;
		const char *t = p->arena + p->str_off[i];

		if (!strncmp(t, s ? s : "", len) && t[len] == 0) {
			*id = i;
			return 0;
		}
	}
	if (p->arena_len + len + 1 > UINT32_MAX)
		return -E2BIG;
	err = grow((void **)&p->arena, &p->arena_cap, p->arena_len + len + 1, 1);
	if (!err)
		err = grow((void **)&p->str_off, &p->str_cap, p->nstr + 1, sizeof(*p->str_off));
	if (err)
		return err;
	if (len)
		memcpy(p->arena + p->arena_len, s, len);
	p->arena[p->arena_len + len] = 0;
	p->str_off[p->nstr] = p->arena_len;
	p->arena_len += len + 1;
	p->str_idx.slots[j] = p->nstr + 1;
	p->str_idx.used++;
	*id = p->nstr++;
	return 0;
}

int profile__intern_str(struct profile *p, const char *s, uint32_t *id)
{
	return profile__intern(p, s, s ? strlen(s) : 0, id);
}

const char *profile__str(const struct profile *p, uint32_t id)
{
	if (id >= p->nstr)
		return "";
	return p->arena + p->str_off[id];
}

size_t profile__nstrs(const struct profile *p)
{
	return p->nstr;
}

/* ---- frames ---- */

/*
 * The hashes of frames, stacks and samples run over their fields' bytes,
 * eight a step: a day's query interns a million stacks of two dozen frames,
 * where a multiply per frame, one after the other, was a tenth of its time.
 */
_Static_assert(offsetof(struct pf_frame, module) == 4 && offsetof(struct pf_frame, offset) == 8 &&
	       offsetof(struct pf_frame, kind) == 16, "pf_frame fields hashed as 20 bytes");
_Static_assert(offsetof(struct pf_sample, kind) == 24, "pf_sample labels hashed as 28 bytes");

static uint64_t frame_hash(const struct pf_frame *f)
{
	return hashbytes__hash(f, offsetof(struct pf_frame, kind) + sizeof(f->kind));
}

static uint64_t frame_hash_at(const struct profile *p, uint32_t i)
{
	return frame_hash(&p->frames[i]);
}

int profile__frame_add(struct profile *p, const struct pf_frame *f, uint32_t *id)
{
	size_t j;
	int err;

	if (f->name >= p->nstr || f->module >= p->nstr)
		return -EINVAL;
	err = index_reserve(&p->frame_idx, p, frame_hash_at);
	if (err)
		return err;
	for (j = frame_hash(f) & (p->frame_idx.cap - 1); p->frame_idx.slots[j];
	     j = (j + 1) & (p->frame_idx.cap - 1)) {
		const struct pf_frame *g = &p->frames[p->frame_idx.slots[j] - 1];

		if (g->name == f->name && g->module == f->module && g->offset == f->offset &&
		    g->kind == f->kind) {
			*id = p->frame_idx.slots[j] - 1;
			return 0;
		}
	}
	if (p->nframes >= UINT32_MAX - 1)
		return -E2BIG;
	err = grow((void **)&p->frames, &p->frames_cap, p->nframes + 1, sizeof(*p->frames));
	if (err)
		return err;
	p->frames[p->nframes] = *f;
	p->frame_idx.slots[j] = p->nframes + 1;
	p->frame_idx.used++;
	*id = p->nframes++;
	return 0;
}

int profile__frame_rename(struct profile *p, uint32_t id, uint32_t name)
{
	if (id >= p->nframes || name >= p->nstr)
		return -EINVAL;
	/*
	 * Its index slot stays where the old name hashed: a lookup of either
	 * compares the frame and goes on past it; a rehash puts it by the new.
	 */
	p->frames[id].name = name;
	return 0;
}

const struct pf_frame *profile__frame(const struct profile *p, uint32_t id)
{
	return id < p->nframes ? &p->frames[id] : NULL;
}

size_t profile__nframes(const struct profile *p)
{
	return p->nframes;
}

/* ---- stacks ---- */

static uint64_t stack_hash(const uint32_t *f, uint32_t n)
{
	static const uint32_t none;

	/* The empty stack comes as NULL, and no offset may be applied to NULL. */
	return hashbytes__hash(n ? f : &none, (size_t)n * sizeof(*f));
}

/* Its slot's place in a table of 2^32 slots or fewer: 3 billion stacks would not fit in memory. */
static uint64_t stack_hash_at(const struct profile *p, uint32_t i)
{
	return p->stack_hashes[i];
}

int profile__stack_add(struct profile *p, const uint32_t *frames, uint32_t n, uint32_t *id)
{
	uint64_t h;
	size_t j;
	int err;

	for (uint32_t i = 0; i < n; i++)
		if (frames[i] >= p->nframes)
			return -EINVAL;
	err = index_reserve(&p->stack_idx, p, stack_hash_at);
	if (err)
		return err;
	h = stack_hash(frames, n);
	for (j = h & (p->stack_idx.cap - 1); p->stack_idx.slots[j];
	     j = (j + 1) & (p->stack_idx.cap - 1)) {
		uint32_t i = p->stack_idx.slots[j] - 1;
		uint32_t m = p->stack_off[i + 1] - p->stack_off[i];

		if (m == n && !memcmp(p->stack_data + p->stack_off[i], frames, n * sizeof(*frames))) {
			*id = i;
			return 0;
		}
	}
	if (p->stack_data_len + n > UINT32_MAX)
		return -E2BIG;
	err = grow((void **)&p->stack_data, &p->stack_data_cap, p->stack_data_len + n + 1,
		   sizeof(*p->stack_data));
	if (!err)
		err = grow((void **)&p->stack_off, &p->stacks_cap, p->nstacks + 2, sizeof(*p->stack_off));
	if (!err)
		err = grow((void **)&p->stack_hashes, &p->stack_hashes_cap, p->nstacks + 1, sizeof(*p->stack_hashes));
	if (err)
		return err;
	p->stack_hashes[p->nstacks] = (uint32_t)h;
	if (n)
		memcpy(p->stack_data + p->stack_data_len, frames, n * sizeof(*frames));
	p->stack_data_len += n;
	p->stack_off[p->nstacks + 1] = p->stack_data_len;
	p->stack_idx.slots[j] = p->nstacks + 1;
	p->stack_idx.used++;
	*id = p->nstacks++;
	return 0;
}

const uint32_t *profile__stack(const struct profile *p, uint32_t id, uint32_t *n)
{
	if (id >= p->nstacks) {
		*n = 0;
		return NULL;
	}
	*n = p->stack_off[id + 1] - p->stack_off[id];
	return p->stack_data + p->stack_off[id];
}

size_t profile__nstacks(const struct profile *p)
{
	return p->nstacks;
}

/* ---- samples ---- */

static uint64_t sample_hash(const struct pf_sample *s)
{
	return hashbytes__hash(s, offsetof(struct pf_sample, kind) + sizeof(s->kind));
}

static uint64_t sample_hash_at(const struct profile *p, uint32_t i)
{
	return sample_hash(&p->samples[i]);
}

static int same_labels(const struct pf_sample *a, const struct pf_sample *b)
{
	return a->pid == b->pid && a->tid == b->tid && a->comm == b->comm &&
	       a->thread == b->thread && a->cgroup == b->cgroup && a->stack == b->stack &&
	       a->kind == b->kind;
}

int profile__add(struct profile *p, const struct pf_sample *s)
{
	size_t j;
	int err;

	if (s->comm >= p->nstr || s->thread >= p->nstr || s->cgroup >= p->nstr ||
	    s->stack >= p->nstacks || s->kind >= PF_KIND_MAX)
		return -EINVAL;
	err = index_reserve(&p->sample_idx, p, sample_hash_at);
	if (err)
		return err;
	for (j = sample_hash(s) & (p->sample_idx.cap - 1); p->sample_idx.slots[j];
	     j = (j + 1) & (p->sample_idx.cap - 1)) {
		struct pf_sample *t = &p->samples[p->sample_idx.slots[j] - 1];

		if (same_labels(t, s)) {
			t->value += s->value;
			return 0;
		}
	}
	if (p->nsamples >= UINT32_MAX - 1)
		return -E2BIG;
	err = grow((void **)&p->samples, &p->samples_cap, p->nsamples + 1, sizeof(*p->samples));
	if (err)
		return err;
	p->samples[p->nsamples] = *s;
	p->sample_idx.slots[j] = p->nsamples + 1;
	p->sample_idx.used++;
	p->nsamples++;
	return 0;
}

size_t profile__nsamples(const struct profile *p)
{
	return p->nsamples;
}

const struct pf_sample *profile__sample(const struct profile *p, size_t i)
{
	return i < p->nsamples ? &p->samples[i] : NULL;
}

/* ---- meta, counters ---- */

struct pf_meta *profile__meta(struct profile *p)
{
	return &p->meta;
}

const struct pf_meta *profile__meta_const(const struct profile *p)
{
	return &p->meta;
}

int profile__counter_add(struct profile *p, const char *name, uint64_t value)
{
	uint32_t id;
	int err;

	err = profile__intern_str(p, name, &id);
	if (err)
		return err;
	for (size_t i = 0; i < p->ncounters; i++) {
		if (p->counters[i].name == id) {
			p->counters[i].value += value;
			return 0;
		}
	}
	err = grow((void **)&p->counters, &p->counters_cap, p->ncounters + 1, sizeof(*p->counters));
	if (err)
		return err;
	p->counters[p->ncounters++] = (struct pf_counter){ .name = id, .value = value };
	return 0;
}

size_t profile__ncounters(const struct profile *p)
{
	return p->ncounters;
}

const struct pf_counter *profile__counter(const struct profile *p, size_t i)
{
	return i < p->ncounters ? &p->counters[i] : NULL;
}

uint64_t profile__counter_get(const struct profile *p, const char *name)
{
	for (size_t i = 0; i < p->ncounters; i++)
		if (!strcmp(profile__str(p, p->counters[i].name), name))
			return p->counters[i].value;
	return 0;
}

/* ---- lifecycle ---- */

size_t profile__mem_bytes(const struct profile *p)
{
	return sizeof(*p) + p->arena_cap + p->str_cap * sizeof(*p->str_off) +
	       p->frames_cap * sizeof(*p->frames) + p->stack_data_cap * sizeof(*p->stack_data) +
	       p->stacks_cap * sizeof(*p->stack_off) + p->stack_hashes_cap * sizeof(*p->stack_hashes) +
	       p->samples_cap * sizeof(*p->samples) +
	       p->counters_cap * sizeof(*p->counters) +
	       (p->str_idx.cap + p->frame_idx.cap + p->stack_idx.cap + p->sample_idx.cap +
		p->mc.scap + p->mc.fcap + p->mc.kcap + p->mc.bufcap) * sizeof(uint32_t) + p->mc.rcap;
}

void profile__sizes(const struct profile *p, struct pf_sizes *out)
{
	*out = (struct pf_sizes){ .strs = p->nstr, .str_bytes = p->arena_len, .frames = p->nframes,
				  .stacks = p->nstacks, .stack_frames = p->stack_data_len,
				  .samples = p->nsamples };
}

int profile__reserve(struct profile *p, const struct pf_sizes *n)
{
	int err = 0;

	if (n->strs > p->nstr)
		err = grow((void **)&p->str_off, &p->str_cap, n->strs, sizeof(*p->str_off));
	if (!err && n->strs > p->nstr)
		err = index_presize(&p->str_idx, p, str_hash_at, n->strs);
	if (!err && n->str_bytes > p->arena_len)
		err = grow((void **)&p->arena, &p->arena_cap, n->str_bytes, 1);
	if (!err && n->frames > p->nframes)
		err = grow((void **)&p->frames, &p->frames_cap, n->frames, sizeof(*p->frames));
	if (!err && n->frames > p->nframes)
		err = index_presize(&p->frame_idx, p, frame_hash_at, n->frames);
	if (!err && n->stacks > p->nstacks)
		err = grow((void **)&p->stack_off, &p->stacks_cap, n->stacks + 1, sizeof(*p->stack_off));
	if (!err && n->stacks > p->nstacks)
		err = grow((void **)&p->stack_hashes, &p->stack_hashes_cap, n->stacks, sizeof(*p->stack_hashes));
	if (!err && n->stacks > p->nstacks)
		err = index_presize(&p->stack_idx, p, stack_hash_at, n->stacks);
	/* One more: stack_add asks for room for the empty stack's terminator too. */
	if (!err && n->stack_frames > p->stack_data_len)
		err = grow((void **)&p->stack_data, &p->stack_data_cap, n->stack_frames + 1, sizeof(*p->stack_data));
	if (!err && n->samples > p->nsamples)
		err = grow((void **)&p->samples, &p->samples_cap, n->samples, sizeof(*p->samples));
	if (!err && n->samples > p->nsamples)
		err = index_presize(&p->sample_idx, p, sample_hash_at, n->samples);
	return err;
}

void profile__reset_samples(struct profile *p)
{
	p->nsamples = 0;
	p->ncounters = 0;
	index_clear(&p->sample_idx);
	memset(&p->meta, 0, sizeof(p->meta));
}

uint64_t profile__gen(const struct profile *p)
{
	return p->gen;
}

void profile__reset(struct profile *p)
{
	uint32_t id;

	p->gen = new_gen();
	p->arena_len = 0;
	p->nstr = 0;
	p->nframes = 0;
	p->stack_data_len = 0;
	p->nstacks = 0;
	p->nsamples = 0;
	p->ncounters = 0;
	index_clear(&p->str_idx);
	index_clear(&p->frame_idx);
	index_clear(&p->stack_idx);
	index_clear(&p->sample_idx);
	memset(&p->meta, 0, sizeof(p->meta));
	/* Allocations of a fresh profile cannot fail here: the tables already have room. */
	if (profile__intern(p, "", 0, &id) == 0 && p->stack_off)
		p->stack_off[0] = 0;
	if (p->stack_off)
		profile__stack_add(p, NULL, 0, &id);
}

int profile__new(struct profile **out)
{
	struct profile *p = calloc(1, sizeof(*p));
	uint32_t id;
	int err;

	if (!p)
		return -ENOMEM;
	p->gen = new_gen();
	err = grow((void **)&p->stack_off, &p->stacks_cap, 2, sizeof(*p->stack_off));
	if (err)
		goto fail;
	p->stack_off[0] = 0;
	err = profile__intern(p, "", 0, &id);
	if (!err)
		err = profile__stack_add(p, NULL, 0, &id);
	if (err)
		goto fail;
	*out = p;
	return 0;
fail:
	profile__free(p);
	return err;
}

void profile__free(struct profile *p)
{
	if (!p)
		return;
	free(p->arena);
	free(p->str_off);
	free(p->str_idx.slots);
	free(p->frames);
	free(p->frame_idx.slots);
	free(p->stack_data);
	free(p->stack_off);
	free(p->stack_hashes);
	free(p->stack_idx.slots);
	free(p->samples);
	free(p->sample_idx.slots);
	free(p->counters);
	free(p->mc.smap);
	free(p->mc.fmap);
	free(p->mc.kmap);
	free(p->mc.renamed);
	free(p->mc.buf);
	free(p);
}

/* ---- merge ---- */

int profile__merge(struct profile *dst, const struct profile *src, profile_keep_fn keep, void *arg)
{
	return profile__merge_flags(dst, src, keep, arg, 0);
}

/* Extends a map to n entries, the new ones unmapped. */
static int map_extend(uint32_t **map, size_t *cap, size_t *used, size_t n)
{
	int err;

	if (n <= *used)
		return 0;
	err = grow((void **)map, cap, n, sizeof(**map));
	if (err)
		return err;
	memset(*map + *used, 0xff, (n - *used) * sizeof(**map));
	*used = n;
	return 0;
}

static int merge_cache_prepare(struct profile *dst, const struct profile *src, unsigned flags,
			       profile_rename_fn as)
{
	struct merge_cache *mc = &dst->mc;
	int err;

	if (mc->src_gen != src->gen || mc->dst_gen != dst->gen || mc->flags != flags || mc->as != as) {
		mc->src_gen = src->gen;
		mc->dst_gen = dst->gen;
		mc->flags = flags;
		mc->as = as;
		mc->ns = mc->nf = mc->nk = mc->nr = 0;
	}
	err = map_extend(&mc->smap, &mc->scap, &mc->ns, src->nstr);
	if (!err)
		err = map_extend(&mc->fmap, &mc->fcap, &mc->nf, src->nframes);
	if (!err)
		err = map_extend(&mc->kmap, &mc->kcap, &mc->nk, src->nstacks);
	if (!err && as && src->nframes > mc->nr &&
	    !(err = grow((void **)&mc->renamed, &mc->rcap, src->nframes, sizeof(*mc->renamed)))) {
		memset(mc->renamed + mc->nr, 0, src->nframes - mc->nr);
		mc->nr = src->nframes;
	}
	if (err)
		mc->src_gen = 0; /* half-extended: start over next time */
	return err;
}

static int map_str(struct profile *dst, const struct profile *src, uint32_t id, uint32_t *out)
{
	uint32_t *m = &dst->mc.smap[id];
	int err;

	if (*m == UINT32_MAX) {
		err = profile__intern_str(dst, profile__str(src, id), m);
		if (err)
			return err;
	}
	*out = *m;
	return 0;
}

/* Frame f of src in dst, renamed first when mc->as says so. */
static int map_frame(struct profile *dst, const struct profile *src, uint32_t f, unsigned flags, void *as_arg)
{
	struct merge_cache *mc = &dst->mc;
	struct pf_frame nf = src->frames[f];
	const char *name;
	size_t len;
	int err, renamed = 0;

	if (mc->as && (renamed = mc->as(src, f, &name, &len, as_arg)) < 0)
		return renamed;
	if (renamed) {
		mc->renamed[f] = 1;
		nf.offset = 0;
		err = profile__intern(dst, name, len, &nf.name);
	} else {
		err = map_str(dst, src, src->frames[f].name, &nf.name);
	}
	if (err || (err = map_str(dst, src, src->frames[f].module, &nf.module)))
		return err;
	/* A Python frame keeps its function's first line, not the line being run. */
	if ((flags & PF_MERGE_BY_FUNCTION) && nf.name)
		nf.offset = nf.kind == PF_FRAME_PY ? PF_PY_FIRST(nf.offset) : 0;
	if ((flags & PF_MERGE_BY_FUNCTION) && (flags & PF_MERGE_BY_LABEL) && (nf.name || !nf.module)) {
		nf.module = 0;
		nf.offset = 0;
	}
	return profile__frame_add(dst, &nf, &mc->fmap[f]);
}

/*
 * Whether src's frame a reads as its renamed frame b: the same name,
 * module and kind at offset 0, compared before the flags (which may make
 * two frames one in dst that read differently).
 */
static int same_renamed(const struct profile *dst, const struct profile *src, uint32_t a, uint32_t b)
{
	const struct merge_cache *mc = &dst->mc;
	const struct pf_frame *x = &src->frames[a], *y = &src->frames[b];

	return x->module == y->module && x->kind == y->kind && (mc->renamed[a] || x->offset == 0) &&
	       dst->frames[mc->fmap[a]].name == dst->frames[mc->fmap[b]].name;
}

static int map_stack(struct profile *dst, const struct profile *src, uint32_t sid, unsigned flags, void *as_arg)
{
	struct merge_cache *mc = &dst->mc;
	uint32_t n, m = 0;
	const uint32_t *fr = profile__stack(src, sid, &n);
	int err;

	err = grow((void **)&mc->buf, &mc->bufcap, n ? n : 1, sizeof(*mc->buf));
	if (err)
		return err;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t f = fr[k];

		if (mc->fmap[f] == UINT32_MAX && (err = map_frame(dst, src, f, flags, as_arg)))
			return err;
		/* The frame before reads as this one (it was renamed alike, or so named): one run. */
		if (k && mc->as && mc->renamed[f] && same_renamed(dst, src, fr[k - 1], f))
			continue;
		mc->buf[m++] = mc->fmap[f];
	}
	return profile__stack_add(dst, mc->buf, m, &mc->kmap[sid]);
}

static int merge(struct profile *dst, const struct profile *src, profile_keep_fn keep, void *arg,
		 unsigned flags, profile_rename_fn as, void *as_arg)
{
	const struct pf_meta *sm = &src->meta;
	struct pf_meta *dm = &dst->meta;
	struct merge_cache *mc = &dst->mc;
	int err;

	if (dst == src)
		return -EINVAL;
	err = merge_cache_prepare(dst, src, flags, as);
	if (err)
		return err;
	for (size_t i = 0; i < src->nsamples; i++) {
		const struct pf_sample *s = &src->samples[i];
		struct pf_sample d = *s;

		if (keep && !keep(src, s, arg))
			continue;
		if (s->comm >= src->nstr || s->thread >= src->nstr || s->cgroup >= src->nstr ||
		    s->stack >= src->nstacks) {
			err = -EINVAL;
			goto out;
		}
		if ((err = map_str(dst, src, s->comm, &d.comm)) ||
		    (!(flags & PF_MERGE_NO_THREAD) && (err = map_str(dst, src, s->thread, &d.thread))) ||
		    (!(flags & PF_MERGE_NO_CGROUP) && (err = map_str(dst, src, s->cgroup, &d.cgroup))))
			goto out;
		if (flags & PF_MERGE_NO_THREAD)
			d.thread = 0;
		if (flags & PF_MERGE_NO_CGROUP)
			d.cgroup = 0;
		if (mc->kmap[s->stack] == UINT32_MAX && (err = map_stack(dst, src, s->stack, flags, as_arg)))
			goto out;
		d.stack = mc->kmap[s->stack];
		if (flags & PF_MERGE_BY_NAME)
			d.pid = d.tid = 0;
		err = profile__add(dst, &d);
		if (err)
			goto out;
	}

	for (size_t i = 0; i < src->ncounters; i++) {
		err = profile__counter_add(dst, profile__str(src, src->counters[i].name),
					   src->counters[i].value);
		if (err)
			goto out;
	}
	if (sm->start_ns && (!dm->start_ns || sm->start_ns < dm->start_ns))
		dm->start_ns = sm->start_ns;
	if (sm->end_ns > dm->end_ns)
		dm->end_ns = sm->end_ns;
	if (!dm->frequency)
		dm->frequency = sm->frequency;
	err = 0;
	if (!dm->host && sm->host)
		err = map_str(dst, src, sm->host, &dm->host);
	if (!err && !dm->kernel && sm->kernel)
		err = map_str(dst, src, sm->kernel, &dm->kernel);
	if (!err && !dm->event && sm->event)
		err = map_str(dst, src, sm->event, &dm->event);
out:
	return err;
}

int profile__merge_flags(struct profile *dst, const struct profile *src, profile_keep_fn keep,
			 void *arg, unsigned flags)
{
	return merge(dst, src, keep, arg, flags, NULL, NULL);
}

int profile__merge_renamed(struct profile *dst, const struct profile *src, unsigned flags,
			   profile_rename_fn as, void *arg)
{
	return merge(dst, src, NULL, NULL, flags, as, arg);
}
