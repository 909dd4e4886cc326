/*
 * Both formats describe consecutive address ranges, each with a line
 * given as a delta from the previous range's (or "no line"); the walk
 * adds the deltas up to the range that holds the address. Untrusted
 * bytes: every loop is bounded by len, every varint by its bit count.
 */
#include <errno.h>
#include <stdint.h>

#include "pyline.h"

static int line_of(int64_t line, uint32_t *out)
{
	if (line < 0 || line > UINT32_MAX)
		return -ENOENT;
	*out = (uint32_t)line;
	return 0;
}

/* 3.10: pairs of (unsigned bytes of code, signed line delta; -128: no line), addresses in bytes. */
static int line_310(const uint8_t *tab, size_t len, int64_t line, int64_t addr, uint32_t *out)
{
	int64_t start, end = 0;
	int has_line;

	for (size_t i = 0; i + 1 < len; i += 2) {
		int8_t ld = (int8_t)tab[i + 1];

		start = end;
		end += tab[i];
		has_line = ld != -128;
		if (has_line)
			line += ld;
		if (start <= addr && addr < end)
			return has_line ? line_of(line, out) : -ENOENT;
	}
	return -ENOENT;
}

/* 6-bit chunks, least significant first, 0x40 says another follows; -1 when cut or too long. */
static int64_t varint(const uint8_t *tab, size_t len, size_t *i)
{
	uint64_t v = 0;

	for (unsigned shift = 0; *i < len && shift <= 30; shift += 6) {
		uint8_t b = tab[(*i)++];

		v |= (uint64_t)(b & 63) << shift;
		if (!(b & 64))
			return (int64_t)v;
	}
	return -1;
}

/*
 * 3.11+: entries start with a byte 1CCCCLLL (code, length - 1 in code
 * units); codes 13 and 14 give the line delta as a zigzag varint, 10-12
 * a delta of 0-2, 15 no line, the others the same line. The bytes up to
 * the next entry are columns.
 */
static int line_311(const uint8_t *tab, size_t len, int64_t line, int64_t addr, uint32_t *out)
{
	int64_t start, end = 0;
	size_t i = 0;

	while (i < len) {
		uint8_t b = tab[i++];
		unsigned code = (b >> 3) & 15;

		if (!(b & 128))
			return -EINVAL;
		if (code == 13 || code == 14) {
			size_t j = i;
			int64_t v = varint(tab, len, &j);

			if (v < 0)
				return -ENOENT;
			line += v & 1 ? -(v >> 1) : v >> 1;
		} else if (code >= 10 && code <= 12) {
			line += code - 10;
		}
		start = end;
		end += (b & 7) + 1;
		if (start <= addr && addr < end)
			return code == 15 ? -ENOENT : line_of(line, out);
		while (i < len && !(tab[i] & 128))
			i++;
	}
	return -ENOENT;
}

int pyline__line(enum pyline_format fmt, const uint8_t *tab, size_t len, int32_t firstlineno, int64_t lasti,
		 uint32_t *line)
{
	if (lasti < 0)
		return line_of(firstlineno, line);
	/* Past any table (a code object's instructions fit in an int): and lasti * 2 stays defined. */
	if (lasti > INT32_MAX)
		return -ENOENT;
	if (fmt == PYLINE_310)
		return line_310(tab, len, firstlineno, lasti * 2, line);
	if (fmt == PYLINE_311)
		return line_311(tab, len, firstlineno, lasti, line);
	return -EINVAL;
}
