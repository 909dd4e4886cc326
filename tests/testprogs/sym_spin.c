/*
 * Burns CPU in spin_here -> spin_leaf: the symbolizer tests copy, strip,
 * delete or hide this binary and look for these names.
 * Usage: sym_spin CPU_SECONDS [GO_FIFO]: with GO_FIFO, waits for a line on
 * it first, so a test can start it (exec) before profd and let it run after.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static long long cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((noinline)) void spin_leaf(void)
{
	unsigned long x = sink;

	/*
	 * About 0.5 ms: the CPU-clock read between calls is a system call, and
	 * at 0.05 ms a call it was up to 13 % of the samples on a VM.
	 */
	for (int i = 0; i < 400000; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}

__attribute__((noinline)) void spin_here(double secs)
{
	long long end = cpu_ns() + (long long)(secs * 1e9);

	while (cpu_ns() < end)
		spin_leaf();
}

int main(int argc, char **argv)
{
	char c;

	if (argc < 2) {
		fprintf(stderr, "usage: sym_spin CPU_SECONDS [GO_FIFO]\n");
		return 2;
	}
	if (argc > 2) {
		int fd = open(argv[2], O_RDONLY | O_CLOEXEC); /* blocks until the test opens it for writing */

		if (fd < 0 || read(fd, &c, 1) != 1)
			return 1;
		close(fd);
	}
	spin_here(atof(argv[1]));
	return 0;
}
