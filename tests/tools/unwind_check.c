/*
 * unwind_check PID SNAPSHOTS OUT: holds profd's kernel walker to libunwind.
 * profd --unwind-snapshots PID:SNAPSHOTS appends the walker's snapshots of
 * PID's samples (registers, 16 KB of stack, its frames) to SNAPSHOTS; this
 * follows that file while PID runs, unwinds each copy again with libunwind
 * (lib/lunwind, over PID's mappings as they are now) and writes one line per
 * snapshot to OUT:
 *
 *   <kernel frames> <libunwind frames> <agreeing> <pid> dwarf|fp
 *     | kernel pcs | libunwind pcs | sample time (CLOCK_MONOTONIC ns)
 *
 * fp: some table the walk needed was not loaded yet (the process is new, a
 * file is being built, ld.so just mapped a library), so frame pointers stood
 * in. Frames agree when both walks have the same pc at the same depth.
 * Ends once PID has exited (or is a zombie) and the file is read to its end;
 * snapshots that cannot be unwound (the process gone meanwhile) are skipped.
 * Exit status 0, 1 on an unreadable or corrupt file, 2 on bad arguments.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lunwind.h"
#include "procmaps.h"
#include "usnap.h"

/* Waiting for profd to create the file: at most this long (it may take a while to start). */
#define OPEN_WAIT_MS (180 * 1000)
#define POLL_MS 10

static struct profd_uevent ev;

static void nap(void)
{
	struct timespec ts = { 0, POLL_MS * 1000000L };

	nanosleep(&ts, NULL);
}

/* The process has exited: gone from /proc, or a zombie. */
static bool gone(uint32_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return true;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	return !p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X';
}

static void check(struct lunwind *lu, FILE *out)
{
	uint64_t ips[PROFD_MAX_DEPTH];
	struct procmaps *pm = NULL;
	size_t n = 0, nk = ev.nframes, agree = 0;
	int err;

	err = procmaps__read("/proc", ev.pid, &pm);
	if (!err)
		err = lunwind__unwind(lu, ev.pid, pm, (const uint64_t *)ev.regs, ev.stack,
				      ev.stack_len, ips, PROFD_MAX_DEPTH, &n);
	procmaps__free(pm);
	if (err)
		return;
	for (size_t i = 0; i < nk && i < n; i++)
		agree += ev.frames[i] == ips[i];
	fprintf(out, "%zu %zu %zu %u %s |", nk, n, agree, ev.pid,
		ev.flags & PROFD_SNAP_F_TABLES ? "dwarf" : "fp");
	for (size_t i = 0; i < nk; i++)
		fprintf(out, " %" PRIx64, (uint64_t)ev.frames[i]);
	fprintf(out, " |");
	for (size_t i = 0; i < n; i++)
		fprintf(out, " %" PRIx64, ips[i]);
	fprintf(out, " | %" PRIu64 "\n", (uint64_t)ev.time_ns);
}

int main(int argc, char **argv)
{
	struct lunwind *lu = NULL;
	uint64_t off = 0, nsnaps = 0;
	unsigned long pid;
	FILE *out = NULL;
	int fd = -1, err = 0, r;
	bool last = false;
	char *end;

	if (argc != 4 || (pid = strtoul(argv[1], &end, 10), *end || !pid || pid > UINT32_MAX)) {
		fprintf(stderr, "usage: unwind_check PID SNAPSHOTS OUT\n");
		return 2;
	}
	out = fopen(argv[3], "we");
	if (!out) {
		fprintf(stderr, "unwind_check: cannot create %s: %s\n", argv[3], strerror(errno));
		return 1;
	}
	err = lunwind__new(&lu);
	for (int waited = 0; !err && fd < 0; waited += POLL_MS) {
		fd = open(argv[2], O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			break;
		if (errno != ENOENT || waited >= OPEN_WAIT_MS || gone((uint32_t)pid))
			err = -errno;
		else
			nap();
	}
	/* After the process is gone, one more pass reads what profd wrote before. */
	while (!err) {
		r = usnap__read(fd, &off, &ev);
		if (r > 0) {
			nsnaps++;
			if (ev.pid == pid)
				check(lu, out);
			continue;
		}
		if (r < 0 || last) {
			err = r;
			break;
		}
		last = gone((uint32_t)pid);
		if (!last)
			nap();
	}
	if (err)
		fprintf(stderr, "unwind_check: %s: %s\n", argv[2], strerror(-err));
	else
		fprintf(stderr, "unwind_check: %" PRIu64 " snapshots of pid %lu\n", nsnaps, pid);
	if (fd >= 0)
		close(fd);
	lunwind__free(lu);
	if (fclose(out) && !err)
		err = -EIO;
	return err ? 1 : 0;
}
