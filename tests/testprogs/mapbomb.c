/*
 * One process with many executable mappings of one file whose path is
 * nearly 4 KiB long: what a hostile user can make profd's per-process
 * caches hold. Creates DIR/<long path>/f holding a small loop of machine
 * code, maps it N times (same offset, so the kernel cannot merge them),
 * prints "mapped N PATHLEN" and runs the loop through every mapping in turn:
 * the samples land in them, so a profiler has to know them all.
 * Usage: mapbomb DIR N CPU_SECONDS
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static long long cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* mov ecx, 0x10000; 1: dec ecx; jnz 1b; ret */
static const unsigned char code[] = { 0xb9, 0x00, 0x00, 0x01, 0x00, 0xff, 0xc9, 0x75, 0xfc, 0xc3 };

int main(int argc, char **argv)
{
	char comp[201], path[4096];
	void **maps;
	long n, k = 0;
	long long end;
	size_t len;
	int fd;

	if (argc != 4 || chdir(argv[1]))
		return 2;
	n = atol(argv[2]);
	memset(comp, 'p', 200);
	comp[200] = 0;
	if (!getcwd(path, sizeof(path)))
		return 1;
	len = strlen(path);
	/* Components of 200 bytes until the path is about 3.8 KB. */
	while (len + 201 + 2 < 3800) {
		if (mkdir(comp, 0755) && access(comp, F_OK))
			return 1;
		if (chdir(comp))
			return 1;
		len += 201;
	}
	fd = open("f", O_RDWR | O_CREAT | O_TRUNC, 0755);
	if (fd < 0 || write(fd, code, sizeof(code)) != (ssize_t)sizeof(code) || ftruncate(fd, 4096))
		return 1;
	maps = calloc((size_t)n, sizeof(*maps));
	if (!maps)
		return 1;
	for (long i = 0; i < n; i++) {
		maps[i] = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
		if (maps[i] == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
	}
	printf("mapped %ld %zu\n", n, len + 2);
	fflush(stdout);
	end = cpu_ns() + (long long)(atof(argv[3]) * 1e9);
	while (cpu_ns() < end)
		((void (*)(void))maps[k++ % n])();
	return 0;
}
