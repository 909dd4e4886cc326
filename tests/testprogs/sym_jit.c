/*
 * Runs machine code from anonymous executable memory, as a JIT does, and
 * prints where it is ("jit START SIZE"). With "own", it writes its own perf
 * map naming the code jit_own_func; with "wait", it runs its code only once
 * a perf map for its pid exists (up to 5 s), so a test that plants one knows
 * the profiler never looked before it was there.
 * Usage: sym_jit CPU_SECONDS [own|wait]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* mov ecx, 0x100000; 1: dec ecx; jnz 1b; ret */
static const unsigned char code[] = { 0xb9, 0x00, 0x00, 0x10, 0x00, 0xff, 0xc9, 0x75, 0xfc, 0xc3 };

static long long cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	size_t size = 4096;
	unsigned char *mem = mmap(NULL, size, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long long end;
	void (*fn)(void);

	if (argc < 2 || mem == MAP_FAILED)
		return 2;
	memcpy(mem, code, sizeof(code));
	fn = (void (*)(void))mem;
	if (argc > 2 && !strcmp(argv[2], "own")) {
		char path[64];
		FILE *f;

		snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
		f = fopen(path, "w");
		if (!f)
			return 1;
		fprintf(f, "%lx %zx jit_own_func\n", (unsigned long)mem, sizeof(code));
		fclose(f);
	}
	printf("jit %lx %zx\n", (unsigned long)mem, sizeof(code));
	fflush(stdout);
	if (argc > 2 && !strcmp(argv[2], "wait")) {
		char path[64];

		snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
		for (int i = 0; i < 500 && access(path, F_OK); i++)
			usleep(10000);
	}
	end = cpu_ns() + (long long)(atof(argv[1]) * 1e9);
	while (cpu_ns() < end)
		fn();
	return 0;
}
