/*
 * Fixed-work CPU job for the benchmarks: THREADS threads each run ROUNDS
 * rounds; a round calls bw_a, bw_b, bw_c and bw_d with 4:3:2:1 units of work
 * and bw_sys, which makes cheap system calls (kernel frames; how many varies
 * from round to round, see there). The work does not depend on time, so the
 * wall time measures how much a profiler slows it.
 * Usage: benchwork THREADS ROUNDS; prints "wall_ns N" and "cpu_ns N".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static long rounds;

static long long now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((noinline)) unsigned long bw_unit(unsigned long x)
{
	for (int i = 0; i < 50000; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return x;
}

#define WORK(name, units) \
	__attribute__((noinline)) unsigned long name(unsigned long x) \
	{ \
		for (int u = 0; u < (units); u++) \
			x = bw_unit(x); \
		return x; \
	}
WORK(bw_a, 4)
WORK(bw_b, 3)
WORK(bw_c, 2)
WORK(bw_d, 1)

/*
 * 0 to 2000 calls, 1000 on average, drawn from the thread's own state: the
 * total work stays fixed for given arguments, but a round's length varies,
 * so a sampler's fixed period cannot stay in step with the rounds (in step,
 * its samples would all land in the same functions for seconds at a time).
 */
__attribute__((noinline)) unsigned long bw_sys(unsigned long x)
{
	int n = (int)((x >> 33) % 2001);

	for (int i = 0; i < n; i++)
		x += syscall(SYS_getppid);
	return x;
}

__attribute__((noinline)) void *bw_thread(void *arg)
{
	unsigned long x = (unsigned long)arg;

	for (long r = 0; r < rounds; r++) {
		x = bw_a(x);
		x = bw_b(x);
		x = bw_c(x);
		x = bw_d(x);
		x = bw_sys(x);
	}
	sink += x;
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1;
	pthread_t th[256];
	long long w0, c0;

	rounds = argc > 2 ? atol(argv[2]) : 100;
	if (n < 1 || n > 256 || rounds < 1) {
		fprintf(stderr, "usage: benchwork THREADS(1..256) ROUNDS\n");
		return 2;
	}
	w0 = now_ns(CLOCK_MONOTONIC);
	c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	for (long i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, bw_thread, (void *)(i + 1))) {
			perror("pthread_create");
			return 1;
		}
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	printf("wall_ns %lld\ncpu_ns %lld\n", now_ns(CLOCK_MONOTONIC) - w0,
	       now_ns(CLOCK_PROCESS_CPUTIME_ID) - c0);
	return 0;
}
