/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * CPython frames read at sample time: types shared by bpf/python.h and user
 * space (lib/pyoffsets.c, lib/pyinterp.c, daemon/pyprocs.c). Fixed-width only.
 */
#ifndef PROFD_PYTYPES_H
#define PROFD_PYTYPES_H

/* An offset the layout does not have. */
#define PROFD_PY_NONE 0xffff

/* Layout flags. */
#define PROFD_PY_F_ALL_ENTRY 1 /* every frame runs in its own eval call (3.10: PyFrameObject chain) */
#define PROFD_PY_F_CFRAME 2    /* the thread's current frame is tstate->cframe->current_frame */
#define PROFD_PY_F_LASTI 4     /* fr_instr is an int, the index of the last instruction (3.10), not a pointer */
#define PROFD_PY_F_FREE_HOOK 8 /* py_code_free is linked with this process's pid: py_freegen counts its frees */

/* Where the interpreter keeps what the walk reads: byte offsets in one version's structures. */
struct profd_pyoffs {
	__u16 rt_interp_head;   /* _PyRuntime.interpreters.head */
	__u16 is_tstate_head;   /* PyInterpreterState: first PyThreadState */
	__u16 ts_next;          /* PyThreadState.next */
	__u16 ts_thread_id;     /* PyThreadState.thread_id: pthread_self(), the thread pointer on x86-64 */
	__u16 ts_frame;         /* PyThreadState.frame (3.10), .cframe (3.11, 3.12), .current_frame (3.13) */
	__u16 ts_interp;        /* PyThreadState.interp */
	__u16 cf_current_frame; /* _PyCFrame.current_frame, with PROFD_PY_F_CFRAME */
	__u16 fr_previous;      /* PyFrameObject.f_back or _PyInterpreterFrame.previous */
	__u16 fr_code;          /* .f_code, or .f_executable (3.13) */
	__u16 fr_is_entry;      /* _PyInterpreterFrame.is_entry (3.11) or NONE */
	__u16 fr_owner;         /* _PyInterpreterFrame.owner (3.12+: 3 marks an eval call's entry shim) or NONE */
	__u16 fr_instr;         /* PyFrameObject.f_lasti (3.10), .prev_instr (3.11, 3.12), .instr_ptr (3.13) */
	__u16 co_name;          /* PyCodeObject.co_qualname (3.11+) or .co_name (3.10) */
	__u16 co_filename;
	__u16 co_firstlineno;
	__u16 co_linetable;     /* PyCodeObject.co_linetable, a bytes object */
	__u16 co_code;          /* PyCodeObject.co_code_adaptive: where the instructions start (3.11+) or NONE */
	__u16 co_version;       /* PyCodeObject.co_version (3.12+: unique per code object of an interpreter) or NONE */
	__u16 bytes_size;       /* PyBytesObject.ob_size */
	__u16 bytes_data;       /* PyBytesObject.ob_sval */
	__u16 str_length;       /* PyASCIIObject.length */
	__u16 str_state;        /* PyASCIIObject.state */
	__u16 str_ascii_data;   /* sizeof(PyASCIIObject): where a compact ASCII string's bytes start */
	__u16 str_utf8;         /* PyCompactUnicodeObject.utf8 (utf8_length is the word before) */
	__u16 flags;            /* PROFD_PY_F_* */
	__u16 str_hash;         /* PyASCIIObject.hash: the text's hash once computed, else -1 */
	__u16 bytes_hash;       /* PyBytesObject.ob_shash: the same for bytes */
	__u16 pad;
};

/*
 * py_gen (bpf/pyadopt.h) has this many counters, one per pid & (slots - 1):
 * an insert for a pid expires the walker's "no entry" notes of the pids
 * that share its counter only, not every note on every CPU.
 */
#define PROFD_PY_GEN_SLOTS 256

/* Value of the py_procs map, by tgid: one CPython process the walker may read. */
struct profd_pyproc {
	__u64 runtime;    /* address of _PyRuntime in the process */
	__u64 code_type;  /* address of PyCode_Type: what a frame's code object must point to */
	__u64 start_code; /* mm->start_code when written: another image (exec, pid reuse) does not match */
	__u32 version;    /* PY_VERSION_HEX >> 16 (0x030b: 3.11) */
	__u32 pad;
	/* New at each write: a code object cached under another value belongs to another process image. */
	__u64 epoch;
	struct profd_pyoffs o;
	/* For the drain, not the walker: where _PyEval_EvalFrameDefault is (0, 0: unknown). */
	__u64 eval_lo, eval_hi;
	/*
	 * The interpreter file's initialised writable data at the process's
	 * addresses, [st_lo, st_hi) (0, 0: unknown), and the file (py_files'
	 * key). From 3.11 the start-up modules' code objects and their strings
	 * are static objects there (deep-frozen): at the same offset in every
	 * process of the file, never freed, so the walker caches their names
	 * by (file, offset), for every process of the file at once.
	 */
	__u64 st_lo, st_hi;
	__u64 st_dev, st_ino;
};

/*
 * Key and value of py_files: an interpreter file probed before (the ELF
 * holding _PyRuntime), by the kernel's device number and inode. The
 * walker makes a py_procs value from it at a process's first sample
 * whose pc lies in that file, before user space has looked at the
 * process: a script that lives 300 ms is read while the daemon is busy.
 */
struct profd_pyfile_key {
	__u64 dev; /* major << 20 | minor, as the kernel keeps it */
	__u64 ino;
};

#define PROFD_PY_LOADS 4

struct profd_pyfile {
	/* runtime, code_type, eval_lo and eval_hi are ELF virtual addresses (0: none). */
	struct profd_pyproc tmpl;
	struct {
		__u64 offset, vaddr, filesz;
	} loads[PROFD_PY_LOADS]; /* PT_LOAD segments: where a mapping's bias comes from */
	__u32 nloads, pad;
};

/*
 * A Python frame in a user stack: after the native frames, leaf first, with
 * this bit set (user addresses never have it). ENTRY marks the outermost
 * frame run by one native _PyEval_EvalFrameDefault call. The low 40 bits
 * are the frame's symbol id in py_syms (0: the frame could not be named);
 * bits 40-61 the last instruction's index in code units plus 2 (1: the
 * frame has not started; 0: unknown), which the line table turns into the
 * line being run.
 */
#define PROFD_PY_FRAME (1ULL << 63)
#define PROFD_PY_ENTRY (1ULL << 62)
#define PROFD_PY_ID_MASK ((1ULL << 40) - 1)
#define PROFD_PY_LASTI_SHIFT 40
#define PROFD_PY_LASTI_MASK ((1ULL << 22) - 1)
#define PROFD_PY_MAX_DEPTH 48

#define PROFD_PY_NAME_MAX 128
#define PROFD_PY_FILE_MAX 128
#define PROFD_PY_LT_MAX 256 /* bytes of a line table kept: lines past them are not known */

/*
 * What a frame is named by, keyed by a hash of these very bytes: an id
 * names what was read at the sample, whatever the code object's address
 * holds later. name: the start of the qualified name; file: the end of
 * the file name (the part that tells files apart).
 */
struct profd_pysym {
	__u32 firstlineno;
	__u16 name_len;  /* bytes in name (less than the string when it was cut) */
	__u16 file_len;
	__u32 flags;     /* PROFD_PYSYM_F_* */
	__u16 lt_len;    /* bytes in lt (less than the line table when it was cut) */
	__u16 pad;
	char name[PROFD_PY_NAME_MAX];
	char file[PROFD_PY_FILE_MAX];
	__u8 lt[PROFD_PY_LT_MAX]; /* the start of co_linetable */
};

#define PROFD_PYSYM_F_NAME_CUT 1 /* the name went on past name[] */
#define PROFD_PYSYM_F_FILE_CUT 2 /* the file name began before file[] */
#define PROFD_PYSYM_F_NAME_RAW 4 /* the name is not ASCII and had no UTF-8 form yet */
#define PROFD_PYSYM_F_FILE_RAW 8
#define PROFD_PYSYM_F_LT_CUT 16  /* the line table went on past lt[] */
#define PROFD_PYSYM_F_LT_310 32  /* lt is 3.10's (PEP 626 byte pairs); else 3.11+'s location table */

enum profd_pycounter {
	PROFD_PYCNT_WALKS = 0,  /* samples of a known CPython process whose frames were read */
	PROFD_PYCNT_FRAMES,     /* Python frames read */
	PROFD_PYCNT_NO_THREAD,  /* samples of a thread with no thread state (not a Python thread, or not yet) */
	PROFD_PYCNT_BAD_READ,   /* walks stopped at unreadable interpreter memory */
	PROFD_PYCNT_NOT_CODE,   /* frames whose code object was not one: the walk stopped */
	PROFD_PYCNT_SYMS_FULL,  /* py_syms full: a frame left unnamed */
	PROFD_PYCNT_SYM_CLASH,  /* two names hashed alike: a frame left unnamed rather than misnamed */
	PROFD_PYCNT_TRUNCATED,  /* deeper than PROFD_PY_MAX_DEPTH */
	PROFD_PYCNT_THREAD_CACHED, /* walks whose thread state came from py_threads, not a search */
	PROFD_PYCNT_CODE_CACHED,   /* frames named from the per-CPU code cache: no hash, no py_syms insert */
	PROFD_PYCNT_ADOPTED,       /* processes the walker made known itself, from py_files */
	PROFD_PYCNT_CODE_GEN_HITS, /* ... of which named by the free generation: nothing of the code object read */
	PROFD_PYCNT_CODE_STATIC_HITS, /* ... of which static code objects named by file and offset (st_lo) */
	PROFD_PYCNT_MAX,
};

#endif
