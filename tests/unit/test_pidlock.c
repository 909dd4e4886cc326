/* pidlock: one holder per directory, the holder's pid, symbolic links refused, the file removed. */
#include "pidlock.h"
#include "t.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[] = "/tmp/test_pidlock.XXXXXX";

static void path_of(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", dir, name);
}

static void test_take(void)
{
	struct pidlock *a = NULL, *b = NULL;
	char sub[PATH_MAX], pidfile[PATH_MAX + 16], buf[32] = "";
	pid_t holder = -1;
	int fd;

	path_of(sub, sizeof(sub), "state");
	/* The directory is made, 0700. */
	CHECK_EQ_INT(pidlock__take(sub, &a, &holder), 0);
	CHECK_EQ_INT(holder, 0);
	{
		struct stat st;

		CHECK(!stat(sub, &st) && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700);
	}
	snprintf(pidfile, sizeof(pidfile), "%s/profd.pid", sub);
	fd = open(pidfile, O_RDONLY);
	CHECK(fd >= 0 && read(fd, buf, sizeof(buf) - 1) > 0);
	if (fd >= 0)
		close(fd);
	CHECK_EQ_INT(atoi(buf), getpid());
	/* A second taker, even in the same process, is refused and told who holds it. */
	CHECK_EQ_INT(pidlock__take(sub, &b, &holder), -EBUSY);
	CHECK_EQ_INT(holder, getpid());
	pidlock__free(a);
	CHECK(access(pidfile, F_OK) && errno == ENOENT);
	/* Free again: the next one takes it. */
	CHECK_EQ_INT(pidlock__take(sub, &b, &holder), 0);
	pidlock__free(b);
	rmdir(sub);
}

/* A holder that dies without cleaning up leaves its file; the lock goes with it. */
static void test_dead_holder(void)
{
	struct pidlock *l = NULL;
	char sub[PATH_MAX];
	pid_t holder = -1, child;
	int status = 0;

	path_of(sub, sizeof(sub), "dead");
	child = fork();
	if (child == 0)
		_exit(pidlock__take(sub, &l, &holder) ? 1 : 0); /* exits holding it, no free */
	CHECK(child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0);
	CHECK_EQ_INT(pidlock__take(sub, &l, &holder), 0);
	pidlock__free(l);
	rmdir(sub);
}

static void test_symlink(void)
{
	struct pidlock *l = NULL;
	char target[PATH_MAX], link[PATH_MAX];
	pid_t holder = -1;

	path_of(target, sizeof(target), "real");
	path_of(link, sizeof(link), "link");
	CHECK_EQ_INT(mkdir(target, 0700), 0);
	CHECK_EQ_INT(symlink(target, link), 0);
	CHECK_EQ_INT(pidlock__open_dir(link), -ELOOP);
	CHECK_EQ_INT(pidlock__take(link, &l, &holder), -ELOOP);
	/* Nothing was written where the link points. */
	path_of(target, sizeof(target), "real/profd.pid");
	CHECK(access(target, F_OK) && errno == ENOENT);
	unlink(link);
	path_of(target, sizeof(target), "real");
	rmdir(target);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_take();
	test_dead_holder();
	test_symlink();
	rmdir(dir);
	T_DONE();
}
