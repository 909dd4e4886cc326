/*
 * Every export decoded back and compared with folded output: pprof (own
 * protobuf reader, gunzip), speedscope JSON, the flame graph SVG's embedded
 * tree; top and diff against the folded lines. The same decoders serve the
 * integration tests as a driver:
 *   test_views --pprof-to-folded FILE [--threads] | --speedscope-to-folded FILE
 *            | --svg-to-folded FILE | --write-store DIR
 */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <zlib.h>

#include "diff.h"
#include "flamegraph.h"
#include "fold.h"
#include "pprof.h"
#include "profile.h"
#include "query.h"
#include "speedscope.h"
#include "store.h"
#include "t.h"
#include "top.h"

/* ---- folded lines: text -> value ---- */

struct lines {
	struct profile *keys; /* line i is string id i + 1 */
	uint64_t *v;
	size_t n, cap;
	uint64_t total;
};

static void lines_init(struct lines *l)
{
	memset(l, 0, sizeof(*l));
	if (profile__new(&l->keys))
		abort();
}

static void lines_free(struct lines *l)
{
	profile__free(l->keys);
	free(l->v);
}

static void lines_add(struct lines *l, const char *text, uint64_t v)
{
	uint32_t id;

	if (profile__intern_str(l->keys, text, &id))
		abort();
	if (id > l->n) {
		if (id > l->cap) {
			l->cap = l->cap ? l->cap * 2 : 256;
			l->v = realloc(l->v, l->cap * sizeof(*l->v));
			if (!l->v)
				abort();
		}
		l->v[id - 1] = 0;
		l->n = id;
	}
	l->v[id - 1] += v;
	l->total += v;
}

static void lines_parse(struct lines *l, char *text)
{
	for (char *s = text, *nl; s && *s; s = nl) {
		char *sp;

		nl = strchr(s, '\n');
		if (nl)
			*nl++ = 0;
		sp = strrchr(s, ' ');
		if (!sp)
			continue;
		*sp = 0;
		lines_add(l, s, strtoull(sp + 1, NULL, 10));
	}
}

static int lines_equal(const struct lines *a, const struct lines *b, const char *what)
{
	size_t nz = 0;

	if (a->total != b->total) {
		fprintf(stderr, "%s: total %" PRIu64 ", folded %" PRIu64 "\n", what, a->total, b->total);
		return 0;
	}
	for (size_t i = 0; i < b->n; i++) {
		const char *k = profile__str(b->keys, i + 1);
		uint32_t id;

		if (!b->v[i])
			continue;
		nz++;
		if (profile__intern_str(a->keys, k, &id) || id > a->n || a->v[id - 1] != b->v[i]) {
			fprintf(stderr, "%s: line '%s': %" PRIu64 " in folded, %" PRIu64 " decoded\n", what, k,
				b->v[i], id && id <= a->n ? a->v[id - 1] : 0);
			return 0;
		}
	}
	for (size_t i = 0; i < a->n; i++)
		nz -= a->v[i] != 0;
	if (nz) {
		fprintf(stderr, "%s: decoded has lines folded has not\n", what);
		return 0;
	}
	return 1;
}

static void lines_print(const struct lines *l, FILE *f)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i])
			fprintf(f, "%s %" PRIu64 "\n", profile__str(l->keys, i + 1), l->v[i]);
}

static void sanitize(char *s)
{
	for (; *s; s++)
		if (*s == ';' || *s == '\n')
			*s = ':';
}

/* ---- pprof ---- */

struct pp_loc { uint64_t id, mapping, address, function; int has_line; };
struct pp_map { uint64_t id, start, limit, offset, file, build_id; };
struct pp_fn { uint64_t id, name, system_name, file; };
struct pp_label { uint64_t key, str, num; };
struct pp_sample {
	uint64_t locs[300]; size_t nlocs;
	int64_t values[4]; size_t nvalues;
	struct pp_label labels[8]; size_t nlabels;
};
struct pp {
	const char **strs; size_t nstrs;
	uint64_t types[4][2]; size_t ntypes;
	uint64_t period_type[2];
	int64_t period, time_nanos, duration;
	struct pp_sample *samples; size_t nsamples;
	struct pp_loc *locs; size_t nlocs;
	struct pp_map *maps; size_t nmaps;
	struct pp_fn *fns; size_t nfns;
	uint8_t *raw;
};

struct rd { const uint8_t *p, *end; int bad; };

static uint64_t rd_varint(struct rd *r)
{
	uint64_t v = 0;

	for (int s = 0; s < 64; s += 7) {
		if (r->p >= r->end) {
			r->bad = 1;
			return 0;
		}
		v |= (uint64_t)(*r->p & 0x7f) << s;
		if (!(*r->p++ & 0x80))
			return v;
	}
	r->bad = 1;
	return 0;
}

/* Next field: its number, and either a varint or a sub-reader over its bytes. */
static int rd_field(struct rd *r, unsigned *field, uint64_t *v, struct rd *sub)
{
	uint64_t key, len;

	if (r->p >= r->end || r->bad)
		return 0;
	key = rd_varint(r);
	*field = key >> 3;
	switch (key & 7) {
	case 0:
		*v = rd_varint(r);
		sub->p = sub->end = NULL;
		break;
	case 2:
		len = rd_varint(r);
		if (len > (uint64_t)(r->end - r->p)) {
			r->bad = 1;
			return 0;
		}
		sub->p = r->p;
		sub->end = r->p + len;
		sub->bad = 0;
		r->p += len;
		*v = len;
		break;
	default:
		r->bad = 1; /* the exporter writes only varints and length-delimited fields */
		return 0;
	}
	return !r->bad;
}

static void *grow_arr(void *p, size_t n, size_t elem)
{
	if ((n & (n - 1)) == 0) {
		p = realloc(p, (n ? n * 2 : 1) * elem);
		if (!p)
			abort();
	}
	return p;
}

static int gunzip(const uint8_t *in, size_t len, uint8_t **out, size_t *olen)
{
	z_stream z = { 0 };
	size_t cap = len * 4 + 1024;
	int zr;

	*out = malloc(cap);
	if (inflateInit2(&z, 15 + 16) != Z_OK)
		return -1;
	z.next_in = (uint8_t *)in;
	z.avail_in = len;
	do {
		if (z.total_out == cap) {
			cap *= 2;
			*out = realloc(*out, cap);
		}
		z.next_out = *out + z.total_out;
		z.avail_out = cap - z.total_out;
		zr = inflate(&z, Z_NO_FLUSH);
	} while (zr == Z_OK);
	*olen = z.total_out;
	inflateEnd(&z);
	return zr == Z_STREAM_END ? 0 : -1;
}

static int pp_decode(const uint8_t *gz, size_t gzlen, struct pp *pp)
{
	struct rd r, s, t, u;
	size_t len;
	unsigned f, g, h;
	uint64_t v, w, x;

	memset(pp, 0, sizeof(*pp));
	if (gzlen < 2 || gz[0] != 0x1f || gz[1] != 0x8b || gunzip(gz, gzlen, &pp->raw, &len))
		return -1;
	r.p = pp->raw;
	r.end = pp->raw + len;
	r.bad = 0;
	while (rd_field(&r, &f, &v, &s)) {
		switch (f) {
		case 1: /* sample_type */
		case 11: /* period_type */ {
			uint64_t vt[2] = { 0, 0 };

			while (rd_field(&s, &g, &w, &t))
				if (g == 1 || g == 2)
					vt[g - 1] = w;
			if (f == 11) {
				memcpy(pp->period_type, vt, sizeof(vt));
			} else if (pp->ntypes < 4) {
				memcpy(pp->types[pp->ntypes++], vt, sizeof(vt));
			}
			break;
		}
		case 2: {
			struct pp_sample *sm;

			pp->samples = grow_arr(pp->samples, pp->nsamples, sizeof(*pp->samples));
			sm = &pp->samples[pp->nsamples++];
			memset(sm, 0, sizeof(*sm));
			while (rd_field(&s, &g, &w, &t)) {
				if (g == 1 && t.p) {
					while (t.p < t.end && sm->nlocs < 300)
						sm->locs[sm->nlocs++] = rd_varint(&t);
				} else if (g == 2 && t.p) {
					while (t.p < t.end && sm->nvalues < 4)
						sm->values[sm->nvalues++] = rd_varint(&t);
				} else if (g == 3 && sm->nlabels < 8) {
					struct pp_label *lb = &sm->labels[sm->nlabels++];

					memset(lb, 0, sizeof(*lb));
					while (rd_field(&t, &h, &x, &u)) {
						if (h == 1) lb->key = x;
						if (h == 2) lb->str = x;
						if (h == 3) lb->num = x;
					}
				}
			}
			break;
		}
		case 3: {
			struct pp_map *m;

			pp->maps = grow_arr(pp->maps, pp->nmaps, sizeof(*pp->maps));
			m = &pp->maps[pp->nmaps++];
			memset(m, 0, sizeof(*m));
			while (rd_field(&s, &g, &w, &t)) {
				if (g == 1) m->id = w;
				if (g == 2) m->start = w;
				if (g == 3) m->limit = w;
				if (g == 4) m->offset = w;
				if (g == 5) m->file = w;
				if (g == 6) m->build_id = w;
			}
			break;
		}
		case 4: {
			struct pp_loc *l;

			pp->locs = grow_arr(pp->locs, pp->nlocs, sizeof(*pp->locs));
			l = &pp->locs[pp->nlocs++];
			memset(l, 0, sizeof(*l));
			while (rd_field(&s, &g, &w, &t)) {
				if (g == 1) l->id = w;
				if (g == 2) l->mapping = w;
				if (g == 3) l->address = w;
				if (g == 4) {
					l->has_line++;
					while (rd_field(&t, &h, &x, &u))
						if (h == 1)
							l->function = x;
				}
			}
			break;
		}
		case 5: {
			struct pp_fn *fn;

			pp->fns = grow_arr(pp->fns, pp->nfns, sizeof(*pp->fns));
			fn = &pp->fns[pp->nfns++];
			memset(fn, 0, sizeof(*fn));
			while (rd_field(&s, &g, &w, &t)) {
				if (g == 1) fn->id = w;
				if (g == 2) fn->name = w;
				if (g == 3) fn->system_name = w;
				if (g == 4) fn->file = w;
			}
			break;
		}
		case 6: {
			char *str = strndup((const char *)s.p, s.end - s.p);

			pp->strs = grow_arr(pp->strs, pp->nstrs, sizeof(*pp->strs));
			pp->strs[pp->nstrs++] = str;
			break;
		}
		case 9: pp->time_nanos = v; break;
		case 10: pp->duration = v; break;
		case 12: pp->period = v; break;
		default: break;
		}
	}
	return r.bad ? -1 : 0;
}

static void pp_free(struct pp *pp)
{
	for (size_t i = 0; i < pp->nstrs; i++)
		free((void *)pp->strs[i]);
	free(pp->strs);
	free(pp->samples);
	free(pp->locs);
	free(pp->maps);
	free(pp->fns);
	free(pp->raw);
}

static const char *pp_str(const struct pp *pp, uint64_t i)
{
	return i < pp->nstrs ? pp->strs[i] : "<bad string index>";
}

/* Every id must be its index + 1 (Parca rejects anything else). */
static int pp_ids_dense(const struct pp *pp)
{
	for (size_t i = 0; i < pp->nlocs; i++)
		if (pp->locs[i].id != i + 1 || pp->locs[i].mapping > pp->nmaps ||
		    pp->locs[i].function > pp->nfns)
			return 0;
	for (size_t i = 0; i < pp->nmaps; i++)
		if (pp->maps[i].id != i + 1)
			return 0;
	for (size_t i = 0; i < pp->nfns; i++)
		if (pp->fns[i].id != i + 1)
			return 0;
	return pp->nstrs > 0 && !*pp->strs[0];
}

static const char *pp_label_str(const struct pp *pp, const struct pp_sample *s, const char *key)
{
	for (size_t i = 0; i < s->nlabels; i++)
		if (!strcmp(pp_str(pp, s->labels[i].key), key))
			return pp_str(pp, s->labels[i].str);
	return NULL;
}

/* The folded line of each sample, as `dump` prints it; value index vi. */
static void pp_to_lines(const struct pp *pp, int threads, size_t vi, struct lines *out)
{
	for (size_t i = 0; i < pp->nsamples; i++) {
		const struct pp_sample *s = &pp->samples[i];
		const char *comm = pp_label_str(pp, s, "comm");
		const char *thread = pp_label_str(pp, s, "thread_name");
		char *text = NULL, label[1100];
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);

		snprintf(label, sizeof(label), "%s", comm && *comm ? comm : "[unknown]");
		sanitize(label);
		fputs(label, f);
		if (threads) {
			snprintf(label, sizeof(label), "%s", thread && *thread ? thread : "[unknown]");
			sanitize(label);
			fprintf(f, ";%s", label);
		}
		for (size_t k = s->nlocs; k-- > 0;) {
			const struct pp_loc *l = s->locs[k] && s->locs[k] <= pp->nlocs ? &pp->locs[s->locs[k] - 1] : NULL;
			const struct pp_map *m = l && l->mapping ? &pp->maps[l->mapping - 1] : NULL;
			const char *file = m ? pp_str(pp, m->file) : "";
			int kernel = *file == '[' && strcmp(file, "[vdso]");

			if (l && l->function) {
				snprintf(label, sizeof(label), "%s%s", pp_str(pp, pp->fns[l->function - 1].name),
					 kernel ? "_[k]" : "");
			} else if (m) {
				const char *base = strrchr(file, '/');

				snprintf(label, sizeof(label), "[%s+0x%" PRIx64 "]%s", base ? base + 1 : file,
					 l->address - m->start + m->offset, kernel ? "_[k]" : "");
			} else {
				snprintf(label, sizeof(label), "[unknown]");
			}
			sanitize(label);
			fprintf(f, ";%s", label);
		}
		fclose(f);
		lines_add(out, text, vi < s->nvalues ? s->values[vi] : 0);
		free(text);
	}
}

/* ---- speedscope: just enough JSON for the exporter's shape ---- */

static const char *json_string(const char *p, char *out, size_t len)
{
	size_t n = 0;

	if (*p++ != '"')
		return NULL;
	while (*p && *p != '"') {
		char c = *p++;

		if (c == '\\') {
			c = *p++;
			if (c == 'u') {
				c = (char)strtol((char[]){ p[0], p[1], p[2], p[3], 0 }, NULL, 16);
				p += 4;
			}
		}
		if (n + 1 < len)
			out[n++] = c;
	}
	out[n] = 0;
	return *p == '"' ? p + 1 : NULL;
}

static int ss_to_lines(const char *json, struct lines *out)
{
	const char *p = strstr(json, "\"frames\":["), *w;
	char **names = NULL, buf[1100];
	size_t nn = 0;
	int ret = -1;

	if (!p)
		return -1;
	for (p += 10; *p == '{' || *p == ','; ) {
		if (*p == ',')
			p++;
		if (strncmp(p, "{\"name\":", 8))
			break;
		p = json_string(p + 8, buf, sizeof(buf));
		if (!p || *p != '}')
			goto out;
		p++;
		sanitize(buf);
		names = grow_arr(names, nn, sizeof(*names));
		names[nn++] = strdup(buf);
	}
	p = strstr(p, "\"samples\":[");
	w = strstr(json, "\"weights\":[");
	if (!p || !w)
		goto out;
	p += 11;
	w += 11;
	while (*p == '[') {
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);
		char *end;

		p++;
		for (int first = 1; *p != ']'; first = 0) {
			unsigned long i = strtoul(p, &end, 10);

			if (end == p || i >= nn) {
				fclose(f);
				free(text);
				goto out;
			}
			fprintf(f, "%s%s", first ? "" : ";", names[i]);
			p = end;
			if (*p == ',')
				p++;
		}
		p++;
		if (*p == ',')
			p++;
		fclose(f);
		lines_add(out, text, strtoull(w, &end, 10));
		free(text);
		w = end + (*end == ',');
	}
	ret = 0;
out:
	for (size_t i = 0; i < nn; i++)
		free(names[i]);
	free(names);
	return ret;
}

/* ---- flame graph SVG: the embedded tree (names N, nodes F) back to folded lines ---- */

static int svg_to_lines(const char *svg, struct lines *out, uint64_t *root_base)
{
	const char *p = strstr(svg, "var DIFF = "), *q;
	char **names = NULL, buf[1100];
	size_t nn = 0, nf = 0, stride;
	double *F = NULL;
	int ret = -1;
	char *path[1100];

	if (!p)
		return -1;
	stride = p[11] == '1' ? 7 : 6;
	p = strstr(p, "var N = [");
	if (!p)
		return -1;
	for (p += 9; *p == '"';) {
		p = json_string(p, buf, sizeof(buf));
		if (!p)
			goto out;
		names = grow_arr(names, nn, sizeof(*names));
		names[nn++] = strdup(buf);
		if (*p == ',')
			p++;
	}
	q = strstr(p, "var F = [");
	if (!q)
		goto out;
	for (q += 9; *q && *q != ']';) {
		char *end;
		double d = strtod(q, &end);

		if (end == q)
			goto out;
		F = grow_arr(F, nf, sizeof(*F));
		F[nf++] = d;
		q = end;
		while (*q == ',' || *q == '\n')
			q++;
	}
	if (root_base)
		*root_base = stride == 7 && nf ? (uint64_t)(F[6] + 0.5) : 0;
	/* Preorder: a node's path is its ancestors' by depth; self = value - children's. */
	for (size_t i = 0; i < nf / stride; i++) {
		double *nd = &F[i * stride];
		size_t depth = nd[2];
		uint64_t self = nd[4];

		if (depth >= 1100 || nd[0] >= nn)
			goto out;
		path[depth] = names[(size_t)nd[0]];
		for (size_t j = i + 1; j < (size_t)nd[5]; j++)
			if ((size_t)F[j * stride + 2] == depth + 1)
				self -= F[j * stride + 4];
		if (self && depth) {
			char *text = NULL;
			size_t len = 0;
			FILE *f = open_memstream(&text, &len);

			for (size_t d = 1; d <= depth; d++) {
				snprintf(buf, sizeof(buf), "%s", path[d]);
				sanitize(buf);
				fprintf(f, "%s%s", d > 1 ? ";" : "", buf);
			}
			fclose(f);
			lines_add(out, text, self);
			free(text);
		}
	}
	ret = 0;
out:
	for (size_t i = 0; i < nn; i++)
		free(names[i]);
	free(names);
	free(F);
	return ret;
}

/* ---- a synthetic whole-host profile ---- */

static uint32_t frame(struct profile *p, const char *name, const char *mod, uint64_t off, int kind)
{
	struct pf_frame f = { .offset = off, .kind = kind };
	uint32_t id;

	profile__intern_str(p, name, &f.name);
	profile__intern_str(p, mod, &f.module);
	CHECK(profile__frame_add(p, &f, &id) == 0);
	return id;
}

static uint32_t rng_state = 12345;

static uint32_t rnd(uint32_t n)
{
	rng_state = rng_state * 1103515245 + 12345;
	return (rng_state >> 8) % n;
}

/* ~1,500 distinct stacks over several processes and threads, every frame kind. */
static struct profile *synthetic(int nstacks)
{
	static const char *const comms[] = { "app", "db", "odd;name", "" };
	static const char *const threads[] = { "main", "worker-1", "worker-2" };
	struct profile *p;
	uint32_t fr[40], id;
	char name[64];

	CHECK(profile__new(&p) == 0);
	profile__meta(p)->start_ns = 1767225600LL * 1000000000;
	profile__meta(p)->end_ns = profile__meta(p)->start_ns + 10LL * 1000000000;
	profile__meta(p)->frequency = 99;
	profile__intern_str(p, "testhost", &id);
	profile__meta(p)->host = id;
	for (int i = 0; i < nstacks; i++) {
		struct pf_sample s = { .pid = 100 + rnd(5), .kind = PF_KIND_CPU, .value = 1 + rnd(50) };
		uint32_t n = 0, depth = 2 + rnd(12);

		s.tid = s.pid + rnd(3);
		profile__intern_str(p, comms[s.pid % 4], &s.comm);
		profile__intern_str(p, threads[s.tid % 3], &s.thread);
		fr[n++] = frame(p, "main", "/usr/bin/app", 0x1000, PF_FRAME_USER);
		while (n < depth) {
			switch (rnd(8)) {
			case 0:
				fr[n++] = frame(p, "", "/usr/lib/libz.so.1", 0x200 + rnd(64) * 16, PF_FRAME_USER);
				break;
			case 1:
				fr[n++] = frame(p, "", "", 0x7f0000000000ULL + rnd(8), PF_FRAME_USER);
				break;
			case 2:
				snprintf(name, sizeof(name), "LJ:trace_%u", rnd(4));
				fr[n++] = frame(p, name, "/tmp/perf-101.map", 0x7e0000001000ULL + rnd(4) * 64, PF_FRAME_JIT);
				break;
			default:
				snprintf(name, sizeof(name), "fn_%u", rnd(40));
				fr[n++] = frame(p, name, "/usr/bin/app", 0x2000 + rnd(40) * 32, PF_FRAME_USER);
			}
		}
		if (rnd(3) == 0) {
			fr[n++] = frame(p, "entry_SYSCALL_64", "[kernel.kallsyms]", 0xffffffff81000000ULL, PF_FRAME_KERNEL);
			fr[n++] = rnd(2) ? frame(p, "ext4_file_write_iter", "ext4", 0xffffffffc0100000ULL, PF_FRAME_KERNEL)
					 : frame(p, "", "", 0xffffffff81234567ULL, PF_FRAME_KERNEL);
		}
		CHECK(profile__stack_add(p, fr, n, &s.stack) == 0);
		CHECK(profile__add(p, &s) == 0);
		if (rnd(4) == 0) {
			s.kind = PF_KIND_OFFCPU;
			s.value = 1000 * (1 + rnd(5000));
			CHECK(profile__add(p, &s) == 0);
		}
	}
	return p;
}

static void folded_lines(const struct query *q, const struct profile *src, struct profile **c, struct lines *l)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CHECK(profile__new(c) == 0);
	CHECK(fold__collapse(q, src, *c) == 0);
	CHECK(fold__write(q, *c, f) == 0);
	fclose(f);
	lines_init(l);
	lines_parse(l, buf);
	free(buf);
}

static char *render(int (*fn)(const struct query *, const struct profile *, FILE *), const struct query *q,
		    const struct profile *p, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	CHECK(fn(q, p, f) == 0);
	fclose(f);
	return buf;
}

static int ss_write(const struct query *q, const struct profile *c, FILE *f)
{
	return speedscope__write(q, c, "synthetic", f);
}

static int svg_write(const struct query *q, const struct profile *c, FILE *f)
{
	struct flamegraph *fg;
	int err = flamegraph__new(&fg);

	if (!err)
		err = flamegraph__add(fg, q, c, 0);
	if (!err)
		err = flamegraph__write(fg, &(struct fg_opts){ .title = "t", .subtitle = "s & <x>" }, f);
	flamegraph__free(fg);
	return err;
}

/* A stand-in for the export-time lookup: a build-id derived from the name, none for JIT maps. */
static int fake_build_id(const char *file, int kernel, char *hex, size_t len, void *arg)
{
	uint32_t h = 2166136261u;

	(*(int *)arg)++;
	if (strstr(file, "perf-"))
		return -ENOENT;
	for (const char *c = file; *c; c++)
		h = (h ^ (uint8_t)*c) * 16777619u;
	snprintf(hex, len, "%s%08x", kernel ? "4b" : "55", h);
	return 0;
}

static int bid_calls;

static int pp_write(const struct query *q, const struct profile *p, FILE *f)
{
	return pprof__write_opts(q, p, &(struct pprof_opts){ .build_id = fake_build_id,
				 .arg = &bid_calls }, f);
}

static void test_pprof(const struct profile *p, struct query *q, const char *what)
{
	struct profile *c;
	struct lines want, got;
	struct pp pp;
	size_t len;
	char *gz;

	folded_lines(q, p, &c, &want);
	bid_calls = 0;
	gz = render(pp_write, q, p, &len);
	CHECK(pp_decode((uint8_t *)gz, len, &pp) == 0);
	CHECK(pp_ids_dense(&pp));
	/* Asked once per mapping; each mapping carries its own file's answer. */
	CHECK_EQ_INT(bid_calls, pp.nmaps);
	for (size_t i = 0; i < pp.nmaps; i++) {
		const char *file = pp_str(&pp, pp.maps[i].file);
		char want[32] = "";

		CHECK(strncmp(file, "[[", 2) != 0);
		if (fake_build_id(file, file[0] == '[', want, sizeof(want), &bid_calls))
			want[0] = 0;
		CHECK_EQ_STR(pp_str(&pp, pp.maps[i].build_id), want);
	}
	lines_init(&got);
	if (q->type == QUERY_CPU) {
		CHECK_EQ_INT(pp.ntypes, 2);
		CHECK_EQ_STR(pp_str(&pp, pp.types[0][0]), "samples");
		CHECK_EQ_STR(pp_str(&pp, pp.types[0][1]), "count");
		CHECK_EQ_STR(pp_str(&pp, pp.types[1][0]), "cpu");
		CHECK_EQ_STR(pp_str(&pp, pp.types[1][1]), "nanoseconds");
		for (size_t i = 0; i < pp.nsamples; i++)
			CHECK(pp.samples[i].values[1] == pp.samples[i].values[0] * pp.period);
		pp_to_lines(&pp, q->threads, 0, &got);
		CHECK(lines_equal(&got, &want, what));
	} else {
		struct lines ns;
		uint64_t ns_total = 0;

		CHECK_EQ_INT(pp.ntypes, 1);
		CHECK_EQ_STR(pp_str(&pp, pp.types[0][0]), q->type == QUERY_OFFCPU ? "off_cpu" : "wall");
		CHECK_EQ_STR(pp_str(&pp, pp.types[0][1]), "nanoseconds");
		lines_init(&ns);
		pp_to_lines(&pp, q->threads, 0, &ns);
		/* Folded prints microseconds per line: compare lines rounded the same way. */
		for (size_t i = 0; i < ns.n; i++) {
			lines_add(&got, profile__str(ns.keys, i + 1), (ns.v[i] + 500) / 1000);
			ns_total += ns.v[i];
		}
		CHECK(lines_equal(&got, &want, what));
		lines_free(&ns);
		CHECK(ns_total > 0);
	}
	CHECK_EQ_STR(pp_str(&pp, pp.period_type[0]), "cpu");
	CHECK_EQ_STR(pp_str(&pp, pp.period_type[1]), "nanoseconds");
	CHECK_EQ_INT(pp.period, 1000000000 / 99);
	CHECK_EQ_INT(pp.time_nanos, profile__meta_const(p)->start_ns);
	CHECK_EQ_INT(pp.duration, 10000000000LL);
	CHECK(pp.nsamples > 0 && pp_label_str(&pp, &pp.samples[0], "comm") != NULL);
	CHECK(pp.nsamples > 0 && pp_label_str(&pp, &pp.samples[0], "thread_name") != NULL);
	{
		int has_pid = 0;

		for (size_t i = 0; pp.nsamples && i < pp.samples[0].nlabels; i++)
			has_pid |= !strcmp(pp_str(&pp, pp.samples[0].labels[i].key), "pid") &&
				   pp.samples[0].labels[i].num >= 100;
		CHECK(has_pid);
	}
	if (q->no_kernel)
		for (size_t i = 0; i < pp.nmaps; i++)
			CHECK(pp_str(&pp, pp.maps[i].file)[0] != '[');
	pp_free(&pp);
	free(gz);
	lines_free(&got);
	lines_free(&want);
	profile__free(c);
}

static void test_text_formats(const struct profile *p, struct query *q)
{
	struct profile *c;
	struct lines want, got;
	size_t len;
	char *out;

	folded_lines(q, p, &c, &want);
	out = render(ss_write, q, c, &len);
	lines_init(&got);
	CHECK(ss_to_lines(out, &got) == 0);
	CHECK(lines_equal(&got, &want, "speedscope"));
	lines_free(&got);
	free(out);

	out = render(svg_write, q, c, &len);
	lines_init(&got);
	CHECK(svg_to_lines(out, &got, NULL) == 0);
	CHECK(lines_equal(&got, &want, "svg"));
	CHECK(strstr(out, "s &amp; &lt;x&gt;") != NULL);
	CHECK(strstr(out, "http://") == strstr(out, "http://www.w3.org/2000/svg")); /* nothing external */
	CHECK(strstr(out, "<image") == NULL && strstr(out, "@import") == NULL && strstr(out, "href") == NULL);
	lines_free(&got);
	free(out);
	lines_free(&want);
	profile__free(c);
}

static void test_top(const struct profile *p)
{
	struct query q = { 0 };
	struct profile *c;
	struct lines want;
	struct top *t;
	uint64_t self = 0, main_total = 0, fn3 = 0;

	folded_lines(&q, p, &c, &want);
	CHECK(top__new(&q, c, &t) == 0);
	CHECK_EQ_INT(top__grand_total(t), want.total);
	top__sort(t, TOP_BY_SELF);
	for (size_t i = 0; i < top__count(t); i++) {
		const struct top_entry *e = top__entry(t, i);

		self += e->self;
		CHECK(e->self <= e->total);
		if (i)
			CHECK(top__entry(t, i - 1)->self >= e->self);
		if (!strcmp(e->name, "main"))
			main_total = e->total;
		if (!strcmp(e->name, "fn_3"))
			fn3 = e->total;
	}
	CHECK_EQ_INT(self, want.total); /* every stack has a leaf */
	CHECK_EQ_INT(main_total, want.total);
	/* total share: lines with fn_3 anywhere, counted once per line even when recursive */
	{
		uint64_t w = 0;

		for (size_t i = 0; i < want.n; i++) {
			const char *k = profile__str(want.keys, i + 1);
			const char *hit = strstr(k, ";fn_3;");

			if (hit || (strlen(k) > 5 && !strcmp(k + strlen(k) - 5, ";fn_3")))
				w += want.v[i];
		}
		CHECK(w > 0);
		CHECK_EQ_INT(fn3, w);
	}
	top__sort(t, TOP_BY_TOTAL);
	CHECK_EQ_STR(top__entry(t, 0)->name, "main");
	top__free(t);
	lines_free(&want);
	profile__free(c);
}

/*
 * Heap a view holds while it writes: a stream that samples the bytes in
 * use at each write. dump and diff print tens of megabytes over a day; what
 * they hold beside their profiles must not grow with the text (it did, one
 * string per line, 171 MB for a day's diff).
 */
struct heap_watch {
	size_t base, peak, written;
};

static size_t heap_in_use(void)
{
	struct mallinfo2 m = mallinfo2();

	return m.uordblks + m.hblkhd;
}

static ssize_t watch_write(void *arg, const char *buf, size_t n)
{
	struct heap_watch *w = arg;
	size_t h = heap_in_use();

	(void)buf;
	if (h > w->peak)
		w->peak = h;
	w->written += n;
	return (ssize_t)n;
}

static FILE *watch_open(struct heap_watch *w)
{
	static char vbuf[4096];
	FILE *f = fopencookie(w, "w", (cookie_io_functions_t){ .write = watch_write });

	/* The stream's own buffer allocated now, counted in base: a fixed one. */
	if (f)
		setvbuf(f, vbuf, _IOFBF, sizeof(vbuf));
	w->base = w->peak = heap_in_use();
	w->written = 0;
	return f;
}

/* Deep stacks of long names: 2,000 lines of about 3 KB each. */
static struct profile *long_lines(uint32_t salt)
{
	struct profile *p;
	uint32_t fr[40], id;
	char name[96];

	CHECK(profile__new(&p) == 0);
	profile__intern_str(p, "app", &id);
	for (int i = 0; i < 2000; i++) {
		struct pf_sample s = { .pid = 1, .tid = 1, .comm = id, .thread = id, .kind = PF_KIND_CPU,
				       .value = 1 + (uint64_t)((i * 7 + salt) % 13) };

		for (int k = 0; k < 40; k++) {
			snprintf(name, sizeof(name), "namespace::component::function_with_a_long_name_%d_%d", k,
				 (i >> (k % 11)) % 9);
			fr[k] = frame(p, name, "/usr/bin/app", 0, PF_FRAME_USER);
		}
		CHECK(profile__stack_add(p, fr, 40, &s.stack) == 0);
		CHECK(profile__add(p, &s) == 0);
	}
	return p;
}

static void test_write_memory(void)
{
	struct query q = { 0 };
	struct profile *a = long_lines(0), *b = long_lines(5), *ca, *cb;
	struct heap_watch w;
	struct diff *d = NULL;
	size_t before;
	FILE *f;

	CHECK(profile__new(&ca) == 0 && profile__new(&cb) == 0);
	CHECK(fold__collapse(&q, a, ca) == 0 && fold__collapse(&q, b, cb) == 0);
	f = watch_open(&w);
	CHECK(f && fold__write(&q, ca, f) == 0);
	fclose(f);
	fprintf(stderr, "fold__write: %zu bytes written, %zu held while writing, the profile holds %zu\n", w.written,
		w.peak - w.base, profile__mem_bytes(ca));
	CHECK(w.written > 4000000);
	CHECK(w.peak - w.base < w.written / 2);
	/* Its lines are the profile's samples and stacks, labelled: no copy of the stacks. */
	CHECK(w.peak - w.base < profile__mem_bytes(ca) / 4);

	before = heap_in_use();
	CHECK(diff__new(&q, ca, cb, &d) == 0);
	f = watch_open(&w);
	CHECK(f && diff__write(d, f) == 0);
	fclose(f);
	fprintf(stderr, "diff: %zu bytes written, %zu held by the diff, %zu more while writing\n", w.written,
		w.base - before, w.peak - w.base);
	CHECK(w.written > 4000000);
	CHECK(w.base - before < w.written / 2);
	CHECK(w.peak - w.base < w.written / 2);
	diff__free(d);
	profile__free(a);
	profile__free(b);
	profile__free(ca);
	profile__free(cb);
}

static void test_diff(void)
{
	struct profile *a = synthetic(300), *b = synthetic(400), *ca, *cb;
	struct query q = { 0 };
	struct lines la, lb;
	struct diff *d;
	uint64_t sb = 0, sv = 0, ta, tb;
	size_t only_base = 0;

	folded_lines(&q, a, &ca, &la);
	folded_lines(&q, b, &cb, &lb);
	CHECK(diff__new(&q, ca, cb, &d) == 0);
	diff__totals(d, &ta, &tb);
	CHECK_EQ_INT(ta, la.total);
	CHECK_EQ_INT(tb, lb.total);
	for (size_t i = 0; i < diff__count(d); i++) {
		const struct diff_line *l = diff__line(d, i);
		double exact = (double)l->raw_base * tb / ta;

		sb += l->base;
		sv += l->value;
		CHECK(l->base + 1 > exact && l->base < exact + 1); /* rounding moves less than one */
		only_base += !l->value && l->base;
	}
	CHECK_EQ_INT(sb, tb); /* normalized to equal totals, exactly */
	CHECK_EQ_INT(sv, tb);
	CHECK(only_base > 0);
	diff__free(d);
	/* The differential SVG: widths from after, before scaled to the same total. */
	{
		struct flamegraph *fg;
		struct lines got;
		uint64_t root_base = 0;
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		CHECK(flamegraph__new(&fg) == 0);
		CHECK(flamegraph__add(fg, &q, cb, 0) == 0);
		CHECK(flamegraph__add(fg, &q, ca, 1) == 0);
		CHECK(flamegraph__write(fg, &(struct fg_opts){ .title = "d" }, f) == 0);
		fclose(f);
		lines_init(&got);
		CHECK(svg_to_lines(buf, &got, &root_base) == 0);
		CHECK(lines_equal(&got, &lb, "diff svg"));
		CHECK_EQ_INT(root_base, lb.total);
		lines_free(&got);
		flamegraph__free(fg);
		free(buf);
	}
	CHECK(diff__new(&q, ca, cb, &d) == 0 && diff__write(d, stdout != NULL ? fopen("/dev/null", "we") : NULL) == 0);
	diff__free(d);
	lines_free(&la);
	lines_free(&lb);
	profile__free(a);
	profile__free(b);
	profile__free(ca);
	profile__free(cb);
}

/* ---- driver modes ---- */

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rbe");
	char *buf = NULL;
	size_t cap = 0, n;

	*len = 0;
	if (!f)
		return NULL;
	do {
		cap = cap ? cap * 2 : 65536;
		buf = realloc(buf, cap + 1);
		n = fread(buf + *len, 1, cap - *len, f);
		*len += n;
	} while (*len == cap);
	fclose(f);
	buf[*len] = 0;
	return buf;
}

/*
 * Three windows at known times for the --since/--until tests, with 1, 10 and
 * 100 samples so a total tells which windows a query read:
 *   [T0, T0+10s) "w1", [T0+10s, T0+20s) "w2", gap, [T0+40s, T0+50s) "w3";
 * T0 = 2026-01-01T00:00:00Z.
 */
static int write_store(const char *dir)
{
	static const struct { int64_t start; const char *fn; uint64_t n; } w[] = {
		{ 0, "w1", 1 }, { 10, "w2", 10 }, { 40, "w3", 100 },
	};
	struct store_opts o = { .dir = dir, .writer = 1 };
	struct store *st;
	int err = store__open(&o, &st);

	if (err)
		return 1;
	for (size_t i = 0; i < 3 && !err; i++) {
		struct profile *p;
		struct pf_sample s = { .pid = 42, .tid = 42, .kind = PF_KIND_CPU, .value = w[i].n };
		uint32_t fr[2], id;

		if (profile__new(&p))
			return 1;
		profile__meta(p)->start_ns = (1767225600LL + w[i].start) * 1000000000;
		profile__meta(p)->end_ns = profile__meta(p)->start_ns + 10LL * 1000000000;
		profile__meta(p)->frequency = 99;
		profile__intern_str(p, "synthetic", &id);
		profile__meta(p)->host = id;
		profile__intern_str(p, "app", &s.comm);
		profile__intern_str(p, "app", &s.thread);
		fr[0] = frame(p, "main", "/usr/bin/app", 0x10, PF_FRAME_USER);
		fr[1] = frame(p, w[i].fn, "/usr/bin/app", 0x20 + i, PF_FRAME_USER);
		profile__stack_add(p, fr, 2, &s.stack);
		err = profile__add(p, &s);
		if (!err)
			err = store__append(st, p);
		profile__free(p);
	}
	store__close(st);
	return err ? 1 : 0;
}

/*
 * For tests/bench/views_bench.sh: NWINDOWS consecutive 10 s windows from
 * T0 = 2026-01-01T00:00:00Z, each with NSTACKS new synthetic stacks.
 */
static int write_bench_store(const char *dir, const char *nw, const char *ns)
{
	struct store_opts o = { .dir = dir, .writer = 1 };
	char *e1, *e2;
	long w = strtol(nw, &e1, 10), n = strtol(ns, &e2, 10);
	struct store *st;
	int err;

	if (*e1 || *e2 || w <= 0 || n <= 0 || w > 100000 || n > 1000000) {
		fprintf(stderr, "test_views: --write-bench-store DIR NWINDOWS NSTACKS: bad numbers\n");
		return 2;
	}
	err = store__open(&o, &st);
	if (err) {
		fprintf(stderr, "test_views: cannot open %s: %s\n", dir, strerror(-err));
		return 1;
	}
	for (long i = 0; i < w && !err; i++) {
		struct profile *p = synthetic(n);

		profile__meta(p)->start_ns += i * 10LL * 1000000000;
		profile__meta(p)->end_ns += i * 10LL * 1000000000;
		err = store__append(st, p);
		profile__free(p);
	}
	store__close(st);
	return err ? 1 : 0;
}

static int driver(int argc, char **argv)
{
	struct lines l;
	size_t len;
	char *buf;
	int ret = 1;

	if (!strcmp(argv[1], "--write-store") && argc == 3)
		return write_store(argv[2]);
	if (!strcmp(argv[1], "--write-bench-store") && argc == 5)
		return write_bench_store(argv[2], argv[3], argv[4]);
	if (argc < 3 || !(buf = slurp(argv[2], &len))) {
		fprintf(stderr, "usage: test_views --pprof-to-folded|--speedscope-to-folded|--svg-to-folded FILE "
			"[--threads] | --write-store DIR | --write-bench-store DIR NWINDOWS NSTACKS\n");
		return 2;
	}
	lines_init(&l);
	if (!strcmp(argv[1], "--pprof-to-folded")) {
		struct pp pp;

		if (!pp_decode((uint8_t *)buf, len, &pp) && pp_ids_dense(&pp)) {
			pp_to_lines(&pp, argc > 3 && !strcmp(argv[3], "--threads"), 0, &l);
			ret = 0;
		}
		pp_free(&pp);
	} else if (!strcmp(argv[1], "--speedscope-to-folded")) {
		ret = ss_to_lines(buf, &l) ? 1 : 0;
	} else if (!strcmp(argv[1], "--svg-to-folded")) {
		ret = svg_to_lines(buf, &l, NULL) ? 1 : 0;
	}
	if (!ret)
		lines_print(&l, stdout);
	else
		fprintf(stderr, "test_views: cannot decode %s\n", argv[2]);
	lines_free(&l);
	free(buf);
	return ret;
}

int main(int argc, char **argv)
{
	struct profile *p;
	struct query q = { 0 };

	if (argc > 1)
		return driver(argc, argv);
	p = synthetic(1500);
	CHECK(profile__nstacks(p) > 1000);

	test_pprof(p, &q, "pprof cpu");
	q.threads = 1;
	test_pprof(p, &q, "pprof cpu --threads");
	q.threads = 0;
	q.no_kernel = 1;
	test_pprof(p, &q, "pprof cpu --no-kernel");
	q.no_kernel = 0;
	q.type = QUERY_OFFCPU;
	test_pprof(p, &q, "pprof offcpu");
	q.type = QUERY_WALL;
	test_pprof(p, &q, "pprof wall");
	q.type = QUERY_CPU;
	q.comm = "db";
	test_pprof(p, &q, "pprof cpu --comm db");
	q.comm = NULL;

	test_text_formats(p, &q);
	q.threads = 1;
	test_text_formats(p, &q);
	q.threads = 0;
	q.type = QUERY_OFFCPU;
	test_text_formats(p, &q);
	q.type = QUERY_CPU;

	test_top(p);
	test_diff();
	test_write_memory();
	profile__free(p);
	T_DONE();
}
