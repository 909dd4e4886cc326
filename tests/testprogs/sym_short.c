/* A short-lived process: spins MS milliseconds of CPU in short_spin, then exits. Usage: sym_short MS */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static long long cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((noinline)) void short_spin(long ms)
{
	long long end = cpu_ns() + ms * 1000000LL;
	unsigned long x = sink;

	while (cpu_ns() < end)
		for (int i = 0; i < 2000; i++)
			x = x * 6364136223846793005ULL + 1;
	sink = x;
}

int main(int argc, char **argv)
{
	short_spin(argc > 1 ? atol(argv[1]) : 40);
	return 0;
}
