/*
 * The exporter's lib modules: the PushRequest bytes read back field by field,
 * the series a window makes (services, types, labels, ids), the state file
 * (round trip, refusals), what an HTTP status means, the backoff's bounds.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "exporter.h"
#include "store.h"
#include "profile.h"
#include "pushreq.h"
#include "pyseries.h"
#include "t.h"

/* ---- a protobuf reader for the checks ---- */

struct rd {
	const uint8_t *p, *end;
};

static int rd_varint(struct rd *r, uint64_t *v)
{
	*v = 0;
	for (int s = 0; s < 64 && r->p < r->end; s += 7) {
		uint8_t b = *r->p++;

		*v |= (uint64_t)(b & 0x7f) << s;
		if (!(b & 0x80))
			return 0;
	}
	return -1;
}

/* The next length-delimited field: its number and bytes. 0, or -1 at the end or on a bad encoding. */
static int rd_field(struct rd *r, unsigned *field, struct rd *sub)
{
	uint64_t key, len;

	if (r->p >= r->end || rd_varint(r, &key) || (key & 7) != 2 || rd_varint(r, &len) ||
	    len > (uint64_t)(r->end - r->p))
		return -1;
	*field = key >> 3;
	sub->p = r->p;
	sub->end = r->p + len;
	r->p += len;
	return 0;
}

static int rd_is(const struct rd *r, const char *s)
{
	return (size_t)(r->end - r->p) == strlen(s) && !memcmp(r->p, s, strlen(s));
}

static void test_pushreq(void)
{
	struct pushreq *r;
	struct pushreq_label l[] = { { "service_name", "api" }, { "__name__", "process_cpu" }, { "host", "h1" } };
	struct pushreq_label dup[] = { { "a", "1" }, { "a", "2" } };
	struct pushreq_label bad[] = { { "bad-name", "1" } };
	struct pushreq_label badval[] = { { "a", "\xff" } };
	const uint8_t *d;
	struct rd top, series, sub, f;
	unsigned fn, nseries = 0, nlabels = 0;
	const char *order[3] = { "__name__", "host", "service_name" };
	size_t len;

	CHECK(pushreq__new(&r) == 0);
	CHECK(pushreq__add(r, l, 3, "id-1", "PROF", 4) == 0);
	CHECK(pushreq__add(r, l, 2, NULL, "XY", 2) == 0);
	CHECK_EQ_INT(pushreq__nseries(r), 2);
	CHECK(pushreq__add(r, dup, 2, NULL, "x", 1) == -EINVAL);
	CHECK(pushreq__add(r, bad, 1, NULL, "x", 1) == -EINVAL);
	CHECK(pushreq__add(r, badval, 1, NULL, "x", 1) == -EINVAL);
	CHECK(pushreq__add(r, l, 0, NULL, "x", 1) == -EINVAL);
	CHECK_EQ_INT(pushreq__nseries(r), 2);

	/* PushRequest.series = 1 { labels = 1 { name = 1, value = 2 }, samples = 2 { raw_profile = 1, ID = 2 } } */
	CHECK(pushreq__body(r, &d, &len) == 0);
	top = (struct rd){ d, d + len };
	while (!rd_field(&top, &fn, &series)) {
		CHECK_EQ_INT(fn, 1);
		if (nseries++)
			continue;
		while (!rd_field(&series, &fn, &sub)) {
			if (fn == 1) {
				CHECK(!rd_field(&sub, &fn, &f) && fn == 1 && nlabels < 3 && rd_is(&f, order[nlabels]));
				CHECK(!rd_field(&sub, &fn, &f) && fn == 2);
				nlabels++;
			} else {
				CHECK_EQ_INT(fn, 2);
				CHECK(!rd_field(&sub, &fn, &f) && fn == 1 && rd_is(&f, "PROF"));
				CHECK(!rd_field(&sub, &fn, &f) && fn == 2 && rd_is(&f, "id-1"));
			}
		}
	}
	CHECK(top.p == top.end);
	CHECK_EQ_INT(nseries, 2);
	CHECK_EQ_INT(nlabels, 3);
	/*
	 * A gzip request, compressed series by series, inflates to the plain
	 * one; twice, through the reset stream. Large profiles make the
	 * stream's output grow while it runs.
	 */
	{
		struct pushreq *g, *plain;
		static uint8_t big[300000], back[700000];
		const uint8_t *gz, *pd;
		size_t gzlen, plain_len;

		for (size_t i = 0; i < sizeof(big); i++)
			big[i] = (uint8_t)(i * 2654435761u >> 13);
		CHECK(pushreq__new_gzip(0, &g) == -EINVAL);
		CHECK(pushreq__new_gzip(1, &g) == 0 && pushreq__new(&plain) == 0);
		for (int k = 0; k < 2; k++) {
			z_stream z = { 0 };

			pushreq__reset(g);
			pushreq__reset(plain);
			for (int s = 0; s < 2; s++) {
				CHECK(pushreq__add(g, l, 3, "id-1", big, sizeof(big) - k * 1000) == 0);
				CHECK(pushreq__add(plain, l, 3, "id-1", big, sizeof(big) - k * 1000) == 0);
			}
			CHECK(pushreq__body(g, &gz, &gzlen) == 0 && pushreq__body(plain, &pd, &plain_len) == 0);
			CHECK(pushreq__add(g, l, 3, NULL, "x", 1) == -EINVAL); /* finished */
			CHECK(gzlen > 18 && gz[0] == 0x1f && gz[1] == 0x8b);
			CHECK(inflateInit2(&z, 15 + 16) == Z_OK);
			z.next_in = (uint8_t *)gz;
			z.avail_in = gzlen;
			z.next_out = back;
			z.avail_out = sizeof(back);
			CHECK(inflate(&z, Z_FINISH) == Z_STREAM_END);
			CHECK(z.total_out == plain_len && !memcmp(back, pd, plain_len));
			inflateEnd(&z);
		}
		pushreq__free(g);
		pushreq__free(plain);
	}
	pushreq__reset(r);
	CHECK_EQ_INT(pushreq__nseries(r), 0);
	CHECK(pushreq__body(r, &d, &len) == 0);
	CHECK_EQ_INT(len, 0);
	pushreq__free(r);

	CHECK(pushreq__name_valid("service_name") && pushreq__name_valid("_x9"));
	CHECK(!pushreq__name_valid("9x") && !pushreq__name_valid("a-b") && !pushreq__name_valid(""));
	CHECK(pushreq__utf8_valid("caf\xc3\xa9") && !pushreq__utf8_valid("\xc0\xaf") &&
	      !pushreq__utf8_valid("\xed\xa0\x80") && !pushreq__utf8_valid("\xe2\x82"));
}

static void test_service(void)
{
	char b[256];

	pyseries__service("/system.slice/nginx.service", "nginx", b, sizeof(b));
	CHECK_EQ_STR(b, "nginx.service");
	pyseries__service("/user.slice/user-0.slice/user@0.service/app.slice/foo.service", "foo", b, sizeof(b));
	CHECK_EQ_STR(b, "foo.service");
	pyseries__service("/system.slice/docker-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope",
			  "redis", b, sizeof(b));
	CHECK_EQ_STR(b, "0123456789ab");
	pyseries__service("/", "kworker/0:1", b, sizeof(b));
	CHECK_EQ_STR(b, "kworker");
	pyseries__service("", "python3", b, sizeof(b));
	CHECK_EQ_STR(b, "python3");
	pyseries__service("/", "", b, sizeof(b));
	CHECK_EQ_STR(b, "unknown");
	pyseries__service("/", "a\xffz", b, sizeof(b));
	CHECK_EQ_STR(b, "a?z");
	pyseries__service("/", "abcdef", b, 4);
	CHECK_EQ_STR(b, "abc");
}

static void add(struct profile *p, const char *comm, const char *cgroup, uint32_t pid, int kind, uint64_t v)
{
	struct pf_frame fr = { .kind = PF_FRAME_USER };
	struct pf_sample s = { .pid = pid, .tid = pid, .kind = kind, .value = v };
	uint32_t f, st;

	CHECK(profile__intern_str(p, "main", &fr.name) == 0);
	CHECK(profile__intern_str(p, "/bin/x", &fr.module) == 0);
	CHECK(profile__frame_add(p, &fr, &f) == 0);
	CHECK(profile__stack_add(p, &f, 1, &st) == 0);
	s.stack = st;
	CHECK(profile__intern_str(p, comm, &s.comm) == 0);
	CHECK(profile__intern_str(p, cgroup, &s.cgroup) == 0);
	CHECK(profile__add(p, &s) == 0);
}

/* The labels of each series, as "name=value,..." lines in request order. */
static void series_labels(struct pushreq *r, char *out, size_t len, char *ids, size_t idlen)
{
	size_t n;
	const uint8_t *d = NULL;
	struct rd top, series, sub, f;
	unsigned fn;

	out[0] = ids[0] = 0;
	n = 0;
	CHECK(pushreq__body(r, &d, &n) == 0);
	top = (struct rd){ d, d + n };
	while (!rd_field(&top, &fn, &series)) {
		while (!rd_field(&series, &fn, &sub)) {
			if (fn == 2) {
				while (!rd_field(&sub, &fn, &f))
					if (fn == 2)
						snprintf(ids + strlen(ids), idlen - strlen(ids), "%.*s\n",
							 (int)(f.end - f.p), f.p);
				continue;
			}
			while (!rd_field(&sub, &fn, &f))
				snprintf(out + strlen(out), len - strlen(out), "%s%.*s", fn == 1 ? "" : "=",
					 (int)(f.end - f.p), f.p);
			snprintf(out + strlen(out), len - strlen(out), ",");
		}
		snprintf(out + strlen(out), len - strlen(out), "\n");
	}
}

static void test_build(void)
{
	struct profile *p;
	struct pushreq *r;
	struct pushreq_label user[] = { { "env", "prod" } }, host[] = { { "host", "other" } };
	struct pyseries_opts o = { .labels = user, .nlabels = 1 };
	char got[4096], ids[2048], ids2[2048];
	size_t n;

	CHECK(profile__new(&p) == 0);
	CHECK(pushreq__new(&r) == 0);
	profile__meta(p)->start_ns = 1000000000000LL;
	profile__meta(p)->end_ns = 1010000000000LL;
	profile__meta(p)->frequency = 99;
	CHECK(profile__intern_str(p, "h1", &profile__meta(p)->host) == 0);
	add(p, "nginx", "/system.slice/nginx.service", 10, PF_KIND_CPU, 5);
	add(p, "nginx", "/system.slice/nginx.service", 11, PF_KIND_OFFCPU, 7000);
	add(p, "sh", "/", 12, PF_KIND_RUNQ, 3000);

	CHECK(pyseries__build(p, &o, r, &n) == 0);
	series_labels(r, got, sizeof(got), ids, sizeof(ids));
	/* nginx.service: cpu, off-CPU and wall; sh: run-queue time only, so wall only. */
	CHECK_EQ_INT(n, 4);
	CHECK_EQ_STR(got,
		     "__name__=process_cpu,env=prod,host=h1,service_name=nginx.service,\n"
		     "__name__=off_cpu,env=prod,host=h1,service_name=nginx.service,\n"
		     "__name__=wall,env=prod,host=h1,service_name=nginx.service,\n"
		     "__name__=wall,env=prod,host=h1,service_name=sh,\n");
	/* Ids: UUIDs, one per series, the same when the window is built again. */
	CHECK(strlen(ids) == 4 * 37 && ids[8] == '-' && ids[14] == '8');
	pushreq__reset(r);
	CHECK(pyseries__build(p, &o, r, &n) == 0);
	series_labels(r, got, sizeof(got), ids2, sizeof(ids2));
	CHECK_EQ_STR(ids2, ids);

	pushreq__reset(r);
	o = (struct pyseries_opts){ .types = PYSERIES_CPU, .labels = host, .nlabels = 1 };
	CHECK(pyseries__build(p, &o, r, &n) == 0);
	series_labels(r, got, sizeof(got), ids, sizeof(ids));
	CHECK_EQ_STR(got, "__name__=process_cpu,host=other,service_name=nginx.service,\n");

	unsigned t;

	CHECK(pyseries__parse_types("cpu,wall", &t) == 0 && t == (PYSERIES_CPU | PYSERIES_WALL));
	CHECK(pyseries__parse_types("cpu,gpu", &t) == -EINVAL);
	CHECK(pyseries__parse_types("", &t) == -EINVAL);
	pushreq__free(r);
	profile__free(p);
}

static void test_state(void)
{
	char dir[] = "/tmp/profd-test-export.XXXXXX", path[256], tmp[300];
	struct export_state s, back;
	FILE *f;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/cursor", dir);
	CHECK(exporter__load(path, &back) == -ENOENT);
	CHECK(back.cursor_ns == INT64_MIN);
	exporter__state_init(&s);
	s.cursor_ns = 1796184363806532906LL;
	s.windows_sent = 12;
	s.http_429 = 3;
	s.last_status = 429;
	snprintf(s.last_error, sizeof(s.last_error), "HTTP 429: slow down");
	CHECK(exporter__save(path, &s) == 0);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	CHECK(access(tmp, F_OK) != 0);
	CHECK(exporter__load(path, &back) == 0);
	CHECK(back.cursor_ns == s.cursor_ns && back.windows_sent == 12 && back.http_429 == 3 &&
	      back.last_status == 429);
	CHECK_EQ_STR(back.last_error, "HTTP 429: slow down");
	s.cursor_ns = -5;
	CHECK(exporter__save(path, &s) == 0 && exporter__load(path, &back) == 0 && back.cursor_ns == -5);

	/* Not a state file: refused, never half-read. */
	f = fopen(path, "w");
	fputs("format\tprofd-export 1\ncursor_ns\t12x\n", f);
	fclose(f);
	CHECK(exporter__load(path, &back) == -EINVAL);
	f = fopen(path, "w");
	fputs("cursor_ns\t12\n", f);
	fclose(f);
	CHECK(exporter__load(path, &back) == -EINVAL);
	f = fopen(path, "w");
	fputs("format\tprofd-export 1\ncursor_ns\t12", f); /* no newline */
	fclose(f);
	CHECK(exporter__load(path, &back) == -EINVAL);
	unlink(path);
	rmdir(dir);
}

static void test_verdict_backoff(void)
{
	CHECK(exporter__verdict(200) == EXPORT_DONE && exporter__verdict(204) == EXPORT_DONE);
	CHECK(exporter__verdict(0) == EXPORT_RETRY && exporter__verdict(429) == EXPORT_RETRY &&
	      exporter__verdict(503) == EXPORT_RETRY && exporter__verdict(408) == EXPORT_RETRY);
	CHECK(exporter__verdict(400) == EXPORT_SKIP && exporter__verdict(413) == EXPORT_SKIP);
	CHECK(exporter__verdict(401) == EXPORT_FATAL && exporter__verdict(403) == EXPORT_FATAL &&
	      exporter__verdict(404) == EXPORT_FATAL);

	const int64_t base = 500000000, max = 60000000000LL;

	for (unsigned n = 1; n < 40; n++) {
		int64_t want = base;

		for (unsigned i = 1; i < n && want < max; i++)
			want *= 2;
		if (want > max)
			want = max;
		/* Equal jitter: between half and all of the exponential step. */
		for (uint64_t rnd = 0; rnd < 1000000007ULL * 50; rnd += 1000000007ULL) {
			int64_t d = exporter__backoff_ns(n, base, max, 0, rnd);

			if (d < want / 2 || d > want)
				CHECK(!"backoff out of [step/2, step]");
		}
	}
	CHECK(exporter__backoff_ns(1, base, max, 5000000000LL, 0) == 5000000000LL);
	CHECK(exporter__backoff_ns(1, base, max, 3600000000000LL, 0) == max);
}

/*
 * The follow pattern: a reader comes back for one window at a time while the
 * writer appends, across chain keys and segments. Each window must read back
 * as written (the reader keeps its decoded chain between reads of a file).
 */
struct next {
	int64_t after, start, end;
	uint64_t value, samples;
	int found;
};

static int next_cb(const struct store_window_info *w, const struct profile *p, void *arg)
{
	struct next *n = arg;

	if (w->end_ns <= n->after)
		return 0;
	n->found = 1;
	n->start = w->start_ns;
	n->end = w->end_ns;
	n->samples = profile__nsamples(p);
	n->value = 0;
	for (size_t i = 0; i < profile__nsamples(p); i++)
		n->value += profile__sample(p, i)->value;
	return 1;
}

static void test_store_follow(void)
{
	char dir[] = "/tmp/profd-test-export-store.XXXXXX";
	struct store_opts wo = { .writer = 1, .no_rollup = 1, .segment_span_ns = 95 * 1000000000LL };
	struct store_opts ro = { .writer = 0 };
	struct store *w, *r;
	struct profile *p;
	int64_t t0 = 1796000000000000000LL, cursor = t0 - 1;
	int bad = 0;

	CHECK(mkdtemp(dir) != NULL);
	wo.dir = ro.dir = dir;
	CHECK(store__open(&wo, &w) == 0);
	CHECK(store__open(&ro, &r) == 0);
	CHECK(profile__new(&p) == 0);
	for (int i = 0; i < 75; i++) {
		struct next n = { .after = cursor };

		profile__reset(p);
		profile__meta(p)->start_ns = t0 + i * 1000000000LL * 3;
		profile__meta(p)->end_ns = t0 + (i + 1) * 1000000000LL * 3;
		/* New stacks now and then, so deltas carry tables too. */
		add(p, i % 7 ? "a" : "b", "/", 1 + i % 5, PF_KIND_CPU, 1000 + i);
		add(p, "c", i % 3 ? "/x.service" : "/", 100 + i, PF_KIND_OFFCPU, 7);
		CHECK(store__append(w, p) == 0);
		/* After every fourth window the reader looks away, then reads two. */
		for (int k = 0; k < (i % 4 == 3 ? 0 : 2) && !bad; k++) {
			n.found = 0;
			CHECK(store__read(r, n.after, INT64_MAX, next_cb, &n) >= 0);
			if (!n.found)
				break;
			bad |= n.samples != 2 || n.value != (uint64_t)(1000 + (n.start - t0) / 3000000000LL + 7);
			n.after = cursor = n.end;
		}
	}
	CHECK(!bad);
	CHECK(cursor == t0 + 75 * 3000000000LL);
	profile__free(p);
	store__close(r);
	store__close(w);
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		CHECK(system(cmd) == 0);
	}
}

int main(void)
{
	test_store_follow();
	test_pushreq();
	test_service();
	test_build();
	test_state();
	test_verdict_backoff();
	T_DONE();
}
