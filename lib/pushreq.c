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
	struct pbuf out, series, sub;
	size_t nseries;
	uint8_t *gz;
	size_t gz_cap;
	z_stream z;
	int z_level; /* 0: no stream yet */
};

int pushreq__new(struct pushreq **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void pushreq__free(struct pushreq *r)
{
	if (!r)
		return;
	pbuf__free(&r->out);
	pbuf__free(&r->series);
	pbuf__free(&r->sub);
	if (r->z_level)
		deflateEnd(&r->z);
	free(r->gz);
	free(r);
}

void pushreq__reset(struct pushreq *r)
{
	r->out.len = r->series.len = r->sub.len = 0;
	r->nseries = 0;
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

	if (!n || n > PUSHREQ_MAX_LABELS)
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
	pbuf__msg(&r->out, F_REQ_SERIES, &r->series);
	if (r->out.err)
		return r->out.err;
	r->nseries++;
	return 0;
}

size_t pushreq__nseries(const struct pushreq *r)
{
	return r->nseries;
}

const uint8_t *pushreq__data(const struct pushreq *r, size_t *len)
{
	*len = r->out.len;
	return r->out.b;
}

int pushreq__gzip(struct pushreq *r, int level, const uint8_t **data, size_t *len)
{
	size_t need;

	if (r->out.err)
		return r->out.err;
	/* One stream, reset per request: its 256 KiB of state are allocated once. */
	if (r->z_level != level) {
		if (r->z_level)
			deflateEnd(&r->z);
		r->z_level = 0;
		memset(&r->z, 0, sizeof(r->z));
		if (deflateInit2(&r->z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
			return -ENOMEM;
		r->z_level = level;
	} else if (deflateReset(&r->z) != Z_OK) {
		return -EIO;
	}
	need = deflateBound(&r->z, r->out.len);
	if (need > r->gz_cap) {
		uint8_t *n = realloc(r->gz, need);

		if (!n)
			return -ENOMEM;
		r->gz = n;
		r->gz_cap = need;
	}
	r->z.next_in = r->out.b;
	r->z.avail_in = r->out.len;
	r->z.next_out = r->gz;
	r->z.avail_out = r->gz_cap;
	if (deflate(&r->z, Z_FINISH) != Z_STREAM_END)
		return -EIO;
	*data = r->gz;
	*len = r->gz_cap - r->z.avail_out;
	return 0;
}
