/*
 * Children forked without exec, the shapes of a job runner and a prefork
 * server. Usage:
 *   fork_children fork SECONDS [wait]
 *     (with wait: after SIGUSR1) every 100 ms forks a child (named fk_child)
 *     that burns 40 ms of CPU in child_burn and _exit()s;
 *   fork_children prefork WORKERS LIBRARY
 *     dlopen()s LIBRARY 300 ms after start-up, then (after SIGUSR1) forks
 *     WORKERS workers (named pf_worker) one after another, each burning
 *     75 ms in worker_own and 75 ms in the library's plugin_spin: a count
 *     of CPU time, not of wall time, so a loaded host gives as many samples.
 * The parent sleeps meanwhile: nearly every sample of the named children is
 * a child's.
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static long long cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((noinline)) static void mix(void)
{
	unsigned long x = sink;

	for (int i = 0; i < 20000; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}

__attribute__((noinline)) static void burn(long long ns)
{
	long long end = cpu_ns() + ns;

	do
		mix();
	while (cpu_ns() < end);
}

static void (*plugin_spin)(double);

/* The functions the children run, each its own frame above burn. */
__attribute__((noinline)) static void child_burn(void)
{
	burn(40 * 1000000LL);
}

__attribute__((noinline)) static void worker_own(void)
{
	burn(75 * 1000000LL);
}

static void prefork_worker(void)
{
	worker_own();
	plugin_spin(0.075);
}

/* A child named name that runs fn and exits; its pid in the parent, -1 when fork failed. */
static pid_t spawn(const char *name, void (*fn)(void))
{
	pid_t c = fork();

	if (c < 0)
		perror("fork");
	if (c == 0) {
		prctl(PR_SET_NAME, name);
		fn();
		_exit(0);
	}
	return c;
}

static void sleep_until(long long t)
{
	long long d = t - mono_ns();
	struct timespec ts;

	if (d <= 0)
		return;
	ts.tv_sec = d / 1000000000LL;
	ts.tv_nsec = d % 1000000000LL;
	nanosleep(&ts, NULL);
}

static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
	go = 1;
}

static void wait_usr1(void)
{
	while (!go)
		sleep_until(mono_ns() + 10 * 1000000LL);
}

static int run_fork(double secs, int wait)
{
	long long end, next;

	signal(SIGCHLD, SIG_IGN); /* reaped by the kernel */
	if (wait)
		wait_usr1();
	end = mono_ns() + (long long)(secs * 1e9);
	next = mono_ns();
	while (mono_ns() < end) {
		if (spawn("fk_child", child_burn) < 0)
			return 1;
		next += 100 * 1000000LL;
		sleep_until(next);
	}
	return 0;
}

static int run_prefork(int workers, const char *lib)
{
	void *h;

	sleep_until(mono_ns() + 300 * 1000000LL);
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	plugin_spin = (void (*)(double))dlsym(h, "plugin_spin");
	if (!plugin_spin)
		return 1;
	wait_usr1();
	for (int i = 0; i < workers; i++) {
		pid_t c = spawn("pf_worker", prefork_worker);

		if (c < 0)
			return 1;
		waitpid(c, NULL, 0);
		sleep_until(mono_ns() + 20 * 1000000LL);
	}
	return 0;
}

int main(int argc, char **argv)
{
	signal(SIGUSR1, on_usr1);
	if (argc >= 3 && !strcmp(argv[1], "fork"))
		return run_fork(atof(argv[2]), argc >= 4 && !strcmp(argv[3], "wait"));
	if (argc >= 4 && !strcmp(argv[1], "prefork"))
		return run_prefork(atoi(argv[2]), argv[3]);
	fprintf(stderr, "usage: fork_children fork SECONDS [wait] | prefork WORKERS LIBRARY\n");
	return 2;
}
