/*
 * profctl export: stored windows to Pyroscope's push API over HTTP(S), through
 * libcurl. The store is the backlog and a cursor file says how far the
 * receiver has acknowledged; lib/pyseries.c makes the series, lib/pushreq.c
 * the request, lib/exporter.c keeps the cursor and decides what an answer means.
 */
/* Its calls go through the pointers below: no macro may stand in for them. */
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "common.h"
#include "config.h"
#include "export.h"
#include "exporter.h"
#include "parse.h"
#include "profile.h"
#include "pushreq.h"
#include "pyseries.h"
#include "store.h"

#define MAX_HEADERS 32
#define MAX_LABELS (PUSHREQ_MAX_LABELS - 3)
#define SECRET_MAX 4096
#define REPLY_MAX 4096
#define ONESHOT_ATTEMPTS 6 /* a range push gives up on a window after this many tries */

struct exopts {
	char *url, *tenant, *basic_auth_file, *bearer_token_file, *ca_file, *cursor_file;
	char *since, *until;
	char *headers[MAX_HEADERS];
	size_t nheaders;
	struct pushreq_label labels[MAX_LABELS];
	size_t nlabels;
	int64_t timeout_ns, max_backoff_ns;
	uint64_t rate; /* requests per second, at most */
	unsigned types;
	int follow;
};

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

static int set_str(char **dst, const char *v)
{
	char *s = strdup(v);

	if (!s)
		return -ENOMEM;
	free(*dst);
	*dst = s;
	return 0;
}

static int set_label(struct exopts *o, const char *v, char *why, size_t len)
{
	const char *eq = strchr(v, '=');
	char *name;
	size_t i;

	if (!eq || eq == v)
		return snprintf(why, len, "expected NAME=VALUE"), -EINVAL;
	name = strndup(v, eq - v);
	if (!name)
		return -ENOMEM;
	if (!pushreq__name_valid(name) || !strcmp(name, "__name__") || !strcmp(name, "service_name") ||
	    !pushreq__utf8_valid(eq + 1) || strlen(eq + 1) > PUSHREQ_MAX_VALUE) {
		snprintf(why, len, "'%.64s' is not a label Pyroscope accepts ([a-zA-Z_][a-zA-Z0-9_]*, "
			 "not __name__ or service_name, a UTF-8 value)", name);
		free(name);
		return -EINVAL;
	}
	/* A later label of the same name wins: the command line over the config file. */
	for (i = 0; i < o->nlabels && strcmp(o->labels[i].name, name); i++)
		;
	if (i == MAX_LABELS) {
		free(name);
		return snprintf(why, len, "at most %d labels", MAX_LABELS), -EINVAL;
	}
	if (i < o->nlabels) {
		free((char *)o->labels[i].name);
		free((char *)o->labels[i].value);
	} else {
		o->nlabels++;
	}
	o->labels[i].name = name;
	o->labels[i].value = strdup(eq + 1);
	return o->labels[i].value ? 0 : -ENOMEM;
}

static int set_header(struct exopts *o, const char *v, char *why, size_t len)
{
	const char *colon = strchr(v, ':');

	if (!colon || colon == v || strpbrk(v, "\r\n") || strcspn(v, " \t") < (size_t)(colon - v))
		return snprintf(why, len, "expected NAME:VALUE on one line"), -EINVAL;
	if (o->nheaders == MAX_HEADERS)
		return snprintf(why, len, "at most %d headers", MAX_HEADERS), -EINVAL;
	o->headers[o->nheaders] = strdup(v);
	return o->headers[o->nheaders++] ? 0 : -ENOMEM;
}

/* One setting, from the command line or the config file (same names). */
static int set_opt(const char *key, const char *v, char *why, size_t len, void *arg)
{
	struct exopts *o = arg;
	int64_t now = clock__ns(CLOCK_REALTIME), when;

	if (!strcmp(key, "url")) {
		if (strncmp(v, "http://", 7) && strncmp(v, "https://", 8))
			return snprintf(why, len, "expected http://HOST[:PORT] or https://..."), -EINVAL;
		return set_str(&o->url, v);
	} else if (!strcmp(key, "since") || !strcmp(key, "until")) {
		if (parse_when(v, now, &when))
			return snprintf(why, len, "expected 90s, 10m, 2h, 7d or 2026-11-30T09:00:00Z"), -EINVAL;
		return set_str(key[0] == 's' ? &o->since : &o->until, v);
	} else if (!strcmp(key, "follow")) {
		if (strcmp(v, "yes") && strcmp(v, "no"))
			return snprintf(why, len, "expected yes or no"), -EINVAL;
		o->follow = !strcmp(v, "yes");
		return 0;
	} else if (!strcmp(key, "tenant")) {
		if (!*v || strpbrk(v, "\r\n"))
			return snprintf(why, len, "expected a tenant id on one line"), -EINVAL;
		return set_str(&o->tenant, v);
	} else if (!strcmp(key, "basic-auth-file")) {
		return set_str(&o->basic_auth_file, v);
	} else if (!strcmp(key, "bearer-token-file")) {
		return set_str(&o->bearer_token_file, v);
	} else if (!strcmp(key, "ca-file")) {
		return set_str(&o->ca_file, v);
	} else if (!strcmp(key, "cursor-file")) {
		return set_str(&o->cursor_file, v);
	} else if (!strcmp(key, "header")) {
		return set_header(o, v, why, len);
	} else if (!strcmp(key, "label")) {
		return set_label(o, v, why, len);
	} else if (!strcmp(key, "timeout") || !strcmp(key, "max-backoff")) {
		int64_t *d = key[0] == 't' ? &o->timeout_ns : &o->max_backoff_ns;

		if (parse_duration_ns(v, d) || *d < 100000000 || *d > 3600 * 1000000000LL)
			return snprintf(why, len, "expected a duration from 100ms to 1h, like 10s"), -EINVAL;
		return 0;
	} else if (!strcmp(key, "rate")) {
		if (parse_u64(v, &o->rate) || !o->rate || o->rate > 1000)
			return snprintf(why, len, "expected requests per second, 1 to 1000"), -EINVAL;
		return 0;
	} else if (!strcmp(key, "types")) {
		if (pyseries__parse_types(v, &o->types))
			return snprintf(why, len, "expected a list of cpu, offcpu, wall"), -EINVAL;
		return 0;
	}
	return -ENOENT;
}

static void exopts_free(struct exopts *o)
{
	free(o->url);
	free(o->tenant);
	free(o->basic_auth_file);
	free(o->bearer_token_file);
	free(o->ca_file);
	free(o->cursor_file);
	free(o->since);
	free(o->until);
	for (size_t i = 0; i < o->nheaders; i++)
		free(o->headers[i]);
	for (size_t i = 0; i < o->nlabels; i++) {
		free((char *)o->labels[i].name);
		free((char *)o->labels[i].value);
	}
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: profctl export --url URL (--since WHEN [--until WHEN] | --follow) [OPTIONS]\n"
		"       profctl export --status [--cursor-file FILE] [--config FILE]\n"
		"Pushes stored windows to Pyroscope (push.v1.PusherService/Push): one series per\n"
		"service (systemd unit, else container, else process name) and profile type\n"
		"(process_cpu, off_cpu, wall), labels __name__, service_name, host and --label's.\n"
		"  --url URL               Pyroscope, Grafana Cloud Profiles or Alloy's receive_http\n"
		"  --since WHEN            push from WHEN (and exit at the end unless --follow)\n"
		"  --until WHEN            push up to WHEN (default: now)\n"
		"  --follow                keep pushing new windows as profd writes them\n"
		"  --cursor-file FILE      where the last acknowledged window is kept; --follow\n"
		"                          default: $STATE_DIRECTORY/cursor, else\n"
		"                          /var/lib/profd-export/cursor\n"
		"  --tenant ID             X-Scope-OrgID header\n"
		"  --basic-auth-file FILE  'user:password' on the first line\n"
		"  --bearer-token-file F   a token on the first line (Authorization: Bearer)\n"
		"  --header NAME:VALUE     an extra request header (repeatable)\n"
		"  --ca-file FILE          trust this CA (PEM) for https\n"
		"  --label NAME=VALUE      added to every series (repeatable; host=... replaces the host)\n"
		"  --types LIST            cpu,offcpu,wall (default all)\n"
		"  --timeout DUR           per request (default 30s)\n"
		"  --rate N                requests per second at most, when catching up (default 5)\n"
		"  --max-backoff DUR       longest wait between retries (default 60s)\n"
		"  --config FILE           the same settings as 'key = value' lines (url = ...)\n"
		"  --status                the counters and the cursor, from the cursor file\n"
		"Examples:\n"
		"  profctl export --url http://pyroscope:4040 --follow\n"
		"  profctl export --url https://pyroscope.example --since 2h --until 1h --tenant team-a\n");
}

/* ---- HTTP ---- */

struct reply {
	char buf[REPLY_MAX + 1];
	size_t len;
};

static size_t on_body(char *d, size_t sz, size_t n, void *arg)
{
	struct reply *r = arg;
	size_t k = sz * n, room = REPLY_MAX - r->len;

	memcpy(r->buf + r->len, d, k < room ? k : room);
	r->len += k < room ? k : room;
	r->buf[r->len] = 0;
	return k;
}

/* The server's reason, on one printable line: Connect's JSON "message", else the body's start. */
static void reason(const struct reply *r, char *out, size_t len)
{
	const char *m = strstr(r->buf, "\"message\"");
	const char *end = NULL;
	size_t k = 0;

	if (m && (m = strchr(m + 9, '"'))) {
		for (end = ++m; *end && *end != '"'; end++)
			if (*end == '\\' && end[1])
				end++;
	} else {
		m = r->buf;
	}
	for (; *m && m != end && k + 1 < len && k < 200; m++)
		out[k++] = (unsigned char)*m >= 0x20 && *m != 0x7f ? *m : ' ';
	out[k] = 0;
}

static int read_secret(const char *path, char *buf, size_t len, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	ssize_t n;

	if (fd < 0)
		return snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno)), -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno)), -1;
	buf[n] = 0;
	buf[strcspn(buf, "\r\n")] = 0;
	if (!*buf)
		return snprintf(err, errlen, "%s is empty", path), -1;
	return 0;
}

/*
 * libcurl is loaded by export alone: linked into profctl, its thirty
 * libraries were loaded by every command (14 ms of CPU and about 500 page
 * faults, a seventh of a 10-minute dump). Never unloaded: export ends
 * with the process.
 */
static struct {
	CURLcode (*global_init)(long flags);
	void (*global_cleanup)(void);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *c, CURLoption opt, ...);
	CURLcode (*easy_perform)(CURL *c);
	CURLcode (*easy_getinfo)(CURL *c, CURLINFO info, ...);
	const char *(*easy_strerror)(CURLcode rc);
	void (*easy_cleanup)(CURL *c);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
} cu;

static int curl_load(char *err, size_t errlen)
{
	static const struct {
		size_t off;
		const char *name;
	} syms[] = {
		{ offsetof(typeof(cu), global_init), "curl_global_init" },
		{ offsetof(typeof(cu), global_cleanup), "curl_global_cleanup" },
		{ offsetof(typeof(cu), easy_init), "curl_easy_init" },
		{ offsetof(typeof(cu), easy_setopt), "curl_easy_setopt" },
		{ offsetof(typeof(cu), easy_perform), "curl_easy_perform" },
		{ offsetof(typeof(cu), easy_getinfo), "curl_easy_getinfo" },
		{ offsetof(typeof(cu), easy_strerror), "curl_easy_strerror" },
		{ offsetof(typeof(cu), easy_cleanup), "curl_easy_cleanup" },
		{ offsetof(typeof(cu), slist_append), "curl_slist_append" },
		{ offsetof(typeof(cu), slist_free_all), "curl_slist_free_all" },
	};
	void *lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);

	if (!lib)
		return snprintf(err, errlen, "cannot load libcurl (%s): install libcurl4", dlerror()), -1;
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		void *f = dlsym(lib, syms[i].name);

		if (!f)
			return snprintf(err, errlen, "libcurl.so.4 has no %s: not a libcurl", syms[i].name), -1;
		memcpy((char *)&cu + syms[i].off, &f, sizeof(f));
	}
	return 0;
}

struct http {
	CURL *c;
	struct curl_slist *hdrs;
	char endpoint[4096];
};

static int http_init(struct http *h, const struct exopts *o, char *err, size_t errlen)
{
	char line[SECRET_MAX + 64], secret[SECRET_MAX];
	size_t ulen = strlen(o->url);

	while (ulen && o->url[ulen - 1] == '/')
		ulen--;
	if (snprintf(h->endpoint, sizeof(h->endpoint), "%.*s/push.v1.PusherService/Push", (int)ulen, o->url) >=
	    (int)sizeof(h->endpoint))
		return snprintf(err, errlen, "--url is too long"), -1;
	h->c = cu.easy_init();
	if (!h->c)
		return snprintf(err, errlen, "cannot start libcurl"), -1;
	h->hdrs = cu.slist_append(h->hdrs, "Content-Type: application/proto");
	/* Connect's request compression: the series' profiles are plain inside. */
	h->hdrs = cu.slist_append(h->hdrs, "Content-Encoding: gzip");
	h->hdrs = cu.slist_append(h->hdrs, "Connect-Protocol-Version: 1");
	h->hdrs = cu.slist_append(h->hdrs, "Expect:"); /* no 100-continue round trip */
	if (o->tenant) {
		snprintf(line, sizeof(line), "X-Scope-OrgID: %s", o->tenant);
		h->hdrs = cu.slist_append(h->hdrs, line);
	}
	if (o->bearer_token_file) {
		if (read_secret(o->bearer_token_file, secret, sizeof(secret), err, errlen))
			return -1;
		snprintf(line, sizeof(line), "Authorization: Bearer %s", secret);
		h->hdrs = cu.slist_append(h->hdrs, line);
		explicit_bzero(line, sizeof(line));
	}
	for (size_t i = 0; i < o->nheaders; i++)
		h->hdrs = cu.slist_append(h->hdrs, o->headers[i]);
	if (!h->hdrs)
		return snprintf(err, errlen, "out of memory"), -1;
	if (o->basic_auth_file) {
		if (read_secret(o->basic_auth_file, secret, sizeof(secret), err, errlen))
			return -1;
		if (!strchr(secret, ':'))
			return snprintf(err, errlen, "%s: expected user:password", o->basic_auth_file), -1;
		cu.easy_setopt(h->c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		cu.easy_setopt(h->c, CURLOPT_USERPWD, secret);
	}
	explicit_bzero(secret, sizeof(secret));
	cu.easy_setopt(h->c, CURLOPT_URL, h->endpoint);
	cu.easy_setopt(h->c, CURLOPT_HTTPHEADER, h->hdrs);
	cu.easy_setopt(h->c, CURLOPT_POST, 1L);
	cu.easy_setopt(h->c, CURLOPT_USERAGENT, "profctl-export/1");
	cu.easy_setopt(h->c, CURLOPT_PROTOCOLS_STR, "http,https");
	cu.easy_setopt(h->c, CURLOPT_FOLLOWLOCATION, 0L);
	cu.easy_setopt(h->c, CURLOPT_NOSIGNAL, 1L);
	cu.easy_setopt(h->c, CURLOPT_TIMEOUT_MS, (long)(o->timeout_ns / 1000000));
	cu.easy_setopt(h->c, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)(o->timeout_ns < 10000000000LL ? o->timeout_ns / 1000000 : 10000));
	cu.easy_setopt(h->c, CURLOPT_WRITEFUNCTION, on_body);
	if (o->ca_file)
		cu.easy_setopt(h->c, CURLOPT_CAINFO, o->ca_file);
	return 0;
}

static void http_free(struct http *h)
{
	cu.slist_free_all(h->hdrs);
	if (h->c)
		cu.easy_cleanup(h->c);
}

/* One POST. Returns the HTTP status (0: none) with a one-line reason in why when not 2xx. */
static long http_post(struct http *h, const void *body, size_t len, int64_t *retry_after_ns,
		      char *why, size_t whylen)
{
	struct reply r = { .len = 0 };
	curl_off_t ra = 0;
	long status = 0;
	CURLcode rc;

	cu.easy_setopt(h->c, CURLOPT_POSTFIELDS, body);
	cu.easy_setopt(h->c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	cu.easy_setopt(h->c, CURLOPT_WRITEDATA, &r);
	*retry_after_ns = 0;
	rc = cu.easy_perform(h->c);
	if (rc != CURLE_OK) {
		snprintf(why, whylen, "%s", cu.easy_strerror(rc));
		return 0;
	}
	cu.easy_getinfo(h->c, CURLINFO_RESPONSE_CODE, &status);
	if (cu.easy_getinfo(h->c, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
		*retry_after_ns = (int64_t)(ra < 3600 ? ra : 3600) * 1000000000LL;
	if (status < 200 || status >= 300) {
		char msg[256];

		reason(&r, msg, sizeof(msg));
		snprintf(why, whylen, "HTTP %ld%s%s", status, *msg ? ": " : "", msg);
	}
	return status;
}

/* ---- the loop ---- */

struct exporter {
	const struct exopts *o;
	struct store *st;
	struct http http;
	struct pushreq *req;
	struct export_state s;
	const char *cursor_file; /* NULL: a range push without a cursor */
	int64_t next_ns, until_ns;
	int64_t win_start, win_end; /* the window in req */
	size_t nseries;
	int found, build_err;
	int acked_this_run;
	unsigned logged_4xx[6];     /* status codes logged once (400..405 and the rest) */
	int64_t last_send_ns;
};

/* Waits up to ns; a signal ends it early. */
static void nap(int64_t ns)
{
	struct timespec ts = { ns / 1000000000, ns % 1000000000 };

	if (ns > 0 && !stopping)
		nanosleep(&ts, NULL);
}

static int on_window(const struct store_window_info *w, const struct profile *p, void *arg)
{
	struct exporter *e = arg;
	struct pyseries_opts po = { .types = e->o->types, .labels = e->o->labels, .nlabels = e->o->nlabels };

	if (w->end_ns <= e->next_ns)
		return 0;
	pushreq__reset(e->req);
	e->win_start = w->start_ns;
	e->win_end = w->end_ns;
	e->build_err = pyseries__build(p, &po, e->req, &e->nseries);
	e->found = 1;
	return 1;
}

static void save(struct exporter *e)
{
	int err;

	if (!e->cursor_file)
		return;
	err = exporter__save(e->cursor_file, &e->s);
	if (err)
		fprintf(stderr, "profctl export: cannot write %s: %s\n", e->cursor_file, strerror(-err));
}

static void log_4xx_once(struct exporter *e, long status, const char *why)
{
	unsigned k = status >= 400 && status < 405 ? status - 400 : 5;

	if (e->logged_4xx[k]++)
		return;
	fprintf(stderr, "profctl export: the receiver refused a window (%s); skipping such windows, "
		"counted in http_4xx (logged once)\n", why);
}

/*
 * Sends the window in e->req until it is acknowledged or refused.
 * Returns 0 (the cursor moved), PUSH_STOPPED (a signal), or an exit code.
 */
#define PUSH_STOPPED (-1)
static int push_window(struct exporter *e)
{
	const uint8_t *body;
	size_t len;
	unsigned attempt = 0;
	int outage_logged = 0;

	if (pushreq__body(e->req, &body, &len)) {
		fprintf(stderr, "profctl export: cannot compress a request: out of memory\n");
		return EXIT_RUNTIME;
	}
	for (;;) {
		int64_t retry_after = 0, wait, gap;
		uint64_t rnd = 0;
		char why[320] = "";
		long status;

		/* Catching up: at most --rate requests a second. */
		gap = 1000000000LL / (int64_t)e->o->rate - (clock__mono_ns() - e->last_send_ns);
		nap(gap);
		if (stopping)
			return PUSH_STOPPED;
		e->last_send_ns = clock__mono_ns();
		status = http_post(&e->http, body, len, &retry_after, why, sizeof(why));
		e->s.requests++;
		if (attempt)
			e->s.retries++;
		attempt++;
		e->s.last_status = (int)status;
		switch (exporter__verdict(status)) {
		case EXPORT_DONE:
			e->s.cursor_ns = e->win_end;
			e->s.windows_sent++;
			e->s.series_sent += e->nseries;
			e->s.bytes_sent += len;
			e->s.last_ok_ns = clock__ns(CLOCK_REALTIME);
			e->s.last_error[0] = 0;
			if (outage_logged)
				fprintf(stderr, "profctl export: %s accepts again, after %u attempts\n",
					e->http.endpoint, attempt);
			e->acked_this_run = 1;
			save(e);
			return 0;
		case EXPORT_SKIP:
			e->s.http_4xx++;
			e->s.windows_skipped++;
			e->s.cursor_ns = e->win_end;
			snprintf(e->s.last_error, sizeof(e->s.last_error), "%s", why);
			log_4xx_once(e, status, why);
			save(e);
			return 0;
		case EXPORT_FATAL:
			snprintf(e->s.last_error, sizeof(e->s.last_error), "%s", why);
			save(e);
			fprintf(stderr, "profctl export: %s: %s; check --url%s\n", e->http.endpoint, why,
				status == 404 ? "" : ", --tenant and the credentials");
			return EXIT_RUNTIME;
		case EXPORT_RETRY:
			break;
		}
		if (status == 0)
			e->s.transport_errors++;
		else if (status == 429)
			e->s.http_429++;
		else if (status >= 500)
			e->s.http_5xx++;
		snprintf(e->s.last_error, sizeof(e->s.last_error), "%s", why);
		save(e);
		/* A range push that never reached the receiver has the wrong URL, most likely. */
		if (!e->o->follow && ((status == 0 && !e->acked_this_run) || attempt >= ONESHOT_ATTEMPTS)) {
			fprintf(stderr, "profctl export: cannot push to %s: %s\n", e->http.endpoint, why);
			return EXIT_RUNTIME;
		}
		if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
			rnd = (uint64_t)clock__mono_ns() * 0x9e3779b97f4a7c15ULL;
		wait = exporter__backoff_ns(attempt, 500000000LL, e->o->max_backoff_ns, retry_after, rnd);
		if (!outage_logged) {
			fprintf(stderr, "profctl export: %s: %s; retrying with backoff (up to %" PRId64 "s apart)\n",
				e->http.endpoint, why, e->o->max_backoff_ns / 1000000000);
			outage_logged = 1;
		}
		nap(wait);
		if (stopping)
			return PUSH_STOPPED;
	}
}

/* Until a new window may be there: profd writes its segment files, so watch the directory. */
static void wait_for_data(int ifd)
{
	struct pollfd p = { .fd = ifd, .events = POLLIN };
	char buf[4096];

	if (ifd < 0) {
		nap(2000000000LL);
		return;
	}
	/* The timeout covers a directory replaced under the watch. */
	if (poll(&p, 1, 30000) <= 0)
		return;
	/* One window is several writes: wake once for all of them. */
	nap(1000000000LL);
	while (read(ifd, buf, sizeof(buf)) > 0)
		;
}

static int run(struct exporter *e, const struct global *g)
{
	int ifd = -1, ret = 0;

	if (e->o->follow) {
		ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		if (ifd >= 0 && inotify_add_watch(ifd, g->state_dir, IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE) < 0) {
			close(ifd);
			ifd = -1;
		}
	}
	while (!stopping) {
		int err;

		e->found = 0;
		e->build_err = 0;
		err = store__read(e->st, e->next_ns, e->until_ns, on_window, e);
		if (err < 0) {
			fprintf(stderr, "profctl export: reading %s failed: %s\n", g->state_dir, strerror(-err));
			ret = EXIT_RUNTIME;
			break;
		}
		if (!e->found) {
			if (!e->o->follow)
				break;
			wait_for_data(ifd);
			continue;
		}
		if (e->build_err) {
			fprintf(stderr, "profctl export: cannot encode the window ending %" PRId64 ": %s\n",
				e->win_end, strerror(-e->build_err));
			ret = EXIT_RUNTIME;
			break;
		}
		if (!pushreq__nseries(e->req)) {
			/* Nothing of the asked types in it: nothing to acknowledge. */
			e->s.cursor_ns = e->win_end;
		} else {
			ret = push_window(e);
			if (ret == PUSH_STOPPED) {
				ret = 0;
				break;
			}
			if (ret)
				break;
		}
		e->next_ns = e->s.cursor_ns;
		/* A busy window's buffers are freed now; give the pages back until the next one. */
		malloc_trim(0);
	}
	if (ifd >= 0)
		close(ifd);
	return ret;
}

static const char *default_cursor(char *buf, size_t len)
{
	const char *sd = getenv("STATE_DIRECTORY");

	/* systemd may list several directories, colon-separated: ours is the first. */
	if (sd && *sd) {
		snprintf(buf, len, "%.*s/cursor", (int)strcspn(sd, ":"), sd);
		return buf;
	}
	return "/var/lib/profd-export/cursor";
}

static int show_status(const char *path)
{
	struct export_state s;
	char buf[8192], t[32];
	int err = exporter__load(path, &s);
	int tty = isatty(STDOUT_FILENO);

	if (err) {
		fprintf(stderr, "profctl export: no export state in %s: %s%s\n", path, strerror(-err),
			err == -ENOENT ? "; has the exporter run with this --cursor-file?" : "");
		return EXIT_RUNTIME;
	}
	exporter__format(&s, buf, sizeof(buf));
	for (char *l = buf, *nl; *l; l = nl) {
		char *tab = strchr(l, '\t');

		nl = strchr(l, '\n');
		*nl++ = 0;
		*tab = 0;
		if (!strcmp(l, "format"))
			continue;
		if (tty)
			printf("%-20s %s\n", l, tab + 1);
		else
			printf("%s\t%s\n", l, tab + 1);
	}
	if (s.cursor_ns != INT64_MIN) {
		fmt_time(s.cursor_ns, t, sizeof(t));
		printf(tty ? "%-20s %s\n" : "%s\t%s\n", "cursor", t);
	}
	return 0;
}

int cmd_export(const struct global *g, int argc, char **argv)
{
	enum { O_URL = 256, O_SINCE, O_UNTIL, O_FOLLOW, O_TENANT, O_BASIC, O_BEARER, O_HEADER, O_CA,
	       O_LABEL, O_TIMEOUT, O_TYPES, O_CURSOR, O_RATE, O_BACKOFF, O_CONFIG, O_STATUS };
	static const struct option lo[] = {
		{ "url", required_argument, 0, O_URL }, { "since", required_argument, 0, O_SINCE },
		{ "until", required_argument, 0, O_UNTIL }, { "follow", no_argument, 0, O_FOLLOW },
		{ "tenant", required_argument, 0, O_TENANT }, { "basic-auth-file", required_argument, 0, O_BASIC },
		{ "bearer-token-file", required_argument, 0, O_BEARER }, { "header", required_argument, 0, O_HEADER },
		{ "ca-file", required_argument, 0, O_CA }, { "label", required_argument, 0, O_LABEL },
		{ "timeout", required_argument, 0, O_TIMEOUT }, { "types", required_argument, 0, O_TYPES },
		{ "cursor-file", required_argument, 0, O_CURSOR }, { "rate", required_argument, 0, O_RATE },
		{ "max-backoff", required_argument, 0, O_BACKOFF }, { "config", required_argument, 0, O_CONFIG },
		{ "status", no_argument, 0, O_STATUS }, { "help", no_argument, 0, 'h' }, { 0 },
	};
	struct exopts o = { .timeout_ns = 30000000000LL, .max_backoff_ns = 60000000000LL, .rate = 5,
			    .types = PYSERIES_ALL };
	struct exporter e = { .o = &o };
	struct export_state s0;
	const char *config = NULL;
	char why[512], cbuf[4096];
	int c, status = 0, ret = 0, err;
	int64_t now = clock__ns(CLOCK_REALTIME);

	/* The config file first, wherever --config stands, so that the command line wins. */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--config") && i + 1 < argc)
			config = argv[i + 1];
		else if (!strncmp(argv[i], "--config=", 9))
			config = argv[i] + 9;
	}
	if (config && config_read(config, set_opt, &o, why, sizeof(why))) {
		fprintf(stderr, "profctl export: %s\n", why);
		exopts_free(&o);
		return EXIT_USAGE;
	}
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
		const char *key = NULL;

		switch (c) {
		case 'h':
			usage(stdout);
			exopts_free(&o);
			return 0;
		case O_CONFIG:
			continue;
		case O_STATUS:
			status = 1;
			continue;
		case O_FOLLOW:
			o.follow = 1;
			continue;
		case ':':
			snprintf(why, sizeof(why), "option %s needs a value", argv[optind - 1]);
			ret = usage_error("export", "%s", why);
			goto out;
		case '?':
			ret = usage_error("export", "unknown option '%s'", argv[optind - 1]);
			goto out;
		default:
			key = lo[c - O_URL].name;
			break;
		}
		why[0] = 0;
		err = set_opt(key, optarg, why, sizeof(why), &o);
		if (err) {
			char msg[700];

			snprintf(msg, sizeof(msg), "--%s '%.200s': %s", key, optarg, why[0] ? why : strerror(-err));
			ret = usage_error("export", "%s", msg);
			goto out;
		}
	}
	if (optind < argc) {
		ret = usage_error("export", "unexpected argument '%s'", argv[optind]);
		goto out;
	}
	e.cursor_file = o.cursor_file ? o.cursor_file : o.follow || status ? default_cursor(cbuf, sizeof(cbuf)) : NULL;
	if (status) {
		ret = show_status(e.cursor_file);
		goto out;
	}
	if (!o.url) {
		ret = usage_error("export", "%s", "--url URL is needed (or url = ... in --config)");
		goto out;
	}
	if (!o.follow && !o.since) {
		ret = usage_error("export", "%s", "give --since WHEN for a range, or --follow");
		goto out;
	}
	/* Checked when set; parsed again against one "now". */
	e.next_ns = INT64_MIN;
	e.until_ns = INT64_MAX;
	if (o.since)
		parse_when(o.since, now, &e.next_ns);
	else
		e.next_ns = now - 3600 * 1000000000LL; /* a first --follow starts an hour back */
	if (o.until)
		parse_when(o.until, now, &e.until_ns);
	else if (!o.follow)
		e.until_ns = now;

	exporter__state_init(&e.s);
	if (e.cursor_file) {
		err = exporter__load(e.cursor_file, &e.s);
		if (err && err != -ENOENT) {
			fprintf(stderr, "profctl export: %s is not an export state file (%s); move it away to start over\n",
				e.cursor_file, strerror(-err));
			ret = EXIT_RUNTIME;
			goto out;
		}
		if (!err && e.s.cursor_ns > e.next_ns)
			e.next_ns = e.s.cursor_ns;
	}
	/* Before anything slow: a stop asked for during start-up is a clean stop too. */
	sigaction(SIGTERM, &(struct sigaction){ .sa_handler = on_signal }, NULL);
	sigaction(SIGINT, &(struct sigaction){ .sa_handler = on_signal }, NULL);
	if (curl_load(why, sizeof(why))) {
		fprintf(stderr, "profctl export: %s\n", why);
		ret = EXIT_RUNTIME;
		goto out;
	}
	if (cu.global_init(CURL_GLOBAL_DEFAULT)) {
		fprintf(stderr, "profctl export: cannot start libcurl\n");
		ret = EXIT_RUNTIME;
		goto out;
	}
	if (http_init(&e.http, &o, why, sizeof(why))) {
		fprintf(stderr, "profctl export: %s\n", why);
		ret = EXIT_RUNTIME;
		goto out_curl;
	}
	if ((ret = open_store(g, &e.st)))
		goto out_curl;
	/* Level 1: a third less CPU than 6 for a tenth more bytes (8 busy windows: 0.17 s, 2.1 MB against 0.25 s, 1.9 MB). */
	if (pushreq__new_gzip(1, &e.req)) {
		ret = EXIT_RUNTIME;
		goto out_curl;
	}
	s0 = e.s;
	ret = run(&e, g);
	if (!o.follow && !ret)
		fprintf(stderr, "profctl export: %" PRIu64 " windows, %" PRIu64 " series, %" PRIu64 " bytes sent; "
			"%" PRIu64 " refused\n", e.s.windows_sent - s0.windows_sent, e.s.series_sent - s0.series_sent,
			e.s.bytes_sent - s0.bytes_sent, e.s.http_4xx - s0.http_4xx);
out_curl:
	pushreq__free(e.req);
	store__close(e.st);
	http_free(&e.http);
	cu.global_cleanup();
out:
	exopts_free(&o);
	return ret;
}
