/*
 * Names stored back to back, each NUL-terminated, addressed by a 32-bit
 * offset: a symbol table keeps an offset per symbol instead of a pointer
 * and a heap block per name.
 */
#ifndef PROFD_STRTAB_H
#define PROFD_STRTAB_H

#include <stddef.h>
#include <stdint.h>

struct strtab;

/*
 * first: bytes allocated at the first add (a guess of the final size: the
 * buffer then doubles); max: total bytes allowed (at most UINT32_MAX - 1,
 * so every offset fits 32 bits). Nothing is allocated for the names yet.
 */
int strtab__new(size_t first, size_t max, struct strtab **out);
void strtab__free(struct strtab *t);

/* Copies s[0..len) and a NUL; *off names it. 0, -EFBIG past max, -ENOMEM. */
int strtab__add(struct strtab *t, const char *s, size_t len, uint32_t *off);
/*
 * The same, but a name already interned is not stored again: *off is its
 * first copy's. Thousands of symbols may share one long name. The index
 * this keeps is freed by __shrink (the table is done then): a later intern
 * starts a new index and cannot find names added before.
 */
int strtab__intern(struct strtab *t, const char *s, size_t len, uint32_t *off);
/* Valid until the next add, shrink or free. */
const char *strtab__str(const struct strtab *t, uint32_t off);

/* Forgets every name and keeps the buffer for the next ones. */
void strtab__reset(struct strtab *t);
/*
 * Gives back what doubling left over, for tables kept long after they are
 * built; an empty table frees its buffer. A failed shrink keeps the table
 * as it was, so it returns nothing.
 */
void strtab__shrink(struct strtab *t);

/* Bytes of names and their NULs. */
size_t strtab__len(const struct strtab *t);
/* Heap bytes held, this object and the intern index included. */
size_t strtab__mem_bytes(const struct strtab *t);

#endif
