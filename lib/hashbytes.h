#ifndef PROFD_HASHBYTES_H
#define PROFD_HASHBYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * A hash of n bytes for the in-memory indexes (string tables, a window's
 * strings), eight bytes a step: demangled C++ names and paths run to
 * hundreds of bytes, and a crafted file asks for tens of thousands of
 * them. Never written to disk: it may change between builds.
 */
static inline uint64_t hashbytes__hash(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ n, w;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		memcpy(&w, b + i, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
	}
	w = 0;
	memcpy(&w, b + i, n - i);
	h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
	return h ^ (h >> 29);
}

#endif
