/* usnap: records written and read back, a record still being written, bad records. */
#include "usnap.h"
#include "t.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

static struct profd_uevent ev, back;

static int tmpfile_fd(void)
{
	char path[] = "/tmp/test_usnap.XXXXXX";
	int fd = mkstemp(path);

	if (fd >= 0)
		unlink(path);
	return fd;
}

static void fill(struct profd_uevent *e, uint32_t pid, uint32_t stack_len)
{
	memset(e, 0, sizeof(*e));
	e->type = PROFD_UEV_SNAPSHOT;
	e->pid = pid;
	e->tid = pid + 1;
	e->nframes = 3;
	e->stack_len = stack_len;
	e->flags = PROFD_SNAP_F_TABLES;
	e->time_ns = 123456789;
	for (int i = 0; i < PROFD_SNAP_NREGS; i++)
		e->regs[i] = 0x1000 + i;
	for (int i = 0; i < 3; i++)
		e->frames[i] = 0x400000 + i;
	for (uint32_t i = 0; i < stack_len && i < sizeof(e->stack); i++)
		e->stack[i] = (uint8_t)(i * 7 + pid);
}

static void test_round_trip(void)
{
	uint64_t off = 0;
	int fd = tmpfile_fd();

	CHECK(fd >= 0);
	CHECK_EQ_INT(usnap__read(fd, &off, &back), 0);
	fill(&ev, 10, 100);
	CHECK_EQ_INT(usnap__write(fd, &ev), 0);
	fill(&ev, 11, 0);
	CHECK_EQ_INT(usnap__write(fd, &ev), 0);
	/* Longer than the kernel copies: cut, and the record says so. */
	fill(&ev, 12, PROFD_SNAP_STACK + 100);
	CHECK_EQ_INT(usnap__write(fd, &ev), 0);

	CHECK_EQ_INT(usnap__read(fd, &off, &back), 1);
	CHECK_EQ_INT(back.pid, 10);
	CHECK_EQ_INT(back.tid, 11);
	CHECK_EQ_INT(back.stack_len, 100);
	CHECK_EQ_INT(back.regs[16], 0x1010);
	CHECK_EQ_INT(back.frames[2], 0x400002);
	CHECK_EQ_INT(back.time_ns, 123456789);
	CHECK_EQ_INT(back.stack[99], (uint8_t)(99 * 7 + 10));
	CHECK_EQ_INT(usnap__read(fd, &off, &back), 1);
	CHECK_EQ_INT(back.pid, 11);
	CHECK_EQ_INT(back.stack_len, 0);
	CHECK_EQ_INT(usnap__read(fd, &off, &back), 1);
	CHECK_EQ_INT(back.pid, 12);
	CHECK_EQ_INT(back.stack_len, PROFD_SNAP_STACK);
	CHECK_EQ_INT(back.stack[PROFD_SNAP_STACK - 1], (uint8_t)((PROFD_SNAP_STACK - 1) * 7 + 12));
	CHECK_EQ_INT(usnap__read(fd, &off, &back), 0);
	CHECK_EQ_INT(off, (uint64_t)lseek(fd, 0, SEEK_END));
	close(fd);
}

/* A record only partly written is not read, and is once the rest comes. */
static void test_partial(void)
{
	uint64_t off = 0, len;
	int fd = tmpfile_fd();
	char *bytes;

	CHECK(fd >= 0);
	fill(&ev, 20, 4000);
	CHECK_EQ_INT(usnap__write(fd, &ev), 0);
	len = (uint64_t)lseek(fd, 0, SEEK_END);
	bytes = malloc(len);
	CHECK(bytes && pread(fd, bytes, len, 0) == (ssize_t)len);
	if (!bytes)
		return;
	for (uint64_t cut = 0; cut < len; cut += 997) {
		int ok;

		CHECK_EQ_INT(ftruncate(fd, 0), 0);
		ok = pwrite(fd, bytes, cut, 0) == (ssize_t)cut;
		off = 0;
		CHECK(ok && usnap__read(fd, &off, &back) == 0 && off == 0);
		ok = pwrite(fd, bytes + cut, len - cut, (off_t)cut) == (ssize_t)(len - cut);
		CHECK(ok && usnap__read(fd, &off, &back) == 1 && off == len && back.pid == 20);
	}
	free(bytes);
	close(fd);
}

static void test_bad(void)
{
	uint64_t off = 0;
	int fd = tmpfile_fd();

	CHECK(fd >= 0);
	fill(&ev, 30, 10);
	ev.type = PROFD_UEV_REFRESH;
	CHECK_EQ_INT(usnap__write(fd, &ev), 0);
	CHECK_EQ_INT(usnap__read(fd, &off, &back), -EBADMSG);
	CHECK_EQ_INT(off, 0);
	CHECK_EQ_INT(ftruncate(fd, 0), 0);
	fill(&ev, 31, 10);
	ev.nframes = PROFD_MAX_DEPTH + 1;
	CHECK_EQ_INT(usnap__write(fd, &ev), 0);
	CHECK_EQ_INT(usnap__read(fd, &off, &back), -EBADMSG);
	CHECK_EQ_INT(ftruncate(fd, 0), 0);
	/* A stack length past the bound, as a corrupt file would have it. */
	fill(&ev, 32, 10);
	CHECK_EQ_INT(usnap__write(fd, &ev), 0);
	ev.stack_len = PROFD_SNAP_STACK + 1;
	CHECK_EQ_INT(pwrite(fd, &ev.stack_len, 4, offsetof(struct profd_uevent, stack_len)), 4);
	CHECK_EQ_INT(usnap__read(fd, &off, &back), -EBADMSG);
	close(fd);
	CHECK_EQ_INT(usnap__read(fd, &off, &back), -EBADF);
}

int main(void)
{
	test_round_trip();
	test_partial();
	test_bad();
	T_DONE();
}
