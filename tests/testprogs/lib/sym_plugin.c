/* A library only ever dlopen()ed (by sym_dlopen): its functions are not mapped at exec. */
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void plugin_leaf(void)
{
	unsigned long x = sink;

	for (int i = 0; i < 20000; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}

void plugin_spin(double secs)
{
	struct timespec ts;
	long long end;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	end = ts.tv_sec * 1000000000LL + ts.tv_nsec + (long long)(secs * 1e9);
	do {
		plugin_leaf();
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	} while (ts.tv_sec * 1000000000LL + ts.tv_nsec < end);
}
