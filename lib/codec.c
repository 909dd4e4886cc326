/*
 * Window payload encoder and decoder. See docs/FORMAT.md, "Payload".
 *
 * The encoder writes strings in id order, so string ids in the payload are
 * the chain dictionary's own; frames and stacks it writes sorted, and maps
 * dictionary ids to payload ids (fpay, kpay). The decoder re-interns everything
 * through the profile API and keeps maps from payload ids to profile ids:
 * a hostile payload may repeat a string or a frame, and interning would then
 * fold two payload ids into one profile id.
 */
#include "codec.h"
#include "profile.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct codec {
	uint8_t *buf;
	size_t len, cap;
	size_t part[CODEC_MAX_PARTS]; /* where the last payload's parts end (codec__parts) */
	size_t nparts;
	int err;                  /* sticky encode error: checked once at the end */

	/*
	 * Encoder chain: every string, frame and stack the records of the chain
	 * so far defined, with payload ids equal to dict ids (stacks: through
	 * kpay, since each record writes its new stacks sorted).
	 */
	struct profile *dict;
	uint32_t *wsmap, *wfmap, *wkmap; /* window id -> dict id; UINT32_MAX: not yet */
	size_t wsmap_cap, wfmap_cap, wkmap_cap;
	uint32_t *kpay;                  /* dict stack id -> payload stack id */
	size_t kpay_cap;
	uint32_t *fpay;                  /* dict frame id -> payload frame id */
	size_t fpay_cap;
	uint32_t *ford;                  /* new frames in payload order */
	size_t ford_cap;
	uint32_t *fbuf;
	size_t fbuf_cap;

	/*
	 * Decoder chain: payload id -> profile id for every id the chain defined
	 * so far, the chain's key record, and the table sizes the decoded profile
	 * had after the last record (anything else touched it: start over).
	 */
	uint32_t *smap, *fmap, *kmap;
	size_t smap_cap, fmap_cap, kmap_cap;
	uint64_t d_key;               /* 1 + offset of the key record; 0: no chain */
	const struct profile *d_prof;
	size_t d_nstr, d_nf, d_nk;    /* payload ids defined: strings incl. 0, frames, stacks incl. 0 */
	size_t d_pstr, d_pf, d_pk;    /* the profile's table sizes after the last record */

	uint32_t *prev, *cur;      /* decoded stacks, in payload frame ids */
	size_t prev_cap, cur_cap;
	struct pf_sample *samples;
	size_t samples_cap;
	uint32_t *order;           /* encoder: new stacks in payload order */
	size_t order_cap;
	struct sorted *sord;       /* encoder: samples in payload order */
	size_t sord_cap;
	uint64_t unit;             /* encoder: ns per unit of off-CPU and run-queue values */
	struct sorted *wr;         /* encoder: samples in the order written (by kind, thread, stack) */
	size_t wr_cap;
	uint32_t *tcnt;            /* entries by kind and thread: [kind * nthreads + thread] */
	size_t tcnt_cap;
	struct pf_sample *thr;     /* decoder: the threads of a version 5 record */
	size_t thr_cap;

	/*
	 * A lent dictionary (codec__encode_key_lent): the chain's tables are
	 * those of the key's own profile, lent, through maps both ways (its ids
	 * to the chain's, the chain's to its), never copied into dict. Deltas
	 * intern into it what they add. bd_gen and the sizes after the last
	 * record tell whether anyone else touched it.
	 */
	struct profile *bd;
	uint64_t bd_gen;
	size_t bd_ns, bd_nf, bd_nk;
	int need_key;                    /* the lent profile was let go: a delta is refused */
	uint32_t *b2d_s, *b2d_f, *b2d_k; /* lent id -> chain id; UINT32_MAX: not in the chain */
	size_t b2d_scap, b2d_fcap, b2d_kcap, b2d_sn, b2d_fn, b2d_kn;
	uint32_t *d2b_s, *d2b_f, *d2b_k; /* chain id -> lent id */
	size_t d2b_scap, d2b_fcap, d2b_kcap;
	size_t dn_s, dn_f, dn_k;         /* the chain's strings, frames, stacks */
	char *tbuf;                      /* a string's text, copied before it is interned into bd */
	size_t tbuf_cap;
	uint32_t *bbuf;                  /* a stack's frames as lent ids */
	size_t bbuf_cap;
	uint32_t *bfpay;                 /* lent frame id -> payload frame id (those in the chain) */
	size_t bfpay_cap;
};

struct sorted {
	const struct pf_sample *s;
	uint32_t stack; /* payload stack id */
};

int codec__new(struct codec **out)
{
	struct codec *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	if (profile__new(&c->dict)) {
		free(c);
		return -ENOMEM;
	}
	c->unit = 1;
	*out = c;
	return 0;
}

void codec__free(struct codec *c)
{
	if (!c)
		return;
	free(c->buf);
	profile__free(c->dict);
	free(c->wsmap);
	free(c->wfmap);
	free(c->wkmap);
	free(c->kpay);
	free(c->fpay);
	free(c->ford);
	free(c->fbuf);
	free(c->smap);
	free(c->fmap);
	free(c->kmap);
	free(c->prev);
	free(c->cur);
	free(c->samples);
	free(c->order);
	free(c->sord);
	free(c->wr);
	free(c->tcnt);
	free(c->thr);
	free(c->b2d_s);
	free(c->b2d_f);
	free(c->b2d_k);
	free(c->d2b_s);
	free(c->d2b_f);
	free(c->d2b_k);
	free(c->tbuf);
	free(c->bbuf);
	free(c->bfpay);
	free(c);
}

/* Grows *arr to hold n elements of size sz; keeps the contents. */
static int grow(void **arr, size_t *cap, size_t n, size_t sz)
{
	if (n <= *cap)
		return 0;
	size_t ncap = *cap ? *cap : 64;
	while (ncap < n) {
		if (ncap > SIZE_MAX / 2 / sz)
			return -ENOMEM;
		ncap *= 2;
	}
	void *p = realloc(*arr, ncap * sz);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

/* ---- encoding ---- */

static void put_bytes(struct codec *c, const void *p, size_t n)
{
	if (c->err)
		return;
	if (n > SIZE_MAX - c->len) {
		c->err = -ENOMEM;
		return;
	}
	void *b = c->buf;
	int r = grow(&b, &c->cap, c->len + n, 1);
	c->buf = b;
	if (r) {
		c->err = r;
		return;
	}
	memcpy(c->buf + c->len, p, n);
	c->len += n;
}

static void put_u(struct codec *c, uint64_t v)
{
	uint8_t b[10];
	size_t n = 0;
	/*
	 * Straight into the buffer when a varint's most fits: a record is
	 * mostly one-byte numbers, and a grow check and memcpy for each were
	 * a third of the encoding.
	 */
	if (!c->err && c->cap - c->len >= sizeof(b)) {
		uint8_t *o = c->buf + c->len;
		while (v >= 0x80) {
			o[n++] = (uint8_t)(v | 0x80);
			v >>= 7;
		}
		o[n++] = (uint8_t)v;
		c->len += n;
		return;
	}
	while (v >= 0x80) {
		b[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	b[n++] = (uint8_t)v;
	put_bytes(c, b, n);
}

static uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static int64_t unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/*
 * The chain's tables, in dict or in the lent profile: a string's text, a
 * frame (its strings as chain ids), a stack's frames (dict's ids or the
 * lent profile's: fp() gives either's payload id).
 */
static const char *dstr(const struct codec *c, size_t i)
{
	return c->bd ? profile__str(c->bd, c->d2b_s[i]) : profile__str(c->dict, (uint32_t)i);
}

static struct pf_frame dframe(const struct codec *c, uint32_t i)
{
	if (!c->bd)
		return *profile__frame(c->dict, i);
	struct pf_frame f = *profile__frame(c->bd, c->d2b_f[i]);
	f.name = c->b2d_s[f.name];
	f.module = c->b2d_s[f.module];
	return f;
}

static const uint32_t *dstack(const struct codec *c, uint32_t i, uint32_t *n)
{
	return c->bd ? profile__stack(c->bd, c->d2b_k[i], n) : profile__stack(c->dict, i, n);
}

static uint32_t fp(const struct codec *c, uint32_t f)
{
	return c->bd ? c->bfpay[f] : c->fpay[f];
}

static void dsizes(const struct codec *c, size_t *ns, size_t *nf, size_t *nk)
{
	if (c->bd) {
		*ns = c->dn_s, *nf = c->dn_f, *nk = c->dn_k;
	} else {
		*ns = profile__nstrs(c->dict), *nf = profile__nframes(c->dict), *nk = profile__nstacks(c->dict);
	}
}

/* Orders dict stacks by their frames' payload ids, root first. */
static int cmp_stack(const void *a, const void *b, void *arg)
{
	const struct codec *c = arg;
	uint32_t na, nb;
	const uint32_t *fa = dstack(c, *(const uint32_t *)a, &na);
	const uint32_t *fb = dstack(c, *(const uint32_t *)b, &nb);
	for (uint32_t i = 0; i < na && i < nb; i++)
		if (fa[i] != fb[i])
			return fp(c, fa[i]) < fp(c, fb[i]) ? -1 : 1;
	return na < nb ? -1 : na > nb;
}

/* Orders dict frames by kind, module and offset: a function's pcs side by side, offsets in small steps. */
static int cmp_frame(const void *a, const void *b, void *arg)
{
	const struct codec *c = arg;
	const struct pf_frame x = dframe(c, *(const uint32_t *)a);
	const struct pf_frame y = dframe(c, *(const uint32_t *)b);

	if (x.kind != y.kind)
		return x.kind < y.kind ? -1 : 1;
	if (x.module != y.module)
		return x.module < y.module ? -1 : 1;
	if (x.offset != y.offset)
		return x.offset < y.offset ? -1 : 1;
	return x.name < y.name ? -1 : x.name > y.name;
}

/* Room in a lent id -> chain id map for the lent profile's n ids, the new ones unmapped. */
static int b2d_fit(uint32_t **m, size_t *cap, size_t *have, size_t n)
{
	int err = grow((void **)m, cap, n ? n : 1, sizeof(uint32_t));
	if (!err && n > *have) {
		memset(*m + *have, 0xff, (n - *have) * sizeof(uint32_t));
		*have = n;
	}
	return err;
}

/* The chain id of a lent id, a new one (the next) when the chain has none yet. */
static int b2d_take(uint32_t *b2d, uint32_t **d2b, size_t *d2b_cap, size_t *dn, uint32_t bid, uint32_t *out)
{
	if (b2d[bid] == UINT32_MAX) {
		int err = grow((void **)d2b, d2b_cap, *dn + 1, sizeof(uint32_t));
		if (err)
			return err;
		(*d2b)[*dn] = bid;
		b2d[bid] = (uint32_t)(*dn)++;
	}
	*out = b2d[bid];
	return 0;
}

/* The chain's id of a string, a frame (strings as chain ids), a stack (frames as chain ids): added when new. */
static int dict_str(struct codec *c, const char *t, uint32_t *out)
{
	uint32_t bid;
	size_t n = strlen(t);
	int err;

	if (!c->bd)
		return profile__intern(c->dict, t, n, out);
	/* Interning may move the lent profile's strings, t among them. */
	if ((err = grow((void **)&c->tbuf, &c->tbuf_cap, n + 1, 1)))
		return err;
	memcpy(c->tbuf, t, n + 1);
	if ((err = profile__intern(c->bd, c->tbuf, n, &bid)) ||
	    (err = b2d_fit(&c->b2d_s, &c->b2d_scap, &c->b2d_sn, profile__nstrs(c->bd))))
		return err;
	return b2d_take(c->b2d_s, &c->d2b_s, &c->d2b_scap, &c->dn_s, bid, out);
}

static int dict_frame(struct codec *c, const struct pf_frame *g, uint32_t *out)
{
	uint32_t bid;
	int err;

	if (!c->bd)
		return profile__frame_add(c->dict, g, out);
	struct pf_frame b = *g;
	b.name = c->d2b_s[g->name];
	b.module = c->d2b_s[g->module];
	if ((err = profile__frame_add(c->bd, &b, &bid)) ||
	    (err = b2d_fit(&c->b2d_f, &c->b2d_fcap, &c->b2d_fn, profile__nframes(c->bd))))
		return err;
	return b2d_take(c->b2d_f, &c->d2b_f, &c->d2b_fcap, &c->dn_f, bid, out);
}

static int dict_stack(struct codec *c, const uint32_t *f, uint32_t n, uint32_t *out)
{
	uint32_t bid;
	int err;

	if (!c->bd)
		return profile__stack_add(c->dict, f, n, out);
	if ((err = grow((void **)&c->bbuf, &c->bbuf_cap, n ? n : 1, sizeof(uint32_t))))
		return err;
	for (uint32_t k = 0; k < n; k++)
		c->bbuf[k] = c->d2b_f[f[k]];
	if ((err = profile__stack_add(c->bd, c->bbuf, n, &bid)) ||
	    (err = b2d_fit(&c->b2d_k, &c->b2d_kcap, &c->b2d_kn, profile__nstacks(c->bd))))
		return err;
	return b2d_take(c->b2d_k, &c->d2b_k, &c->d2b_kcap, &c->dn_k, bid, out);
}

/* Window ids to dict ids, adding to the dict what it does not hold yet. */
static int enc_str(struct codec *c, const struct profile *p, uint32_t id, uint32_t *out)
{
	if (c->wsmap[id] == UINT32_MAX) {
		int err = dict_str(c, profile__str(p, id), &c->wsmap[id]);
		if (err)
			return err;
	}
	*out = c->wsmap[id];
	return 0;
}

static int enc_stack(struct codec *c, const struct profile *p, uint32_t id, uint32_t *out)
{
	uint32_t n;
	const uint32_t *f;
	int err;

	if (c->wkmap[id] != UINT32_MAX)
		goto done;
	f = profile__stack(p, id, &n);
	if ((err = grow((void **)&c->fbuf, &c->fbuf_cap, n ? n : 1, sizeof(uint32_t))))
		return err;
	for (uint32_t k = 0; k < n; k++) {
		if (c->wfmap[f[k]] == UINT32_MAX) {
			struct pf_frame g = *profile__frame(p, f[k]);
			if ((err = enc_str(c, p, g.name, &g.name)) || (err = enc_str(c, p, g.module, &g.module)) ||
			    (err = dict_frame(c, &g, &c->wfmap[f[k]])))
				return err;
		}
		c->fbuf[k] = c->wfmap[f[k]];
	}
	if ((err = dict_stack(c, c->fbuf, n, &c->wkmap[id])))
		return err;
done:
	*out = c->wkmap[id];
	return 0;
}

static int fill_unmapped(uint32_t **m, size_t *cap, size_t n)
{
	int err = grow((void **)m, cap, n ? n : 1, sizeof(uint32_t));
	if (!err)
		memset(*m, 0xff, (n ? n : 1) * sizeof(uint32_t));
	return err;
}

/*
 * Maps every string, frame and stack the window uses into the dict, in the
 * order the payload meets them, so that a window re-encoded from its own
 * decoding gives the same bytes.
 */
static int enc_map(struct codec *c, const struct profile *p, uint32_t meta[3])
{
	const struct pf_meta *m = profile__meta_const(p);
	size_t ns = profile__nsamples(p);
	uint32_t x;
	int err;

	if ((err = fill_unmapped(&c->wsmap, &c->wsmap_cap, profile__nstrs(p))) ||
	    (err = fill_unmapped(&c->wfmap, &c->wfmap_cap, profile__nframes(p))) ||
	    (err = fill_unmapped(&c->wkmap, &c->wkmap_cap, profile__nstacks(p))))
		return err;
	c->wsmap[0] = 0;
	c->wkmap[0] = 0;
	if ((err = enc_str(c, p, m->host < profile__nstrs(p) ? m->host : 0, &meta[0])) ||
	    (err = enc_str(c, p, m->kernel < profile__nstrs(p) ? m->kernel : 0, &meta[1])) ||
	    (err = enc_str(c, p, m->event < profile__nstrs(p) ? m->event : 0, &meta[2])))
		return err;
	for (size_t i = 0; i < profile__ncounters(p); i++)
		if ((err = enc_str(c, p, profile__counter(p, i)->name, &x)))
			return err;
	for (size_t i = 0; i < ns; i++) {
		const struct pf_sample *s = profile__sample(p, i);
		if ((err = enc_str(c, p, s->comm, &x)) || (err = enc_str(c, p, s->thread, &x)) ||
		    (err = enc_str(c, p, s->cgroup, &x)) || (err = enc_stack(c, p, s->stack, &x)))
			return err;
	}
	return 0;
}

/*
 * Samples by thread (pid, tid and the thread's names and cgroup, as
 * written: one row of the thread table each), then kind and stack: the
 * pids of the thread table step up and each thread's stacks step up.
 */
static int cmp_sample(const void *a, const void *b, void *arg)
{
	const struct sorted *x = a, *y = b;
	const uint32_t *sm = arg;
	if (x->s->pid != y->s->pid)
		return x->s->pid < y->s->pid ? -1 : 1;
	if (x->s->tid != y->s->tid)
		return x->s->tid < y->s->tid ? -1 : 1;
	if (x->s->comm != y->s->comm)
		return sm[x->s->comm] < sm[y->s->comm] ? -1 : 1;
	if (x->s->thread != y->s->thread)
		return sm[x->s->thread] < sm[y->s->thread] ? -1 : 1;
	if (x->s->cgroup != y->s->cgroup)
		return sm[x->s->cgroup] < sm[y->s->cgroup] ? -1 : 1;
	if (x->s->kind != y->s->kind)
		return x->s->kind < y->s->kind ? -1 : 1;
	if (x->stack != y->stack)
		return x->stack < y->stack ? -1 : 1;
	/* Equal keys (a profile that did not merge them): keep the profile's order, so output is stable. */
	return x->s < y->s ? -1 : x->s > y->s;
}

/* Whether two samples are of one row of the thread table. */
static int same_thread(const struct pf_sample *x, const struct pf_sample *y)
{
	return x->pid == y->pid && x->tid == y->tid && x->comm == y->comm && x->thread == y->thread &&
	       x->cgroup == y->cgroup;
}

int codec__set_value_unit(struct codec *c, uint64_t unit_ns)
{
	if (unit_ns > CODEC_MAX_VALUE_UNIT)
		return -EINVAL;
	c->unit = unit_ns ? unit_ns : 1;
	return 0;
}

/*
 * Off-CPU and run-queue values in units, each rounded with the error
 * carried to the next entry of its pid, tid and kind (o is sorted by
 * them): a thread's time by kind stays within half a unit of its sum.
 */
static void put_values(struct codec *c, const struct sorted *o, size_t ns)
{
	const uint64_t unit = c->unit, half = unit / 2;
	int64_t carry = 0; /* in [-half, unit - half) */

	for (size_t i = 0; i < ns; i++) {
		const struct pf_sample *x = o[i].s;
		if (x->kind == PF_KIND_CPU || unit == 1) {
			put_u(c, x->value);
			continue;
		}
		if (!i || x->pid != o[i - 1].s->pid || x->tid != o[i - 1].s->tid || x->kind != o[i - 1].s->kind)
			carry = 0;
		/* value + carry + half >= 0: carry >= -half. */
		unsigned __int128 t = (unsigned __int128)x->value + (unsigned __int128)(carry + (int64_t)half);
		unsigned __int128 q = t / unit;
		if (q > UINT64_MAX / unit) /* a value no clock gives: the largest that decodes */
			q = UINT64_MAX / unit, carry = 0;
		else
			carry = (int64_t)((__int128)x->value + carry - (__int128)(q * unit));
		put_u(c, (uint64_t)q);
	}
}

/* Drops the lent profile: the chain's tables are gone with it. */
static void lend_end(struct codec *c)
{
	if (c->bd)
		c->need_key = 1;
	c->bd = NULL;
}

/*
 * Makes lent the chain's tables, with none of its ids in the chain yet,
 * when each of its frames is the one frame_add finds (a renamed frame can
 * read as another: dict would make them one, so it then stays dict).
 * Its strings are unique by text (profile__intern) and its stacks by
 * frames. dict's own tables are let go: a lent chain needs none.
 */
static int lend_start(struct codec *c, struct profile *lent)
{
	struct profile *fresh;
	size_t nf = profile__nframes(lent);
	uint32_t id;
	int err;

	for (size_t i = 0; i < nf; i++) {
		struct pf_frame g = *profile__frame(lent, (uint32_t)i);
		if ((err = profile__frame_add(lent, &g, &id)))
			return err;
		if (id != i)
			return 0;
	}
	if (!profile__new(&fresh)) {
		profile__free(c->dict);
		c->dict = fresh;
	}
	c->b2d_sn = c->b2d_fn = c->b2d_kn = 0;
	if ((err = b2d_fit(&c->b2d_s, &c->b2d_scap, &c->b2d_sn, profile__nstrs(lent))) ||
	    (err = b2d_fit(&c->b2d_f, &c->b2d_fcap, &c->b2d_fn, profile__nframes(lent))) ||
	    (err = b2d_fit(&c->b2d_k, &c->b2d_kcap, &c->b2d_kn, profile__nstacks(lent))) ||
	    (err = grow((void **)&c->d2b_s, &c->d2b_scap, 1, sizeof(uint32_t))) ||
	    (err = grow((void **)&c->d2b_k, &c->d2b_kcap, 1, sizeof(uint32_t))))
		return err;
	/* "" and the empty stack are id 0 in every profile, the chain's too. */
	c->b2d_s[0] = c->d2b_s[0] = 0;
	c->b2d_k[0] = c->d2b_k[0] = 0;
	c->dn_s = 1, c->dn_f = 0, c->dn_k = 1;
	c->bd = lent;
	return 0;
}

static int encode(struct codec *c, const struct profile *p, uint64_t key_ref, struct profile *lent,
		  const uint8_t **buf, size_t *len)
{
	uint32_t meta[3];
	int err;

	c->len = 0;
	c->nparts = 0;
	c->err = 0;
	if (!key_ref) {
		lend_end(c);
		c->need_key = 0;
		profile__reset(c->dict);
		if (lent && (err = lend_start(c, lent)))
			goto fail;
	} else if (c->need_key ||
		   (c->bd && (profile__gen(c->bd) != c->bd_gen || profile__nstrs(c->bd) != c->bd_ns ||
			      profile__nframes(c->bd) != c->bd_nf || profile__nstacks(c->bd) != c->bd_nk))) {
		err = -ESTALE;
		goto fail;
	}
	size_t bs, bf, bk;
	dsizes(c, &bs, &bf, &bk);
	err = enc_map(c, p, meta);
	if (err)
		goto fail;
	size_t nstr, nf, nk;
	dsizes(c, &nstr, &nf, &nk);

	put_u(c, CODEC_PAYLOAD_VERSION);
	put_u(c, key_ref);
	put_u(c, bs - 1);
	put_u(c, bf);
	put_u(c, bk - 1);

	put_u(c, nstr - bs);
	for (size_t i = bs; i < nstr; i++) {
		const char *t = dstr(c, i);
		size_t n = strlen(t);
		put_u(c, n);
		put_bytes(c, t, n);
	}

	const struct pf_meta *m = profile__meta_const(p);
	c->part[c->nparts++] = c->len;
	put_u(c, zigzag(m->start_ns));
	/* Unsigned difference: wraps the same way on decode, whatever the input. */
	put_u(c, (uint64_t)m->end_ns - (uint64_t)m->start_ns);
	put_u(c, meta[0]);
	put_u(c, meta[1]);
	put_u(c, meta[2]);
	put_u(c, m->frequency);

	size_t ncnt = profile__ncounters(p);
	put_u(c, ncnt);
	for (size_t i = 0; i < ncnt; i++) {
		const struct pf_counter *k = profile__counter(p, i);
		put_u(c, c->wsmap[k->name]);
		put_u(c, k->value);
	}

	/*
	 * Columns: a run of similar small numbers compresses far better than
	 * interleaved records. New frames sorted by module and offset: names
	 * come in runs and each offset is a small step from the one before.
	 */
	if ((err = grow((void **)&c->ford, &c->ford_cap, nf - bf + 1, sizeof(uint32_t))) ||
	    (err = grow((void **)&c->fpay, &c->fpay_cap, nf + 1, sizeof(uint32_t))))
		goto fail;
	for (size_t i = bf; i < nf; i++)
		c->ford[i - bf] = (uint32_t)i;
	qsort_r(c->ford, nf - bf, sizeof(uint32_t), cmp_frame, c);
	for (size_t i = bf; i < nf; i++)
		c->fpay[c->ford[i - bf]] = (uint32_t)i;
	/* The stacks' sort compares frames by payload id: one load each, not two. */
	if (c->bd) {
		if ((err = grow((void **)&c->bfpay, &c->bfpay_cap, profile__nframes(c->bd) + 1, sizeof(uint32_t))))
			goto fail;
		for (size_t i = bf; i < nf; i++)
			c->bfpay[c->d2b_f[i]] = c->fpay[i];
	}
	put_u(c, nf - bf);
	for (size_t i = bf; i < nf; i++)
		put_u(c, dframe(c, c->ford[i - bf]).kind);
	c->part[c->nparts++] = c->len;
	for (size_t i = bf; i < nf; i++)
		put_u(c, dframe(c, c->ford[i - bf]).module);
	for (size_t i = bf; i < nf; i++)
		put_u(c, dframe(c, c->ford[i - bf]).name);
	uint64_t poff = 0;
	for (size_t i = bf; i < nf; i++) {
		uint64_t off = dframe(c, c->ford[i - bf]).offset;
		/* Unsigned difference: wraps the same way on decode. */
		put_u(c, zigzag((int64_t)(off - poff)));
		poff = off;
	}

	/*
	 * New stacks are root first and written in sorted order, so each one
	 * shares its first frames (main, the event loop, the syscall path) with
	 * the one before and stores only how many: the stack table becomes a walk
	 * of the call tree, each tree edge written about once.
	 */
	if ((err = grow((void **)&c->order, &c->order_cap, nk - bk + 1, sizeof(uint32_t))) ||
	    (err = grow((void **)&c->kpay, &c->kpay_cap, nk, sizeof(uint32_t))))
		goto fail;
	for (size_t i = bk; i < nk; i++)
		c->order[i - bk] = (uint32_t)i;
	qsort_r(c->order, nk - bk, sizeof(uint32_t), cmp_stack, c);
	if (!key_ref)
		c->kpay[0] = 0;
	c->part[c->nparts++] = c->len;
	put_u(c, nk - bk);
	const uint32_t *prev = NULL;
	uint32_t nprev = 0;
	for (size_t i = bk; i < nk; i++) {
		uint32_t n, id = c->order[i - bk];
		const uint32_t *f = dstack(c, id, &n);
		uint32_t shared = 0;
		c->kpay[id] = (uint32_t)i;
		while (shared < n && shared < nprev && f[shared] == prev[shared])
			shared++;
		put_u(c, shared);
		put_u(c, n - shared);
		/*
		 * Frame ids as steps: the first after the shared ones from the
		 * previous stack's frame there (the stacks are sorted: it is
		 * larger), the others from the frame before them (callees are
		 * mostly in their caller's module, whose frames are side by side).
		 */
		for (uint32_t j = shared; j < n; j++) {
			uint32_t id = fp(c, f[j]);
			if (j == shared && j < nprev)
				put_u(c, (uint64_t)id - fp(c, prev[j]) - 1);
			else if (j)
				put_u(c, zigzag((int64_t)id - fp(c, f[j - 1])));
			else
				put_u(c, id);
		}
		prev = f;
		nprev = n;
	}

	size_t ns = profile__nsamples(p);
	if ((err = grow((void **)&c->sord, &c->sord_cap, ns ? ns : 1, sizeof(*c->sord))))
		goto fail;
	for (size_t i = 0; i < ns; i++) {
		c->sord[i].s = profile__sample(p, i);
		c->sord[i].stack = c->kpay[c->wkmap[c->sord[i].s->stack]];
	}
	qsort_r(c->sord, ns, sizeof(*c->sord), cmp_sample, c->wsmap);
	struct sorted *o = c->sord;
	size_t nt = 0;
	for (size_t i = 0; i < ns; i++)
		nt += !i || !same_thread(o[i].s, o[i - 1].s);
	if ((err = grow((void **)&c->tcnt, &c->tcnt_cap, nt * PF_KIND_MAX + 1, sizeof(uint32_t))) ||
	    (err = grow((void **)&c->wr, &c->wr_cap, ns ? ns : 1, sizeof(*c->wr))))
		goto fail;
	memset(c->tcnt, 0, nt * PF_KIND_MAX * sizeof(uint32_t));
	c->part[c->nparts++] = c->len;
	put_u(c, ns);
	put_u(c, c->unit);
	put_u(c, nt);
	/* The thread table: pid steps, tid against pid, names and cgroup once per thread. */
	uint32_t ppid = 0;
	for (size_t i = 0, t = 0; i < ns; i++) {
		if (o[i].s->kind >= PF_KIND_MAX) {
			err = -EINVAL;
			goto fail;
		}
		if (i && same_thread(o[i].s, o[i - 1].s)) {
			c->tcnt[o[i].s->kind * nt + t - 1]++;
			continue;
		}
		c->tcnt[o[i].s->kind * nt + t++]++;
		put_u(c, zigzag((int64_t)o[i].s->pid - ppid));
		ppid = o[i].s->pid;
	}
	for (size_t i = 0; i < ns; i++)
		if (!i || !same_thread(o[i].s, o[i - 1].s))
			put_u(c, zigzag((int64_t)o[i].s->tid - o[i].s->pid));
	for (size_t i = 0; i < ns; i++)
		if (!i || !same_thread(o[i].s, o[i - 1].s))
			put_u(c, c->wsmap[o[i].s->comm]);
	/* A thread named as its process (the main thread, most processes): 0. */
	for (size_t i = 0; i < ns; i++)
		if (!i || !same_thread(o[i].s, o[i - 1].s))
			put_u(c, o[i].s->thread == o[i].s->comm ? 0 : (uint64_t)c->wsmap[o[i].s->thread] + 1);
	for (size_t i = 0; i < ns; i++)
		if (!i || !same_thread(o[i].s, o[i - 1].s))
			put_u(c, c->wsmap[o[i].s->cgroup]);
	for (size_t i = 0; i < nt * PF_KIND_MAX; i++)
		put_u(c, c->tcnt[i]);
	/*
	 * Entries by kind, each kind thread by thread as in the table: the
	 * stacks and values of one kind are alike, and come together.
	 */
	size_t nw = 0;
	for (uint32_t k = 0; k < PF_KIND_MAX; k++)
		for (size_t i = 0; i < ns; i++)
			if (o[i].s->kind == k)
				c->wr[nw++] = o[i];
	uint32_t pstack = 0;
	c->part[c->nparts++] = c->len;
	for (size_t i = 0; i < ns; i++) {
		put_u(c, zigzag((int64_t)c->wr[i].stack - pstack));
		pstack = c->wr[i].stack;
	}
	c->part[c->nparts++] = c->len;
	put_values(c, c->wr, ns);
	c->part[c->nparts++] = c->len;

	if (c->err) {
		err = c->err;
		goto fail;
	}
	if (c->bd) {
		c->bd_gen = profile__gen(c->bd);
		c->bd_ns = profile__nstrs(c->bd);
		c->bd_nf = profile__nframes(c->bd);
		c->bd_nk = profile__nstacks(c->bd);
	}
	*buf = c->buf;
	*len = c->len;
	return 0;
fail:
	/* The dict may hold what no record carries: the next record must be a key. */
	lend_end(c);
	profile__reset(c->dict);
	return err;
}

int codec__encode_chain(struct codec *c, const struct profile *p, uint64_t key_ref,
			const uint8_t **buf, size_t *len)
{
	return encode(c, p, key_ref, NULL, buf, len);
}

int codec__encode_key_lent(struct codec *c, struct profile *p, const uint8_t **buf, size_t *len)
{
	return encode(c, p, 0, p, buf, len);
}

void codec__lend_end(struct codec *c)
{
	lend_end(c);
}

size_t codec__mem_bytes(const struct codec *c)
{
	size_t u = sizeof(uint32_t);

	return sizeof(*c) + c->cap + profile__mem_bytes(c->dict) +
	       (c->wsmap_cap + c->wfmap_cap + c->wkmap_cap + c->kpay_cap + c->fpay_cap + c->ford_cap + c->fbuf_cap +
		c->smap_cap + c->fmap_cap + c->kmap_cap + c->prev_cap + c->cur_cap + c->order_cap + c->tcnt_cap +
		c->b2d_scap + c->b2d_fcap + c->b2d_kcap + c->d2b_scap + c->d2b_fcap + c->d2b_kcap + c->bbuf_cap +
		c->bfpay_cap) * u +
	       (c->sord_cap + c->wr_cap) * sizeof(struct sorted) + (c->samples_cap + c->thr_cap) * sizeof(struct pf_sample) +
	       c->tbuf_cap;
}

size_t codec__parts(const struct codec *c, const size_t **ends)
{
	*ends = c->part;
	return c->nparts;
}

int codec__encode(struct codec *c, const struct profile *p, const uint8_t **buf, size_t *len)
{
	return codec__encode_chain(c, p, 0, buf, len);
}

void codec__totals(const struct profile *p, uint64_t *samples, uint64_t *lost)
{
	uint64_t s = 0, l = 0;
	size_t ns = profile__nsamples(p), nc = profile__ncounters(p);
	for (size_t i = 0; i < ns; i++) {
		const struct pf_sample *x = profile__sample(p, i);
		if (x->kind == PF_KIND_CPU)
			s += x->value;
	}
	for (size_t i = 0; i < nc; i++) {
		const struct pf_counter *k = profile__counter(p, i);
		if (!strncmp(profile__str(p, k->name), "lost", 4))
			l += k->value;
	}
	*samples = s;
	*lost = l;
}

/* ---- decoding ---- */

struct rd {
	const uint8_t *p, *end;
};

static int get_u(struct rd *r, uint64_t *v)
{
	uint64_t x = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (r->p >= r->end)
			return -EBADMSG;
		uint8_t b = *r->p++;
		/* The tenth byte may carry only the top bit of a 64-bit value. */
		if (shift == 63 && b > 1)
			return -EBADMSG;
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -EBADMSG;
}

static int get_u32(struct rd *r, uint32_t *v)
{
	uint64_t x;
	int e = get_u(r, &x);
	if (e)
		return e;
	if (x > UINT32_MAX)
		return -EBADMSG;
	*v = (uint32_t)x;
	return 0;
}

/* Reads a count of items that each take at least min_bytes: bounds allocations by the input size. */
static int get_count(struct rd *r, size_t min_bytes, size_t *n)
{
	uint64_t x;
	int e = get_u(r, &x);
	if (e)
		return e;
	if (x > (uint64_t)(r->end - r->p) / min_bytes || x >= UINT32_MAX)
		return -EBADMSG;
	*n = (size_t)x;
	return 0;
}

/* Reads a string id and maps it; id must be below n. */
static int get_str(struct codec *c, struct rd *r, size_t n, uint32_t *id)
{
	uint32_t v;
	int e = get_u32(r, &v);
	if (e)
		return e;
	if (v >= n)
		return -EBADMSG;
	*id = c->smap[v];
	return 0;
}

/*
 * Room in p for a record's tables, were they all new: a key decoded into
 * an empty profile (a query's first) does not grow them step by step. A
 * profile that holds as many already (a chain's records merged into one)
 * is left as it is: most of what a record defines is there.
 */
static int reserve(struct profile *p, const struct pf_sizes *n)
{
	struct pf_sizes have;

	profile__sizes(p, &have);
	return profile__reserve(p, &(struct pf_sizes){
		.strs = n->strs > have.strs ? n->strs : 0,
		.frames = n->frames > have.frames ? n->frames : 0,
		.stacks = n->stacks > have.stacks ? n->stacks : 0,
		.samples = n->samples > have.samples ? n->samples : 0 });
}

#define TRY(x) do { if ((err = (x))) goto out; } while (0)
#define BAD() do { err = -EBADMSG; goto out; } while (0)

/*
 * The samples of a version 1-4 payload, column by column, into
 * c->samples (profile ids).
 */
/* The pid column (steps from the one before) and the tid column (against the pid) of n rows. */
static int get_pids(struct rd *r, struct pf_sample *s, size_t n)
{
	int64_t pid = 0, d, tid;
	uint64_t v;
	int err;

	for (size_t i = 0; i < n; i++) {
		TRY(get_u(r, &v));
		pid += unzigzag(v);
		if (pid < 0 || pid > UINT32_MAX)
			BAD();
		s[i].pid = (uint32_t)pid;
	}
	for (size_t i = 0; i < n; i++) {
		TRY(get_u(r, &v));
		d = unzigzag(v);
		if (d < -(int64_t)UINT32_MAX || d > (int64_t)UINT32_MAX)
			BAD();
		tid = (int64_t)s[i].pid + d;
		if (tid < 0 || tid > UINT32_MAX)
			BAD();
		s[i].tid = (uint32_t)tid;
	}
	err = 0;
out:
	return err;
}

/*
 * The stack column (steps from the previous row's stack; plain ids in
 * version 1) and the value column of n rows whose kinds are read:
 * off-CPU and run-queue values are in units of unit ns.
 */
static int get_stacks_values(struct codec *c, struct rd *r, struct pf_sample *s, size_t n, size_t nk,
			     bool steps, uint64_t unit)
{
	int64_t k = 0;
	uint64_t v;
	int err;

	for (size_t i = 0; i < n; i++) {
		TRY(get_u(r, &v));
		k = steps ? k + unzigzag(v) : (int64_t)v;
		if (k < 0 || (uint64_t)k >= nk)
			BAD();
		s[i].stack = c->kmap[k];
	}
	for (size_t i = 0; i < n; i++) {
		TRY(get_u(r, &s[i].value));
		if (s[i].kind != PF_KIND_CPU) {
			if (s[i].value > UINT64_MAX / unit)
				BAD();
			s[i].value *= unit;
		}
	}
	err = 0;
out:
	return err;
}

static int samples_v4(struct codec *c, struct rd *r, int version, size_t nstr, size_t nk, size_t *nsamples)
{
	size_t ns;
	int err;

	TRY(get_count(r, 8, &ns));
	uint64_t unit = 1;
	if (version >= 4) {
		TRY(get_u(r, &unit));
		if (unit < 1 || unit > CODEC_MAX_VALUE_UNIT)
			BAD();
	}
	TRY(grow((void **)&c->samples, &c->samples_cap, ns, sizeof(*c->samples)));
	struct pf_sample *s = c->samples;
	for (size_t i = 0; i < ns; i++) {
		TRY(get_u32(r, &s[i].kind));
		if (s[i].kind >= PF_KIND_MAX)
			BAD();
	}
	TRY(get_stacks_values(c, r, s, ns, nk, version >= 2, unit));
	TRY(get_pids(r, s, ns));
	for (size_t i = 0; i < ns; i++)
		TRY(get_str(c, r, nstr, &s[i].comm));
	for (size_t i = 0; i < ns; i++)
		TRY(get_str(c, r, nstr, &s[i].thread));
	for (size_t i = 0; i < ns; i++)
		TRY(get_str(c, r, nstr, &s[i].cgroup));
	*nsamples = ns;
	err = 0;
out:
	return err;
}

/*
 * The samples of a version 5 payload: the thread table, the entries of
 * each thread by kind, then stacks and values of every entry, into
 * c->samples (profile ids) in the order written.
 */
static int samples_v5(struct codec *c, struct rd *r, size_t nstr, size_t nk, size_t *nsamples)
{
	size_t ns, nt;
	uint64_t v, unit;
	int err;

	/* Each entry takes a stack and a value, each thread five columns and a count by kind. */
	TRY(get_count(r, 2, &ns));
	TRY(get_u(r, &unit));
	if (unit < 1 || unit > CODEC_MAX_VALUE_UNIT)
		BAD();
	TRY(get_count(r, 5 + PF_KIND_MAX, &nt));
	TRY(grow((void **)&c->thr, &c->thr_cap, nt ? nt : 1, sizeof(*c->thr)));
	TRY(grow((void **)&c->tcnt, &c->tcnt_cap, nt * PF_KIND_MAX + 1, sizeof(uint32_t)));
	TRY(grow((void **)&c->samples, &c->samples_cap, ns, sizeof(*c->samples)));
	struct pf_sample *t = c->thr, *s = c->samples;
	TRY(get_pids(r, t, nt));
	for (size_t i = 0; i < nt; i++)
		TRY(get_str(c, r, nstr, &t[i].comm));
	for (size_t i = 0; i < nt; i++) {
		TRY(get_u(r, &v));
		if (v > nstr)
			BAD();
		t[i].thread = v ? c->smap[v - 1] : t[i].comm;
	}
	for (size_t i = 0; i < nt; i++)
		TRY(get_str(c, r, nstr, &t[i].cgroup));
	/* Counts sum to ns exactly; a thread has at least one entry. */
	size_t sum = 0;
	for (size_t i = 0; i < nt * PF_KIND_MAX; i++) {
		TRY(get_u32(r, &c->tcnt[i]));
		if (c->tcnt[i] > ns - sum)
			BAD();
		sum += c->tcnt[i];
	}
	if (sum != ns)
		BAD();
	for (size_t i = 0; i < nt; i++) {
		uint64_t n = 0;
		for (uint32_t k = 0; k < PF_KIND_MAX; k++)
			n += c->tcnt[k * nt + i];
		if (!n)
			BAD();
	}
	size_t j = 0;
	for (uint32_t k = 0; k < PF_KIND_MAX; k++)
		for (size_t i = 0; i < nt; i++)
			for (uint32_t n = c->tcnt[k * nt + i]; n; n--) {
				s[j] = t[i];
				s[j++].kind = k;
			}
	TRY(get_stacks_values(c, r, s, ns, nk, true, unit));
	*nsamples = ns;
	err = 0;
out:
	return err;
}

/*
 * Decodes a payload of either version. Version 1 and version 2 key records
 * start from an empty profile; a version 2 delta record must extend exactly
 * the chain this codec decoded into p last (-ESTALE otherwise).
 */
/* Merging into what p holds (codec__decode_merge): how, and which samples. */
struct merge_into {
	unsigned pf_flags;
	profile_keep_fn keep;
	void *arg;
};

static int decode(struct codec *c, const uint8_t *buf, size_t len, uint64_t rec_ref, unsigned flags,
		  const struct merge_into *mi, struct profile *p)
{
	struct rd r = { buf, buf + len };
	uint64_t v, key_ref = 0, bs = 0, bf = 0, bk = 0;
	size_t nstr, nc, nf, nk, ns;
	int err, version;

	TRY(get_u(&r, &v));
	if (v < 1 || v > CODEC_PAYLOAD_VERSION)
		BAD();
	version = (int)v;
	if (version >= 2) {
		TRY(get_u(&r, &key_ref));
		TRY(get_u(&r, &bs));
		TRY(get_u(&r, &bf));
		TRY(get_u(&r, &bk));
		if (!key_ref && (bs || bf || bk))
			BAD();
	}
	if (key_ref) {
		/*
		 * Extends the chain we hold, or nothing. Decoded alone, p must be as
		 * we left it; merged, p only grows, so the ids we mapped to stay.
		 */
		if (key_ref != c->d_key || c->d_prof != p || bs + 1 != c->d_nstr || bf != c->d_nf ||
		    bk + 1 != c->d_nk ||
		    (!mi && (profile__nstrs(p) != c->d_pstr || profile__nframes(p) != c->d_pf ||
			     profile__nstacks(p) != c->d_pk)))
			return -ESTALE;
		if (!mi)
			profile__reset_samples(p);
	} else if (!mi) {
		profile__reset(p);
	}
	/* From here on a failure leaves the chain unusable. */
	c->d_key = 0;
	bs++;
	bk++;

	TRY(get_count(&r, 1, &nstr));
	TRY(reserve(p, &(struct pf_sizes){ .strs = nstr + 1 }));
	nstr += bs; /* ids 0 ("", implicit) .. bs - 1 are the chain's */
	TRY(grow((void **)&c->smap, &c->smap_cap, nstr, sizeof(uint32_t)));
	c->smap[0] = 0;
	for (size_t i = bs; i < nstr; i++) {
		size_t n;
		TRY(get_count(&r, 1, &n));
		/* A NUL inside would make the C string differ from the stored bytes. */
		if (memchr(r.p, 0, n))
			BAD();
		TRY(profile__intern(p, (const char *)r.p, n, &c->smap[i]));
		r.p += n;
	}

	struct pf_meta m = { 0 };
	uint64_t dur;
	TRY(get_u(&r, &v));
	m.start_ns = unzigzag(v);
	TRY(get_u(&r, &dur));
	m.end_ns = (int64_t)((uint64_t)m.start_ns + dur);
	TRY(get_str(c, &r, nstr, &m.host));
	TRY(get_str(c, &r, nstr, &m.kernel));
	TRY(get_str(c, &r, nstr, &m.event));
	TRY(get_u32(&r, &m.frequency));
	if (mi) {
		struct pf_meta *d = profile__meta(p);
		if (m.start_ns && (!d->start_ns || m.start_ns < d->start_ns))
			d->start_ns = m.start_ns;
		if (m.end_ns > d->end_ns)
			d->end_ns = m.end_ns;
		if (!d->frequency)
			d->frequency = m.frequency;
		if (!d->host)
			d->host = m.host;
		if (!d->kernel)
			d->kernel = m.kernel;
		if (!d->event)
			d->event = m.event;
	} else {
		*profile__meta(p) = m;
	}

	TRY(get_count(&r, 2, &nc));
	for (size_t i = 0; i < nc; i++) {
		uint32_t name;
		TRY(get_str(c, &r, nstr, &name));
		TRY(get_u(&r, &v));
		TRY(profile__counter_add(p, profile__str(p, name), v));
	}

	TRY(get_count(&r, 4, &nf));
	if (nf > UINT32_MAX - bf)
		BAD();
	TRY(reserve(p, &(struct pf_sizes){ .frames = nf }));
	TRY(grow((void **)&c->fmap, &c->fmap_cap, bf + nf, sizeof(uint32_t)));
	/* Columns: hold kind, module and name in the samples scratch until offsets arrive. */
	TRY(grow((void **)&c->samples, &c->samples_cap, nf, sizeof(*c->samples)));
	for (size_t i = 0; i < nf; i++) {
		TRY(get_u32(&r, &c->samples[i].kind));
		if (c->samples[i].kind > 255)
			BAD();
	}
	for (size_t i = 0; i < nf; i++)
		TRY(get_str(c, &r, nstr, &c->samples[i].comm));
	for (size_t i = 0; i < nf; i++)
		TRY(get_str(c, &r, nstr, &c->samples[i].thread));
	uint64_t poff = 0;
	for (size_t i = 0; i < nf; i++) {
		struct pf_frame f = {
			.kind = c->samples[i].kind,
			.module = c->samples[i].comm,
			.name = c->samples[i].thread,
		};
		/* Version 3: steps from the previous frame's offset; before: offsets. */
		TRY(get_u(&r, &f.offset));
		if (version >= 3)
			f.offset = poff + (uint64_t)unzigzag(f.offset);
		poff = f.offset;
		if (mi && (mi->pf_flags & PF_MERGE_BY_FUNCTION) && f.name)
			f.offset = 0;
		if (mi && (mi->pf_flags & PF_MERGE_BY_FUNCTION) && (mi->pf_flags & PF_MERGE_BY_LABEL) &&
		    (f.name || !f.module)) {
			f.module = 0;
			f.offset = 0;
		}
		TRY(profile__frame_add(p, &f, &c->fmap[bf + i]));
	}
	nf += bf;

	TRY(get_count(&r, 2, &nk));
	if (nk > UINT32_MAX - bk)
		BAD();
	TRY(reserve(p, &(struct pf_sizes){ .stacks = nk + 1 }));
	nk += bk; /* stack 0, the empty stack, is implicit; 1 .. bk - 1 are the chain's */
	TRY(grow((void **)&c->kmap, &c->kmap_cap, nk, sizeof(uint32_t)));
	c->kmap[0] = 0;
	size_t nprev = 0;
	for (size_t i = bk; i < nk; i++) {
		size_t nsuf;
		uint64_t shared;
		/* Not a get_count(): shared frames take no bytes of their own. */
		TRY(get_u(&r, &shared));
		if (shared > nprev)
			BAD();
		TRY(get_count(&r, 1, &nsuf));
		size_t n = shared + nsuf;
		if (n > UINT32_MAX)
			BAD();
		TRY(grow((void **)&c->cur, &c->cur_cap, n ? n : 1, sizeof(uint32_t)));
		TRY(grow((void **)&c->prev, &c->prev_cap, n ? n : 1, sizeof(uint32_t)));
		/*
		 * prev holds the stack before in payload ids, cur the same in
		 * profile ids: the shared prefix is in place in both, and only
		 * the frames after it are read (into prev) and mapped (into cur).
		 */
		for (size_t j = shared; j < n; j++) {
			uint64_t f;
			TRY(get_u(&r, &f));
			/* Version 5: steps (see the encoder); before: payload frame ids. */
			if (version >= 5 && j == shared && j < nprev) {
				if (f >= nf)
					BAD();
				f += (uint64_t)c->prev[j] + 1;
			} else if (version >= 5 && j) {
				int64_t d = unzigzag(f);
				if (d < -(int64_t)nf || d > (int64_t)nf)
					BAD();
				f = (uint64_t)((int64_t)c->prev[j - 1] + d);
			}
			if (f >= nf)
				BAD();
			c->prev[j] = (uint32_t)f;
			c->cur[j] = c->fmap[f];
		}
		nprev = n;
		TRY(profile__stack_add(p, c->cur, (uint32_t)n, &c->kmap[i]));
	}
	if (flags & CODEC_TABLES_ONLY)
		goto chain;

	if (version >= 5)
		TRY(samples_v5(c, &r, nstr, nk, &ns));
	else
		TRY(samples_v4(c, &r, version, nstr, nk, &ns));
	struct pf_sample *s = c->samples;
	if (r.p != r.end)
		BAD();
	TRY(reserve(p, &(struct pf_sizes){ .samples = ns }));
	for (size_t i = 0; i < ns; i++) {
		if (mi && (mi->pf_flags & PF_MERGE_BY_NAME))
			s[i].pid = s[i].tid = 0;
		if (mi && mi->keep && !mi->keep(p, &s[i], mi->arg))
			continue;
		if (mi && (mi->pf_flags & PF_MERGE_NO_THREAD))
			s[i].thread = 0;
		if (mi && (mi->pf_flags & PF_MERGE_NO_CGROUP))
			s[i].cgroup = 0;
		TRY(profile__add(p, &s[i]));
	}
chain:
	if (version >= 2 && rec_ref) {
		c->d_key = key_ref ? key_ref : rec_ref;
		c->d_prof = p;
		c->d_nstr = nstr;
		c->d_nf = nf;
		c->d_nk = nk;
		c->d_pstr = profile__nstrs(p);
		c->d_pf = profile__nframes(p);
		c->d_pk = profile__nstacks(p);
	}
	err = 0;
out:
	return err;
}

void codec__chain_forget(struct codec *c)
{
	c->d_key = 0;
}

int codec__decode_chain(struct codec *c, const uint8_t *buf, size_t len, uint64_t rec_ref,
			unsigned flags, struct profile *p)
{
	return decode(c, buf, len, rec_ref, flags, NULL, p);
}

int codec__decode_merge(struct codec *c, const uint8_t *buf, size_t len, uint64_t rec_ref, unsigned flags,
			unsigned pf_flags, profile_keep_fn keep, void *arg, struct profile *p)
{
	struct merge_into mi = { pf_flags, keep, arg };

	return decode(c, buf, len, rec_ref, flags, &mi, p);
}

int codec__decode(struct codec *c, const uint8_t *buf, size_t len, struct profile *p)
{
	int err = decode(c, buf, len, 0, 0, NULL, p);
	return err == -ESTALE ? -EBADMSG : err;
}
