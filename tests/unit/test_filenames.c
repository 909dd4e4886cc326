/*
 * filenames: paths by (dev, inode) off the file cache, each given only for
 * the identity it was learned with, bounded, the first learned going first.
 */
#include "filecache.h"
#include "filenames.h"
#include "procmaps.h"
#include "t.h"

#include <errno.h>
#include <string.h>

static const struct filenames_id ID1 = { 4096, 1000, 2000 };

/* The path for (dev, ino) with identity id, or NULL; err: what get said. */
static const char *get_id(struct filenames *n, uint64_t dev, uint64_t ino, const struct filenames_id *id,
			  int *err)
{
	const char *p = NULL;
	int e = filenames__get(n, dev, ino, id, &p);

	if (err)
		*err = e;
	return e ? NULL : p;
}

/*
 * Learns path as events.c does: 1 when not wanted (known as it is, or not
 * a path to keep), else what learn says. Flags come from the path as
 * /proc/PID/maps shows it (" (deleted)").
 */
static int learn_id(struct filenames *n, uint64_t dev, uint64_t ino, const char *path,
		    const struct filenames_id *id)
{
	struct procmap m = { .start = 0x1000, .end = 0x2000, .dev = dev, .inode = ino,
			     .path = path };
	struct procmaps *pm = NULL;
	int err = -1;

	CHECK_EQ_INT(procmaps__from(&m, 1, &pm), 0);
	if (pm)
		err = filenames__wants(n, procmaps__get(pm, 0)) ? filenames__learn(n, procmaps__get(pm, 0), id) : 1;
	/* A path not to keep is refused when given all the same. */
	if (pm && err == 1 && (procmaps__get(pm, 0)->flags & PROCMAP_DELETED || strchr(path, '\n')))
		CHECK_EQ_INT(filenames__learn(n, procmaps__get(pm, 0), id), -EINVAL);
	procmaps__free(pm);
	return err;
}

static int learn(struct filenames *n, uint64_t dev, uint64_t ino, const char *path)
{
	return learn_id(n, dev, ino, path, &ID1);
}

static const char *get(struct filenames *n, uint64_t dev, uint64_t ino)
{
	return get_id(n, dev, ino, &ID1, NULL);
}

int main(void)
{
	struct filecache *fc = NULL;
	struct filenames *n = NULL;
	struct filenames_id other;
	int err;

	CHECK_EQ_INT(filecache__new(&fc), 0);
	if (!fc || filenames__new(fc, 2, &n)) {
		CHECK(!"filenames__new");
		T_DONE();
	}
	CHECK(get_id(n, 8, 1, &ID1, &err) == NULL);
	CHECK_EQ_INT(err, -ENOENT);
	CHECK_EQ_INT(learn(n, 8, 1, "/usr/bin/a"), 0);
	CHECK_EQ_STR(get(n, 8, 1), "/usr/bin/a");
	CHECK(get(n, 9, 1) == NULL); /* another device */
	/* A deleted file's path names another file now; a path with a newline is not one. */
	CHECK_EQ_INT(learn(n, 8, 2, "/tmp/gone (deleted)"), 1);
	CHECK_EQ_INT(learn(n, 8, 3, "/tmp/x\ny"), 1);
	CHECK(get(n, 8, 2) == NULL);
	CHECK(get(n, 8, 3) == NULL);
	/* The same file under a new name: the newest. */
	CHECK_EQ_INT(learn(n, 8, 1, "/opt/a"), 0);
	CHECK_EQ_STR(get(n, 8, 1), "/opt/a");
	CHECK_EQ_INT(filecache__count(fc), 1);
	/* Known as it is: nothing to learn (learn 1: not wanted, a valid path). */
	CHECK_EQ_INT(learn(n, 8, 1, "/opt/a"), 1);

	/*
	 * The number given to a new file (the old one deleted): equal size and
	 * mtime (cp -p), another change time. Not named by the old path, and
	 * that name is dropped: the same path is learned again, with the new
	 * file's identity, and the old identity gets nothing any more.
	 */
	other = ID1;
	other.ctime_ns++;
	CHECK(get_id(n, 8, 1, &other, &err) == NULL);
	CHECK_EQ_INT(err, -ESTALE);
	CHECK(get(n, 8, 1) == NULL);
	CHECK_EQ_INT(learn_id(n, 8, 1, "/opt/a", &other), 0);
	CHECK_EQ_STR(get_id(n, 8, 1, &other, NULL), "/opt/a");
	CHECK(get_id(n, 8, 1, &ID1, &err) == NULL);
	CHECK_EQ_INT(err, -ESTALE);
	CHECK_EQ_INT(learn_id(n, 8, 1, "/tmp/b", &ID1), 0);
	/* Size or mtime alone tells too. */
	other = ID1;
	other.size++;
	CHECK(get_id(n, 8, 1, &other, &err) == NULL);
	CHECK_EQ_INT(err, -ESTALE);
	CHECK_EQ_INT(learn(n, 8, 1, "/tmp/b"), 0);
	other = ID1;
	other.mtime_ns--;
	CHECK(get_id(n, 8, 1, &other, &err) == NULL);
	CHECK_EQ_INT(err, -ESTALE);
	CHECK_EQ_INT(learn(n, 8, 1, "/tmp/b"), 0);
	CHECK_EQ_STR(get(n, 8, 1), "/tmp/b");
	CHECK_EQ_INT(filecache__count(fc), 1);

	/* Beyond two, the first learned goes. */
	CHECK_EQ_INT(learn(n, 8, 4, "/usr/lib/b.so"), 0);
	CHECK_EQ_INT(learn(n, 8, 5, "/usr/lib/c.so"), 0);
	CHECK(get(n, 8, 1) == NULL);
	CHECK_EQ_STR(get(n, 8, 4), "/usr/lib/b.so");
	CHECK_EQ_STR(get(n, 8, 5), "/usr/lib/c.so");
	CHECK_EQ_INT(filecache__count(fc), 2);
	/* A dropped name keeps its turn: it goes first still, and its key stays bounded. */
	other = ID1;
	other.ctime_ns += 7;
	CHECK(get_id(n, 8, 4, &other, NULL) == NULL);
	CHECK_EQ_INT(learn(n, 8, 6, "/usr/lib/d.so"), 0);
	CHECK(get_id(n, 8, 4, &other, NULL) == NULL);
	CHECK_EQ_STR(get(n, 8, 5), "/usr/lib/c.so");
	CHECK_EQ_STR(get(n, 8, 6), "/usr/lib/d.so");
	CHECK_EQ_INT(filecache__count(fc), 2);
	/* Its entries leave the shared cache with it. */
	filenames__free(n);
	CHECK_EQ_INT(filecache__count(fc), 0);
	CHECK_EQ_INT(filenames__new(fc, 0, &n), -ENOMEM);
	filecache__free(fc);
	T_DONE();
}
