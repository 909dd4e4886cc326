#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "ctl.h"
#include "store.h"
#include "textesc.h"

int64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void fmt_time(int64_t ns, char *buf, size_t len)
{
	time_t t = ns / 1000000000;
	struct tm tm;

	if (ns == INT64_MAX || ns == INT64_MIN) {
		snprintf(buf, len, "%s", ns == INT64_MAX ? "the end" : "the beginning");
		return;
	}
	localtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
}

int usage_error(const char *cmd, const char *fmt, const char *arg)
{
	fprintf(stderr, "profctl%s%s: ", cmd ? " " : "", cmd ? cmd : "");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "; see profctl %s%s--help\n", cmd ? cmd : "", cmd ? " " : "");
	return EXIT_USAGE;
}

static void store_warn(void *arg, const char *msg)
{
	(void)arg;
	fprintf(stderr, "profctl: warning: %s\n", msg);
}

int open_store(const struct global *g, struct store **st)
{
	struct store_opts so = { .dir = g->state_dir, .writer = 0, .warn = store_warn };
	int err;

	if (access(g->state_dir, R_OK | X_OK)) {
		err = errno;
		if (err == ENOENT)
			fprintf(stderr, "profctl: state directory %s does not exist: is profd running, "
				"or is it another --state-dir?\n", g->state_dir);
		else
			fprintf(stderr, "profctl: cannot read state directory %s: %s; run as root "
				"(it is 0700, owned by profd's user)\n", g->state_dir, strerror(err));
		return EXIT_RUNTIME;
	}
	err = store__open(&so, st);
	if (err) {
		fprintf(stderr, "profctl: cannot open state directory %s: %s\n", g->state_dir,
			strerror(-err));
		return EXIT_RUNTIME;
	}
	return 0;
}

void request_flush(const struct global *g)
{
	char *reply = NULL;
	int err = ctl__call(g->socket, "flush", &reply, 5000);

	if (err == -ENOENT || err == -ECONNREFUSED)
		fprintf(stderr, "profctl: profd is not running (no socket at %s); reading what is stored\n",
			g->socket);
	else if (ctl__busy(err, reply))
		fprintf(stderr, "profctl: profd is busy (too many connections to %s); the last seconds may be missing\n",
			g->socket);
	else if (err)
		fprintf(stderr, "profctl: could not ask profd to flush (%s): %s; the last seconds may be missing\n",
			g->socket, strerror(-err));
	free(reply);
}

struct range_ctx {
	int64_t first, last;
	size_t n;
};

static int range_cb(const struct store_window_info *w, void *arg)
{
	struct range_ctx *r = arg;

	if (!r->n || w->start_ns < r->first)
		r->first = w->start_ns;
	if (!r->n || w->end_ns > r->last)
		r->last = w->end_ns;
	r->n++;
	return 0;
}

void explain_empty(struct store *st, int64_t since, int64_t until, const char *what)
{
	struct range_ctx r = { 0 };
	char a[32], b[32], c[32], d[32];

	fmt_time(since, a, sizeof(a));
	fmt_time(until, b, sizeof(b));
	store__list(st, INT64_MIN, INT64_MAX, range_cb, &r);
	if (!r.n) {
		fprintf(stderr, "profctl: no samples%s between %s and %s: nothing is stored yet; "
			"is profd running?\n", what, a, b);
		return;
	}
	fmt_time(r.first, c, sizeof(c));
	fmt_time(r.last, d, sizeof(d));
	fprintf(stderr, "profctl: no matching samples%s between %s and %s; stored windows span %s to %s: "
		"widen --since/--until or relax the filters\n", what, a, b, c, d);
}

FILE *open_output(const char *path)
{
	FILE *f;

	if (!path || !strcmp(path, "-"))
		return stdout;
	f = fopen(path, "we");
	if (!f)
		fprintf(stderr, "profctl: cannot write %s: %s\n", path, strerror(errno));
	return f;
}

int close_output(FILE *f, const char *path)
{
	if (f == stdout) {
		if (fflush(f)) {
			fprintf(stderr, "profctl: writing standard output failed: %s\n", strerror(errno));
			return EXIT_RUNTIME;
		}
		return 0;
	}
	if (fclose(f)) {
		fprintf(stderr, "profctl: writing %s failed: %s\n", path, strerror(errno));
		return EXIT_RUNTIME;
	}
	return 0;
}

struct table {
	int ncols;
	const char *right; /* per column: 'r' right-aligned, else left */
	char **cells;      /* rows * ncols, row 0 the header */
	size_t rows, cap;
};

static int table_add(struct table *t, const char *const *cells)
{
	size_t base = t->rows * t->ncols;

	if (base + t->ncols > t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 64;
		char **n;

		while (nc < base + t->ncols)
			nc *= 2;
		n = realloc(t->cells, nc * sizeof(*n));
		if (!n)
			return -ENOMEM;
		memset(n + t->cap, 0, (nc - t->cap) * sizeof(*n));
		t->cells = n;
		t->cap = nc;
	}
	for (int i = 0; i < t->ncols; i++) {
		/* Cells hold names from other processes: escaped (textesc.h), never raw. */
		t->cells[base + i] = textesc__dup(cells[i] ? cells[i] : "");
		if (!t->cells[base + i])
			return -ENOMEM;
	}
	t->rows++;
	return 0;
}

struct table *table__new(int ncols, const char *const *headers, const char *right)
{
	struct table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->ncols = ncols < 32 ? ncols : 32;
	t->right = right;
	if (table_add(t, headers)) {
		table__free(t);
		return NULL;
	}
	return t;
}

int table__row(struct table *t, ...)
{
	const char *cells[32];
	va_list ap;

	va_start(ap, t);
	for (int i = 0; i < t->ncols; i++)
		cells[i] = va_arg(ap, const char *);
	va_end(ap);
	return table_add(t, cells);
}

void table__print(struct table *t, FILE *f)
{
	int tty = isatty(fileno(f));
	size_t w[32] = { 0 };

	for (size_t r = 0; r < t->rows; r++)
		for (int c = 0; c < t->ncols; c++) {
			size_t l = strlen(t->cells[r * t->ncols + c]);

			if (l > w[c])
				w[c] = l;
		}
	for (size_t r = 0; r < t->rows; r++) {
		for (int c = 0; c < t->ncols; c++) {
			const char *s = t->cells[r * t->ncols + c];
			int last = c == t->ncols - 1;

			if (!tty)
				fprintf(f, "%s%s", s, last ? "\n" : "\t");
			else if (t->right && t->right[c] == 'r')
				fprintf(f, "%*s%s", (int)w[c], s, last ? "\n" : "  ");
			else if (last)
				fprintf(f, "%s\n", s);
			else
				fprintf(f, "%-*s  ", (int)w[c], s);
		}
	}
}

void table__free(struct table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->cap; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t);
}
