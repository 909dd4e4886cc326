/*
 * The libunwind reference unwinder: given the registers at a sample and a
 * copy of the top of the user stack, unwinds in user space with
 * unw_init_remote and accessors that read the copy and the ELF files
 * (.eh_frame_hdr / .eh_frame) of the process's mappings. Tests hold the BPF
 * walker to it. Files are read once and cached (by device and inode);
 * libunwind's own cache is on.
 */
#ifndef PROFD_LUNWIND_H
#define PROFD_LUNWIND_H

#include <stddef.h>
#include <stdint.h>

#include "procmaps.h"

#define LUNWIND_NREGS 17 /* DWARF order: rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip */

struct lunwind;

int lunwind__new(struct lunwind **out);
void lunwind__free(struct lunwind *l);

/*
 * Unwinds one snapshot of process pid, whose executable mappings are maps:
 * stack holds stack_len bytes copied from regs[7] (rsp) upwards. Writes up
 * to max pcs, leaf first (return addresses above the leaf, as the kernel
 * reports them), into ips and their number into *n. Returns 0 (even when
 * the walk stopped early: *n says how far it got) or -errno.
 */
int lunwind__unwind(struct lunwind *l, uint32_t pid, const struct procmaps *maps,
		    const uint64_t regs[LUNWIND_NREGS], const uint8_t *stack, size_t stack_len,
		    uint64_t *ips, size_t max, size_t *n);

#endif
