/* filecache: one entry per (dev, inode), readers' slots side by side, entries go when empty. */
#include "filecache.h"
#include "t.h"

#include <errno.h>
#include <stdlib.h>

static int dropped;

static void on_drop(void *data, void *arg)
{
	(void)arg;
	dropped++;
	free(data);
}

static void test_slots(void)
{
	struct filecache *c = NULL;
	int syms, tables, a = 1, b = 2;

	CHECK_EQ_INT(filecache__new(&c), 0);
	if (!c)
		return;
	syms = filecache__slot(c, NULL, NULL);
	tables = filecache__slot(c, NULL, NULL);
	CHECK(syms >= 0 && tables >= 0 && syms != tables);
	CHECK(filecache__get(c, 8, 100, syms) == NULL);
	CHECK_EQ_INT(filecache__set(c, 8, 100, syms, &a), 0);
	CHECK_EQ_INT(filecache__set(c, 8, 100, tables, &b), 0);
	CHECK_EQ_INT(filecache__count(c), 1); /* one file, two readers */
	CHECK(filecache__get(c, 8, 100, syms) == &a);
	CHECK(filecache__get(c, 8, 100, tables) == &b);
	/* Same inode on another device, same device another inode: other files. */
	CHECK(filecache__get(c, 9, 100, syms) == NULL);
	CHECK(filecache__get(c, 8, 101, syms) == NULL);
	/* A reader lets go: the other's stays, and the entry with it. */
	CHECK_EQ_INT(filecache__set(c, 8, 100, syms, NULL), 0);
	CHECK(filecache__get(c, 8, 100, syms) == NULL);
	CHECK(filecache__get(c, 8, 100, tables) == &b);
	CHECK_EQ_INT(filecache__count(c), 1);
	CHECK_EQ_INT(filecache__set(c, 8, 100, tables, NULL), 0);
	CHECK_EQ_INT(filecache__count(c), 0);
	/* Clearing what is not there makes nothing. */
	CHECK_EQ_INT(filecache__set(c, 8, 100, tables, NULL), 0);
	CHECK_EQ_INT(filecache__count(c), 0);
	while (filecache__slot(c, NULL, NULL) >= 0)
		;
	CHECK_EQ_INT(filecache__slot(c, NULL, NULL), -ENOSPC);
	filecache__free(c);
}

/* Past the first buckets (they grow), every file found again; what is left is dropped at free. */
static void test_many(void)
{
	struct filecache *c = NULL;
	int slot, found = 0;

	CHECK_EQ_INT(filecache__new(&c), 0);
	if (!c)
		return;
	slot = filecache__slot(c, on_drop, NULL);
	for (uint64_t i = 1; i <= 5000; i++) {
		uint64_t *v = malloc(sizeof(*v));

		*v = i;
		CHECK_EQ_INT(filecache__set(c, i % 3, i, slot, v), 0);
	}
	CHECK_EQ_INT(filecache__count(c), 5000);
	for (uint64_t i = 1; i <= 5000; i++) {
		uint64_t *v = filecache__get(c, i % 3, i, slot);

		found += v && *v == i;
	}
	CHECK_EQ_INT(found, 5000);
	for (uint64_t i = 1; i <= 5000; i += 2) {
		free(filecache__get(c, i % 3, i, slot));
		filecache__set(c, i % 3, i, slot, NULL);
	}
	CHECK_EQ_INT(filecache__count(c), 2500);
	CHECK(filecache__get(c, 1, 1, slot) == NULL);
	CHECK(filecache__get(c, 2, 2, slot) != NULL);
	dropped = 0;
	filecache__free(c);
	CHECK_EQ_INT(dropped, 2500);
}

int main(void)
{
	test_slots();
	test_many();
	T_DONE();
}
