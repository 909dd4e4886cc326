/*
 * A file of the kernel walker's snapshots (struct profd_uevent of type
 * PROFD_UEV_SNAPSHOT: registers, the top of the user stack, the walker's
 * own frames), one record after another: the record up to its stack, then
 * stack_len bytes of stack. profd writes it in test mode
 * (--unwind-snapshots); tests/tools/unwind_check reads it while profd
 * appends, and holds the walker to libunwind.
 */
#ifndef PROFD_USNAP_H
#define PROFD_USNAP_H

#include <stdint.h>

#include <linux/types.h>

#include "profd.h"

/* Appends one snapshot to fd with one write (stack cut to PROFD_SNAP_STACK). 0 or -errno. */
int usnap__write(int fd, const struct profd_uevent *ev);

/*
 * Reads the record at *off of fd into ev and moves *off past it: 1. 0 when
 * the record is not all there yet (the writer may append it; *off stays),
 * -EBADMSG when it is not a snapshot or its lengths are out of bounds,
 * -errno when fd cannot be read.
 */
int usnap__read(int fd, uint64_t *off, struct profd_uevent *ev);

#endif
