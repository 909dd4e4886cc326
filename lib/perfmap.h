/* JIT symbols from perf map files (/tmp/perf-<pid>.map: "START SIZE name" lines, hex). */
#ifndef PROFD_PERFMAP_H
#define PROFD_PERFMAP_H

#include <stddef.h>
#include <stdint.h>

struct perfmap;

int perfmap__new(struct perfmap **out);
/* The same holding at most max_bytes of entries and names (0: 64 MiB); reading stops there. */
int perfmap__new_max(size_t max_bytes, struct perfmap **out);
/* 1 once reading stopped at a limit (entries, bytes): later lines are not read. */
int perfmap__full(const struct perfmap *pm);
void perfmap__free(struct perfmap *pm);

/*
 * Reads what was appended to the file open at fd since the last call: JITs
 * append as they compile. A file that shrank or is another file (dev/inode)
 * starts over. fd must be a regular file; reading stops at the size limit.
 */
int perfmap__update_fd(struct perfmap *pm, int fd);
/* Parses the complete lines of buf; *consumed: bytes up to the last newline. */
int perfmap__parse(struct perfmap *pm, const char *buf, size_t len, size_t *consumed);

/* The newest entry covering addr. Returns 0 or -ENOENT. */
int perfmap__lookup(struct perfmap *pm, uint64_t addr, const char **name, uint64_t *start);
size_t perfmap__count(const struct perfmap *pm);
/* Approximate heap bytes held. */
size_t perfmap__mem_bytes(const struct perfmap *pm);
size_t perfmap__bad_lines(const struct perfmap *pm);

#endif
