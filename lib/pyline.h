/* The line a CPython code object runs at an instruction, from its line table (co_linetable). */
#ifndef PROFD_PYLINE_H
#define PROFD_PYLINE_H

#include <stddef.h>
#include <stdint.h>

enum pyline_format {
	PYLINE_310 = 0, /* 3.10: (bytes advanced, line delta) pairs, PEP 626 */
	PYLINE_311 = 1, /* 3.11+: the location table, PEP 657 */
};

/*
 * The line being run at instruction index lasti (in code units; -1: the
 * frame has not started, which is the first line) of a code object whose
 * first line is firstlineno and whose line table starts with the len bytes
 * at tab (the table may go on past them). Every read is inside tab.
 * Returns 0 and *line; -ENOENT when the table gives no line there (an
 * instruction with no line, or past the bytes given); -EINVAL when the
 * bytes are not a line table.
 */
int pyline__line(enum pyline_format fmt, const uint8_t *tab, size_t len, int32_t firstlineno, int64_t lasti,
		 uint32_t *line);

#endif
