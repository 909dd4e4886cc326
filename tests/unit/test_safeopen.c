/* safeopen: regular files open; FIFOs, devices, directories and symlinks as asked are refused unopened. */
#include "safeopen.h"
#include "t.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int main(void)
{
	char dir[] = "/tmp/test_safeopen.XXXXXX", path[256];
	struct stat st;
	int dfd, fd;

	if (!mkdtemp(dir))
		return 1;
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	CHECK(dfd >= 0);
	snprintf(path, sizeof(path), "%s/reg", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	CHECK(fd >= 0 && write(fd, "hello", 5) == 5);
	close(fd);
	snprintf(path, sizeof(path), "%s/fifo", dir);
	CHECK_EQ_INT(mkfifo(path, 0644), 0);
	snprintf(path, sizeof(path), "%s/sub", dir);
	CHECK_EQ_INT(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/link", dir);
	CHECK_EQ_INT(symlink("reg", path), 0);
	snprintf(path, sizeof(path), "%s/abs", dir);
	CHECK_EQ_INT(symlink("/reg", path), 0);

	/* A regular file reads, and its identity comes back. */
	memset(&st, 0, sizeof(st));
	fd = safeopen__regular(dfd, "reg", 0, &st);
	CHECK(fd >= 0);
	if (fd >= 0) {
		char b[8] = "";
		struct stat sb;

		CHECK_EQ_INT(read(fd, b, sizeof(b)), 5);
		CHECK(!fstat(fd, &sb) && sb.st_ino == st.st_ino && sb.st_dev == st.st_dev);
		CHECK_EQ_INT(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
		close(fd);
	}
	/* A FIFO would block an O_RDONLY open without O_NONBLOCK; it is refused before any such open. */
	CHECK_EQ_INT(safeopen__regular(dfd, "fifo", 0, NULL), -EINVAL);
	CHECK_EQ_INT(safeopen__regular(dfd, "sub", 0, NULL), -EINVAL);
	CHECK_EQ_INT(safeopen__regular(AT_FDCWD, "/dev/null", 0, NULL), -EINVAL);
	CHECK_EQ_INT(safeopen__regular(dfd, "missing", 0, NULL), -ENOENT);
	/* Symlinks: followed by default, refused as asked. */
	fd = safeopen__regular(dfd, "link", 0, NULL);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	CHECK_EQ_INT(safeopen__regular(dfd, "link", SAFEOPEN_NOFOLLOW, NULL), -EINVAL);
	CHECK_EQ_INT(safeopen__regular(dfd, "link", SAFEOPEN_IN_ROOT | SAFEOPEN_NO_SYMLINKS, NULL), -ELOOP);
	/* Inside a root, an absolute link resolves against that root, not the host's. */
	fd = safeopen__regular(dfd, "abs", SAFEOPEN_IN_ROOT, &st);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	/* Not on FUSE: a regular file on this file system passes the check. */
	fd = safeopen__regular(dfd, "/reg", SAFEOPEN_IN_ROOT | SAFEOPEN_NO_FUSE, NULL);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	CHECK_EQ_INT(safeopen__regular(dfd, "/../../dev/null", SAFEOPEN_IN_ROOT, NULL), -ENOENT);
	/* A descriptor that is not O_PATH-opened is taken all the same; a negative one passes through. */
	CHECK_EQ_INT(safeopen__reopen(-ENOENT, 0, NULL), -ENOENT);

	for (const char *n = "reg\0fifo\0link\0abs\0"; *n; n += strlen(n) + 1)
		unlinkat(dfd, n, 0);
	unlinkat(dfd, "sub", AT_REMOVEDIR);
	close(dfd);
	rmdir(dir);
	T_DONE();
}
