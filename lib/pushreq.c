#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "pbuf.h"
#include "pushreq.h"

/*
 * Field numbers (push.v1 and types.v1):
 *   PushRequest      { repeated RawProfileSeries series = 1; }
 *   RawProfileSeries { repeated LabelPair labels = 1; repeated RawSample samples = 2; }
 *   LabelPair        { string name = 1; string value = 2; }
 *   RawSample        { bytes raw_profile = 1; string ID = 2; }
 */
enum {
	F_REQ_SERIES = 1,
	F_SERIES_LABELS = 1,
	F_SERIES_SAMPLES = 2,
	F_LABEL_NAME = 1,
	F_LABEL_VALUE = 2,
	F_SAMPLE_RAW = 1,
	F_SAMPLE_ID = 2,
};

struct pushreq {
	struct pbuf out, series, sub; /* out: the plain request, or the gzip stream's output */
	size_t nseries;
	z_stream z;
	int level;    /* 0: plain */
	int finished; /* gzip: Z_FINISH done */
};

int pushreq__new(struct pushreq **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

int pushreq__new_gzip(int level, struct pushreq **out)
{
	struct pushreq *r;

	if (level < 1 || level > 9)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	/* One stream, reset per request: its 256 KiB of state are allocated once. */
	if (deflateInit2(&r->z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(r);
		return -ENOMEM;
	}
	r->level = level;
	*out = r;
	return 0;
}

void pushreq__free(struct pushreq *r)
{
	if (!r)
		return;
	pbuf__free(&r->out);
	pbuf__free(&r->series);
	pbuf__free(&r->sub);
	if (r->level)
		deflateEnd(&r->z);
	free(r);
}

void pushreq__reset(struct pushreq *r)
{
	r->out.len = r->series.len = r->sub.len = 0;
	r->nseries = 0;
	r->finished = 0;
	if (r->level)
		deflateReset(&r->z);
}

/* Feeds n bytes (or, with flush Z_FINISH, the end) through the stream into out. */
static int deflate_into(struct pushreq *r, const uint8_t *d, size_t n, int flush)
{
	int zr;

	r->z.next_in = (uint8_t *)d;
	r->z.avail_in = n;
	do {
		size_t room = deflateBound(&r->z, r->z.avail_in) + 64;

		pbuf__reserve(&r->out, room);
		if (r->out.err)
			return r->out.err;
		r->z.next_out = r->out.b + r->out.len;
		r->z.avail_out = r->out.cap - r->out.len;
		zr = deflate(&r->z, flush);
		r->out.len = r->out.cap - r->z.avail_out;
		if (zr == Z_STREAM_ERROR)
			return -EIO;
	} while (r->z.avail_in || (flush == Z_FINISH && zr != Z_STREAM_END));
	return 0;
}

int pushreq__name_valid(const char *name)
{
	size_t n = strlen(name);

	if (!n || n > PUSHREQ_MAX_NAME || (name[0] >= '0' && name[0] <= '9'))
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
			return 0;
	}
	return 1;
}

int pushreq__utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		unsigned c = *p, n;
		uint32_t cp;

		if (c < 0x80) {
			p++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			n = 1, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			n = 2, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			n = 3, cp = c & 0x07;
		else
			return 0;
		for (unsigned i = 1; i <= n; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (p[i] & 0x3f);
		}
		/* Overlong forms, surrogates and code points past U+10FFFF. */
		if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		p += n + 1;
	}
	return 1;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct pushreq_label *)a)->name, ((const struct pushreq_label *)b)->name);
}

int pushreq__add(struct pushreq *r, const struct pushreq_label *labels, size_t n,
		 const char *id, const void *profile, size_t len)
{
	struct pushreq_label sorted[PUSHREQ_MAX_LABELS];

	if (!n || n > PUSHREQ_MAX_LABELS || r->finished)
		return -EINVAL;
	memcpy(sorted, labels, n * sizeof(*labels));
	qsort(sorted, n, sizeof(*sorted), by_name);
	for (size_t i = 0; i < n; i++) {
		if (!pushreq__name_valid(sorted[i].name) || !pushreq__utf8_valid(sorted[i].value) ||
		    strlen(sorted[i].value) > PUSHREQ_MAX_VALUE || (i && !strcmp(sorted[i - 1].name, sorted[i].name)))
			return -EINVAL;
	}
	r->series.len = r->sub.len = 0;
	for (size_t i = 0; i < n; i++) {
		pbuf__len(&r->sub, F_LABEL_NAME, sorted[i].name, strlen(sorted[i].name));
		if (*sorted[i].value) /* proto3: an empty string is left out */
			pbuf__len(&r->sub, F_LABEL_VALUE, sorted[i].value, strlen(sorted[i].value));
		pbuf__msg(&r->series, F_SERIES_LABELS, &r->sub);
	}
	pbuf__len(&r->sub, F_SAMPLE_RAW, profile, len);
	if (id && *id)
		pbuf__len(&r->sub, F_SAMPLE_ID, id, strlen(id));
	pbuf__msg(&r->series, F_SERIES_SAMPLES, &r->sub);
	if (r->level) {
		struct pbuf one = { 0 };
		int err;

		/* The field's tag and length, then the series itself through the stream. */
		pbuf__varint(&one, (uint64_t)F_REQ_SERIES << 3 | 2);
		pbuf__varint(&one, r->series.len);
		err = one.err ? one.err : r->series.err ? r->series.err :
		      deflate_into(r, one.b, one.len, Z_NO_FLUSH);
		if (!err)
			err = deflate_into(r, r->series.b, r->series.len, Z_NO_FLUSH);
		pbuf__free(&one);
		r->series.len = 0;
		if (err)
			return err;
	} else {
		pbuf__msg(&r->out, F_REQ_SERIES, &r->series);
		if (r->out.err)
			return r->out.err;
	}
	r->nseries++;
	return 0;
}

size_t pushreq__nseries(const struct pushreq *r)
{
	return r->nseries;
}

int pushreq__body(struct pushreq *r, const uint8_t **data, size_t *len)
{
	int err;

	if (r->level && !r->finished) {
		if ((err = deflate_into(r, NULL, 0, Z_FINISH)))
			return err;
		r->finished = 1;
	}
	if (r->out.err)
		return r->out.err;
	*data = r->out.b;
	*len = r->out.len;
	return 0;
}
