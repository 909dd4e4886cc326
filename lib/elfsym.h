/* Function symbols, load segments and identity (build-id, debuglink) of one ELF file. */
#ifndef PROFD_ELFSYM_H
#define PROFD_ELFSYM_H

#include <stddef.h>
#include <stdint.h>

struct elfsym;

/*
 * Parses the ELF file open at fd (not closed, not kept: everything needed is
 * copied out, so the cache holds no descriptors and no mmaps a truncating
 * writer could turn into SIGBUS). fd must be a regular file. Symbols come
 * from .symtab, .dynsym and, when .symtab is absent, .gnu_debugdata
 * (MiniDebugInfo). Returns -EINVAL/-ENOEXEC for malformed files, -EFBIG
 * for files over the limits.
 */
int elfsym__open_fd(int fd, struct elfsym **out);
/*
 * The same within a budget of max_bytes (0: the built-in limits): section
 * bytes read, decompressed MiniDebugInfo, and the symbols and names kept
 * are counted before each allocation; a file over it is -EFBIG. Names are
 * stored once however many symbols share them, and cut at 1 KiB.
 */
int elfsym__open_fd_max(int fd, size_t max_bytes, struct elfsym **out);
/* The same from an image in memory (the [vdso], MiniDebugInfo, fuzzing). */
int elfsym__open_mem(const void *buf, size_t len, struct elfsym **out);
void elfsym__free(struct elfsym *e);

/*
 * The function covering vaddr (an ELF virtual address, before load bias).
 * Returns 0 with *name (valid until elfsym__free/elfsym__merge) and
 * optionally *start, or -ENOENT.
 */
int elfsym__lookup(const struct elfsym *e, uint64_t vaddr, const char **name, uint64_t *start);

/*
 * Translates a file offset into the ELF virtual address through the PT_LOAD
 * segment holding it: vaddr = off - p_offset + p_vaddr. This is what makes
 * PIE and ASLR irrelevant: a mapping's file offset is known from maps.
 */
int elfsym__file_to_vaddr(const struct elfsym *e, uint64_t off, uint64_t *vaddr);

/* GNU build-id; returns its length (0: none). */
size_t elfsym__build_id(const struct elfsym *e, const uint8_t **id);
/* .gnu_debuglink file name and CRC, or NULL. The name never contains '/'. */
const char *elfsym__debuglink(const struct elfsym *e, uint32_t *crc);
/* 1 when the file had a .symtab (not stripped) or MiniDebugInfo symbols. */
int elfsym__has_full_symtab(const struct elfsym *e);
size_t elfsym__nsyms(const struct elfsym *e);
/* Approximate heap bytes held. */
size_t elfsym__mem_bytes(const struct elfsym *e);

/*
 * Adds src's symbols (a separate debug file of the same binary: same
 * virtual addresses) to e. Invalidates names returned by e before.
 */
int elfsym__merge(struct elfsym *e, const struct elfsym *src);

/* CRC-32 of a whole regular file of at most max bytes (.gnu_debuglink check). */
int elfsym__crc32_fd(int fd, uint64_t max, uint32_t *crc);

#endif
