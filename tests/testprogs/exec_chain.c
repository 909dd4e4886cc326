/*
 * A process that execs itself, the shape of a shell shim's chain (shim ->
 * env -> script -> program): each image a new load address. Usage:
 *   exec_chain MS [LEVEL [HOLD]]
 * forks a child that spins MS milliseconds of CPU in forked_<LEVEL> (a
 * shell's command substitution: a fork as soon as the image starts), spins
 * as long in chain_<LEVEL> (LEVEL 3 when absent), waits for the child, then
 * execs itself at LEVEL - 1; level 0 does the same and exits, once the
 * file HOLD exists when given (at most 60 s): the last image stays while
 * the caller looks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile unsigned long sink;

static long long cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((noinline)) static void spin(long ms)
{
	long long end = cpu_ns() + ms * 1000000LL;
	unsigned long x = sink;

	while (cpu_ns() < end)
		for (int i = 0; i < 2000; i++)
			x = x * 6364136223846793005ULL + 1;
	sink = x;
}

/* One function per image: a sample names the image it was taken in. */
__attribute__((noinline)) void chain_0(long ms) { spin(ms); }
__attribute__((noinline)) void chain_1(long ms) { spin(ms); }
__attribute__((noinline)) void chain_2(long ms) { spin(ms); }
__attribute__((noinline)) void chain_3(long ms) { spin(ms); }
__attribute__((noinline)) void forked_0(long ms) { spin(ms); }
__attribute__((noinline)) void forked_1(long ms) { spin(ms); }
__attribute__((noinline)) void forked_2(long ms) { spin(ms); }
__attribute__((noinline)) void forked_3(long ms) { spin(ms); }

int main(int argc, char **argv)
{
	static void (*const step[])(long) = { chain_0, chain_1, chain_2, chain_3 };
	static void (*const child[])(long) = { forked_0, forked_1, forked_2, forked_3 };
	long ms = argc > 1 ? atol(argv[1]) : 80;
	int level = argc > 2 ? atoi(argv[2]) : 3;
	char next[16], self[4096];
	ssize_t len;
	pid_t pid;

	if (level < 0 || level > 3)
		return 2;
	pid = fork();
	if (pid == 0) {
		child[level](ms);
		_exit(0);
	}
	step[level](ms);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	if (level == 0) {
		for (int i = 0; argc > 3 && i < 6000 && access(argv[3], F_OK); i++)
			usleep(10000);
		return 0;
	}
	snprintf(next, sizeof(next), "%d", level - 1);
	/* By its path, not /proc/self/exe: the command name (comm) comes from the path exec'd. */
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len <= 0)
		return 1;
	self[len] = 0;
	execl(self, argv[0], argv[1] ? argv[1] : "80", next, argc > 3 ? argv[3] : (char *)NULL, (char *)NULL);
	perror("exec_chain: exec");
	return 1;
}
