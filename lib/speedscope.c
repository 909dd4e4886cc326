#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fold.h"
#include "profile.h"
#include "query.h"
#include "speedscope.h"

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

struct order {
	size_t i;
	uint64_t v;
};

static int order_cmp(const void *a, const void *b)
{
	const struct order *x = a, *y = b;

	if (x->v != y->v)
		return x->v > y->v ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/*
 * Frame indexes: labels interned in a scratch profile; speedscope's index is
 * the string id - 1 (id 0 is "", which no label is).
 */
static int frame_index(struct profile *labels, const char *label, uint32_t *idx)
{
	int err = profile__intern_str(labels, *label ? label : "[unknown]", idx);

	*idx -= 1;
	return err;
}

int speedscope__write(const struct query *q, const struct profile *c, const char *name, FILE *f)
{
	size_t n = profile__nsamples(c), no = 0;
	struct order *ord = calloc(n ? n : 1, sizeof(*ord));
	struct profile *labels = NULL;
	uint32_t *fmap = NULL, idx;
	uint64_t total = 0;
	char label[1024];
	int err = -ENOMEM;

	fmap = malloc((profile__nframes(c) + 1) * sizeof(*fmap));
	if (!ord || !fmap || profile__new(&labels))
		goto out;
	for (size_t i = 0; i < profile__nframes(c); i++) {
		fold__frame_label(c, i, label, sizeof(label));
		err = frame_index(labels, label, &fmap[i]);
		if (err)
			goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const struct pf_sample *s = profile__sample(c, i);
		uint64_t v = fold__printed_value(q, s->value);

		if (!v)
			continue;
		ord[no].i = i;
		ord[no++].v = v;
		total += v;
		err = frame_index(labels, profile__str(c, s->comm), &idx);
		if (!err && q->threads)
			err = frame_index(labels, profile__str(c, s->thread), &idx);
		if (err)
			goto out;
	}
	qsort(ord, no, sizeof(*ord), order_cmp);

	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"exporter\":\"profctl\",\"name\":", f);
	json_str(f, name);
	fputs(",\"activeProfileIndex\":0,\"shared\":{\"frames\":[", f);
	for (size_t i = 1; i < profile__nstrs(labels); i++) {
		fputs(i > 1 ? ",{\"name\":" : "{\"name\":", f);
		json_str(f, profile__str(labels, i));
		fputc('}', f);
	}
	fputs("]},\"profiles\":[{\"type\":\"sampled\",\"name\":", f);
	json_str(f, name);
	fprintf(f, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%" PRIu64 ",\"samples\":[",
		q->type == QUERY_CPU ? "none" : "microseconds", total);
	for (size_t k = 0; k < no; k++) {
		const struct pf_sample *s = profile__sample(c, ord[k].i);
		const uint32_t *fr;
		uint32_t nfr;

		/* Interned above already: these lookups cannot fail or grow. */
		frame_index(labels, profile__str(c, s->comm), &idx);
		fprintf(f, "%s[%u", k ? "," : "", idx);
		if (q->threads) {
			frame_index(labels, profile__str(c, s->thread), &idx);
			fprintf(f, ",%u", idx);
		}
		fr = profile__stack(c, s->stack, &nfr);
		for (uint32_t j = 0; j < nfr; j++)
			fprintf(f, ",%u", fmap[fr[j]]);
		fputc(']', f);
	}
	fputs("],\"weights\":[", f);
	for (size_t k = 0; k < no; k++)
		fprintf(f, "%s%" PRIu64, k ? "," : "", ord[k].v);
	fputs("]}]}\n", f);
	err = ferror(f) ? -EIO : 0;
out:
	free(ord);
	free(fmap);
	profile__free(labels);
	return err;
}
