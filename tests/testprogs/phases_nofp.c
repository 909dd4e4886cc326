/*
 * The 50/30/20 CPU split of phases.c, one call deeper (main -> run -> mid ->
 * phase_{a,b,c} -> leaf) and built with -fomit-frame-pointer: frame pointers
 * lose the callers here, DWARF unwind tables do not.
 * Usage: phases_nofp SECONDS; prints the measured CPU nanoseconds per phase.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static long long thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A stack frame of its own, so the leaf's CFA is rsp-based with an offset. */
__attribute__((noinline)) void leaf(void)
{
	volatile unsigned long buf[8];
	unsigned long x = sink;

	for (int i = 0; i < 20000; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		buf[i & 7] = x;
	}
	sink = x + buf[3];
}

#define PHASE(name) \
	__attribute__((noinline)) long long name(long long budget) \
	{ \
		long long t0 = thread_ns(), t; \
		do { \
			leaf(); \
			t = thread_ns(); \
		} while (t - t0 < budget); \
		return t - t0; \
	}

PHASE(phase_a)
PHASE(phase_b)
PHASE(phase_c)

__attribute__((noinline)) void mid(long long spent[3])
{
	/* Budgets stay off multiples of the ~10 ms sampling period. */
	spent[0] += phase_a(85000000);
	spent[1] += phase_b(51000000);
	spent[2] += phase_c(34000000);
}

__attribute__((noinline)) void run(double seconds, long long spent[3])
{
	long long end = thread_ns() + (long long)(seconds * 1e9);

	while (thread_ns() < end)
		mid(spent);
}

int main(int argc, char **argv)
{
	long long spent[3] = { 0 };
	double seconds = argc > 1 ? atof(argv[1]) : 5;

	run(seconds, spent);
	printf("phase_a %lld\nphase_b %lld\nphase_c %lld\n", spent[0], spent[1], spent[2]);
	return 0;
}
