/* procmaps: parsing a fixture maps text, including the odd lines real processes have. */
#include "procmaps.h"
#include "t.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static const char fixture[] =
	"5581a0000000-5581a0001000 r--p 00000000 fd:01 1234                       /usr/bin/app\n"
	"5581a0001000-5581a0005000 r-xp 00001000 fd:01 1234                       /usr/bin/app\n"
	"5581a0005000-5581a0006000 rw-p 00005000 fd:01 1234                       /usr/bin/app\n"
	"7f0000000000-7f0000010000 r-xp 00000000 00:00 0 \n"
	"7f1000000000-7f1000028000 r--p 00000000 08:02 99                         /lib/libc.so.6\n"
	"7f1000028000-7f100019d000 r-xp 00028000 08:02 99                         /lib/libc.so.6\n"
	"7f2000001000-7f2000002000 r-xp 00001000 00:1f 4242                       /tmp/my app (deleted)\n"
	"7f3000000000-7f3000001000 r-xp 00000000 00:00 0                          [anon:jit code]\n"
	"7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0                          [vdso]\n"
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n"
	"garbage line\n"
	"1000-0800 r-xp 00000000 00:00 0 backwards\n"
	"10000000000000000-1 r-xp 00000000 00:00 0 toolong\n"
	"2000-3000 r-xp 00000000 00:00\n"
	"\n"
	"4000-5000 r-xp 00000000 fd:01 77 /no/newline/at/end";

/*
 * procmaps__read_at asks the kernel (PROCMAP_QUERY) where it can: the result
 * must be what the text gives, for an executable anonymous mapping, a deleted
 * file and the vdso included.
 */
int main(void);

static void same_as_text(void)
{
	char tmpl[] = "/tmp/test_procmaps.XXXXXX", *buf = NULL, path[32];
	struct procmaps *q = NULL, *t = NULL;
	void *anon = mmap(NULL, 8192, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *del = MAP_FAILED;
	int fd = mkstemp(tmpl), proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	size_t len;

	CHECK(anon != MAP_FAILED && fd >= 0 && proc >= 0);
	if (fd >= 0 && !ftruncate(fd, 4096)) {
		del = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
		unlink(tmpl);
	}
	CHECK(del != MAP_FAILED);
	snprintf(path, sizeof(path), "%d/maps", (int)getpid());
	CHECK_EQ_INT(procmaps__read_at(proc, (uint32_t)getpid(), &q), 0);
	CHECK_EQ_INT(procmaps__read_file(proc, path, 0, 1 << 24, &buf, &len), 0);
	if (buf)
		CHECK_EQ_INT(procmaps__parse(buf, len, &t), 0);
	if (q && t) {
		/* [vsyscall] is no mapping of the process: only the text lists it. */
		size_t n = procmaps__count(t);

		if (n && (procmaps__get(t, n - 1)->flags & PROCMAP_SPECIAL) && procmaps__get(t, n - 1)->start >= 1ull << 63)
			n--;
		CHECK_EQ_INT(procmaps__count(q), n);
		for (size_t i = 0; i < n && i < procmaps__count(q); i++) {
			const struct procmap *a = procmaps__get(q, i), *b = procmaps__get(t, i);

			CHECK_EQ_INT(a->start, b->start);
			CHECK_EQ_INT(a->end, b->end);
			CHECK_EQ_INT(a->offset, b->offset);
			CHECK_EQ_INT(a->dev, b->dev);
			CHECK_EQ_INT(a->inode, b->inode);
			CHECK_EQ_INT(a->flags, b->flags);
			CHECK((!a->path && !b->path) || (a->path && b->path && !strcmp(a->path, b->path)));
		}
		CHECK(procmaps__find(q, (uint64_t)(uintptr_t)anon) &&
		      (procmaps__find(q, (uint64_t)(uintptr_t)anon)->flags & PROCMAP_ANON));
		CHECK(del != MAP_FAILED && procmaps__find(q, (uint64_t)(uintptr_t)del) &&
		      (procmaps__find(q, (uint64_t)(uintptr_t)del)->flags & PROCMAP_DELETED));
		/* The point query agrees, or says the kernel cannot answer. */
		{
			int r = procmaps__covers_exec(proc, (uint32_t)getpid(), (uint64_t)(uintptr_t)main);

			CHECK(r == 1 || r == -ENOTTY);
			r = procmaps__covers_exec(proc, (uint32_t)getpid(), (uint64_t)(uintptr_t)&len);
			CHECK(r == 0 || r == -ENOTTY);
		}
	}
	procmaps__free(q);
	procmaps__free(t);
	free(buf);
	if (del != MAP_FAILED)
		munmap(del, 4096);
	if (anon != MAP_FAILED)
		munmap(anon, 8192);
	if (fd >= 0)
		close(fd);
	if (proc >= 0)
		close(proc);
}

/* A list the caller has (an exec event's) gives what a read of /proc gives. */
static void from_list(void)
{
	struct procmap l[] = {
		{ .start = 0x7f00, .end = 0x8f00, .offset = 0x2000, .dev = makedev(8, 1), .inode = 42, .path = "/lib/libc.so.6" },
		{ .start = 0x1000, .end = 0x2000, .offset = 0, .dev = makedev(8, 1), .inode = 7, .path = "/usr/bin/app" },
		{ .start = 0x9000, .end = 0xa000, .path = "[vdso]" },
		{ .start = 0xb000, .end = 0xc000 },
		{ .start = 0xd000, .end = 0xd000, .path = "/empty" },
	};
	struct procmaps *m = NULL, *q = NULL, *r = NULL;
	const struct procmap *p;
	int proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	CHECK_EQ_INT(procmaps__from(l, 5, &m), 0);
	if (m) {
		CHECK_EQ_INT(procmaps__count(m), 4);
		CHECK_EQ_INT(procmaps__bad_lines(m), 1);
		CHECK_EQ_INT(procmaps__get(m, 0)->start, 0x1000); /* sorted */
		p = procmaps__find(m, 0x7f10);
		CHECK(p && p->offset == 0x2000 && p->inode == 42 && p->flags == 0 && p->path && !strcmp(p->path, "/lib/libc.so.6"));
		CHECK(p && p->path != l[0].path); /* a copy */
		p = procmaps__find(m, 0x9000);
		CHECK(p && (p->flags & PROCMAP_VDSO) && (p->flags & PROCMAP_ANON));
		p = procmaps__find(m, 0xb000);
		CHECK(p && p->path == NULL && (p->flags & PROCMAP_ANON));
		procmaps__free(m);
	}
	/* This process's own mappings, through the list, are the same as read. */
	CHECK(proc >= 0);
	if (proc >= 0 && procmaps__read_at(proc, (uint32_t)getpid(), &q) == 0) {
		size_t n = procmaps__count(q);
		struct procmap *c = calloc(n ? n : 1, sizeof(*c));

		for (size_t i = 0; c && i < n; i++) {
			c[i] = *procmaps__get(q, i);
			c[i].flags = 0;
		}
		CHECK(c != NULL);
		CHECK_EQ_INT(c ? procmaps__from(c, n, &r) : -1, 0);
		if (r) {
			CHECK_EQ_INT(procmaps__count(r), n);
			for (size_t i = 0; i < n && i < procmaps__count(r); i++) {
				const struct procmap *a = procmaps__get(q, i), *b = procmaps__get(r, i);

				CHECK_EQ_INT(a->start, b->start);
				/* A deleted file's " (deleted)" is gone from its path; the list never names one. */
				CHECK_EQ_INT(a->flags & ~PROCMAP_DELETED, b->flags);
				CHECK((!a->path && !b->path) || (a->path && b->path && !strcmp(a->path, b->path)));
			}
		}
		free(c);
	}
	procmaps__free(q);
	procmaps__free(r);
	if (proc >= 0)
		close(proc);
}

/* 1 when every path of m is kept once: mappings of one file share its copy. */
static int one_copy(const struct procmaps *m)
{
	for (size_t i = 1; i < procmaps__count(m); i++) {
		const struct procmap *a = procmaps__get(m, i);

		for (size_t j = 0; j < i; j++) {
			const struct procmap *b = procmaps__get(m, j);

			if (a->path && b->path && !strcmp(a->path, b->path) && a->path != b->path)
				return 0;
		}
	}
	return 1;
}

/*
 * A short list (an exec event's, built in one block) and a long one (past
 * the block's size, through the path table) give the same mappings: the
 * same count, order, paths and files, one copy of each path.
 */
static void from_long_list(void)
{
	static const char *const paths[] = { "/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/app", NULL };
	enum { LONG = 300, SHORT = 200 };
	struct procmap *l = calloc(LONG, sizeof(*l));
	struct procmaps *s = NULL, *g = NULL;

	CHECK(l != NULL);
	if (!l)
		return;
	/* Reverse order: both must sort. Every seventh is empty (a bad line). */
	for (size_t i = 0; i < LONG; i++) {
		uint64_t at = 0x100000 + (uint64_t)(LONG - i) * 0x2000;

		l[i] = (struct procmap){ .start = at, .end = i % 7 == 3 ? at : at + 0x1000,
					 .offset = i * 0x1000, .inode = i % 3 + 1, .path = paths[i % 3] };
	}
	CHECK_EQ_INT(procmaps__from(l, SHORT, &s), 0);
	CHECK_EQ_INT(procmaps__from(l, LONG, &g), 0);
	if (s && g) {
		size_t ns = procmaps__count(s), ng = procmaps__count(g), k = 0;

		CHECK_EQ_INT(ns + procmaps__bad_lines(s), SHORT);
		CHECK_EQ_INT(ng + procmaps__bad_lines(g), LONG);
		/* The long list's mappings past the short one's are at lower addresses: first in its order. */
		for (size_t i = 0; i < ng; i++) {
			const struct procmap *b = procmaps__get(g, i);

			if (b->start > 0x100000 + (uint64_t)(LONG - SHORT) * 0x2000)
				break;
			k++;
		}
		CHECK_EQ_INT(ng - k, ns);
		CHECK(one_copy(s) && one_copy(g));
		for (size_t i = 0; i < ns && k + i < ng; i++) {
			const struct procmap *a = procmaps__get(s, i), *b = procmaps__get(g, k + i);

			CHECK_EQ_INT(a->start, b->start);
			CHECK_EQ_INT(a->offset, b->offset);
			CHECK_EQ_INT(a->inode, b->inode);
			CHECK(!a->path == !b->path && (!a->path || !strcmp(a->path, b->path)));
			if (i > 0)
				CHECK(procmaps__get(s, i - 1)->start < a->start);
		}
	}
	procmaps__free(s);
	procmaps__free(g);
	free(l);
}

/*
 * A process mapping one file with a long path thousands of times keeps its
 * path once; one with thousands of distinct long paths is over the budget.
 */
static void dedup_and_cap(void)
{
	size_t n = 20000, plen = 3800, cap = n * (plen + 80);
	char *txt = malloc(cap), *path = malloc(plen + 1);
	struct procmaps *m = NULL;
	size_t len = 0;

	if (!txt || !path)
		goto out;
	path[0] = '/';
	memset(path + 1, 'd', plen - 1);
	path[plen] = 0;
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(txt + len, cap - len, "%zx-%zx r-xp 00000000 08:01 77 %s\n",
					(size_t)0x10000000 + i * 0x2000, (size_t)0x10001000 + i * 0x2000, path);
	CHECK_EQ_INT(procmaps__parse(txt, len, &m), 0);
	if (m) {
		CHECK_EQ_INT(procmaps__count(m), n);
		CHECK(procmaps__get(m, 0)->path == procmaps__get(m, n - 1)->path);
		CHECK_EQ_INT(strlen(procmaps__get(m, n - 1)->path), plen);
		/* 20,000 mappings of 48 bytes and one path, not 20,000 paths (76 MB). */
		CHECK(procmaps__mem_bytes(m) < n * sizeof(struct procmap) + 2 * plen + 4096);
		procmaps__free(m);
		m = NULL;
	}
	/* Distinct paths: over the default budget (16 MiB) well before the end. */
	len = 0;
	for (size_t i = 0; i < n; i++) {
		snprintf(path + 1, 12, "%010zu", i);
		path[11] = 'd';
		len += (size_t)snprintf(txt + len, cap - len, "%zx-%zx r-xp 00000000 08:01 77 %s\n",
					(size_t)0x10000000 + i * 0x2000, (size_t)0x10001000 + i * 0x2000, path);
	}
	CHECK_EQ_INT(procmaps__parse(txt, len, &m), -EFBIG);
	CHECK(m == NULL);
out:
	free(txt);
	free(path);
}

/*
 * The text read a chunk at a time gives what the whole text gives: 20,000
 * lines (a third executable) across many 64 KiB chunks, with a line longer
 * than a chunk in the middle (bad, skipped), from a fake proc root.
 */
static void text_in_chunks(void)
{
	char dir[] = "/tmp/test_procmaps.XXXXXX", path[128];
	size_t cap = 4 << 20, len = 0;
	char *txt = malloc(cap);
	struct procmaps *a = NULL, *b = NULL;
	int dfd = -1;
	FILE *f;

	if (!txt || !mkdtemp(dir))
		goto out;
	for (size_t i = 0; i < 20000; i++) {
		if (i == 7777) {
			memset(txt + len, 'x', 100000);
			len += 100000;
			txt[len++] = '\n';
		}
		len += (size_t)snprintf(txt + len, cap - len, "%zx-%zx r-%cp 00000000 08:01 %zu /usr/lib/lib%zu.so\n",
					(size_t)0x10000000 + i * 0x2000, (size_t)0x10001000 + i * 0x2000,
					i % 3 ? '-' : 'x', 100 + i % 50, i % 50);
	}
	snprintf(path, sizeof(path), "%s/1", dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/1/maps", dir);
	f = fopen(path, "we");
	CHECK(f && fwrite(txt, 1, len, f) == len);
	if (f)
		fclose(f);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK_EQ_INT(procmaps__parse(txt, len, &a), 0);
	CHECK_EQ_INT(procmaps__read_text(dfd, 1, 0, &b), 0);
	if (a && b) {
		CHECK_EQ_INT(procmaps__count(a), 6667);
		CHECK_EQ_INT(procmaps__count(b), procmaps__count(a));
		CHECK_EQ_INT(procmaps__bad_lines(b), 1);
		for (size_t i = 0; i < procmaps__count(a); i++) {
			const struct procmap *x = procmaps__get(a, i), *y = procmaps__get(b, i);

			if (x->start != y->start || x->inode != y->inode || strcmp(x->path, y->path)) {
				CHECK(!"chunked text differs from whole text");
				break;
			}
		}
	}
	/* Within a budget too small for them: refused, nothing kept. */
	procmaps__free(b);
	b = NULL;
	CHECK_EQ_INT(procmaps__read_text(dfd, 1, 64 << 10, &b), -EFBIG);
	CHECK(b == NULL);
	unlink(path);
	snprintf(path, sizeof(path), "%s/1", dir);
	rmdir(path);
	rmdir(dir);
out:
	if (dfd >= 0)
		close(dfd);
	procmaps__free(a);
	procmaps__free(b);
	free(txt);
}

int main(void)
{
	struct procmaps *m = NULL;
	const struct procmap *p;

	CHECK_EQ_INT(procmaps__parse(fixture, sizeof(fixture) - 1, &m), 0);
	if (!m)
		T_DONE();
	CHECK_EQ_INT(procmaps__count(m), 8);
	CHECK_EQ_INT(procmaps__bad_lines(m), 4);

	p = procmaps__get(m, 0);
	CHECK_EQ_INT(p->start, 0x4000);
	CHECK_EQ_STR(p->path, "/no/newline/at/end");

	p = procmaps__find(m, 0x5581a0001234);
	CHECK(p != NULL);
	if (p) {
		CHECK_EQ_INT(p->start, 0x5581a0001000);
		CHECK_EQ_INT(p->end, 0x5581a0005000);
		CHECK_EQ_INT(p->offset, 0x1000);
		CHECK_EQ_INT(p->dev, makedev(0xfd, 0x01));
		CHECK_EQ_INT(p->inode, 1234);
		CHECK_EQ_STR(p->path, "/usr/bin/app");
		CHECK_EQ_INT(p->flags, 0);
	}
	/* Non-executable mappings are not kept. */
	CHECK(procmaps__find(m, 0x5581a0000010) == NULL);
	CHECK(procmaps__find(m, 0x5581a0005000) == NULL);
	CHECK(procmaps__find(m, 0) == NULL);
	CHECK(procmaps__find(m, UINT64_MAX) == NULL);

	p = procmaps__find(m, 0x7f0000000100);
	CHECK(p && p->path == NULL && (p->flags & PROCMAP_ANON));
	p = procmaps__find(m, 0x7f2000001800);
	CHECK(p && (p->flags & PROCMAP_DELETED));
	if (p)
		CHECK_EQ_STR(p->path, "/tmp/my app");
	p = procmaps__find(m, 0x7f3000000000);
	CHECK(p && (p->flags & PROCMAP_ANON) && (p->flags & PROCMAP_SPECIAL));
	if (p)
		CHECK_EQ_STR(p->path, "[anon:jit code]");
	p = procmaps__find(m, 0x7ffd00001000);
	CHECK(p && (p->flags & PROCMAP_VDSO));
	p = procmaps__find(m, 0xffffffffff600000);
	CHECK(p && (p->flags & PROCMAP_SPECIAL));
	procmaps__free(m);

	/* Our own maps: the code of main() is in an executable mapping of this binary. */
	CHECK_EQ_INT(procmaps__read("/proc", (uint32_t)getpid(), &m), 0);
	if (m) {
		p = procmaps__find(m, (uint64_t)(uintptr_t)main);
		CHECK(p && p->path && strstr(p->path, "test_procmaps"));
		procmaps__free(m);
	}
	CHECK(procmaps__read("/proc", 0x7ffffff0, &m) < 0);
	same_as_text();
	from_list();
	from_long_list();
	dedup_and_cap();
	text_in_chunks();
	/* Shared snapshots: the last reference frees (run under ASan/valgrind, a double free shows). */
	m = NULL;
	CHECK_EQ_INT(procmaps__parse(fixture, sizeof(fixture) - 1, &m), 0);
	if (m) {
		struct procmaps *r = procmaps__ref(m);

		CHECK(r == m);
		procmaps__free(m);
		p = procmaps__find(r, 0x7f1000030000);
		CHECK(p && p->path && !strcmp(p->path, "/lib/libc.so.6"));
		procmaps__free(r);
	}
	CHECK(procmaps__ref(NULL) == NULL);
	{
		char *buf;
		size_t len;

		CHECK_EQ_INT(procmaps__read_file(AT_FDCWD, "/dev/zero", 0, 1024, &buf, &len), -EINVAL);
	}
	T_DONE();
}
