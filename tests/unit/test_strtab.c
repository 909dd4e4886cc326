/* strtab: offsets, growth, the size limit, reset and shrink. */
#include "strtab.h"
#include "t.h"

#include <errno.h>
#include <stdlib.h>

static void test_add(void)
{
	struct strtab *t = NULL;
	uint32_t a = 1, b = 1, c = 1;
	size_t empty;

	CHECK_EQ_INT(strtab__new(0, 100, &t), -EINVAL);
	CHECK_EQ_INT(strtab__new(200, 100, &t), -EINVAL);
	CHECK_EQ_INT(strtab__new(8, 1 << 20, &t), 0);
	if (!t)
		return;
	empty = strtab__mem_bytes(t);
	CHECK_EQ_INT(strtab__len(t), 0);
	/* Only len bytes are copied: the names come from tables that are not NUL-terminated. */
	CHECK_EQ_INT(strtab__add(t, "printfXYZ", 6, &a), 0);
	CHECK_EQ_INT(strtab__add(t, "", 0, &b), 0);
	CHECK_EQ_INT(strtab__add(t, "a_much_longer_name_than_eight_bytes", 35, &c), 0);
	CHECK_EQ_INT(a, 0);
	CHECK_EQ_INT(b, 7);
	CHECK_EQ_INT(c, 8);
	CHECK_EQ_STR(strtab__str(t, a), "printf");
	CHECK_EQ_STR(strtab__str(t, b), "");
	CHECK_EQ_STR(strtab__str(t, c), "a_much_longer_name_than_eight_bytes");
	CHECK_EQ_INT(strtab__len(t), 44);
	/* Doubling from 8: 16, 32, 64. */
	CHECK_EQ_INT(strtab__mem_bytes(t), empty + 64);
	strtab__shrink(t);
	CHECK_EQ_INT(strtab__mem_bytes(t), empty + 44);
	CHECK_EQ_STR(strtab__str(t, c), "a_much_longer_name_than_eight_bytes");
	strtab__free(t);
}

static void test_limit(void)
{
	struct strtab *t = NULL;
	uint32_t off = 7;
	size_t empty;

	/* 10 bytes: names and NULs together. */
	CHECK_EQ_INT(strtab__new(4, 10, &t), 0);
	if (!t)
		return;
	empty = strtab__mem_bytes(t);
	CHECK_EQ_INT(strtab__add(t, "abcd", 4, &off), 0);
	CHECK_EQ_INT(strtab__add(t, "efghi", 5, &off), -EFBIG);
	CHECK_EQ_INT(off, 0); /* untouched by a failed add */
	CHECK_EQ_INT(strtab__add(t, "efgh", 4, &off), 0);
	CHECK_EQ_INT(off, 5);
	CHECK_EQ_INT(strtab__len(t), 10);
	CHECK_EQ_INT(strtab__add(t, "", 0, &off), -EFBIG);
	CHECK_EQ_INT(strtab__add(t, "x", (size_t)-1, &off), -EFBIG); /* no wrap-around */
	/* Doubling from 4 would reach 16: it stops at the limit. */
	CHECK_EQ_INT(strtab__mem_bytes(t), empty + 10);
	strtab__free(t);

	/* Offsets are 32 bits: a larger limit is cut to what they address. */
	CHECK_EQ_INT(strtab__new(16, SIZE_MAX, &t), 0);
	strtab__free(t);
	strtab__free(NULL);
}

static void test_reset(void)
{
	struct strtab *t = NULL;
	uint32_t off;
	size_t held;

	CHECK_EQ_INT(strtab__new(16, 1 << 20, &t), 0);
	if (!t)
		return;
	CHECK_EQ_INT(strtab__add(t, "jit_fn_one", 10, &off), 0);
	held = strtab__mem_bytes(t);
	strtab__reset(t);
	CHECK_EQ_INT(strtab__len(t), 0);
	CHECK_EQ_INT(strtab__mem_bytes(t), held); /* the buffer stays for the next names */
	CHECK_EQ_INT(strtab__add(t, "jit_fn_two", 10, &off), 0);
	CHECK_EQ_INT(off, 0);
	CHECK_EQ_STR(strtab__str(t, off), "jit_fn_two");
	strtab__reset(t);
	strtab__shrink(t); /* empty: the buffer goes */
	CHECK_EQ_INT(strtab__mem_bytes(t), held - 16);
	CHECK_EQ_INT(strtab__add(t, "again", 5, &off), 0);
	CHECK_EQ_STR(strtab__str(t, off), "again");
	strtab__free(t);
}

/* Interned names are stored once, however many ask for them; the index goes with __shrink. */
static void test_intern(void)
{
	struct strtab *t = NULL;
	char big[4000];
	uint32_t a = 0, b = 0, c = 2, d = 3;

	CHECK_EQ_INT(strtab__new(64, 1 << 20, &t), 0);
	if (!t)
		return;
	memset(big, 'x', sizeof(big));
	CHECK_EQ_INT(strtab__intern(t, big, sizeof(big), &a), 0);
	for (int i = 0; i < 60000 && b == a; i++)
		if (strtab__intern(t, big, sizeof(big), &b))
			b = UINT32_MAX;
	CHECK_EQ_INT(b, a);
	CHECK_EQ_INT(strtab__len(t), sizeof(big) + 1);
	/* A prefix is another name; so is the same bytes with one more. */
	CHECK_EQ_INT(strtab__intern(t, big, 10, &c), 0);
	CHECK(c != a);
	CHECK_EQ_INT(strlen(strtab__str(t, c)), 10);
	CHECK_EQ_INT(strtab__intern(t, big, 10, &d), 0);
	CHECK_EQ_INT(d, c);
	/* Thousands of distinct names grow the index and keep finding the old ones. */
	for (int i = 0; i < 5000; i++) {
		char n[16];
		int l = snprintf(n, sizeof(n), "f%d", i);

		if (strtab__intern(t, n, (size_t)l, &b))
			break;
	}
	CHECK_EQ_INT(strtab__intern(t, "f17", 3, &b), 0);
	CHECK_EQ_INT(strtab__intern(t, "f17", 3, &c), 0);
	CHECK_EQ_INT(b, c);
	CHECK_EQ_STR(strtab__str(t, b), "f17");
	CHECK_EQ_INT(strtab__intern(t, big, sizeof(big), &b), 0);
	CHECK_EQ_INT(b, a);
	strtab__shrink(t);
	CHECK(strtab__mem_bytes(t) < strtab__len(t) + 256);
	strtab__free(t);
}

int main(void)
{
	test_intern();
	test_add();
	test_limit();
	test_reset();
	T_DONE();
}
