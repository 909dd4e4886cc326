/* rowalloc: first fit, merging on release, bad releases, and a random run against a bitmap. */
#include "rowalloc.h"
#include "t.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

static void test_first_fit(void)
{
	struct rowalloc *a = NULL;
	uint32_t x = 99, y = 99, z = 99, w = 99;

	CHECK_EQ_INT(rowalloc__new(0, &a), -EINVAL);
	CHECK_EQ_INT(rowalloc__new(100, &a), 0);
	if (!a)
		return;
	CHECK_EQ_INT(rowalloc__alloc(a, 0, &x), -EINVAL);
	CHECK_EQ_INT(rowalloc__alloc(a, 101, &x), -ENOSPC);
	CHECK_EQ_INT(rowalloc__alloc(a, 30, &x), 0);
	CHECK_EQ_INT(rowalloc__alloc(a, 30, &y), 0);
	CHECK_EQ_INT(rowalloc__alloc(a, 30, &z), 0);
	CHECK_EQ_INT(x, 0);
	CHECK_EQ_INT(y, 30);
	CHECK_EQ_INT(z, 60);
	CHECK_EQ_INT(rowalloc__used(a), 90);
	CHECK_EQ_INT(rowalloc__alloc(a, 11, &w), -ENOSPC);
	/* A hole in the middle: the lowest range that fits wins, not the best fit. */
	CHECK_EQ_INT(rowalloc__release(a, y, 30), 0);
	CHECK_EQ_INT(rowalloc__ranges(a), 2);
	CHECK_EQ_INT(rowalloc__alloc(a, 5, &w), 0);
	CHECK_EQ_INT(w, 30);
	CHECK_EQ_INT(rowalloc__alloc(a, 25, &w), 0);
	CHECK_EQ_INT(w, 35);
	CHECK_EQ_INT(rowalloc__ranges(a), 1);
	CHECK_EQ_INT(rowalloc__alloc(a, 10, &w), 0);
	CHECK_EQ_INT(w, 90);
	CHECK_EQ_INT(rowalloc__ranges(a), 0);
	CHECK_EQ_INT(rowalloc__alloc(a, 1, &w), -ENOSPC);
	CHECK_EQ_INT(rowalloc__used(a), 100);
	rowalloc__free(a);
}

static void test_merge(void)
{
	struct rowalloc *a = NULL;
	uint32_t r[5];

	CHECK_EQ_INT(rowalloc__new(50, &a), 0);
	if (!a)
		return;
	for (int i = 0; i < 5; i++)
		CHECK_EQ_INT(rowalloc__alloc(a, 10, &r[i]), 0);
	CHECK_EQ_INT(rowalloc__release(a, r[1], 10), 0);
	CHECK_EQ_INT(rowalloc__release(a, r[3], 10), 0);
	CHECK_EQ_INT(rowalloc__ranges(a), 2);
	/* Between two free ranges: all three become one. */
	CHECK_EQ_INT(rowalloc__release(a, r[2], 10), 0);
	CHECK_EQ_INT(rowalloc__ranges(a), 1);
	CHECK_EQ_INT(rowalloc__alloc(a, 30, &r[2]), 0);
	CHECK_EQ_INT(r[2], 10);
	/* Next to the right neighbour only, then the left one only. */
	CHECK_EQ_INT(rowalloc__release(a, 0, 10), 0);
	CHECK_EQ_INT(rowalloc__release(a, 40, 10), 0);
	CHECK_EQ_INT(rowalloc__ranges(a), 2);
	CHECK_EQ_INT(rowalloc__release(a, 30, 10), 0);
	CHECK_EQ_INT(rowalloc__ranges(a), 2);
	CHECK_EQ_INT(rowalloc__release(a, 10, 10), 0);
	CHECK_EQ_INT(rowalloc__ranges(a), 2);
	CHECK_EQ_INT(rowalloc__release(a, 20, 10), 0);
	CHECK_EQ_INT(rowalloc__ranges(a), 1);
	CHECK_EQ_INT(rowalloc__used(a), 0);
	CHECK_EQ_INT(rowalloc__alloc(a, 50, &r[0]), 0);
	CHECK_EQ_INT(r[0], 0);
	rowalloc__free(a);
}

static void test_bad_release(void)
{
	struct rowalloc *a = NULL;
	uint32_t x = 0, y = 0;

	CHECK_EQ_INT(rowalloc__new(64, &a), 0);
	if (!a)
		return;
	CHECK_EQ_INT(rowalloc__alloc(a, 16, &x), 0);
	CHECK_EQ_INT(rowalloc__alloc(a, 16, &y), 0);
	/* Free already, partly free, outside the array, wrapping, empty: nothing changes. */
	CHECK_EQ_INT(rowalloc__release(a, 40, 4), -EINVAL);
	CHECK_EQ_INT(rowalloc__release(a, 28, 8), -EINVAL);
	CHECK_EQ_INT(rowalloc__release(a, 64, 1), -EINVAL);
	CHECK_EQ_INT(rowalloc__release(a, 10, UINT32_MAX), -EINVAL);
	CHECK_EQ_INT(rowalloc__release(a, 0, 0), -EINVAL);
	CHECK_EQ_INT(rowalloc__used(a), 32);
	CHECK_EQ_INT(rowalloc__release(a, x, 16), 0);
	CHECK_EQ_INT(rowalloc__release(a, x, 16), -EINVAL);
	CHECK_EQ_INT(rowalloc__release(a, 8, 16), -EINVAL);
	CHECK_EQ_INT(rowalloc__used(a), 16);
	/* Part of a taken range may go back on its own. */
	CHECK_EQ_INT(rowalloc__release(a, y + 4, 4), 0);
	CHECK_EQ_INT(rowalloc__ranges(a), 3);
	CHECK_EQ_INT(rowalloc__used(a), 12);
	rowalloc__free(a);
}

/* Random allocations and releases, checked against a bitmap of taken rows. */
static void test_random(void)
{
	enum { CAP = 4096, LIVE = 64 };
	static bool taken[CAP];
	struct {
		uint32_t first, n;
	} live[LIVE] = { { 0, 0 } };
	struct rowalloc *a = NULL;
	uint32_t used = 0;
	int bad = 0;

	CHECK_EQ_INT(rowalloc__new(CAP, &a), 0);
	if (!a)
		return;
	srand(16);
	for (int step = 0; step < 20000 && !bad; step++) {
		int k = rand() % LIVE;

		if (live[k].n) {
			bad += rowalloc__release(a, live[k].first, live[k].n) != 0;
			for (uint32_t i = 0; i < live[k].n; i++)
				taken[live[k].first + i] = false;
			used -= live[k].n;
			live[k].n = 0;
		} else {
			uint32_t n = 1 + rand() % 200, first = 0, lowest = CAP, run = 0;
			int err = rowalloc__alloc(a, n, &first);

			/* The model's answer: the start of the lowest run of n free rows. */
			for (uint32_t i = 0; i < CAP && lowest == CAP; i++) {
				run = taken[i] ? 0 : run + 1;
				if (run == n)
					lowest = i + 1 - n;
			}
			if (lowest == CAP) {
				bad += err != -ENOSPC;
				continue;
			}
			bad += err != 0 || first != lowest;
			for (uint32_t i = 0; i < n && !err; i++)
				taken[first + i] = true;
			used += n;
			live[k].first = first;
			live[k].n = n;
		}
		bad += rowalloc__used(a) != used;
	}
	CHECK_EQ_INT(bad, 0);
	for (int k = 0; k < LIVE; k++)
		if (live[k].n)
			CHECK_EQ_INT(rowalloc__release(a, live[k].first, live[k].n), 0);
	CHECK_EQ_INT(rowalloc__used(a), 0);
	CHECK_EQ_INT(rowalloc__ranges(a), 1);
	rowalloc__free(a);
}

/* A copy answers what releases would make room for, and the original does not move. */
static void test_copy(void)
{
	struct rowalloc *a = NULL, *c = NULL;
	uint32_t r[4], x = 0;

	CHECK_EQ_INT(rowalloc__new(40, &a), 0);
	if (!a)
		return;
	for (int i = 0; i < 4; i++)
		CHECK_EQ_INT(rowalloc__alloc(a, 10, &r[i]), 0);
	CHECK_EQ_INT(rowalloc__release(a, r[1], 10), 0);
	CHECK_EQ_INT(rowalloc__copy(a, &c), 0);
	if (!c) {
		rowalloc__free(a);
		return;
	}
	CHECK_EQ_INT(rowalloc__used(c), 30);
	CHECK_EQ_INT(rowalloc__ranges(c), 1);
	/* Rows 10-19 free: 20 in a row need a neighbour released, and only a neighbour does. */
	CHECK_EQ_INT(rowalloc__alloc(c, 20, &x), -ENOSPC);
	CHECK_EQ_INT(rowalloc__release(c, r[3], 10), 0);
	CHECK_EQ_INT(rowalloc__alloc(c, 20, &x), -ENOSPC);
	CHECK_EQ_INT(rowalloc__release(c, r[2], 10), 0);
	CHECK_EQ_INT(rowalloc__alloc(c, 20, &x), 0);
	CHECK_EQ_INT(x, 10);
	CHECK_EQ_INT(rowalloc__used(a), 30);
	CHECK_EQ_INT(rowalloc__alloc(a, 20, &x), -ENOSPC);
	CHECK_EQ_INT(rowalloc__alloc(a, 10, &x), 0);
	CHECK_EQ_INT(x, 10);
	CHECK_EQ_INT(rowalloc__ranges(a), 0);
	rowalloc__free(c);
	/* A copy of a full allocator, with no free range, still grows on release. */
	CHECK_EQ_INT(rowalloc__copy(a, &c), 0);
	if (c) {
		CHECK_EQ_INT(rowalloc__release(c, r[0], 10), 0);
		CHECK_EQ_INT(rowalloc__release(c, r[2], 10), 0);
		CHECK_EQ_INT(rowalloc__ranges(c), 2);
		CHECK_EQ_INT(rowalloc__used(c), 20);
	}
	rowalloc__free(c);
	rowalloc__free(a);
}

int main(void)
{
	test_first_fit();
	test_merge();
	test_bad_release();
	test_random();
	test_copy();
	T_DONE();
}
