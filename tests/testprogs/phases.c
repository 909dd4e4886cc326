/*
 * A known CPU split: main -> run -> phase_{a,b,c} -> leaf, burning 50 %, 30 %
 * and 20 % of the thread's CPU time. Budgets per round (85/51/34 ms) stay far
 * from multiples of the ~10 ms sampling period so they do not beat against it.
 * Usage: phases SECONDS; prints the measured CPU nanoseconds per phase.
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

/*
 * Two loops: a sampling interrupt lands on the instruction after a long one
 * (the multiply), so a one-loop leaf was sampled at a single pc; with two,
 * its samples fall on two pcs at least, which 50-formats' pprof check needs.
 */
__attribute__((noinline)) void leaf(void)
{
	unsigned long x = sink;

	for (int i = 0; i < 10000; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	for (int i = 0; i < 10000; i++)
		x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL;
	sink = x;
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

__attribute__((noinline)) void run(double seconds, long long spent[3])
{
	long long end = thread_ns() + (long long)(seconds * 1e9);

	while (thread_ns() < end) {
		spent[0] += phase_a(85000000);
		spent[1] += phase_b(51000000);
		spent[2] += phase_c(34000000);
	}
}

int main(int argc, char **argv)
{
	long long spent[3] = { 0 };
	double seconds = argc > 1 ? atof(argv[1]) : 5;

	run(seconds, spent);
	printf("phase_a %lld\nphase_b %lld\nphase_c %lld\n", spent[0], spent[1], spent[2]);
	return 0;
}
