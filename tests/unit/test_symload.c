/* symload: reads on the worker, taken oldest first; the queue's bound; reads under way at free. */
#include "elfsym.h"
#include "symload.h"
#include "t.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((noinline)) int symload_target_fn(int x)
{
	return x * 7 + 1;
}

static int self_fd(void)
{
	return open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
}

/* Takes one finished read (10 s at most). */
static int take_wait(struct symload *l, struct symload_done *d)
{
	for (int i = 0; i < 1000; i++) {
		if (symload__take(l, d))
			return 1;
		usleep(10000);
	}
	return 0;
}

int main(void)
{
	struct symload *l = NULL;
	struct symload_done d;
	const char *name = NULL;
	int fd;

	CHECK_EQ_INT(symload__new(1, &l), 0);
	if (!l)
		T_DONE();
	CHECK_EQ_INT(symload__take(l, &d), 0);
	/* Three reads, each of our own binary; the bound of 1 byte lets one wait at a time. */
	for (uint64_t k = 1; k <= 3; k++)
		CHECK_EQ_INT(symload__submit(l, self_fd(), 0, k), 0);
	CHECK_EQ_INT(symload__pending(l), 3);
	for (uint64_t k = 1; k <= 3; k++) {
		CHECK(take_wait(l, &d));
		CHECK_EQ_INT(d.key, k);
		CHECK_EQ_INT(d.err, 0);
		CHECK(d.es != NULL);
		CHECK(d.ns > 0);
		if (d.es) {
			Dl_info in;

			/* Our own function, at its link-time address (a PIE is loaded at dli_fbase). */
			name = NULL;
			CHECK(dladdr((void *)symload_target_fn, &in) != 0);
			elfsym__lookup(d.es, (uint64_t)(uintptr_t)symload_target_fn - (uint64_t)(uintptr_t)in.dli_fbase,
				       &name, NULL);
			CHECK_EQ_STR(name, "symload_target_fn");
		}
		elfsym__free(d.es);
	}
	CHECK_EQ_INT(symload__pending(l), 0);

	/* Not an ELF file: the read fails, the error is handed back. */
	{
		char path[] = "/tmp/test_symload.XXXXXX";
		int tf = mkstemp(path);

		CHECK(tf >= 0);
		if (tf >= 0) {
			CHECK_EQ_INT(write(tf, "not an elf file, not at all\n", 28), 28);
			unlink(path);
			CHECK_EQ_INT(symload__submit(l, tf, 0, 9), 0);
			CHECK(take_wait(l, &d));
			CHECK_EQ_INT(d.key, 9);
			CHECK(d.err < 0);
			CHECK(d.es == NULL);
		}
	}

	/* The queue's bound: one more is refused and the descriptor stays the caller's. */
	for (int i = 0; i < SYMLOAD_MAX_JOBS; i++)
		CHECK_EQ_INT(symload__submit(l, self_fd(), 0, 100 + (uint64_t)i), 0);
	fd = self_fd();
	CHECK_EQ_INT(symload__submit(l, fd, 0, 999), -EBUSY);
	CHECK(fcntl(fd, F_GETFD) >= 0);
	close(fd);
	/* Freed with reads waiting and one under way: they are dropped, descriptors closed. */
	symload__free(l);
	T_DONE();
}
