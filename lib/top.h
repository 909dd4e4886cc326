/* Top functions by self and total share (perf report without and with children). */
#ifndef PROFD_TOP_H
#define PROFD_TOP_H

#include <stddef.h>
#include <stdint.h>

struct profile;
struct query;
struct top;

struct top_entry {
	const char *name; /* the folded frame label ("name", "name_[k]", "[mod+0xOFF]") */
	uint64_t self;    /* where the leaf frame is this function */
	uint64_t total;   /* where it is anywhere on the stack, counted once per stack */
};

enum top_sort { TOP_BY_SELF = 0, TOP_BY_TOTAL = 1 };

/* Aggregates a collapsed profile (fold__collapse) in printed units. */
int top__new(const struct query *q, const struct profile *collapsed, struct top **out);
void top__free(struct top *t);
void top__sort(struct top *t, enum top_sort by);
size_t top__count(const struct top *t);
const struct top_entry *top__entry(const struct top *t, size_t i);
/* The sum of all stacks: the 100 % of both shares. */
uint64_t top__grand_total(const struct top *t);

#endif
