/* Executable mappings of one process, parsed from /proc/<pid>/maps. */
#ifndef PROFD_PROCMAPS_H
#define PROFD_PROCMAPS_H

#include <stddef.h>
#include <stdint.h>

enum procmap_flags {
	PROCMAP_DELETED = 1 << 0, /* path ended in " (deleted)": only map_files still reaches it */
	PROCMAP_ANON    = 1 << 1, /* no backing file (inode 0): JIT code, [anon:...], [heap] */
	PROCMAP_VDSO    = 1 << 2, /* [vdso]: an ELF image living only in the process memory */
	PROCMAP_SPECIAL = 1 << 3, /* any other [name]: [vsyscall], [uprobes] */
	PROCMAP_STAT    = 1 << 4, /* size and mtime_ns are the mapped inode's, from the kernel */
};

struct procmap {
	uint64_t start, end; /* [start, end) */
	uint64_t offset;     /* file offset of start */
	uint64_t dev;        /* makedev(major, minor) as in st_dev */
	uint64_t inode;
	const char *path;    /* without " (deleted)"; NULL for unnamed anonymous memory */
	uint32_t flags;      /* enum procmap_flags */
	uint64_t size;       /* PROCMAP_STAT: the file's size and modification time, as stat says */
	int64_t mtime_ns;
};

struct procmaps;

/* Reads <proc_root>/<pid>/maps; keeps executable mappings, sorted by start. */
int procmaps__read(const char *proc_root, uint32_t pid, struct procmaps **out);
/*
 * The same relative to an open directory fd of the proc root. Where the
 * kernel has PROCMAP_QUERY (6.11) it asks for the executable mappings only,
 * without the text; the result is the same.
 */
int procmaps__read_at(int proc_fd, uint32_t pid, struct procmaps **out);
/*
 * The same within a budget of max_bytes of heap for the result (0: 16 MiB),
 * checked before each allocation: -EFBIG when the process's executable
 * mappings need more. Paths are kept once however often they are mapped.
 */
int procmaps__read_at_max(int proc_fd, uint32_t pid, size_t max_bytes, struct procmaps **out);
/*
 * The same from the text of <proc_fd>/<pid>/maps, read a chunk at a time
 * (what read_at falls back to without PROCMAP_QUERY): whole, the text of a
 * process with 65,000 mappings of 4 KiB paths is 256 MiB.
 */
int procmaps__read_text(int proc_fd, uint32_t pid, size_t max_bytes, struct procmaps **out);
/*
 * Whether an executable mapping of pid covers addr now: 1 yes, 0 no, -ENOTTY
 * when the kernel cannot answer without the whole text (then read it).
 */
int procmaps__covers_exec(int proc_fd, uint32_t pid, uint64_t addr);
/*
 * The same from a list the caller has (an exec event's, bpf/events.bpf.c):
 * start, end, offset, dev and inode of each, with path as /proc shows it
 * ("[vdso]"; NULL for anonymous memory). Flags are derived as for the text.
 */
int procmaps__from(const struct procmap *list, size_t n, struct procmaps **out);
/* The same from text already in memory (tests, fuzzing). */
int procmaps__parse(const char *buf, size_t len, struct procmaps **out);
/*
 * A read is shared rather than repeated (the symbolizer's capture of a new
 * process also serves its DWARF tables): __ref takes another reference,
 * __free drops one. Not thread-safe: references stay on one thread.
 */
struct procmaps *procmaps__ref(struct procmaps *m);
void procmaps__free(struct procmaps *m);

/* The mapping containing addr, or NULL. */
const struct procmap *procmaps__find(const struct procmaps *m, uint64_t addr);
size_t procmaps__count(const struct procmaps *m);
const struct procmap *procmaps__get(const struct procmaps *m, size_t i);
/* Lines that did not parse (malformed or over the limits). */
size_t procmaps__bad_lines(const struct procmaps *m);
/* Approximate heap bytes held. */
size_t procmaps__mem_bytes(const struct procmaps *m);

/*
 * Reads a whole regular file of at most max bytes into a NUL-terminated
 * buffer. Refuses FIFOs, devices and anything else that is not S_ISREG, so
 * a path planted in a container cannot hang or flood the reader. /proc files
 * report size 0, so the limit is enforced while reading. Shared by the
 * modules that read /proc and other untrusted text files.
 */
int procmaps__read_file(int dirfd, const char *path, int extra_flags, size_t max, char **buf, size_t *len);

#endif
