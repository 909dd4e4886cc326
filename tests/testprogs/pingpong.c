/*
 * Context-switch-heavy benchmark: two threads bounce one byte over two pipes.
 * Every round trip blocks and wakes each thread once.
 *
 *   pingpong SECONDS [same|free]
 *     same: both threads pinned to one CPU, so every round trip is two
 *           direct switches between them (the worst case for a switch hook)
 *     free: the scheduler places them (default)
 *
 * Prints "round_trips N", "seconds S" and "ns_per_round_trip X", then per
 * thread (ping: the main thread, pong) "thread NAME RUN_NS RUNQ_NS LIFE_NS":
 * the kernel's account of its time on a CPU and waiting for one
 * (schedstat) over its life, to check an off-CPU profile against.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int ab[2], ba[2];
static long long pong_run, pong_delay, pong_life;

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The calling thread's schedstat: time on a CPU and waiting for one, ns (-1: unknown). */
static void schedstat(long long *run, long long *delay)
{
	FILE *f = fopen("/proc/thread-self/schedstat", "re");

	*run = *delay = -1;
	if (f) {
		if (fscanf(f, "%lld %lld", run, delay) != 2)
			*run = *delay = -1;
		fclose(f);
	}
}

static void *pong(void *arg)
{
	long long t0 = now_ns();
	char c;

	while (read(ab[0], &c, 1) == 1)
		if (write(ba[1], &c, 1) != 1)
			break;
	close(ba[1]);
	schedstat(&pong_run, &pong_delay);
	pong_life = now_ns() - t0;
	return NULL;
}

int main(int argc, char **argv)
{
	double secs;
	char *end, c = 'x';
	long long t0, t, n = 0, start = now_ns(), run, delay;
	pthread_t t_pong;

	if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "same") && strcmp(argv[2], "free"))) {
		fprintf(stderr, "usage: pingpong SECONDS [same|free]\n");
		return 2;
	}
	secs = strtod(argv[1], &end);
	if (*end || secs <= 0) {
		fprintf(stderr, "bad SECONDS '%s'\n", argv[1]);
		return 2;
	}
	if (argc == 3 && !strcmp(argv[2], "same")) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(sched_getcpu(), &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			perror("sched_setaffinity");
			return 1;
		}
	}
	if (pipe2(ab, O_CLOEXEC) || pipe2(ba, O_CLOEXEC) || pthread_create(&t_pong, NULL, pong, NULL)) {
		perror("set-up");
		return 1;
	}
	t0 = now_ns();
	do {
		/* Check the clock every 1024 round trips: it is not free either. */
		for (int i = 0; i < 1024; i++, n++)
			if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1) {
				perror("ping");
				return 1;
			}
		t = now_ns();
	} while (t - t0 < secs * 1e9);
	close(ab[1]);
	pthread_join(t_pong, NULL);
	schedstat(&run, &delay);
	printf("round_trips %lld\nseconds %.3f\nns_per_round_trip %.1f\n", n, (t - t0) / 1e9,
	       (double)(t - t0) / n);
	printf("thread ping %lld %lld %lld\nthread pong %lld %lld %lld\n", run, delay, now_ns() - start,
	       pong_run, pong_delay, pong_life);
	return 0;
}
