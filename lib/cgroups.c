#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "cgroups.h"

#define MAX_DEPTH 32
#define MAX_ENTRIES 200000
/* Paths found one by one are kept up to this many bytes, then forgotten together. */
#define MAX_FOUND_BYTES (4u << 20)
/* FILEID_KERNFS: a cgroup2 directory's file handle is its 64-bit id. */
#define HANDLE_KERNFS 0xfe
/* A scan of the whole tree longer than this (hosts with 100,000s of cgroups) doubles the wait before the next. */
#define SLOW_SCAN_NS (50 * 1000000LL)
#define SCAN_WAIT_NS 1000000000LL
#define SCAN_WAIT_MAX_NS (64 * 1000000000LL)

struct cg_entry {
	uint64_t id;
	char *path;
};

struct cgroups {
	char *root;
	struct cg_entry *e; /* sorted by id */
	size_t n, cap;
	size_t bytes;       /* of the paths held */
	int64_t last_scan_ns, scan_wait_ns;
	int scanned;
	int mount_fd;       /* the cgroup2 mount, for open_by_handle_at; -1: not open */
	int no_handles;     /* the kernel or our capabilities refuse handles: scan instead */
};

static int add(struct cgroups *c, uint64_t id, const char *path)
{
	if (c->n >= MAX_ENTRIES)
		return -E2BIG;
	if (c->n == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 256;
		struct cg_entry *ne = realloc(c->e, ncap * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		c->e = ne;
		c->cap = ncap;
	}
	c->e[c->n].path = strdup(path);
	if (!c->e[c->n].path)
		return -ENOMEM;
	c->bytes += strlen(path) + 1;
	c->e[c->n++].id = id;
	return 0;
}

/* Walks with openat on directory fds so a renamed parent cannot redirect us. */
static int walk(struct cgroups *c, int dfd, char *path, size_t len, int depth)
{
	struct stat st;
	DIR *d;
	struct dirent *de;
	int err = 0;

	if (fstat(dfd, &st)) {
		close(dfd);
		return -errno;
	}
	err = add(c, st.st_ino, len ? path : "/");
	if (err || depth >= MAX_DEPTH) {
		close(dfd);
		return err;
	}
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -errno;
	}
	while ((de = readdir(d))) {
		size_t nl = strlen(de->d_name);
		int sub;

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if (len + 1 + nl >= 4096)
			continue;
		sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue;
		path[len] = '/';
		memcpy(path + len + 1, de->d_name, nl + 1);
		err = walk(c, sub, path, len + 1 + nl, depth + 1);
		path[len] = 0;
		if (err)
			break;
	}
	closedir(d);
	return err;
}

static int cmp(const void *a, const void *b)
{
	const struct cg_entry *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static void clear(struct cgroups *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->e[i].path);
	c->n = 0;
	c->bytes = 0;
}

static int rescan(struct cgroups *c)
{
	char path[4096] = "";
	int fd, err;

	clear(c);
	fd = open(c->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = walk(c, fd, path, 0, 0);
	qsort(c->e, c->n, sizeof(*c->e), cmp);
	/* A partial table (E2BIG) is still useful. */
	return err == -E2BIG ? 0 : err;
}

/*
 * BPF reports ids of the cgroup v2 hierarchy. Hosts in hybrid mode (v1
 * controllers, systemd's v2 tree at /sys/fs/cgroup/unified) mount it
 * elsewhere than /sys/fs/cgroup: find it in mountinfo.
 */
static char *cgroup2_mount(void)
{
	char line[4096], *found = NULL;
	struct statfs sf;
	FILE *f;

	if (!statfs("/sys/fs/cgroup", &sf) && sf.f_type == CGROUP2_SUPER_MAGIC)
		return strdup("/sys/fs/cgroup");
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return strdup("/sys/fs/cgroup");
	while (!found && fgets(line, sizeof(line), f)) {
		/* id parent major:minor root mountpoint options... - fstype source options */
		char *sep = strstr(line, " - "), *mp = line, *end;

		if (!sep || strncmp(sep + 3, "cgroup2 ", 8))
			continue;
		for (int i = 0; i < 4 && mp; i++)
			mp = strchr(mp, ' ') ? strchr(mp, ' ') + 1 : NULL;
		end = mp ? strchr(mp, ' ') : NULL;
		/* An escaped mount point (\040 for a space) is left alone: not where cgroup2 lives. */
		if (end && !memchr(mp, '\\', (size_t)(end - mp)))
			found = strndup(mp, (size_t)(end - mp));
	}
	fclose(f);
	return found ? found : strdup("/sys/fs/cgroup");
}

char *cgroups__mount(void)
{
	return cgroup2_mount();
}

int cgroups__new(const char *root, struct cgroups **out)
{
	struct cgroups *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->root = root ? strdup(root) : cgroup2_mount();
	if (!c->root) {
		free(c);
		return -ENOMEM;
	}
	c->mount_fd = open(c->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	c->scan_wait_ns = SCAN_WAIT_NS;
	*out = c;
	return 0;
}

void cgroups__free(struct cgroups *c)
{
	if (!c)
		return;
	clear(c);
	free(c->e);
	free(c->root);
	if (c->mount_fd >= 0)
		close(c->mount_fd);
	free(c);
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static const char *find(const struct cgroups *c, uint64_t id)
{
	size_t lo = 0, hi = c->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->e[mid].id == id)
			return c->e[mid].path;
		if (c->e[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/*
 * The one cgroup asked for, opened by its id (what BPF reports is its
 * kernfs file handle) and named by the link the kernel keeps: no walk of a
 * tree that any user with a delegated subtree can grow to 100,000s of
 * directories. Needs CAP_DAC_READ_SEARCH. 0 and the entry added, -ESTALE
 * when the cgroup is gone, -EOPNOTSUPP (or another -errno) to scan instead.
 */
static int by_handle(struct cgroups *c, uint64_t id)
{
	struct {
		struct file_handle fh;
		uint64_t id;
	} h = { .fh = { .handle_bytes = sizeof(uint64_t), .handle_type = HANDLE_KERNFS } };
	char self[40], path[4096];
	size_t rl = strlen(c->root), i;
	ssize_t n;
	int fd, err = 0;

	if (c->mount_fd < 0 || c->no_handles)
		return -EOPNOTSUPP;
	memcpy(h.fh.f_handle, &id, sizeof(id));
	fd = open_by_handle_at(c->mount_fd, &h.fh, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		if (err != -ESTALE && err != -ENOENT)
			c->no_handles = 1;
		return err;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	n = readlink(self, path, sizeof(path) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	path[n] = 0;
	/* Outside the mount as we see it (another cgroup namespace): let the scan say. */
	if ((size_t)n < rl || memcmp(path, c->root, rl) || (path[rl] && path[rl] != '/'))
		return -EOPNOTSUPP;
	if (c->bytes + (size_t)n > MAX_FOUND_BYTES || c->n >= MAX_ENTRIES)
		clear(c);
	err = add(c, id, path[rl] ? path + rl : "/");
	if (err)
		return err;
	/* Keep the table sorted: move the new entry down to its place. */
	for (i = c->n - 1; i > 0 && c->e[i - 1].id > id; i--) {
		struct cg_entry t = c->e[i - 1];

		c->e[i - 1] = c->e[i];
		c->e[i] = t;
	}
	return 0;
}

const char *cgroups__path(struct cgroups *c, uint64_t id, int64_t now_ns)
{
	const char *p = find(c, id);
	int64_t t0;
	int err;

	if (p || !id)
		return p;
	err = by_handle(c, id);
	if (!err)
		return find(c, id);
	if (err == -ESTALE || err == -ENOENT || err == -ENOMEM)
		return NULL;
	if (c->scanned && now_ns - c->last_scan_ns < c->scan_wait_ns)
		return NULL;
	c->scanned = 1;
	c->last_scan_ns = now_ns;
	t0 = mono_ns();
	err = rescan(c);
	c->scan_wait_ns = mono_ns() - t0 > SLOW_SCAN_NS ?
		(c->scan_wait_ns * 2 > SCAN_WAIT_MAX_NS ? SCAN_WAIT_MAX_NS : c->scan_wait_ns * 2) : SCAN_WAIT_NS;
	if (err)
		return NULL;
	return find(c, id);
}

uint64_t cgroups__mem_bytes(const struct cgroups *c)
{
	return sizeof(*c) + c->cap * sizeof(*c->e) + c->bytes;
}
