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

/* Where the interpreter keeps what the walk reads: byte offsets in one version's structures. */
struct profd_pyoffs {
	__u16 rt_interp_head;   /* _PyRuntime.interpreters.head */
	__u16 is_tstate_head;   /* PyInterpreterState: first PyThreadState */
	__u16 ts_next;          /* PyThreadState.next */
	__u16 ts_thread_id;     /* PyThreadState.thread_id: pthread_self(), the thread pointer on x86-64 */
	__u16 ts_frame;         /* PyThreadState.frame (3.10), .cframe (3.11, 3.12), .current_frame (3.13) */
	__u16 cf_current_frame; /* _PyCFrame.current_frame, with PROFD_PY_F_CFRAME */
	__u16 fr_previous;      /* PyFrameObject.f_back or _PyInterpreterFrame.previous */
	__u16 fr_code;          /* .f_code, or .f_executable (3.13) */
	__u16 fr_is_entry;      /* _PyInterpreterFrame.is_entry (3.11) or NONE */
	__u16 fr_owner;         /* _PyInterpreterFrame.owner (3.12+: 3 marks an eval call's entry shim) or NONE */
	__u16 co_name;          /* PyCodeObject.co_qualname (3.11+) or .co_name (3.10) */
	__u16 co_filename;
	__u16 co_firstlineno;
	__u16 str_length;       /* PyASCIIObject.length */
	__u16 str_state;        /* PyASCIIObject.state */
	__u16 str_ascii_data;   /* sizeof(PyASCIIObject): where a compact ASCII string's bytes start */
	__u16 str_utf8;         /* PyCompactUnicodeObject.utf8 (utf8_length is the word before) */
	__u16 flags;            /* PROFD_PY_F_* */
};

/* Value of the py_procs map, by tgid: one CPython process the walker may read. */
struct profd_pyproc {
	__u64 runtime;    /* address of _PyRuntime in the process */
	__u64 code_type;  /* address of PyCode_Type: what a frame's code object must point to */
	__u64 start_code; /* mm->start_code when written: another image (exec, pid reuse) does not match */
	__u32 version;    /* PY_VERSION_HEX >> 16 (0x030b: 3.11) */
	__u32 pad;
	struct profd_pyoffs o;
	/* For the drain, not the walker: where _PyEval_EvalFrameDefault is (0, 0: unknown). */
	__u64 eval_lo, eval_hi;
};

/*
 * A Python frame in a user stack: after the native frames, leaf first, with
 * this bit set (user addresses never have it). ENTRY marks the outermost
 * frame run by one native _PyEval_EvalFrameDefault call. The low 62 bits
 * are the frame's symbol id in py_syms; 0: the frame could not be named.
 */
#define PROFD_PY_FRAME (1ULL << 63)
#define PROFD_PY_ENTRY (1ULL << 62)
#define PROFD_PY_ID_MASK ((1ULL << 62) - 1)
#define PROFD_PY_MAX_DEPTH 48

#define PROFD_PY_NAME_MAX 128
#define PROFD_PY_FILE_MAX 128

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
	__u32 pad;
	char name[PROFD_PY_NAME_MAX];
	char file[PROFD_PY_FILE_MAX];
};

#define PROFD_PYSYM_F_NAME_CUT 1 /* the name went on past name[] */
#define PROFD_PYSYM_F_FILE_CUT 2 /* the file name began before file[] */
#define PROFD_PYSYM_F_NAME_RAW 4 /* the name is not ASCII and had no UTF-8 form yet */
#define PROFD_PYSYM_F_FILE_RAW 8

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
	PROFD_PYCNT_MAX,
};

#endif
