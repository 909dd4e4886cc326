/*
 * libFuzzer target: the walker's readers of untrusted ELF files, the
 * unwind table compiler (.eh_frame, .debug_frame) and the CPython probe
 * (symbols, relocations, Py_Version, _PyRuntime's debug image).
 */
#define _GNU_SOURCE
#include "pyinterp.h"
#include "unwind_table.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void tables(const uint8_t *data, size_t size)
{
	struct unwind_table *t = NULL;
	struct unwind_table_stats st;
	struct profd_urow row;
	uint64_t off, fsz, va, v;

	if (unwind_table__open_mem(data, size, &t))
		return;
	unwind_table__stats(t, &st);
	/* Every row must be readable where the kernel's copy would be. */
	if (unwind_table__rows(t) && unwind_table__nrows(t)) {
		volatile uint8_t sink = 0;
		const uint8_t *b = (const uint8_t *)unwind_table__rows(t);
		for (size_t i = 0; i < unwind_table__nrows(t) * sizeof(struct profd_urow); i += 64)
			sink ^= b[i];
		(void)sink;
	}
	for (unsigned i = 0; unwind_table__segment(t, i, &off, &fsz, &va) == 0 && i < 64; i++) {
		for (uint64_t d = 0; d < fsz && d < 0x20000; d += 0x101)
			(void)unwind_table__lookup(t, va + d, &row);
		(void)unwind_table__file_to_vaddr(t, off, &v);
	}
	for (uint64_t a = 0; a < 0x10000; a += 0x333)
		(void)unwind_table__lookup(t, a, &row);
	unwind_table__drop_rows(t);
	(void)unwind_table__lookup(t, 0x1000, &row);
	unwind_table__free(t);
}

static void python(const uint8_t *data, size_t size)
{
	static int fd = -1;
	struct pyinterp_file f;

	if (fd < 0 && (fd = memfd_create("fuzz-python", 0)) < 0)
		return;
	if (ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		return;
	/* 3.10 takes its version from the name: both kinds of name. */
	(void)pyinterp__probe_fd(fd, "/usr/lib/libpython3.10.so.1.0", &f);
	(void)pyinterp__probe_fd(fd, "/usr/bin/python3", &f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tables(data, size);
	python(data, size);
	return 0;
}
