/*
 * main -> loop -> qsort (libc, no frame pointers) -> compare, built with
 * -fomit-frame-pointer: under frame pointers compare loses everything above
 * qsort. Usage: qsort_nofp SECONDS (of CPU time: on a busy host the run
 * takes longer, not fewer samples).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 20000

static unsigned data[N], work[N];

/* Heavy enough that most of the sorting time is spent here, not in libc. */
__attribute__((noinline)) int compare(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	for (int i = 0; i < 40; i++) {
		x = x * 2654435761u + 1;
		y = y * 2654435761u + 1;
	}
	return x < y ? -1 : x > y;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) unsigned long loop(double seconds)
{
	double end = now() + seconds;
	unsigned long rounds = 0;

	while (now() < end) {
		memcpy(work, data, sizeof(work));
		qsort(work, N, sizeof(work[0]), compare);
		rounds++;
	}
	return rounds;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5;

	for (unsigned i = 0; i < N; i++)
		data[i] = i * 2246822519u;
	printf("rounds %lu\n", loop(seconds));
	return 0;
}
