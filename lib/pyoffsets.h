/* Per-version layouts of CPython's thread states, frames, code objects and strings: the one table. */
#ifndef PROFD_PYOFFSETS_H
#define PROFD_PYOFFSETS_H

#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "pytypes.h"

/*
 * The layout of CPython major.minor as PY_VERSION_HEX >> 16 (0x030b for
 * 3.11), or NULL when the table does not know it: such a process keeps
 * its native frames.
 */
const struct profd_pyoffs *pyoffsets__find(uint32_t version);

/* The versions the table knows, in order: index i from 0 until it returns 0. */
uint32_t pyoffsets__version(unsigned i);

/*
 * 3.13 and later describe their layout in _Py_DebugOffsets at the start of
 * _PyRuntime (image: its initial bytes, from the file). Returns 0 when
 * every offset the table holds for that version agrees, -EPROTO when one
 * differs, -EINVAL when the image is not a _Py_DebugOffsets.
 */
int pyoffsets__check_debug(uint32_t version, const uint8_t *image, size_t len);

#endif
