/* Folding: stacks keyed only by what a view prints, in the view's units. */
#ifndef PROFD_FOLD_H
#define PROFD_FOLD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct pf_sample;

struct profile;
struct query;

/*
 * The printed label of a frame: "name", "name_[k]" for kernel frames,
 * "[module+0xOFF]" when unnamed, "[unknown]" when even the module is unknown.
 */
void fold__frame_label(const struct profile *p, uint32_t frame, char *buf, size_t len);

/* Frames of a stack a folded line keeps, from the root: the rest are cut. */
#define FOLD_MAX_FRAMES 256

/*
 * dst (empty) gets one sample per distinct printed line: the process name as
 * root frame's owner (comm), the thread name when q->threads, pid/tid/cgroup
 * cleared, kernel frames dropped when q->no_kernel, values in the units of
 * q->type (samples for cpu, microseconds otherwise; wall converts on-CPU
 * samples with the window's frequency).
 */
int fold__collapse(const struct query *q, const struct profile *src, struct profile *dst);

/*
 * Printed lines without their text: each line a stack of label ids,
 * interned by the text it prints, so that lines from several collapsed
 * profiles are the same id exactly when they print the same.
 */
struct fold_text;
int fold__text_new(const struct query *q, struct fold_text **out);
void fold__text_free(struct fold_text *t);
/* The line sample s of collapsed profile c prints (without its value): an id from 1. */
int fold__text_line(struct fold_text *t, const struct profile *c, const struct pf_sample *s, uint32_t *line);
/* < 0, 0, > 0 as strcmp of the two lines' texts. */
int fold__text_cmp(const struct fold_text *t, uint32_t a, uint32_t b);
/* Writes the line's text (no value, no newline). 0 or -EIO. */
int fold__text_put(const struct fold_text *t, uint32_t line, FILE *f);
/*
 * The lines of collapsed profile c whose printed value is not 0, one per
 * sample, in the order fold__write prints them (value descending, then
 * text); *out is malloc'd.
 */
struct fold_line {
	uint32_t line;
	uint64_t value; /* printed units */
};
int fold__text_lines(struct fold_text *t, const struct profile *c, struct fold_line **out, size_t *n);

/* Writes folded lines ("comm[;thread];root;...;leaf value"), sorted by value. */
int fold__write(const struct query *q, const struct profile *collapsed, FILE *f);
/* A collapsed value in printed units (samples, or microseconds from nanoseconds). */
uint64_t fold__printed_value(const struct query *q, uint64_t v);

#endif
