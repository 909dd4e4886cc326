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

/* Services of one window: a string id (in names) per sample's cgroup and comm. */
struct services {
	struct profile *names; /* service name -> dense id (id 0 is "") */
	struct profile *keys;  /* "cgroup id/comm id" -> dense id */
	uint32_t *of_key;      /* key id -> service id */
	size_t cap;
	unsigned *types;       /* service id -> PYSERIES_* bits present */
	size_t types_cap;
	uint32_t want;         /* the service the keep filter passes */
};

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t n = *cap ? *cap : 64;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	q = realloc(*p, n * elem);
	if (!q)
		return -ENOMEM;
	memset((char *)q + *cap * elem, 0, (n - *cap) * elem);
	*p = q;
	*cap = n;
	return 0;
}

static int service_of(struct services *sv, const struct profile *src, const struct pf_sample *s, uint32_t *id)
{
	char key[32], name[256];
	uint32_t k;
	int err;

	snprintf(key, sizeof(key), "%u/%u", s->cgroup, s->comm);
	err = profile__intern_str(sv->keys, key, &k);
	if (!err)
		err = grow((void **)&sv->of_key, &sv->cap, k + 1, sizeof(*sv->of_key));
	if (err)
		return err;
	if (!sv->of_key[k]) {
		pyseries__service(profile__str(src, s->cgroup), profile__str(src, s->comm), name, sizeof(name));
		err = profile__intern_str(sv->names, name, &sv->of_key[k]);
		if (err)
			return err;
	}
	*id = sv->of_key[k];
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
	if ((err = profile__new(&sv.names)) || (err = profile__new(&sv.keys)))
		goto out;
	for (size_t i = 0; i < profile__nsamples(window); i++) {
		const struct pf_sample *s = profile__sample(window, i);
		uint32_t id;

		err = service_of(&sv, window, s, &id);
		if (!err)
			err = grow((void **)&sv.types, &sv.types_cap, id + 1, sizeof(*sv.types));
		if (err)
			goto out;
		sv.types[id] |= PYSERIES_WALL | (s->kind == PF_KIND_CPU ? PYSERIES_CPU :
						 s->kind == PF_KIND_OFFCPU ? PYSERIES_OFFCPU : 0);
	}
	for (uint32_t id = 1; id < profile__nstrs(sv.names); id++) {
		const char *service = profile__str(sv.names, id);

		for (size_t t = 0; t < NTYPES; t++) {
			struct query q = { .since_ns = INT64_MIN, .until_ns = INT64_MAX, .type = types[t].query };
			struct pprof_opts po = { .keep = keep_service, .keep_arg = &sv };
			char uuid[40];
			FILE *f;

			if (!(want & types[t].bit) || !(sv.types[id] & types[t].bit))
				continue;
			sv.want = id;
			f = open_memstream(&buf, &blen);
			if (!f) {
				err = -ENOMEM;
				goto out;
			}
			err = pprof__write_opts(&q, window, &po, f);
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
	free(sv.of_key);
	free(sv.types);
	profile__free(sv.names);
	profile__free(sv.keys);
	*nseries = added;
	return err;
}
