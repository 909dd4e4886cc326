#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup_name.h"
#include "pprof.h"
#include "profile.h"
#include "pyseries.h"
#include "query.h"

static const struct {
	unsigned bit;
	const char *opt, *name;
	int query;
} types[] = {
	{ PYSERIES_CPU, "cpu", "process_cpu", QUERY_CPU },
	{ PYSERIES_OFFCPU, "offcpu", "off_cpu", QUERY_OFFCPU },
	{ PYSERIES_WALL, "wall", "wall", QUERY_WALL },
};
#define NTYPES (sizeof(types) / sizeof(types[0]))

int pyseries__parse_types(const char *list, unsigned *out)
{
	unsigned t = 0;

	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ",");
		size_t k;

		for (k = 0; k < NTYPES; k++)
			if (strlen(types[k].opt) == n && !strncmp(p, types[k].opt, n))
				break;
		if (k == NTYPES)
			return -EINVAL;
		t |= types[k].bit;
		p += n;
		if (*p == ',')
			p++;
	}
	if (!t)
		return -EINVAL;
	*out = t;
	return 0;
}

/* Copies n bytes of s, each byte that starts no valid UTF-8 character as '?'. */
static void copy_utf8(const char *s, size_t n, char *buf, size_t len)
{
	size_t i = 0;

	if (!len)
		return;
	for (; i < n && s[i] && i + 1 < len; i++)
		buf[i] = s[i];
	buf[i] = 0;
	for (size_t k = 0; k < i;) {
		size_t step = 0;

		if ((unsigned char)buf[k] < 0x80) {
			k++;
			continue;
		}
		for (size_t w = 2; w <= 4 && k + w <= i && !step; w++) {
			char c[5] = { 0 };

			memcpy(c, buf + k, w);
			if (pushreq__utf8_valid(c))
				step = w;
		}
		if (!step) {
			buf[k] = '?';
			step = 1;
		}
		k += step;
	}
}

void pyseries__service(const char *cgroup, const char *comm, char *buf, size_t len)
{
	struct cgroup_name cn;

	if (cgroup && *cgroup && !cgroup_name__parse(cgroup, &cn)) {
		if (cn.container[0]) {
			copy_utf8(cn.container, 12, buf, len);
			return;
		}
		if (cn.unit[0]) {
			copy_utf8(cn.unit, strlen(cn.unit), buf, len);
			return;
		}
	}
	if (!comm || !*comm)
		comm = "unknown";
	copy_utf8(comm, comm[0] == '/' ? strlen(comm) : strcspn(comm, "/"), buf, len);
}

/*
 * Services of one window. Every series filters every sample by its service,
 * so the (cgroup, comm) -> service lookup is a small open-addressing table.
 */
struct services {
	struct profile *names; /* service name -> dense id (id 0 is "") */
	uint64_t *keys;        /* cgroup string id << 32 | comm string id, + 1 (0: empty slot) */
	uint32_t *vals;        /* service id */
	size_t cap, n;         /* cap: a power of two */
	unsigned *types;       /* service id -> PYSERIES_* bits present (ids < cap: one per key at most) */
	uint32_t want;         /* the service the keep filter passes */
};

static size_t slot(const struct services *sv, uint64_t key)
{
	size_t i = (size_t)((key * 0x9e3779b97f4a7c15ULL) >> 17) & (sv->cap - 1);

	while (sv->keys[i] && sv->keys[i] != key)
		i = (i + 1) & (sv->cap - 1);
	return i;
}

static int table_grow(struct services *sv)
{
	struct services old = *sv;
	unsigned *types;

	sv->cap = old.cap ? old.cap * 2 : 256;
	sv->keys = calloc(sv->cap, sizeof(*sv->keys));
	sv->vals = calloc(sv->cap, sizeof(*sv->vals));
	types = realloc(old.types, sv->cap * sizeof(*types));
	if (types) {
		memset(types + old.cap, 0, (sv->cap - old.cap) * sizeof(*types));
		sv->types = old.types = types;
	}
	if (!sv->keys || !sv->vals || !types) {
		free(sv->keys);
		free(sv->vals);
		*sv = old;
		return -ENOMEM;
	}
	for (size_t i = 0; i < old.cap; i++) {
		if (old.keys[i]) {
			size_t k = slot(sv, old.keys[i]);

			sv->keys[k] = old.keys[i];
			sv->vals[k] = old.vals[i];
		}
	}
	free(old.keys);
	free(old.vals);
	return 0;
}

static int service_of(struct services *sv, const struct profile *src, const struct pf_sample *s, uint32_t *id)
{
	uint64_t key = ((uint64_t)s->cgroup << 32 | s->comm) + 1;
	char name[256];
	size_t i;
	int err;

	if (sv->cap) {
		i = slot(sv, key);
		if (sv->keys[i]) {
			*id = sv->vals[i];
			return 0;
		}
	}
	if (2 * (sv->n + 1) > sv->cap && (err = table_grow(sv)))
		return err;
	pyseries__service(profile__str(src, s->cgroup), profile__str(src, s->comm), name, sizeof(name));
	i = slot(sv, key);
	err = profile__intern_str(sv->names, name, &sv->vals[i]);
	if (err)
		return err;
	sv->keys[i] = key;
	sv->n++;
	*id = sv->vals[i];
	return 0;
}

static int keep_service(const struct profile *src, const struct pf_sample *s, void *arg)
{
	struct services *sv = arg;
	uint32_t id;

	return !service_of(sv, src, s, &id) && id == sv->want;
}

/* FNV-1a over the parts, two seeds: 128 bits shown as a UUID (version 8, RFC 9562). */
static void series_id(const char *host, int64_t start, const char *service, const char *type,
		      char *buf, size_t len)
{
	uint64_t h[2] = { 0xcbf29ce484222325ULL, 0x84222325cbf29ce4ULL };
	char t[32];
	const char *parts[] = { host, t, service, type };

	snprintf(t, sizeof(t), "%lld", (long long)start);
	for (int k = 0; k < 2; k++)
		for (size_t i = 0; i < 4; i++)
			for (const unsigned char *p = (const unsigned char *)parts[i]; ; p++) {
				h[k] = (h[k] ^ *p) * 0x100000001b3ULL;
				if (!*p)
					break;
			}
	h[0] = (h[0] & ~0xf000ULL) | 0x8000ULL;
	h[1] = (h[1] & ~(3ULL << 62)) | (2ULL << 62);
	snprintf(buf, len, "%08x-%04x-%04x-%04x-%012llx", (unsigned)(h[0] >> 32),
		 (unsigned)(h[0] >> 16) & 0xffff, (unsigned)h[0] & 0xffff, (unsigned)(h[1] >> 48),
		 (unsigned long long)(h[1] & 0xffffffffffffULL));
}

int pyseries__build(const struct profile *window, const struct pyseries_opts *o,
		    struct pushreq *req, size_t *nseries)
{
	const struct pf_meta *m = profile__meta_const(window);
	unsigned want = o->types ? o->types : PYSERIES_ALL;
	struct pushreq_label l[PUSHREQ_MAX_LABELS];
	struct services sv = { 0 };
	struct profile *part = NULL;
	const char *host = profile__str(window, m->host);
	size_t nl = 3, added = 0;
	char *buf = NULL;
	size_t blen = 0;
	int err;

	if (o->nlabels > PUSHREQ_MAX_LABELS - 3)
		return -EINVAL;
	for (size_t i = 0; i < o->nlabels; i++) {
		if (!strcmp(o->labels[i].name, "host"))
			host = o->labels[i].value;
		else
			l[nl++] = o->labels[i];
	}
	if (!*host)
		host = "unknown";
	if ((err = profile__new(&sv.names)))
		goto out;
	for (size_t i = 0; i < profile__nsamples(window); i++) {
		const struct pf_sample *s = profile__sample(window, i);
		uint32_t id;

		err = service_of(&sv, window, s, &id);
		if (err)
			goto out;
		sv.types[id] |= PYSERIES_WALL | (s->kind == PF_KIND_CPU ? PYSERIES_CPU :
						 s->kind == PF_KIND_OFFCPU ? PYSERIES_OFFCPU : 0);
	}
	/*
	 * One service's samples first go into a small profile of their own: the
	 * encoder sizes its tables by the profile's frames, and a window holds
	 * the frames of every service.
	 */
	if ((err = profile__new(&part)))
		goto out;
	for (uint32_t id = 1; id < profile__nstrs(sv.names); id++) {
		const char *service = profile__str(sv.names, id);

		profile__reset(part);
		sv.want = id;
		if ((err = profile__merge(part, window, keep_service, &sv)))
			goto out;
		*profile__meta(part) = *m;
		profile__meta(part)->host = profile__meta(part)->kernel = profile__meta(part)->event = 0;
		for (size_t t = 0; t < NTYPES; t++) {
			struct query q = { .since_ns = INT64_MIN, .until_ns = INT64_MAX, .type = types[t].query };
			/* Plain: the request is compressed as a whole, one deflate stream instead of one per series. */
			struct pprof_opts po = { .plain = 1 };
			char uuid[40];
			FILE *f;

			if (!(want & types[t].bit) || !(sv.types[id] & types[t].bit))
				continue;
			f = open_memstream(&buf, &blen);
			if (!f) {
				err = -ENOMEM;
				goto out;
			}
			err = pprof__write_opts(&q, part, &po, f);
			if (fclose(f) && !err)
				err = -ENOMEM;
			if (err)
				goto out;
			l[0] = (struct pushreq_label){ "__name__", types[t].name };
			l[1] = (struct pushreq_label){ "service_name", service };
			l[2] = (struct pushreq_label){ "host", host };
			series_id(host, m->start_ns, service, types[t].name, uuid, sizeof(uuid));
			err = pushreq__add(req, l, nl, uuid, buf, blen);
			free(buf);
			buf = NULL;
			if (err)
				goto out;
			added++;
		}
	}
out:
	free(buf);
	free(sv.keys);
	free(sv.vals);
	free(sv.types);
	profile__free(sv.names);
	profile__free(part);
	*nseries = added;
	return err;
}
