/*
 * A native stack of a given depth for cost benchmarks: DEPTH nested calls,
 * then a busy loop in the innermost one for SECS seconds.
 * Usage: deep DEPTH SECS
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void spin(double end)
{
	while (now() < end)
		for (int i = 0; i < 100000; i++)
			sink = sink * 6364136223846793005ULL + 1;
}

__attribute__((noinline)) static void nest(int depth, double end)
{
	if (depth > 1)
		nest(depth - 1, end);
	else
		spin(end);
	sink++; /* not a tail call: the frame stays */
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: deep DEPTH SECS\n");
		return 2;
	}
	nest(atoi(argv[1]), now() + atof(argv[2]));
	return 0;
}
