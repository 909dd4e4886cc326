/* Kernel text symbols from /proc/kallsyms, with the module each belongs to. */
#ifndef PROFD_KALLSYMS_H
#define PROFD_KALLSYMS_H

#include <stddef.h>
#include <stdint.h>

struct kallsyms;

/*
 * Reads a kallsyms file. Without CAP_SYSLOG every address reads as zero;
 * such a table loads empty (lookups fail) rather than naming everything
 * after the first symbol.
 */
int kallsyms__load(const char *path, struct kallsyms **out);
int kallsyms__parse(const char *buf, size_t len, struct kallsyms **out);
void kallsyms__free(struct kallsyms *k);

/*
 * The text symbol covering addr. *module is the module name without
 * brackets, or NULL for the core kernel. Returns 0 or -ENOENT.
 */
int kallsyms__lookup(const struct kallsyms *k, uint64_t addr, const char **name, const char **module,
		     uint64_t *start);
size_t kallsyms__count(const struct kallsyms *k);

#endif
