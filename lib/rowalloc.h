/*
 * Ranges of a fixed array of rows handed out and taken back: first fit over
 * the free ranges, kept sorted by start, neighbours merged on release. The
 * array itself lives elsewhere (the kernel's unwind rows map): this keeps
 * only which rows are taken.
 */
#ifndef PROFD_ROWALLOC_H
#define PROFD_ROWALLOC_H

#include <stdint.h>

struct rowalloc;

/* An allocator of rows [0, cap), all free. -EINVAL when cap is 0, -ENOMEM. */
int rowalloc__new(uint32_t cap, struct rowalloc **out);
void rowalloc__free(struct rowalloc *a);
/*
 * An independent allocator in a's state: what releases would make room
 * for is tried on it, before anything is given up for real. 0, -ENOMEM.
 */
int rowalloc__copy(const struct rowalloc *a, struct rowalloc **out);

/* n rows in a row at *first: the lowest free range that fits. -ENOSPC, -EINVAL for n 0. */
int rowalloc__alloc(struct rowalloc *a, uint32_t n, uint32_t *first);
/*
 * Gives back [first, first + n). -EINVAL when any of it is outside the array
 * or free already (nothing changes); -ENOMEM when a new free range cannot be
 * recorded: the rows stay taken.
 */
int rowalloc__release(struct rowalloc *a, uint32_t first, uint32_t n);

/* Rows taken. */
uint32_t rowalloc__used(const struct rowalloc *a);
/* Free ranges: 1 when everything free is one range, more when fragmented. */
uint32_t rowalloc__ranges(const struct rowalloc *a);

#endif
