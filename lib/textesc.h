/*
 * Text that reaches a terminal or a log line: names come from other
 * processes (comm, file paths, symbols) and may hold bytes that drive a
 * terminal (ESC, BEL, C1 controls) or forge log lines (a newline followed by
 * "<0>" under journald). Every control character (0x00-0x1f, 0x7f,
 * U+0080-U+009F) and every byte that is not part of valid UTF-8 is written
 * as \xHH, one escape per byte; everything else, backslashes included, is
 * copied as it is.
 */
#ifndef PROFD_TEXTESC_H
#define PROFD_TEXTESC_H

#include <stdbool.h>
#include <stddef.h>

/* Whether s prints as it is. */
bool textesc__clean(const char *s);

/*
 * Writes s escaped into dst (cap bytes, cap >= 1, always NUL-terminated),
 * cut before a character or escape that does not fit; returns the length.
 */
size_t textesc__copy(char *dst, size_t cap, const char *s);

/* s escaped, malloc'd; NULL when out of memory. */
char *textesc__dup(const char *s);

/* Escapes buf (a string in cap bytes) in place, cut to fit cap. 0 or -ENOMEM (buf unchanged). */
int textesc__inplace(char *buf, size_t cap);

#endif
