/*
 * A mostly idle process, as most on a host are: burns BURN_MS of CPU in
 * duty_burn, sleeps SLEEP_MS, until killed. Usage: sym_duty BURN_MS SLEEP_MS
 */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static long long cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((noinline)) void duty_burn(long ms)
{
	long long end = cpu_ns() + ms * 1000000LL;
	unsigned long x = sink;

	while (cpu_ns() < end)
		for (int i = 0; i < 2000; i++)
			x = x * 6364136223846793005ULL + 1;
	sink = x;
}

int main(int argc, char **argv)
{
	long burn = argc > 1 ? atol(argv[1]) : 2, sleep_ms = argc > 2 ? atol(argv[2]) : 500;
	struct timespec d = { sleep_ms / 1000, (sleep_ms % 1000) * 1000000L };

	for (;;) {
		duty_burn(burn);
		nanosleep(&d, NULL);
	}
}
