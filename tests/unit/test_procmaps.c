/* procmaps: parsing a fixture maps text, including the odd lines real processes have. */
#include "procmaps.h"
#include "t.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
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
	{
		char *buf;
		size_t len;

		CHECK_EQ_INT(procmaps__read_file(AT_FDCWD, "/dev/zero", 0, 1024, &buf, &len), -EINVAL);
	}
	T_DONE();
}
