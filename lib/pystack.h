/* Where the Python frames of a sampled stack go among its native frames. */
#ifndef PROFD_PYSTACK_H
#define PROFD_PYSTACK_H

#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "pytypes.h"

/* 1 when the user stack (as the BPF program stores it) carries Python frames. */
int pystack__has_python(const __u64 *ips, uint32_t n);

/*
 * ips: a user stack as stored, native frames leaf first, then Python
 * frames leaf first (PROFD_PY_FRAME). is_eval[i]: native frame i is a
 * _PyEval_EvalFrameDefault. Writes the merged stack root first into out
 * (n entries at most) as indexes into ips: each eval frame gives way to
 * the Python frames it ran (PROFD_PY_ENTRY closes one eval call's frames),
 * innermost eval with innermost frames; Python frames left over go to the
 * outermost eval, or before every native frame when no eval frame was
 * walked. Returns the number of entries written.
 */
uint32_t pystack__merge(const __u64 *ips, uint32_t n, const uint8_t *is_eval, uint32_t *out);

/*
 * The frame text of a Python function: "qualname (file)", file shortened
 * to what follows site-packages/, dist-packages/ or lib/pythonX.Y/, else
 * to its last component. Returns 0 or -ENOSPC (out is then cut).
 */
int pystack__frame_text(const char *qualname, const char *file, char *out, size_t len);

#endif
