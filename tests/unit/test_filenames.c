/* filenames: paths by (dev, inode) off the file cache, bounded, the first learned going first. */
#include "filecache.h"
#include "filenames.h"
#include "procmaps.h"
#include "t.h"

#include <errno.h>

/* Flags come from the path as /proc/PID/maps shows it (" (deleted)"). */
static void learn(struct filenames *n, uint64_t dev, uint64_t ino, const char *path)
{
	struct procmap m = { .start = 0x1000, .end = 0x2000, .dev = dev, .inode = ino,
			     .path = path };
	struct procmaps *pm = NULL;

	CHECK_EQ_INT(procmaps__from(&m, 1, &pm), 0);
	if (pm)
		filenames__learn(n, pm);
	procmaps__free(pm);
}

int main(void)
{
	struct filecache *fc = NULL;
	struct filenames *n = NULL;

	CHECK_EQ_INT(filecache__new(&fc), 0);
	if (!fc || filenames__new(fc, 2, &n)) {
		CHECK(!"filenames__new");
		T_DONE();
	}
	CHECK(filenames__get(n, 8, 1) == NULL);
	learn(n, 8, 1, "/usr/bin/a");
	CHECK_EQ_STR(filenames__get(n, 8, 1), "/usr/bin/a");
	CHECK(filenames__get(n, 9, 1) == NULL); /* another device */
	/* A deleted file's path names another file now; a path with a newline is not one. */
	learn(n, 8, 2, "/tmp/gone (deleted)");
	learn(n, 8, 3, "/tmp/x\ny");
	CHECK(filenames__get(n, 8, 2) == NULL);
	CHECK(filenames__get(n, 8, 3) == NULL);
	/* The same file under a new name: the newest. */
	learn(n, 8, 1, "/opt/a");
	CHECK_EQ_STR(filenames__get(n, 8, 1), "/opt/a");
	CHECK_EQ_INT(filecache__count(fc), 1);
	/* Beyond two, the first learned goes. */
	learn(n, 8, 4, "/usr/lib/b.so");
	learn(n, 8, 5, "/usr/lib/c.so");
	CHECK(filenames__get(n, 8, 1) == NULL);
	CHECK_EQ_STR(filenames__get(n, 8, 4), "/usr/lib/b.so");
	CHECK_EQ_STR(filenames__get(n, 8, 5), "/usr/lib/c.so");
	CHECK_EQ_INT(filecache__count(fc), 2);
	/* Its entries leave the shared cache with it. */
	filenames__free(n);
	CHECK_EQ_INT(filecache__count(fc), 0);
	CHECK_EQ_INT(filenames__new(fc, 0, &n), -ENOMEM);
	filecache__free(fc);
	T_DONE();
}
