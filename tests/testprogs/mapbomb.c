/*
 * One process with many executable mappings of one file whose path is
 * nearly 4 KiB long: what a hostile user can make profd's per-process
 * caches hold. Creates DIR/<long path>/f, maps it N times (same offset, so
 * the kernel cannot merge them), prints "mapped N PATHLEN" and spins.
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

static volatile unsigned long sink;

static void spin(void)
{
	for (int i = 0; i < 100000; i++)
		sink += (unsigned long)i;
}

int main(int argc, char **argv)
{
	char comp[201], path[4096];
	long n;
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
	fd = open("f", O_RDWR | O_CREAT, 0755);
	if (fd < 0 || ftruncate(fd, 4096))
		return 1;
	for (long i = 0; i < n; i++) {
		if (mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
	}
	printf("mapped %ld %zu\n", n, len + 2);
	fflush(stdout);
	end = cpu_ns() + (long long)(atof(argv[3]) * 1e9);
	while (cpu_ns() < end)
		spin();
	return 0;
}
