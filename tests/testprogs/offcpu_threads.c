/*
 * Threads with known off-CPU behaviour, for the off-CPU and wall-clock tests.
 *
 *   offcpu_threads block SECONDS
 *     "sleeper" sleeps 10 ms at a time inside block_in_nanosleep();
 *     "piper" waits for a pipe inside block_in_pipe_read(), fed one byte
 *     every 20 ms by "feeder".
 *   offcpu_threads busy SECONDS
 *     the process is pinned to one CPU; "busy0".."busy3" spin there.
 *   offcpu_threads alt SECONDS
 *     "alternator" blocks 200 us at a time in wait_here(), 40 times called
 *     through path_a() then 40 times through path_b(), and so on: the same
 *     pc and sp with two different stacks, what stack reuse must not merge.
 *     Also prints "path_a <ns> -1" and "path_b <ns> -1": time inside each.
 *
 * Prints "<thread name> <wall ns> <run-queue ns>" per thread (main thread as
 * "main"): the time from the thread's first instruction to its last, and the
 * kernel's own account of its run-queue wait over that time (schedstat), the
 * reference when other load shares the CPU; -1 where unavailable.
 *
 * The blocking system calls are issued inline: glibc's wrappers have no
 * frame pointer, so a frame-pointer walk from inside them skips the caller
 * we want to see.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double seconds;
static int pipefd[2];
static volatile unsigned long sink;

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline __attribute__((always_inline)) long sys3(long nr, long a, long b, long c)
{
#if defined(__x86_64__)
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
	return ret;
#else
	return syscall(nr, a, b, c);
#endif
}

__attribute__((noinline)) void block_in_nanosleep(void)
{
	struct timespec ts = { 0, 10000000 };

	sys3(SYS_nanosleep, (long)&ts, 0, 0);
}

__attribute__((noinline)) long block_in_pipe_read(char *c)
{
	return sys3(SYS_read, pipefd[0], (long)c, 1);
}

__attribute__((noinline)) void wait_here(void)
{
	struct timespec ts = { 0, 200000 };

	sys3(SYS_nanosleep, (long)&ts, 0, 0);
}

/* Identical bodies: one frame size, so wait_here runs at the same sp from both. */
__attribute__((noinline)) void path_a(void)
{
	wait_here();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void path_b(void)
{
	wait_here();
	__asm__ volatile("" ::: "memory");
}

static long long path_ns[2];

__attribute__((noinline)) void spin(void)
{
	unsigned long x = sink;

	for (int i = 0; i < 10000; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}

struct th {
	pthread_t t;
	char name[16];
	long long wall_ns;
	long long runq_ns;
};

/* The calling thread's run-queue wait so far (schedstat field 2), or -1. */
static long long run_delay_ns(void)
{
	long long on, wait = -1;
	FILE *f = fopen("/proc/thread-self/schedstat", "re");

	if (f && fscanf(f, "%lld %lld", &on, &wait) != 2)
		wait = -1;
	if (f)
		fclose(f);
	return wait;
}

static void *sleeper(void *arg)
{
	struct th *th = arg;
	int named = pthread_setname_np(pthread_self(), th->name);
	long long t0 = now_ns(), end = t0 + (long long)(seconds * 1e9);

	while (now_ns() < end)
		block_in_nanosleep();
	th->wall_ns = named ? -1 : now_ns() - t0;
	return NULL;
}

static void *piper(void *arg)
{
	struct th *th = arg;
	int named = pthread_setname_np(pthread_self(), th->name);
	long long t0 = now_ns();
	char c;

	while (block_in_pipe_read(&c) == 1)
		;
	th->wall_ns = named ? -1 : now_ns() - t0;
	return NULL;
}

static void *feeder(void *arg)
{
	struct th *th = arg;
	int named = pthread_setname_np(pthread_self(), th->name);
	long long t0 = now_ns(), end = t0 + (long long)(seconds * 1e9);
	struct timespec ts = { 0, 20000000 };

	while (now_ns() < end) {
		nanosleep(&ts, NULL);
		if (write(pipefd[1], "x", 1) != 1)
			break;
	}
	close(pipefd[1]); /* EOF ends the reader */
	th->wall_ns = named ? -1 : now_ns() - t0;
	return NULL;
}

static void *alternator(void *arg)
{
	struct th *th = arg;
	int named = pthread_setname_np(pthread_self(), th->name);
	long long t0 = now_ns(), end = t0 + (long long)(seconds * 1e9);

	for (int round = 0; now_ns() < end; round++) {
		long long a = now_ns();

		for (int i = 0; i < 40; i++)
			(round & 1) ? path_b() : path_a();
		path_ns[round & 1] += now_ns() - a;
	}
	th->wall_ns = named ? -1 : now_ns() - t0;
	return NULL;
}

static void *busy(void *arg)
{
	struct th *th = arg;
	int named = pthread_setname_np(pthread_self(), th->name);
	long long w0 = run_delay_ns(), t0 = now_ns(), end = t0 + (long long)(seconds * 1e9), w1;

	while (now_ns() < end)
		spin();
	th->wall_ns = named ? -1 : now_ns() - t0;
	w1 = run_delay_ns();
	th->runq_ns = w0 < 0 || w1 < 0 ? -1 : w1 - w0;
	return NULL;
}

/* The last online CPU: away from CPU 0, where most housekeeping lands. */
static int pin_to_one_cpu(void)
{
	cpu_set_t set;
	int cpu = -1;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -1;
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &set))
			cpu = i;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -1 : cpu;
}

int main(int argc, char **argv)
{
	long long t0 = now_ns();
	struct th th[4];
	void *(*fn[4])(void *);
	int n = 0;
	char *end;

	if (argc != 3 || (strcmp(argv[1], "block") && strcmp(argv[1], "busy") && strcmp(argv[1], "alt"))) {
		fprintf(stderr, "usage: offcpu_threads block|busy|alt SECONDS\n");
		return 2;
	}
	seconds = strtod(argv[2], &end);
	if (*end || seconds <= 0) {
		fprintf(stderr, "bad SECONDS '%s'\n", argv[2]);
		return 2;
	}
	memset(th, 0, sizeof(th));
	if (!strcmp(argv[1], "block")) {
		if (pipe2(pipefd, O_CLOEXEC)) {
			perror("pipe2");
			return 1;
		}
		for (int i = 0; i < 4; i++)
			th[i].runq_ns = -1;
		strcpy(th[0].name, "sleeper"), fn[0] = sleeper;
		strcpy(th[1].name, "piper"), fn[1] = piper;
		strcpy(th[2].name, "feeder"), fn[2] = feeder;
		n = 3;
	} else if (!strcmp(argv[1], "alt")) {
		th[0].runq_ns = -1;
		strcpy(th[0].name, "alternator"), fn[0] = alternator;
		n = 1;
	} else {
		int cpu = pin_to_one_cpu();

		if (cpu < 0) {
			perror("sched_setaffinity");
			return 1;
		}
		fprintf(stderr, "pinned to CPU %d\n", cpu);
		for (n = 0; n < 4; n++) {
			snprintf(th[n].name, sizeof(th[n].name), "busy%d", n);
			fn[n] = busy;
		}
	}
	for (int i = 0; i < n; i++) {
		if (pthread_create(&th[i].t, NULL, fn[i], &th[i])) {
			perror("pthread_create");
			return 1;
		}
	}
	for (int i = 0; i < n; i++)
		pthread_join(th[i].t, NULL);
	for (int i = 0; i < n; i++)
		printf("%s %lld %lld\n", th[i].name, th[i].wall_ns, th[i].runq_ns);
	if (!strcmp(argv[1], "alt"))
		printf("path_a %lld -1\npath_b %lld -1\n", path_ns[0], path_ns[1]);
	printf("main %lld -1\n", now_ns() - t0);
	return 0;
}
