/* Names addresses: user addresses through process mappings and ELF files, kernel addresses through kallsyms. */
#ifndef PROFD_SYMBOLIZER_H
#define PROFD_SYMBOLIZER_H

#include <stddef.h>
#include <stdint.h>

struct filecache;
struct procmaps;
struct procreg;
struct procreg_ids;
struct symbolizer;

struct symbolizer_opts {
	const char *proc_root;  /* "/proc" unless a test says otherwise */
	const char *kallsyms;   /* "/proc/kallsyms" unless a test says otherwise */
	size_t max_files;       /* ELF files kept parsed (LRU); 0: default */
	size_t max_file_bytes;  /* heap bytes of the parsed files kept (LRU, beside max_files); 0: default */
	size_t max_pids;        /* process mapping tables kept (LRU); 0: default */
	/*
	 * One budget for everything cached (files' symbols, processes'
	 * mappings and perf maps); 0: 64 MiB. A file (an ELF file or a perf
	 * map) may hold a quarter of it, a process's mappings a sixteenth: one
	 * over its share is refused and counted, and never evicts the rest.
	 */
	size_t cache_memory;
	const char *debug_root; /* "/usr/lib/debug" unless a test says otherwise: .build-id and debuglink files */
	/*
	 * Called once per file rejected as malformed or over the limits (err:
	 * -EINVAL, -ENOEXEC, -EFBIG), while it stays cached as bad, so the
	 * caller can log one warning per file. path is the process's view.
	 */
	void (*bad_file)(void *arg, uint32_t pid, const char *path, int err);
	void *bad_file_arg;
	/* Called at each read of /proc/PID/maps (NULL: not told); arg is bad_file_arg. */
	void (*maps_read)(void *arg, uint32_t pid);
	/*
	 * The process registry what is kept per process hangs off (it must
	 * outlive the symbolizer); NULL: one of its own.
	 */
	struct procreg *registry;
	/* The file cache the symbols hang off (it must outlive the symbolizer); NULL: its own. */
	struct filecache *files;
	/*
	 * Files of at least this many bytes have their symbols read on a
	 * worker thread (their frames come back with sym.later set until the
	 * read is in); 0: 256 KiB; SIZE_MAX: every file in the caller's thread.
	 */
	size_t async_bytes;
};

enum sym_kind { SYM_USER = 0, SYM_KERNEL = 1, SYM_JIT = 2 };

/*
 * What a frame resolved to. Strings stay valid until the next call on the
 * same symbolizer. name is NULL when no symbol covers the address; module
 * is NULL when not even the mapping is known (offset is then the address).
 */
struct sym {
	const char *name;
	const char *module;  /* path of the mapped file, "[vdso]", or kernel module name */
	uint64_t offset;     /* file-relative offset in module, or the address */
	int kind;            /* enum sym_kind */
	/*
	 * Nonzero (name NULL): the file's symbols are being read on the worker;
	 * symbolizer__name_later(later, offset, is_return) names it once in.
	 */
	uint64_t later;
};

struct symbolizer_stats {
	uint64_t file_hits, file_misses, file_evictions, files_cached;
	uint64_t pid_hits, pid_misses, pid_evictions, pids_cached;
	uint64_t bad_files;  /* ELF files rejected as malformed */
	uint64_t jit_hits;          /* frames named from a perf map */
	uint64_t perfmaps_rejected; /* perf maps not owned by the process's user (or not regular files) */
	uint64_t file_bytes;        /* heap bytes held by the cached files' symbols */
	uint64_t pid_bytes;         /* heap bytes held by the cached processes: mapping tables, perf maps, roots */
	uint64_t maps_reads;        /* mapping tables read (first sight, exec, a miss on a new mapping) */
	uint64_t miss_checks;       /* addresses outside every known mapping checked with the kernel */
	uint64_t prev_image_hits;   /* addresses named by the image before an exec (samples taken before it) */
	uint64_t files_refused;     /* files over their share of the budget (also in bad_files) */
	uint64_t pids_refused;      /* processes whose mappings are over their share */
	uint64_t perfmaps_capped;   /* perf maps read only up to their process's share */
	uint64_t files_refused_pid; /* mappings whose file, as the process shows it, is not the one mapped */
	uint64_t files_mismatched;  /* of those: another file (device, inode) at the mapped path */
	uint64_t files_changed;     /* cached files read again: the inode's size or mtime changed */
	uint64_t nonregular_refused; /* FIFOs, devices, directories, FUSE files named by a process: never read */
	uint64_t debug_deferred;    /* debug files left for a later second: the checksum budget was spent */
	uint64_t loads_async;       /* files whose symbols were read on the worker thread */
	uint64_t loads_inline_full; /* big files read in the caller's thread: the worker's queue was full */
	uint64_t loads_waiting;     /* reads on the worker not landed yet */
	uint64_t load_async_max_ms; /* the longest from a worker read's start to its landing */
	uint64_t read_inline_max_us; /* the longest read of a file's symbols in the caller's thread */
	uint64_t cache_memory, file_cap, pid_cap;
};

int symbolizer__new(const struct symbolizer_opts *o, struct symbolizer **out);
void symbolizer__free(struct symbolizer *s);

/*
 * ip is an address in process pid. is_return: ip is a return address (not the
 * leaf), so the call instruction before it is looked up.
 * Returns 0 (a result is always filled, even when unnamed) or -errno for
 * allocation failure.
 */
int symbolizer__user(struct symbolizer *s, uint32_t pid, uint64_t ip, int is_return, struct sym *out);
/*
 * Where ip lies in pid, without naming it: *file nonzero (the loaded file's
 * id, new at each load) and *offset (ip's file offset) when it is in a file
 * whose symbols are loaded; then symbolizer__user gives every (pid, ip)
 * with the same (file, offset, is_return) the same name and offset, and a
 * module path of that file. *file 0: not known so cheaply. Returns 0.
 */
int symbolizer__place(struct symbolizer *s, uint32_t pid, uint64_t ip, int is_return,
		      uint64_t *file, uint64_t *offset);
int symbolizer__kernel(struct symbolizer *s, uint64_t ip, struct sym *out);
/*
 * The name of a frame that came back with sym.later = file and sym.offset =
 * offset: 0 with *name (valid until the next call), -EAGAIN while the read
 * is on the worker, -ENOENT when no symbol covers it (or the file went from
 * the cache meanwhile). Lands every finished read first.
 */
int symbolizer__name_later(struct symbolizer *s, uint64_t file, uint64_t offset, int is_return,
			   const char **name);

/*
 * Reads pid's mappings now and parses every mapped file into the cache, so
 * that a process that exits before the next drain is still named (call it
 * on exec, or when a pid is first seen). The first capture of a pid also
 * keeps its root directory open (one descriptor per distinct root, until
 * the last process using it is forgotten) and notes its uid, so that its
 * perf map can still be read, and its owner checked, after it exited.
 * ids: the real uid, namespace pid and root when the caller knows them (an
 * exec event carries them; a root already pinned under that key is taken
 * without looking at /proc); NULL reads them from /proc/PID/status.
 * Returns 0 or -errno (-ENOENT: the process is already gone).
 */
int symbolizer__capture(struct symbolizer *s, uint32_t pid, const struct procreg_ids *ids);
/* The same with mappings the caller has (a reference is kept): no read of /proc/PID/maps. */
int symbolizer__capture_maps(struct symbolizer *s, uint32_t pid, const struct procreg_ids *ids,
			     struct procmaps *maps);

/*
 * pid was forked by ppid (not exec'd): it shares maps, its parent's as the
 * process registry holds them (a reference is kept), without a read of
 * /proc, so that its samples are named after it is gone. Whatever was
 * known under pid goes. An address outside maps, once pid is gone, is
 * asked of ppid.
 */
int symbolizer__fork(struct symbolizer *s, uint32_t ppid, uint32_t pid,
		     const struct procreg_ids *ids, struct procmaps *maps);

/*
 * Images kept per process from before its exec: a shell shim's chain
 * (shim, env, script, exec'ing script) and the shell that forked it, all
 * drained after the program's exec.
 */
#define SYMBOLIZER_PREV_IMAGES 5

/*
 * pid's images from before its last exec that still name its samples
 * (newest first, a reference each, at most SYMBOLIZER_PREV_IMAGES): taken
 * before its next exec starts its entry afresh, and given back to
 * symbolizer__exec_prev. Returns how many.
 */
size_t symbolizer__prev_images(struct symbolizer *s, uint32_t pid, struct procmaps **out);

/*
 * pid exec'd (captured since): prev, its image before (a forked child's:
 * its parent's), and the older images before that (nolder of them, from
 * symbolizer__prev_images), name for a while the addresses outside the new
 * one that lie in files loaded already: its samples taken before the
 * exec, drained after it. References are kept.
 */
void symbolizer__exec_prev(struct symbolizer *s, uint32_t pid, struct procmaps *prev,
			   struct procmaps *const *older, size_t nolder);

/*
 * pid's mappings as last read (capture, first sight, a miss), shared rather
 * than read again: a new reference (procmaps__free drops it). -ENOENT when
 * none are known.
 */
int symbolizer__maps(struct symbolizer *s, uint32_t pid, struct procmaps **out);

/*
 * The process has exited; its samples may still be drained. An address
 * outside its mappings is not asked of /proc any more (a reused pid
 * execs, and is forgotten then), only of its perf map.
 */
void symbolizer__exited(struct symbolizer *s, uint32_t pid);

/* The process exec'd or exited: drop its mapping table (files stay cached). */
void symbolizer__forget_pid(struct symbolizer *s, uint32_t pid);

void symbolizer__stats(const struct symbolizer *s, struct symbolizer_stats *out);

#endif
