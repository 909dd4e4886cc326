/*
 * Signal frames: main -> loop spins while a SIGALRM handler (every 10 ms of
 * CPU time) burns most of the CPU in burn(). Built with -fomit-frame-pointer:
 * burn's callers are reached only through the handler's frame and the
 * kernel's signal frame (__restore_rt). Usage: signal_nofp SECONDS (of CPU
 * time: on a busy host the run takes longer, not fewer samples).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static volatile unsigned long sink;
static volatile sig_atomic_t stop;

__attribute__((noinline)) void burn(void)
{
	unsigned long x = sink;

	for (int i = 0; i < 8000000; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}

__attribute__((noinline)) void handler(int sig)
{
	(void)sig;
	burn();
}

static void on_alarm(int sig)
{
	(void)sig;
	stop = 1;
}

__attribute__((noinline)) void loop(void)
{
	while (!stop)
		sink++;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5;
	struct itimerval it = { { 0, 10000 }, { 0, 10000 } };
	struct sigaction sa = { .sa_handler = handler };
	timer_t t;
	struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR1 };
	struct itimerspec end = { .it_value = { (time_t)secs, (long)((secs - (time_t)secs) * 1e9) } };

	sigaction(SIGPROF, &sa, NULL);
	signal(SIGUSR1, on_alarm);
	timer_create(CLOCK_PROCESS_CPUTIME_ID, &sev, &t);
	timer_settime(t, 0, &end, NULL);
	setitimer(ITIMER_PROF, &it, NULL);
	loop();
	printf("done\n");
	return 0;
}
