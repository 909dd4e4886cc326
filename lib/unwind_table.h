/*
 * Compact unwind tables: .eh_frame (or .debug_frame) of one ELF file compiled
 * into sorted rows "from pc on: CFA rule, rbp rule" (struct profd_urow),
 * behind a bucket index (struct profd_uindex) that narrows the BPF walker's
 * search to a few rows. x86-64 only: the return address is always at
 * CFA - 8 there, so a row needs no rule for it, only "undefined" (END).
 */
#ifndef PROFD_UNWIND_TABLE_H
#define PROFD_UNWIND_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "profd.h"

struct unwind_table;

struct unwind_table_stats {
	uint32_t fdes;        /* FDEs read */
	uint32_t bad_fdes;    /* FDEs skipped: malformed or unknown CIE */
	uint32_t raw_rows;    /* rows before merging identical neighbours */
	uint32_t unsupported; /* rows marked PROFD_UR_CFA_UNSUP */
	int source;           /* 1: .eh_frame, 2: .debug_frame */
};

/*
 * Builds the table of the ELF file open at fd (not kept). Uses .eh_frame,
 * plus .debug_frame for the functions .eh_frame does not cover. Returns
 * -ENOENT when the file has neither, -ENOEXEC for non-x86-64 or malformed
 * ELF, -EFBIG when addresses do not fit the 32-bit row pc.
 */
int unwind_table__open_fd(int fd, struct unwind_table **out);
/* The same from an image in memory (the [vdso]); buf must stay valid only during the call. */
int unwind_table__open_mem(const void *buf, size_t len, struct unwind_table **out);
void unwind_table__free(struct unwind_table *t);

/* Slots of the table's block (header, bucket index, rows): what the kernel's rows array holds. */
size_t unwind_table__nrows(const struct unwind_table *t);
/* The block; NULL after unwind_table__drop_rows. */
const struct profd_urow *unwind_table__rows(const struct unwind_table *t);
/*
 * Frees the rows once they live elsewhere (the kernel's rows array); nrows,
 * stats and file_to_vaddr still answer, lookup finds nothing.
 */
void unwind_table__drop_rows(struct unwind_table *t);
void unwind_table__stats(const struct unwind_table *t, struct unwind_table_stats *st);

/* The row covering vaddr, found as the walker finds it, or -ENOENT below the first row. */
int unwind_table__lookup(const struct unwind_table *t, uint64_t vaddr, struct profd_urow *row);

/*
 * Translates a file offset into an ELF virtual address through the PT_LOAD
 * segment holding it (the same as elfsym__file_to_vaddr, kept here so that
 * loading a table does not parse every symbol of the file as well).
 */
int unwind_table__file_to_vaddr(const struct unwind_table *t, uint64_t off, uint64_t *vaddr);
/* PT_LOAD segment i that file_to_vaddr searches (file offset, size in the file, address); -ENOENT past the last. */
int unwind_table__segment(const struct unwind_table *t, unsigned i, uint64_t *offset, uint64_t *filesz,
			  uint64_t *vaddr);

#endif
