/* profctl's shared plumbing: global options, errors, the store, output, tables. */
#ifndef PROFCTL_COMMON_H
#define PROFCTL_COMMON_H

#include <stdint.h>
#include <stdio.h>

struct store;

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

struct global {
	const char *state_dir;
	const char *socket;
};

/* Local time, "YYYY-MM-DD HH:MM:SS". */
void fmt_time(int64_t ns, char *buf, size_t len);
/* Prints "profctl CMD: <fmt with arg>; see profctl CMD --help" and returns EXIT_USAGE. */
int usage_error(const char *cmd, const char *fmt, const char *arg);
int open_store(const struct global *g, struct store **st);
void request_flush(const struct global *g);
/* Explains an empty result: the asked range and the stored range. */
void explain_empty(struct store *st, int64_t since, int64_t until, const char *what);
FILE *open_output(const char *path);
int close_output(FILE *f, const char *path);

/*
 * Tables: padded, aligned columns on a terminal; tab-separated on a pipe,
 * so awk and cut see one field per column.
 */
struct table;
struct table *table__new(int ncols, const char *const *headers, const char *right_aligned);
int table__row(struct table *t, ...);
void table__print(struct table *t, FILE *f);
void table__free(struct table *t);

#endif
