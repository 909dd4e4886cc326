/*
 * Differential folded stacks (FlameGraph's difffolded convention): one line
 * per stack, "stack before after", with the before side scaled so both
 * sides have the same total.
 */
#ifndef PROFD_DIFF_H
#define PROFD_DIFF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct diff;
struct profile;
struct query;

struct diff_line {
	uint32_t line;  /* the folded line, for diff__stack */
	uint64_t base;  /* before, scaled to the after total */
	uint64_t value; /* after */
	uint64_t raw_base;
};

/*
 * Joins two collapsed profiles (fold__collapse) by their folded line. The
 * scaled before values add up to the after total exactly (largest
 * remainder rounding). -ENODATA when either side is empty.
 */
int diff__new(const struct query *q, const struct profile *base, const struct profile *cur, struct diff **out);
void diff__free(struct diff *d);
size_t diff__count(const struct diff *d);
const struct diff_line *diff__line(const struct diff *d, size_t i);
/* Line i's folded stack as dump prints it; valid until the next call; NULL: out of memory. */
const char *diff__stack(struct diff *d, size_t i);
void diff__totals(const struct diff *d, uint64_t *base, uint64_t *cur);
/* Lines sorted by after value, then before value, then stack. */
int diff__write(const struct diff *d, FILE *f);

#endif
