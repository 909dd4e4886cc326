/* Finds the CPython runtime in a process: the file that holds _PyRuntime, its version and where it is loaded. */
#ifndef PROFD_PYINTERP_H
#define PROFD_PYINTERP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "pytypes.h"

struct filecache;
struct procmaps;
struct pyinterp;

/*
 * files: ELF files whose probe is remembered (0: a default), each hanging
 * off its entry in fc (a slot of its own: -ENOSPC when none is left). fc
 * outlives the pyinterp.
 */
int pyinterp__new(struct filecache *fc, uint32_t files, struct pyinterp **out);
void pyinterp__free(struct pyinterp *p);

/*
 * Looks through pid's executable mappings for a CPython interpreter (the
 * executable or a libpython, with _PyRuntime and PyCode_Type in its dynamic
 * or full symbol table) and fills out, but for start_code. Files are opened
 * through root_fd (the process's root directory, or /proc/PID/root opened
 * by the caller) and checked to be the mapped (dev, inode).
 * Returns 0, -ENOENT when the process runs no CPython, -EPROTONOSUPPORT
 * when it does but the table has no layout for its version (or a 3.13+
 * _Py_DebugOffsets disagrees with it), -errno on failure.
 */
int pyinterp__find(struct pyinterp *p, int root_fd, const struct procmaps *maps, struct profd_pyproc *out);
/* Whether pyinterp__find could find one in maps (false: it would open nothing and say -ENOENT). */
bool pyinterp__may_find(const struct procmaps *maps);

/*
 * After a pyinterp__find that returned 0: the file it found, as the BPF
 * walker keys it (the kernel's device number and the inode), and what
 * out holds before the mapping's bias (ELF addresses) with the file's
 * PT_LOAD segments. -ENOSPC when the file has more segments than a
 * template holds, -ENOENT when nothing was found.
 */
int pyinterp__template(const struct pyinterp *p, struct profd_pyfile_key *key, struct profd_pyfile *tmpl);

/*
 * After a pyinterp__find that returned 0: the file it found opened
 * read-only through root_fd (the same directory as the find's) and
 * checked to be the mapped (dev, inode), and where its code_dealloc lies
 * in it (struct pyinterp_file). The caller closes *fd. -ENOENT when
 * nothing was found, the finder's -errno when the file's code_dealloc is
 * not known, -ESTALE when the path names another file now.
 */
int pyinterp__open_found(const struct pyinterp *p, int root_fd, uint64_t *dev, uint64_t *inode,
			 uint64_t *dealloc_off, int *fd);

/*
 * Probes one ELF file open at fd (path: the name it was mapped as; 3.10
 * has no Py_Version, its version comes from the name). The symbol
 * addresses are ELF virtual addresses. Returns as pyinterp__find.
 */
struct pyinterp_file {
	uint32_t version;   /* PY_VERSION_HEX >> 16 */
	uint64_t runtime;   /* _PyRuntime */
	uint64_t code_type; /* PyCode_Type */
	uint64_t eval, eval_size; /* _PyEval_EvalFrameDefault (0: not in the symbol tables) */
	/*
	 * PyCode_Type's tp_dealloc (code_dealloc), through which every code
	 * object is freed: its ELF virtual address and file offset, or 0 and
	 * why not in dealloc_err (-errno).
	 */
	uint64_t dealloc, dealloc_off;
	int dealloc_err;
};
int pyinterp__probe_fd(int fd, const char *path, struct pyinterp_file *out);

/* Numbers for `profctl status`. */
struct pyinterp_stats {
	uint64_t probes;      /* files probed */
	uint64_t found;       /* processes with a known layout */
	uint64_t unsupported; /* processes running a CPython whose layout is not in the table */
};
void pyinterp__stats(const struct pyinterp *p, struct pyinterp_stats *out);
/* Heap bytes held. */
size_t pyinterp__mem_bytes(const struct pyinterp *p);

#endif
