/*
 * Flame graphs as one self-contained interactive SVG: the frame tree is
 * embedded as data and drawn by an inline script (hover details, click to
 * zoom, reset, regex search with the matched share). No external script,
 * font or network access. Frames are coloured by kind (user, kernel, JIT,
 * process); a differential graph colours by change instead.
 */
#ifndef PROFD_FLAMEGRAPH_H
#define PROFD_FLAMEGRAPH_H

#include <stdint.h>
#include <stdio.h>

struct flamegraph;
struct profile;
struct query;

struct fg_opts {
	const char *title;    /* "CPU flame graph" */
	const char *subtitle; /* host and time range */
	const char *unit;     /* "samples", "us" */
};

int flamegraph__new(struct flamegraph **out);
void flamegraph__free(struct flamegraph *fg);

/*
 * Adds the folded lines of a collapsed profile (fold__collapse), in printed
 * units. base = 1 adds them as the "before" side of a differential graph:
 * widths stay those of the other side, colours show the change after both
 * sides are scaled to equal totals.
 */
int flamegraph__add(struct flamegraph *fg, const struct query *q, const struct profile *collapsed, int base);

/* One folded line: labels root first (kinds: enum pf_frame_kind, or FG_KIND_*). */
enum { FG_KIND_PROCESS = 8, FG_KIND_THREAD = 9 };
int flamegraph__add_stack(struct flamegraph *fg, const char *const *labels, const uint8_t *kinds,
			  uint32_t n, uint64_t value, int base);

uint64_t flamegraph__total(const struct flamegraph *fg, int base);

int flamegraph__write(struct flamegraph *fg, const struct fg_opts *o, FILE *f);

#endif
