/*
 * Process and thread churn: starts NPROCS processes (fork + exec of itself)
 * at RATE a second (0: as fast as four at a time allow), each spinning
 * SPIN_MS of CPU in churn_child_spin, and NTHREADS short threads spinning
 * SPIN_MS in churn_thread_spin. Prints the CPU nanoseconds they used, so a
 * test can tell how many samples to expect.
 * Usage: churn NPROCS NTHREADS SPIN_MS [RATE]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static long spin_ms;
static long long thread_cpu_total;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static long long clk(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void spin(void)
{
	long long end = clk(CLOCK_THREAD_CPUTIME_ID) + spin_ms * 1000000LL;
	unsigned long x = sink;

	while (clk(CLOCK_THREAD_CPUTIME_ID) < end)
		for (int i = 0; i < 2000; i++)
			x = x * 6364136223846793005ULL + 1;
	sink = x;
}

__attribute__((noinline)) void churn_child_spin(void) { spin(); }

__attribute__((noinline)) void *churn_thread_spin(void *arg)
{
	long long t0 = clk(CLOCK_THREAD_CPUTIME_ID);

	(void)arg;
	spin();
	pthread_mutex_lock(&mu);
	thread_cpu_total += clk(CLOCK_THREAD_CPUTIME_ID) - t0;
	pthread_mutex_unlock(&mu);
	return NULL;
}

int main(int argc, char **argv)
{
	long nprocs, nthreads, rate, started = 0, live = 0, threads_done = 0;
	long long t0 = clk(CLOCK_MONOTONIC);
	struct rusage ru;
	char self[4096];
	ssize_t n;

	if (argc == 3 && !strcmp(argv[1], "--child")) {
		spin_ms = atol(argv[2]);
		churn_child_spin();
		return 0;
	}
	if (argc < 4) {
		fprintf(stderr, "usage: churn NPROCS NTHREADS SPIN_MS [RATE]\n");
		return 2;
	}
	nprocs = atol(argv[1]);
	nthreads = atol(argv[2]);
	spin_ms = atol(argv[3]);
	rate = argc > 4 ? atol(argv[4]) : 0;
	/* Exec by the real path: through /proc/self/exe the children would be named "exe". */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return perror("readlink /proc/self/exe"), 1;
	self[n] = 0;

	while (started < nprocs || threads_done < nthreads) {
		if (started < nprocs) {
			if (rate > 0) {
				long long due = t0 + started * 1000000000LL / rate, t = clk(CLOCK_MONOTONIC);

				if (due > t) {
					struct timespec d = { (due - t) / 1000000000, (due - t) % 1000000000 };
					nanosleep(&d, NULL);
				}
			}
			while (live >= 4 && wait(NULL) > 0)
				live--;
			pid_t p = fork();
			if (p == 0) {
				execl(self, argv[0], "--child", argv[3], (char *)NULL);
				_exit(127);
			}
			if (p > 0) {
				started++;
				live++;
			}
		}
		/* Threads go in batches of 4 between the forks. */
		if (threads_done < nthreads && (started * nthreads >= threads_done * nprocs || started >= nprocs)) {
			pthread_t th[4];
			int k = 0;

			for (; k < 4 && threads_done + k < nthreads; k++)
				pthread_create(&th[k], NULL, churn_thread_spin, NULL);
			for (int i = 0; i < k; i++)
				pthread_join(th[i], NULL);
			threads_done += k;
		}
		while (live > 0 && waitpid(-1, NULL, WNOHANG) > 0)
			live--;
	}
	while (wait(NULL) > 0)
		;
	getrusage(RUSAGE_CHILDREN, &ru);
	printf("procs %ld\nthreads %ld\nchild_cpu_ns %lld\nthread_cpu_ns %lld\nwall_ns %lld\n", started,
	       threads_done, (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL, thread_cpu_total,
	       clk(CLOCK_MONOTONIC) - t0);
	return 0;
}
