/*
 * Maps a library whose path (with FAKE) is covered by FAKE, bound over it
 * in a user and mount namespace of its own, as any user may, and calls FUNC
 * of the library it mapped. The library is opened before the bind and
 * mapped through that descriptor after it: at every moment a profiler
 * looks, the kernel maps the real file while the path, as this process
 * sees it, names another. Prints "ready" once running.
 * Usage: decoy LIB FAKE|- FUNC CPU_SECONDS
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <time.h>
#include <unistd.h>

static long long cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ok;

	if (fd < 0)
		return -1;
	ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
	close(fd);
	return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
	void (*fn)(void);
	char map[64], self[64];
	unsigned uid = getuid(), gid = getgid();
	const char *lib = argv[1];
	long long end;
	void *h;
	int fd;

	if (argc != 5)
		return 2;
	if (strcmp(argv[2], "-")) {
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS)) {
			perror("decoy: unshare");
			return 1;
		}
		snprintf(map, sizeof(map), "0 %u 1", uid);
		if (write_file("/proc/self/setgroups", "deny") || write_file("/proc/self/uid_map", map))
			return 1;
		snprintf(map, sizeof(map), "0 %u 1", gid);
		if (write_file("/proc/self/gid_map", map))
			return 1;
		fd = open(argv[1], O_RDONLY | O_CLOEXEC);
		if (fd < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
		    mount(argv[2], argv[1], NULL, MS_BIND, NULL)) {
			perror("decoy: mount");
			return 1;
		}
		snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
		lib = self;
	}
	h = dlopen(lib, RTLD_NOW);
	if (!h || !(fn = (void (*)(void))dlsym(h, argv[3]))) {
		fprintf(stderr, "decoy: %s\n", dlerror());
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	end = cpu_ns() + (long long)(atof(argv[4]) * 1e9);
	while (cpu_ns() < end)
		fn();
	return 0;
}
