#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "pbuf.h"
#include "pprof.h"
#include "profile.h"
#include "query.h"

/*
 * The exporter's tables. Keys (function, mapping) are interned as strings in
 * scratch profiles, whose dense ids then index plain arrays: a hash set for free.
 */
struct exp {
	struct profile *strs;   /* the string table, in id order */
	struct profile *fkeys;  /* "kind|module|name" -> function */
	struct profile *mkeys;  /* "kind|module" -> mapping */
	uint32_t *loc_of_frame; /* source frame id -> location id (0: none yet) */
	uint32_t *locs;         /* location id - 1 -> source frame id */
	size_t nlocs;
	uint32_t *map_of_loc;   /* location id - 1 -> mapping id (0: none) */
	struct mrange { uint64_t lo, hi; uint32_t file, build_id; int kernel; } *maps;
	size_t nmaps, maps_cap;
	uint32_t *funcs;        /* function id - 1 -> source frame id */
	size_t nfuncs, funcs_cap;
};

static int str_id(struct exp *e, const char *s, uint64_t *id)
{
	uint32_t v;
	int err = profile__intern_str(e->strs, s, &v);

	*id = v;
	return err;
}

static int grow(void **ptr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap = *cap ? *cap : 64;
	void *n;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	n = realloc(*ptr, ncap * elem);
	if (!n)
		return -ENOMEM;
	*ptr = n;
	*cap = ncap;
	return 0;
}

static int mapping_file(const struct profile *src, const struct pf_frame *f, char *buf, size_t len)
{
	const char *mod = profile__str(src, f->module);

	/* Nothing to say about an unnamed frame of no known file: no mapping. A .py file is not one either. */
	if ((!*mod && !f->name) || f->kind == PF_FRAME_PY)
		return 0;
	if (f->kind == PF_FRAME_KERNEL) {
		/* The symbolizer names vmlinux "[kernel.kallsyms]" and modules bare. */
		if (*mod == '[')
			snprintf(buf, len, "%s", mod);
		else if (*mod)
			snprintf(buf, len, "[%s]", mod);
		else
			snprintf(buf, len, "[kernel.kallsyms]");
		return 1;
	}
	if (!*mod)
		return 0;
	snprintf(buf, len, "%s", mod);
	return 1;
}

/* The location of a source frame, created on first use with its mapping and function. */
static int location(struct exp *e, const struct profile *src, uint32_t frame,
		    const struct pprof_opts *o, uint32_t *out)
{
	const struct pf_frame *f = profile__frame(src, frame);
	char file[1024], *key = NULL;
	uint32_t mapping = 0, kid;
	int err;

	if (e->loc_of_frame[frame]) {
		*out = e->loc_of_frame[frame];
		return 0;
	}
	if (mapping_file(src, f, file, sizeof(file))) {
		uint64_t fid;

		if (asprintf(&key, "%u|%s", f->kind, file) < 0)
			return -ENOMEM;
		err = profile__intern_str(e->mkeys, key, &kid);
		free(key);
		if (err)
			return err;
		if (kid > e->nmaps) {
			int kernel = f->kind == PF_FRAME_KERNEL;
			uint64_t bid = 0;
			char hex[129];

			err = grow((void **)&e->maps, &e->maps_cap, kid, sizeof(*e->maps));
			if (!err)
				err = str_id(e, file, &fid);
			if (!err && o && o->build_id && !o->build_id(file, kernel, hex, sizeof(hex), o->arg))
				err = str_id(e, hex, &bid);
			if (err)
				return err;
			e->maps[kid - 1] = (struct mrange){ .lo = UINT64_MAX, .hi = 0, .file = fid,
							    .build_id = bid, .kernel = kernel };
			e->nmaps = kid;
		}
		mapping = kid;
		if (f->offset < e->maps[kid - 1].lo)
			e->maps[kid - 1].lo = f->offset;
		if (f->offset >= e->maps[kid - 1].hi)
			e->maps[kid - 1].hi = f->offset + 1;
	}
	if (f->name) {
		/* One function per name and file: its frames at different offsets share it. */
		if (asprintf(&key, "%u|%s|%s", f->kind, profile__str(src, f->module),
			     profile__str(src, f->name)) < 0)
			return -ENOMEM;
		err = profile__intern_str(e->fkeys, key, &kid);
		free(key);
		if (err)
			return err;
		if (kid > e->nfuncs) {
			err = grow((void **)&e->funcs, &e->funcs_cap, kid, sizeof(*e->funcs));
			if (err)
				return err;
			e->funcs[kid - 1] = frame;
			e->nfuncs = kid;
		}
	}
	e->locs[e->nlocs] = frame;
	e->map_of_loc[e->nlocs] = mapping;
	e->loc_of_frame[frame] = ++e->nlocs;
	*out = e->nlocs;
	return 0;
}

/*
 * User mappings get made-up, disjoint address ranges (index << 40) with
 * file_offset 0, so that address - memory_start is the file offset the
 * frame recorded: what pprof needs to symbolize later. Kernel addresses are
 * the raw instruction pointers and keep their own range.
 */
static uint64_t map_base(const struct exp *e, uint32_t mapping)
{
	const struct mrange *m = &e->maps[mapping - 1];

	return m->kernel ? 0 : (uint64_t)mapping << 40;
}

static int write_gzip(const uint8_t *buf, size_t len, FILE *f)
{
	uint8_t out[65536];
	z_stream z = { 0 };
	int zr, err = 0;

	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	z.next_in = (uint8_t *)buf;
	z.avail_in = len;
	do {
		z.next_out = out;
		z.avail_out = sizeof(out);
		zr = deflate(&z, Z_FINISH);
		if (zr == Z_STREAM_ERROR) {
			err = -EIO;
			break;
		}
		if (fwrite(out, 1, sizeof(out) - z.avail_out, f) != sizeof(out) - z.avail_out) {
			err = -EIO;
			break;
		}
	} while (zr != Z_STREAM_END);
	deflateEnd(&z);
	return err;
}

int pprof__write(const struct query *q, const struct profile *src, FILE *f)
{
	return pprof__write_opts(q, src, NULL, f);
}

int pprof__write_opts(const struct query *q, const struct profile *src,
		      const struct pprof_opts *o, FILE *f)
{
	const struct pf_meta *meta = profile__meta_const(src);
	uint64_t period = meta->frequency ? 1000000000ULL / meta->frequency : 10101010ULL;
	size_t nframes = profile__nframes(src);
	struct exp e = { 0 };
	struct pbuf out = { 0 }, msg = { 0 }, sub = { 0 }, packed = { 0 };
	uint64_t s_samples, s_count, s_type, s_ns, s_cpu, s_pid, s_tid, s_comm, s_thread, s_cgroup;
	const char *type;
	int err = -ENOMEM;

	if (profile__new(&e.strs) || profile__new(&e.fkeys) || profile__new(&e.mkeys))
		goto out;
	e.loc_of_frame = calloc(nframes + 1, sizeof(*e.loc_of_frame));
	e.locs = malloc((nframes + 1) * sizeof(*e.locs));
	e.map_of_loc = malloc((nframes + 1) * sizeof(*e.map_of_loc));
	if (!e.loc_of_frame || !e.locs || !e.map_of_loc)
		goto out;

	switch (q->type) {
	case QUERY_OFFCPU: type = "off_cpu"; break;
	case QUERY_RUNQ: type = "runq"; break;
	case QUERY_WALL: type = "wall"; break;
	default: type = "cpu"; break;
	}
	err = str_id(&e, "samples", &s_samples);
	if (!err) err = str_id(&e, "count", &s_count);
	if (!err) err = str_id(&e, type, &s_type);
	if (!err) err = str_id(&e, "nanoseconds", &s_ns);
	if (!err) err = str_id(&e, "cpu", &s_cpu);
	if (!err) err = str_id(&e, "pid", &s_pid);
	if (!err) err = str_id(&e, "tid", &s_tid);
	if (!err) err = str_id(&e, "comm", &s_comm);
	if (!err) err = str_id(&e, "thread_name", &s_thread);
	if (!err) err = str_id(&e, "cgroup", &s_cgroup);
	if (err)
		goto out;

	/* sample_type (1), and the period (11, 12) */
	if (q->type == QUERY_CPU) {
		pbuf__uint(&msg, 1, s_samples);
		pbuf__uint(&msg, 2, s_count);
		pbuf__msg(&out, 1, &msg);
	}
	pbuf__uint(&msg, 1, s_type);
	pbuf__uint(&msg, 2, s_ns);
	pbuf__msg(&out, 1, &msg);
	pbuf__uint(&msg, 1, s_cpu);
	pbuf__uint(&msg, 2, s_ns);
	pbuf__msg(&out, 11, &msg);
	pbuf__uint(&out, 12, period);
	if (meta->start_ns > 0)
		pbuf__uint(&out, 9, meta->start_ns);
	if (meta->end_ns > meta->start_ns)
		pbuf__uint(&out, 10, meta->end_ns - meta->start_ns);

	/* samples (2) */
	for (size_t i = 0; i < profile__nsamples(src); i++) {
		const struct pf_sample *s = profile__sample(src, i);
		const uint32_t *fr;
		uint32_t n, loc;
		uint64_t v = s->value, id;

		if (!query__keep(src, s, (void *)q) || (o && o->keep && !o->keep(src, s, o->keep_arg)))
			continue;
		fr = profile__stack(src, s->stack, &n);
		for (uint32_t k = n; k-- > 0;) {
			if (fr[k] >= nframes)
				continue;
			if (q->no_kernel && profile__frame(src, fr[k])->kind == PF_FRAME_KERNEL)
				continue;
			err = location(&e, src, fr[k], o, &loc);
			if (err)
				goto out;
			pbuf__varint(&packed, loc);
		}
		if (packed.len)
			pbuf__msg(&msg, 1, &packed);
		if (q->type == QUERY_CPU) {
			pbuf__varint(&packed, v);
			pbuf__varint(&packed, v * period);
		} else {
			pbuf__varint(&packed, s->kind == PF_KIND_CPU ? v * period : v);
		}
		pbuf__msg(&msg, 2, &packed);
		pbuf__uint(&sub, 1, s_pid);
		pbuf__uint(&sub, 3, s->pid);
		pbuf__msg(&msg, 3, &sub);
		pbuf__uint(&sub, 1, s_tid);
		pbuf__uint(&sub, 3, s->tid);
		pbuf__msg(&msg, 3, &sub);
		err = str_id(&e, profile__str(src, s->comm), &id);
		if (err)
			goto out;
		pbuf__uint(&sub, 1, s_comm);
		pbuf__uint(&sub, 2, id);
		pbuf__msg(&msg, 3, &sub);
		if (s->thread) {
			err = str_id(&e, profile__str(src, s->thread), &id);
			if (err)
				goto out;
			pbuf__uint(&sub, 1, s_thread);
			pbuf__uint(&sub, 2, id);
			pbuf__msg(&msg, 3, &sub);
		}
		if (s->cgroup) {
			err = str_id(&e, profile__str(src, s->cgroup), &id);
			if (err)
				goto out;
			pbuf__uint(&sub, 1, s_cgroup);
			pbuf__uint(&sub, 2, id);
			pbuf__msg(&msg, 3, &sub);
		}
		pbuf__msg(&out, 2, &msg);
	}

	/* mappings (3) */
	for (uint32_t m = 1; m <= e.nmaps; m++) {
		const struct mrange *r = &e.maps[m - 1];
		uint64_t base = map_base(&e, m);

		pbuf__uint(&msg, 1, m);
		pbuf__uint(&msg, 2, base + (r->kernel ? r->lo : 0));
		pbuf__uint(&msg, 3, base + r->hi);
		pbuf__uint(&msg, 4, r->kernel ? r->lo : 0);
		pbuf__uint(&msg, 5, r->file);
		pbuf__uint(&msg, 6, r->build_id);
		pbuf__uint(&msg, 7, 1); /* has_functions: symbolized on the host already */
		pbuf__msg(&out, 3, &msg);
	}
	/* locations (4) and their lines */
	for (size_t l = 0; l < e.nlocs; l++) {
		const struct pf_frame *fr = profile__frame(src, e.locs[l]);
		uint32_t m = e.map_of_loc[l];

		pbuf__uint(&msg, 1, l + 1);
		pbuf__uint(&msg, 2, m);
		/* A Python frame's offset holds lines, no address. */
		pbuf__uint(&msg, 3, fr->kind == PF_FRAME_PY ? 0 : (m ? map_base(&e, m) : 0) + fr->offset);
		if (fr->name) {
			char *key = NULL;
			uint32_t fid;

			if (asprintf(&key, "%u|%s|%s", fr->kind, profile__str(src, fr->module),
				     profile__str(src, fr->name)) < 0) {
				err = -ENOMEM;
				goto out;
			}
			err = profile__intern_str(e.fkeys, key, &fid);
			free(key);
			if (err)
				goto out;
			pbuf__uint(&sub, 1, fid);
			/* Line.line: the line being run, where the frame knows it. */
			if (fr->kind == PF_FRAME_PY && PF_PY_LINE(fr->offset))
				pbuf__uint(&sub, 2, PF_PY_LINE(fr->offset));
			pbuf__msg(&msg, 4, &sub);
		}
		pbuf__msg(&out, 4, &msg);
	}
	/* functions (5) */
	for (size_t i = 0; i < e.nfuncs; i++) {
		const struct pf_frame *fr = profile__frame(src, e.funcs[i]);
		uint64_t name, file = 0;
		char mf[1024];

		err = str_id(&e, profile__str(src, fr->name), &name);
		if (!err && fr->kind == PF_FRAME_PY)
			err = str_id(&e, profile__str(src, fr->module), &file);
		else if (!err && mapping_file(src, fr, mf, sizeof(mf)))
			err = str_id(&e, mf, &file);
		if (err)
			goto out;
		pbuf__uint(&msg, 1, i + 1);
		pbuf__uint(&msg, 2, name);
		pbuf__uint(&msg, 3, name);
		pbuf__uint(&msg, 4, file);
		if (fr->kind == PF_FRAME_PY)
			pbuf__uint(&msg, 5, PF_PY_FIRST(fr->offset)); /* start_line */
		pbuf__msg(&out, 5, &msg);
	}
	/* string_table (6), complete only now */
	for (size_t i = 0; i < profile__nstrs(e.strs); i++) {
		const char *s = profile__str(e.strs, i);

		pbuf__len(&out, 6, s, strlen(s));
	}
	if (q->type == QUERY_CPU)
		pbuf__uint(&out, 14, s_cpu); /* default_sample_type: cpu time */
	err = out.err ? out.err : msg.err ? msg.err : sub.err ? sub.err : packed.err;
	if (!err)
		err = o && o->plain ? (fwrite(out.b, 1, out.len, f) == out.len ? 0 : -EIO)
				    : write_gzip(out.b, out.len, f);
out:
	pbuf__free(&out);
	pbuf__free(&msg);
	pbuf__free(&sub);
	pbuf__free(&packed);
	free(e.loc_of_frame);
	free(e.locs);
	free(e.map_of_loc);
	free(e.maps);
	free(e.funcs);
	profile__free(e.strs);
	profile__free(e.fkeys);
	profile__free(e.mkeys);
	return err;
}
