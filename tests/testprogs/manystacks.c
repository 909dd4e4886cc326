/*
 * Many distinct stacks: each call walks DEPTH levels, choosing ms_a or ms_b
 * at every level by one bit of a counter (two call sites each), so there are
 * 2^DEPTH distinct user stacks; THREADS threads multiply the distinct keys.
 * Usage: manystacks THREADS SECONDS [DEPTH]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;
static int depth = 12;
static double seconds;

__attribute__((noinline)) unsigned long ms_leaf(unsigned long x)
{
	for (int i = 0; i < 3000; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return x;
}

unsigned long ms_a(int d, unsigned long bits, unsigned long x);
unsigned long ms_b(int d, unsigned long bits, unsigned long x);

__attribute__((noinline)) unsigned long ms_a(int d, unsigned long bits, unsigned long x)
{
	if (d == 0)
		return ms_leaf(x);
	if (bits & 1)
		x = ms_a(d - 1, bits >> 1, x);
	else
		x = ms_b(d - 1, bits >> 1, x);
	return x + 1;
}

__attribute__((noinline)) unsigned long ms_b(int d, unsigned long bits, unsigned long x)
{
	if (d == 0)
		return ms_leaf(x);
	if (bits & 1)
		x = ms_a(d - 1, bits >> 1, x);
	else
		x = ms_b(d - 1, bits >> 1, x);
	return x + 3;
}

static void *run(void *arg)
{
	struct timespec t0, t;
	unsigned long x = (unsigned long)arg, i = (unsigned long)arg * 7919;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int k = 0; k < 64; k++, i++)
			x = ms_a(depth, i * 2654435761u, x);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	sink += x;
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	pthread_t th[512];

	seconds = argc > 2 ? atof(argv[2]) : 5;
	if (argc > 3)
		depth = atoi(argv[3]);
	if (n < 1 || n > 512 || depth < 1 || depth > 60) {
		fprintf(stderr, "usage: manystacks THREADS(1..512) SECONDS [DEPTH]\n");
		return 2;
	}
	for (long i = 0; i < n; i++)
		pthread_create(&th[i], NULL, run, (void *)(i + 1));
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	return 0;
}
