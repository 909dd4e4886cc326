/* Parser for /proc/<pid>/maps: untrusted text, so every field is bounded and checked. */
#include "parse.h"
#include "procmaps.h"
#include "safeopen.h"
#include "strtab.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/types.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* linux/fs.h since 6.11; older headers lack it, the kernel answers ENOTTY. */
#ifndef PROCMAP_QUERY
struct procmap_query {
	__u64 size;
	__u64 query_flags;
	__u64 query_addr;
	__u64 vma_start;
	__u64 vma_end;
	__u64 vma_flags;
	__u64 vma_page_size;
	__u64 vma_offset;
	__u64 inode;
	__u32 dev_major;
	__u32 dev_minor;
	__u32 vma_name_size;
	__u32 build_id_size;
	__u64 vma_name_addr;
	__u64 build_id_addr;
};
#define PROCMAP_QUERY _IOWR('f', 17, struct procmap_query)
#define PROCMAP_QUERY_VMA_EXECUTABLE 0x04
#define PROCMAP_QUERY_COVERING_OR_NEXT_VMA 0x10
#endif

/* vm.max_map_count defaults to 65530; a few processes raise it. */
#define MAX_MAPPINGS (1u << 20)
#define MAX_PATH_LEN 4096
/* One snapshot's heap unless the caller sets a budget (procmaps__read_at_max). */
#define DEFAULT_MAX_BYTES (16u << 20)

/*
 * Paths are interned: a process may map one file thousands of times, and
 * each path may be 4 KiB. While building, a mapping's path field holds the
 * name's offset + 1; finish() turns offsets into pointers once the table
 * has stopped moving.
 */
struct procmaps {
	struct procmap *maps;
	size_t n, cap;
	size_t bad_lines;
	unsigned refs;
	struct strtab *paths; /* NULL: the paths are in the maps' own block (procmaps__from) */
	size_t path_bytes;    /* the block's bytes after the maps */
	size_t max_bytes;
};

static struct procmaps *alloc_maps(size_t max_bytes)
{
	struct procmaps *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->refs = 1;
	m->max_bytes = max_bytes ? max_bytes : DEFAULT_MAX_BYTES;
	if (strtab__new(256, m->max_bytes, &m->paths)) {
		free(m);
		return NULL;
	}
	return m;
}

int procmaps__read_file(int dirfd, const char *path, int extra_flags, size_t max, char **buf, size_t *len)
{
	struct stat st;
	char *b = NULL, *nb;
	size_t n = 0, cap = 0;
	int fd, err = 0;

	/* Checked before the open that reads: a FIFO would block it, a device's driver would run. */
	fd = safeopen__regular(dirfd, path, extra_flags & O_NOFOLLOW ? SAFEOPEN_NOFOLLOW : 0, &st);
	if (fd < 0)
		return fd;
	for (;;) {
		ssize_t r;

		if (cap - n < 2) {
			size_t ncap = cap ? cap * 2 : 16384;

			if (ncap > max + 2)
				ncap = max + 2;
			if (ncap <= cap) {
				err = -EFBIG;
				goto out;
			}
			nb = realloc(b, ncap);
			if (!nb) {
				err = -ENOMEM;
				goto out;
			}
			b = nb;
			cap = ncap;
		}
		r = read(fd, b + n, cap - n - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max) {
			err = -EFBIG;
			goto out;
		}
	}
	if (!b) {
		b = malloc(1);
		if (!b) {
			err = -ENOMEM;
			goto out;
		}
	}
	b[n] = 0;
	*buf = b;
	*len = n;
	b = NULL;
out:
	free(b);
	close(fd);
	return err;
}

static int parse_dec(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;
	int digits = 0;

	while (s < end && *s >= '0' && *s <= '9') {
		unsigned d = (unsigned)(*s - '0');

		if (x > (UINT64_MAX - d) / 10)
			return -EINVAL;
		x = x * 10 + d;
		digits++;
		s++;
	}
	if (!digits)
		return -EINVAL;
	*p = s;
	*v = x;
	return 0;
}

static int expect(const char **p, const char *end, char c)
{
	if (*p >= end || **p != c)
		return -EINVAL;
	(*p)++;
	return 0;
}

/*
 * The name column of a mapping (inode and the rest already in *m): its
 * flags, and the path to keep in *name (NULL: none).
 */
static int set_path(struct procmap *m, const char *s, size_t plen, const char **name, size_t *nlen)
{
	static const char deleted[] = " (deleted)";
	const size_t dlen = sizeof(deleted) - 1;

	*name = NULL;
	*nlen = 0;
	if (plen > MAX_PATH_LEN)
		return -ENAMETOOLONG;
	if (plen == 0) {
		m->flags |= PROCMAP_ANON;
		return 0;
	}
	if (s[0] == '[') {
		m->flags |= PROCMAP_ANON;
		m->flags |= plen == 6 && !memcmp(s, "[vdso]", 6) ? PROCMAP_VDSO : PROCMAP_SPECIAL;
	} else if (plen > dlen && !memcmp(s + plen - dlen, deleted, dlen)) {
		m->flags |= PROCMAP_DELETED;
		plen -= dlen;
	}
	if (m->inode == 0)
		m->flags |= PROCMAP_ANON; /* no inode: there is no file to open */
	*name = s;
	*nlen = plen;
	return 0;
}

/* 0: parsed into *m and the path's span; 1: valid but not executable; <0: malformed. */
static int parse_line(const char *s, const char *end, struct procmap *m, const char **name, size_t *nlen)
{
	uint64_t major, minor;
	const char *perms;

	memset(m, 0, sizeof(*m));
	if (parse_hex_span(&s, end, &m->start) || expect(&s, end, '-') || parse_hex_span(&s, end, &m->end) ||
	    expect(&s, end, ' '))
		return -EINVAL;
	if (end - s < 5 || s[4] != ' ')
		return -EINVAL;
	perms = s;
	s += 5;
	if (parse_hex_span(&s, end, &m->offset) || expect(&s, end, ' ') || parse_hex_span(&s, end, &major) ||
	    expect(&s, end, ':') || parse_hex_span(&s, end, &minor) || expect(&s, end, ' ') ||
	    parse_dec(&s, end, &m->inode))
		return -EINVAL;
	if (m->end <= m->start || major > 0xfffff || minor > 0xfffff)
		return -EINVAL;
	if (s < end && *s != ' ')
		return -EINVAL;
	if (perms[2] != 'x')
		return 1;
	m->dev = makedev((unsigned)major, (unsigned)minor);
	while (s < end && *s == ' ')
		s++;
	return set_path(m, s, (size_t)(end - s), name, nlen);
}

static int cmp_start(const void *a, const void *b)
{
	const struct procmap *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Adds *pm with its path; -EFBIG past the snapshot's budget, checked before allocating. */
static int push(struct procmaps *m, struct procmap *pm, const char *name, size_t nlen)
{
	uint32_t off;
	int err;

	if (m->n == MAX_MAPPINGS) {
		m->bad_lines++;
		return 0;
	}
	if (m->n == m->cap) {
		size_t ncap = m->cap ? m->cap * 2 : 64;
		struct procmap *nm;

		if (ncap * sizeof(*nm) + strtab__mem_bytes(m->paths) > m->max_bytes)
			return -EFBIG;
		nm = realloc(m->maps, ncap * sizeof(*nm));
		if (!nm)
			return -ENOMEM;
		m->maps = nm;
		m->cap = ncap;
	}
	pm->path = NULL;
	if (name) {
		if (m->cap * sizeof(*m->maps) + strtab__mem_bytes(m->paths) + nlen + 1 > m->max_bytes)
			return -EFBIG;
		err = strtab__intern(m->paths, name, nlen, &off);
		if (err)
			return err;
		pm->path = (const char *)(uintptr_t)(off + 1);
	}
	m->maps[m->n++] = *pm;
	return 0;
}

/* Sorted by start, exactly sized. */
static void finish(struct procmaps *m)
{
	strtab__shrink(m->paths);
	for (size_t i = 0; i < m->n; i++)
		if (m->maps[i].path)
			m->maps[i].path = strtab__str(m->paths, (uint32_t)((uintptr_t)m->maps[i].path - 1));
	/* The kernel gives address order; sort anyway (lookups depend on it), unless it did. */
	for (size_t i = 1; i < m->n; i++) {
		if (m->maps[i].start < m->maps[i - 1].start) {
			qsort(m->maps, m->n, sizeof(*m->maps), cmp_start);
			break;
		}
	}
	/* Cached for every process seen: a process maps a handful of files, not the 64 first allocated. */
	if (m->n < m->cap) {
		struct procmap *nm = realloc(m->maps, (m->n ? m->n : 1) * sizeof(*nm));

		if (nm) {
			m->maps = nm;
			m->cap = m->n;
		}
	}
}

/* The end of every read: on success the snapshot is finished and handed over, else dropped. */
static int hand_over(struct procmaps *m, int err, struct procmaps **out)
{
	if (err) {
		procmaps__free(m);
		return err;
	}
	finish(m);
	*out = m;
	return 0;
}

/* A mapping with its name column: kept, or counted as bad when the name is over the limit. */
static int add_named(struct procmaps *m, struct procmap *pm, const char *name, size_t len)
{
	const char *keep;
	size_t klen;
	int err = set_path(pm, name, len, &keep, &klen);

	if (err == -ENAMETOOLONG) {
		m->bad_lines++;
		return 0;
	}
	return err ? err : push(m, pm, keep, klen);
}

/*
 * An exec event's list (at most FROM_BLOCK_MAX mappings, per exec): the
 * mappings and their paths in one allocation. The list names a handful
 * of files, each in a run of mappings by the same pointer.
 */
#define FROM_BLOCK_MAX 256

static int from_block(const struct procmap *list, size_t n, struct procmaps **out)
{
	struct procmap pm[FROM_BLOCK_MAX];
	const char *keep[FROM_BLOCK_MAX];
	size_t klen[FROM_BLOCK_MAX], k = 0, bytes = 0;
	uint16_t same[FROM_BLOCK_MAX]; /* the first kept mapping with this path + 1; 0: a new path */
	struct procmaps *m;
	char *at;

	for (size_t i = 0; i < n; i++) {
		const struct procmap *l = &list[i];
		int err;

		pm[k] = (struct procmap){ .start = l->start, .end = l->end, .offset = l->offset, .dev = l->dev,
					  .inode = l->inode, .flags = l->flags & PROCMAP_STAT,
					  .size = l->size, .mtime_ns = l->mtime_ns };
		if (pm[k].end <= pm[k].start)
			continue;
		err = set_path(&pm[k], l->path, l->path ? strlen(l->path) : 0, &keep[k], &klen[k]);
		if (err == -ENAMETOOLONG)
			continue;
		if (err)
			return err;
		same[k] = 0;
		for (size_t j = k; keep[k] && j-- > 0;) {
			if (keep[j] == keep[k] && klen[j] == klen[k]) {
				same[k] = same[j] ? same[j] : (uint16_t)(j + 1);
				break;
			}
		}
		if (keep[k] && !same[k])
			bytes += klen[k] + 1;
		k++;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->refs = 1;
	m->max_bytes = DEFAULT_MAX_BYTES;
	m->bad_lines = n - k;
	m->maps = malloc((k ? k : 1) * sizeof(*m->maps) + bytes);
	if (!m->maps) {
		free(m);
		return -ENOMEM;
	}
	m->n = m->cap = k;
	m->path_bytes = bytes;
	at = (char *)(m->maps + (k ? k : 1));
	for (size_t i = 0; i < k; i++) {
		m->maps[i] = pm[i];
		if (!keep[i]) {
			m->maps[i].path = NULL;
		} else if (same[i]) {
			m->maps[i].path = m->maps[same[i] - 1].path;
		} else {
			memcpy(at, keep[i], klen[i]);
			at[klen[i]] = 0;
			m->maps[i].path = at;
			at += klen[i] + 1;
		}
	}
	for (size_t i = 1; i < k; i++) {
		if (m->maps[i].start < m->maps[i - 1].start) {
			qsort(m->maps, k, sizeof(*m->maps), cmp_start);
			break;
		}
	}
	*out = m;
	return 0;
}

int procmaps__from(const struct procmap *list, size_t n, struct procmaps **out)
{
	struct procmaps *m;
	int err = 0;

	if (n <= FROM_BLOCK_MAX)
		return from_block(list, n, out);
	m = alloc_maps(0);

	if (!m)
		return -ENOMEM;
	/* Sized once (an exec event's list, per exec): push grows from 64 and finish shrinks. */
	if (n && n <= MAX_MAPPINGS && n * sizeof(*m->maps) <= m->max_bytes &&
	    (m->maps = malloc(n * sizeof(*m->maps))))
		m->cap = n;
	for (size_t i = 0; i < n; i++) {
		const struct procmap *l = &list[i];
		struct procmap pm = { .start = l->start, .end = l->end, .offset = l->offset, .dev = l->dev,
				      .inode = l->inode, .flags = l->flags & PROCMAP_STAT,
				      .size = l->size, .mtime_ns = l->mtime_ns };

		if (pm.end <= pm.start) {
			m->bad_lines++;
			continue;
		}
		err = add_named(m, &pm, l->path, l->path ? strlen(l->path) : 0);
		if (err)
			break;
	}
	return hand_over(m, err, out);
}

/*
 * Adds the lines of buf to m; a last line without its newline only when
 * final (a stream may not have all of it yet). *used: bytes consumed.
 */
static int parse_into(struct procmaps *m, const char *buf, size_t len, bool final, size_t *used)
{
	const char *s = buf, *end = buf + len;
	int err = 0;

	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *le = nl ? nl : end;
		struct procmap pm;
		const char *name = NULL;
		size_t nlen = 0;
		int r;

		if (!nl && !final)
			break;
		r = le > s ? parse_line(s, le, &pm, &name, &nlen) : 1;
		s = nl ? nl + 1 : end;
		if (r == -ENOMEM) {
			err = r;
			break;
		}
		if (r < 0) {
			m->bad_lines++;
			continue;
		}
		if (r > 0)
			continue;
		err = push(m, &pm, name, nlen);
		if (err)
			break;
	}
	*used = (size_t)(s - buf);
	return err;
}

static int parse_max(const char *buf, size_t len, size_t max_bytes, struct procmaps **out)
{
	struct procmaps *m = alloc_maps(max_bytes);
	size_t used;
	int err;

	if (!m)
		return -ENOMEM;
	err = parse_into(m, buf, len, true, &used);
	return hand_over(m, err, out);
}

/*
 * The text of maps, read and parsed a chunk at a time: it lists every
 * mapping of the process, executable or not, each with a path of up to
 * 4 KiB, so whole it can reach 256 MiB; only the executable ones are kept,
 * within the budget.
 */
#define TEXT_CHUNK (64u << 10)
int procmaps__read_text(int proc_fd, uint32_t pid, size_t max_bytes, struct procmaps **out)
{
	char path[32], *buf = NULL;
	struct procmaps *m = NULL;
	size_t have = 0, used;
	bool skip = false; /* inside a line longer than a chunk: bad, up to its newline */
	int fd, err = 0;

	snprintf(path, sizeof(path), "%u/maps", pid);
	fd = safeopen__regular(proc_fd, path, SAFEOPEN_NOFOLLOW, NULL);
	if (fd < 0)
		return fd;
	m = alloc_maps(max_bytes);
	buf = malloc(TEXT_CHUNK);
	if (!m || !buf) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t r = read(fd, buf + have, TEXT_CHUNK - have);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = -errno;
			goto out;
		}
		have += (size_t)r;
		if (skip) {
			char *nl = memchr(buf, '\n', have);

			if (nl) {
				skip = false;
				have -= (size_t)(nl + 1 - buf);
				memmove(buf, nl + 1, have);
			} else {
				have = 0;
			}
		}
		err = parse_into(m, buf, have, r == 0, &used);
		if (err)
			goto out;
		have -= used;
		memmove(buf, buf + used, have);
		if (r == 0)
			break;
		if (have == TEXT_CHUNK) {
			m->bad_lines++;
			skip = true;
			have = 0;
		}
	}
	err = hand_over(m, 0, out);
	m = NULL;
out:
	free(buf);
	procmaps__free(m);
	close(fd);
	return err;
}

/* Set once the kernel has answered ENOTTY: every later read goes to the text. */
static bool no_query;

static int query(int fd, uint64_t addr, uint64_t flags, char *name, size_t name_len, struct procmap_query *q)
{
	*q = (struct procmap_query){
		.size = sizeof(*q), .query_flags = flags, .query_addr = addr,
		.vma_name_size = (__u32)name_len, .vma_name_addr = (uintptr_t)name,
	};
	return ioctl(fd, PROCMAP_QUERY, q) ? -errno : 0;
}

/*
 * PROCMAP_QUERY (Linux 6.11): the kernel hands over the executable mappings
 * one by one, in binary, skipping the rest. The text of maps formats every
 * mapping of the process, with a d_path for each, and that formatting was
 * most of profd's own CPU time on a busy host. -ENOTTY: not supported.
 */
static int read_query(int fd, size_t max_bytes, struct procmaps **out)
{
	struct procmaps *m = alloc_maps(max_bytes);
	char name[MAX_PATH_LEN + 16];
	uint64_t addr = 0;
	int err = 0;

	if (!m)
		return -ENOMEM;
	for (;;) {
		struct procmap_query q;
		struct procmap pm = { 0 };

		err = query(fd, addr, PROCMAP_QUERY_VMA_EXECUTABLE | PROCMAP_QUERY_COVERING_OR_NEXT_VMA, name,
			    sizeof(name), &q);
		if (err == -ENOENT || (err == -ESRCH && addr == 0)) {
			/* No more mappings; ESRCH: an exiting process has none (the text would be empty too). */
			err = 0;
			break;
		}
		if (err)
			goto out;
		if (q.vma_end <= q.vma_start || q.vma_end <= addr) {
			err = -EINVAL;
			goto out;
		}
		addr = q.vma_end;
		pm.start = q.vma_start;
		pm.end = q.vma_end;
		pm.offset = q.vma_offset;
		pm.inode = q.inode;
		pm.dev = makedev(q.dev_major, q.dev_minor);
		/* vma_name_size counts the NUL; 0 when the mapping has no name. */
		err = add_named(m, &pm, name, q.vma_name_size ? strnlen(name, q.vma_name_size) : 0);
		if (err)
			goto out;
	}
out:
	return hand_over(m, err, out);
}

static int open_maps(int proc_fd, uint32_t pid)
{
	char path[32];
	int fd;

	snprintf(path, sizeof(path), "%u/maps", pid);
	fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	return fd < 0 ? -errno : fd;
}

int procmaps__covers_exec(int proc_fd, uint32_t pid, uint64_t addr)
{
	struct procmap_query q;
	int fd, err;

	if (__atomic_load_n(&no_query, __ATOMIC_RELAXED))
		return -ENOTTY;
	fd = open_maps(proc_fd, pid);
	if (fd < 0)
		return fd;
	err = query(fd, addr, PROCMAP_QUERY_VMA_EXECUTABLE, NULL, 0, &q);
	close(fd);
	if (err == -ENOTTY)
		__atomic_store_n(&no_query, true, __ATOMIC_RELAXED);
	return !err ? 1 : err == -ENOENT ? 0 : err;
}

int procmaps__read_at(int proc_fd, uint32_t pid, struct procmaps **out)
{
	return procmaps__read_at_max(proc_fd, pid, 0, out);
}

int procmaps__read_at_max(int proc_fd, uint32_t pid, size_t max_bytes, struct procmaps **out)
{
	int err;

	if (!__atomic_load_n(&no_query, __ATOMIC_RELAXED)) {
		int fd = open_maps(proc_fd, pid);

		if (fd < 0)
			return fd;
		err = read_query(fd, max_bytes, out);
		close(fd);
		if (err != -ENOTTY)
			return err;
		__atomic_store_n(&no_query, true, __ATOMIC_RELAXED);
	}
	return procmaps__read_text(proc_fd, pid, max_bytes, out);
}

int procmaps__read(const char *proc_root, uint32_t pid, struct procmaps **out)
{
	int dirfd, err;

	dirfd = open(proc_root ? proc_root : "/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return -errno;
	err = procmaps__read_at(dirfd, pid, out);
	close(dirfd);
	return err;
}

struct procmaps *procmaps__ref(struct procmaps *m)
{
	if (m)
		m->refs++;
	return m;
}

void procmaps__free(struct procmaps *m)
{
	if (!m || --m->refs)
		return;
	strtab__free(m->paths);
	free(m->maps);
	free(m);
}

const struct procmap *procmaps__find(const struct procmaps *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	return addr < m->maps[lo - 1].end ? &m->maps[lo - 1] : NULL;
}

size_t procmaps__count(const struct procmaps *m)
{
	return m->n;
}

const struct procmap *procmaps__get(const struct procmaps *m, size_t i)
{
	return i < m->n ? &m->maps[i] : NULL;
}

size_t procmaps__bad_lines(const struct procmaps *m)
{
	return m->bad_lines;
}

size_t procmaps__mem_bytes(const struct procmaps *m)
{
	return sizeof(*m) + m->cap * sizeof(*m->maps) + (m->paths ? strtab__mem_bytes(m->paths) : m->path_bytes);
}

int procmaps__parse(const char *buf, size_t len, struct procmaps **out)
{
	return parse_max(buf, len, 0, out);
}
