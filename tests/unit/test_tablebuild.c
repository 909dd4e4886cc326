/* tablebuild: builds on worker threads, errors, the small-files worker, many builds at once. */
#include "tablebuild.h"
#include "unwind_table.h"
#include "t.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

static int open_self(void)
{
	return open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
}

/* A file that is not ELF. */
static int open_junk(void)
{
	char path[] = "/tmp/test_tablebuild.XXXXXX";
	int fd = mkstemp(path);

	if (fd < 0)
		return -1;
	unlink(path);
	if (write(fd, "not an ELF file at all\n", 23) != 23) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Waits up to timeout_ms for a finished build; 1 with *d filled, 0 when none came. */
static int wait_take(struct tablebuild *b, struct tablebuild_done *d, int timeout_ms)
{
	struct pollfd p = { .fd = tablebuild__fd(b), .events = POLLIN };
	uint64_t v;

	for (int waited = 0;; waited += 10) {
		if (tablebuild__take(b, d))
			return 1;
		if (waited >= timeout_ms)
			return 0;
		if (poll(&p, 1, 10) > 0 && read(p.fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
			return 0;
	}
}

static void test_args(void)
{
	struct tablebuild *b = NULL;

	CHECK_EQ_INT(tablebuild__new(0, 0, &b), -EINVAL);
	CHECK_EQ_INT(tablebuild__new(TABLEBUILD_MAX_WORKERS + 1, 0, &b), -EINVAL);
	CHECK(b == NULL);
	tablebuild__free(NULL);
}

static void test_build(void)
{
	struct tablebuild *b = NULL;
	struct tablebuild_done d = { 0 };
	int tag_ok = 1, tag_bad = 2, fd;

	CHECK_EQ_INT(tablebuild__new(1, 0, &b), 0);
	if (!b)
		return;
	CHECK_EQ_INT(tablebuild__take(b, &d), 0);
	fd = open_self();
	CHECK(fd >= 0);
	CHECK_EQ_INT(tablebuild__submit(b, fd, 1000, "self", &tag_ok), 0);
	CHECK_EQ_INT(wait_take(b, &d, 10000), 1);
	CHECK(d.arg == &tag_ok);
	CHECK_EQ_STR(d.path, "self");
	CHECK_EQ_INT(d.err, 0);
	CHECK(d.ut != NULL);
	/* This test program's own .eh_frame: its functions have rows. */
	CHECK(d.ut && unwind_table__nrows(d.ut) > 10);
	CHECK(d.ns > 0);
	unwind_table__free(d.ut);
	CHECK_EQ_INT(tablebuild__take(b, &d), 0);

	fd = open_junk();
	CHECK(fd >= 0);
	CHECK_EQ_INT(tablebuild__submit(b, fd, 23, NULL, &tag_bad), 0);
	CHECK_EQ_INT(wait_take(b, &d, 10000), 1);
	CHECK(d.arg == &tag_bad);
	CHECK(d.path == NULL);
	CHECK(d.err < 0);
	CHECK(d.ut == NULL);
	tablebuild__free(b);
}

/* A lone worker limited to small files leaves a large one waiting; free drops it. */
static void test_small_only(void)
{
	struct tablebuild *b = NULL;
	struct tablebuild_done d = { 0 };
	int big = 1, small = 2;

	CHECK_EQ_INT(tablebuild__new(1, 4096, &b), 0);
	if (!b)
		return;
	CHECK_EQ_INT(tablebuild__submit(b, open_self(), 1 << 20, "big", &big), 0);
	CHECK_EQ_INT(tablebuild__submit(b, open_self(), 4096, "small", &small), 0);
	CHECK_EQ_INT(wait_take(b, &d, 10000), 1);
	CHECK(d.arg == &small);
	CHECK_EQ_INT(d.err, 0);
	unwind_table__free(d.ut);
	CHECK_EQ_INT(wait_take(b, &d, 300), 0);
	/* The big one's descriptor is closed and its path freed here. */
	tablebuild__free(b);
}

/* Many builds on two workers: each comes back once, with its own argument. */
static void test_many(void)
{
	enum { N = 24 };
	struct tablebuild *b = NULL;
	struct tablebuild_done d = { 0 };
	int tags[N], seen[N] = { 0 }, got = 0, bad = 0;

	CHECK_EQ_INT(tablebuild__new(2, 1 << 20, &b), 0);
	if (!b)
		return;
	for (int i = 0; i < N; i++) {
		tags[i] = i;
		/* Sizes decide the order only: every other one is "large". */
		CHECK_EQ_INT(tablebuild__submit(b, i % 3 ? open_self() : open_junk(),
						i % 2 ? 2u << 20 : 1000u + i, "x", &tags[i]),
			     0);
	}
	while (got < N && wait_take(b, &d, 10000)) {
		int i = *(int *)d.arg;

		got++;
		seen[i]++;
		bad += i % 3 ? d.err != 0 || !d.ut : d.err == 0 || d.ut != NULL;
		unwind_table__free(d.ut);
	}
	CHECK_EQ_INT(got, N);
	CHECK_EQ_INT(bad, 0);
	for (int i = 0; i < N; i++)
		CHECK_EQ_INT(seen[i], 1);
	tablebuild__free(b);
}

int main(void)
{
	test_args();
	test_build();
	test_small_only();
	test_many();
	T_DONE();
}
