/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * CPython frames, read from the interpreter's own structures at sample time
 * and appended to the native user stack (leaf first, PROFD_PY_FRAME set).
 * User space finds the interpreter in a process's ELF symbols and writes
 * py_procs (lib/pyinterp.c, daemon/pyprocs.c); the drain puts each Python
 * frame in place of the native _PyEval_EvalFrameDefault that ran it.
 *
 * A frame is named here, from the bytes of its code object's qualified
 * name and file name, into py_syms under a hash of those bytes: a code
 * object freed and its address reused names the new function, never the
 * old, because nothing is looked up by address later.
 */
#ifndef PROFD_PYTHON_BPF_H
#define PROFD_PYTHON_BPF_H

#include "pytypes.h"
#include "pyadopt.h"

__u64 pycounters[PROFD_PYCNT_MAX] = {};

/* With PROFD_COST_PID: the time that process's on-CPU samples spent reading Python frames. */
const volatile __u32 py_cost_tgid = 0;
__u64 py_cost_ns = 0;

/* Sized by user space; LRU: an id evicted before its drain shows as an unnamed Python frame. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u64);
	__type(value, struct profd_pysym);
} py_syms SEC(".maps");

/* New names put in py_syms: how long ago a code cache entry last found its id there. */
__u64 py_syms_adds = 0;

/*
 * Code object frees, by process: py_freegen[tgid & (PROFD_PY_GEN_SLOTS -
 * 1)] grows by one as each code object of a hooked process starts to be
 * freed (bpf/pyfree.bpf.c's uprobe on code_dealloc, linked with that
 * process's pid, which shares this map). Processes that share a slot bump
 * each other's generation: more misses, never a wrong hit. In a section
 * of their own: each walk reads one, and the frees of every CPU write them.
 *
 * PROFD_PY_F_FREE_HOOK is set in an entry only by user space
 * (daemon/pyprocs.c), after the process's link is in and with a new
 * epoch: entries of the code cache stamped before (gen 0 without the
 * flag, or a generation of an earlier hook or of another process of the
 * slot) carry another epoch, so frees before the link cannot make a hit.
 * Never in a file's template (the next process of the file has no link),
 * cleared in a fork's copy (bpf/events.bpf.c: the link counts the parent's
 * pid only), and gone with the entry at exec. Cleared a second before the
 * link is closed: a walk reads the flag and the generation in one run.
 */
__u64 py_freegen[PROFD_PY_GEN_SLOTS] SEC(".data.py_freegen") = {};

/*
 * A code object named before on this CPU, by process image (epoch) and
 * address, and the id it was named: within a cache line, all a hit reads
 * of it (the entries are read cold, one per frame).
 *
 * The address does not prove the object is the same: a freed code object
 * and its strings get their addresses back at once. From 3.12 a code
 * object carries co_version, drawn from a counter of its interpreter that
 * only grows (and stops at 0), so the address, the version and the
 * interpreter together name one code object for the life of the process
 * image: a hit reads nothing more. Otherwise the entry is checked by what
 * its id is made of, in the objects the code object points to now: its
 * first line, and the name, file and line table objects holding the
 * bytes the id was made from. CPython caches a str's and a bytes object's
 * hash in the object (-1 until computed) and never changes it: when the
 * entry kept that hash, a hit reads the hash's word and compares it (a
 * different text would need the same keyed SipHash); when it did not,
 * the entry keeps py_sum of the bytes, and a hit reads the object's
 * bytes and sums them: the object and the entry's id hold the same text
 * but for a 64-bit collision, the odds CPython's own hash gives. The
 * objects' addresses need not be the ones named: equal bytes name the
 * same id.
 *
 * The id is looked up in py_syms again after PY_SYMS_RECHECK new names:
 * an LRU entry that went is named again.
 *
 * Where the process's code object frees are counted (PROFD_PY_F_FREE_HOOK,
 * py_freegen), an entry checked either way carries the count read when
 * the walk that checked it began (gen), and while the count holds that
 * value a hit reads nothing of the object: py_symbol_in says why.
 *
 * A code object inside the interpreter file's initialised data (from 3.11
 * the start-up modules' deep-frozen code, with static strings and line
 * tables) is one of the file's, at the same offset in every process of
 * it and never freed: its entry is keyed by the file and the offset
 * (PY_SUM_STATIC), not by process, so a process's start-up finds the
 * names earlier processes of the file made, and a hit reads nothing of
 * the object (as a hit by free generation: a code object's name, file,
 * first line and line table never change, and a static one is never
 * freed); an entry whose id was not found in py_syms lately is checked by
 * the objects' offsets before py_syms is asked.
 */
struct py_code {
	__u64 code, epoch;
	union {
		struct { /* checked by content: before 3.12, or co_version 0 */
			/* CPython's own, from the objects named (-1: none) */
			__s64 name_hash, lt_hash;
			/* py_file_sum of the file part of what id names */
			__u64 file_sum;
		};
		__u64 interp; /* PY_SUM_VERSIONED */
		struct { /* PY_SUM_STATIC: code is an offset from st_lo, epoch PY_EPOCH_STATIC | st_dev */
			/* The name, file and line table objects, as offsets from st_lo */
			__u32 name_off, file_off, lt_off, st_pad;
			__u64 ino; /* py_static_file's */
		};
	};
	__u64 idc;   /* the id, and py_syms_adds (24 bits) when it was last found there: PY_IDC_* */
	__u32 first; /* co_firstlineno; co_version when PY_SUM_VERSIONED */
	/*
	 * The free generation of the walk that last checked it, plus 1 (0:
	 * none): while the process's generation holds that value, the code
	 * object checked is still at its address (py_symbol_in).
	 */
	__u32 gen;
	/* The walk that last used it, its low bits (the older of a set's two goes first). */
	__u16 used;
	__u16 lt_len; /* line table bytes the id holds, PY_LT_CUT when the table was longer */
	__u8 sums;    /* PY_SUM_*: name_hash or lt_hash is py_sum's, CPython having none */
	__u8 name_len, file_len; /* the texts' lengths (at most 128: longer ones never hit) */
	__u8 pad;
};

_Static_assert(sizeof(struct py_code) <= 64, "a code cache entry fits a cache line");

#define PY_IDC_SHIFT 40
#define PY_IDC_CHECKED(c) ((__u32)((c)->idc >> PY_IDC_SHIFT))
#define PY_IDC_FRESH(c) ((((__u32)py_syms_adds - PY_IDC_CHECKED(c)) & 0xffffff) <= PY_SYMS_RECHECK)

#define PY_CODE_SLOTS 256 /* two-way sets; a per-CPU array value stays under 32 KB */
#define PY_SYMS_RECHECK 1024
#define PY_SUM_NAME 1
#define PY_SUM_LT 2
#define PY_SUM_VERSIONED 4 /* checked by co_version and interp, not by content */
#define PY_SUM_STATIC 8    /* a static code object: checked by the offsets of what it points to */
/* Bit 62: no epoch has it (user space counts from 1, the kernel's have bit 63). */
#define PY_EPOCH_STATIC (1ULL << 62)
#define PY_LT_CUT 0x8000

/* The thread state found last for a thread, checked at each use. */
struct py_thread {
	__u64 tstate;
	__u64 fsbase;
	__u32 pid;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct py_thread);
} py_threads SEC(".maps");

#define PY_OBJ_READ 160 /* covers every offset of a code object the table holds */
#define PY_FRAME_READ 112 /* ... of a frame */
#define PY_TS_READ 192  /* ... of a thread state */
#define PY_STR_HDR 64   /* covers PyASCIIObject and PyCompactUnicodeObject's utf8 fields */

/*
 * Where a blocked thread's Python frames stand, for the off-CPU hook's
 * reuse of a place's stacks: from 3.11 a Python call adds no native
 * frame, so two functions that block at one native pc and sp (time.sleep
 * in each) differ only here. sum mixes the leaf frame's and its caller's
 * addresses, code objects and instructions, read again at a reuse from
 * src (the thread state's frame word, through the _PyCFrame when cf is
 * not PROFD_PY_NONE); src 0: no Python frames read.
 */
struct py_place {
	__u64 src, sum;
	__u16 cf, lo, len;       /* the frame's bytes read: [lo, lo + len) */
	__u16 code, prev, instr; /* the fields' offsets in the frame */
	__u16 lasti;             /* instr is a 32-bit index (3.10) */
	__u16 pad;
};

/* Reads land at the start of buffers twice their size, so masked offsets stay inside. */
struct py_scratch {
	__u64 frames[64];
	__s64 id;        /* py_symbol's result */
	/*
	 * Frames read so far. Kept here, not in the loop's stack state: the
	 * verifier does not track map values, so the loop's states converge
	 * instead of being walked once per count.
	 */
	__u32 n;
	__u32 pad;
	__u64 found;           /* the thread search's match */
	/*
	 * The last frame's code object and file name string, and the id they
	 * named, for this walk only: the frames on a thread's chain hold their
	 * code objects, which hold their strings, so while the walk runs an
	 * address on the chain cannot be freed and reused. Recursion reads its
	 * code object once; frames of one file read the file name once.
	 */
	__u64 last_code, last_id, last_file;
	__s64 last_file_hash;
	__s64 name_hash, lt_hash; /* the hashes of the name and line table being named */
	__u32 file_flags;
	__u32 pid;
	__u32 cached; /* frames of this walk named from codes[] */
	__u32 kind;   /* which program's scratch this is: 0 on-CPU, 1 off-CPU */
	__u32 walk;   /* walks on this CPU so far: codes[].used */
	__u32 slot; /* py_code_bytes_same's */
	__u32 fgen;   /* the process's free generation at this walk's start, plus 1 (0: no hook) */
	__u32 genhits; /* frames of this walk named by their free generation */
	__u32 sthits;  /* frames of this walk named as static code objects */
	__u32 file_ascii; /* last_file's text is compact ASCII */
	__u64 interp; /* the walked thread's interpreter */
	__u64 t0;     /* with PROFD_COST_PID: when this walk began */
	/*
	 * A file string found in this walk to hold the file text that code
	 * cache entries with this py_file_sum name: the chain's code objects
	 * hold it, so it holds that text until the walk ends. Frames of one
	 * file compare its bytes once a walk, not once a frame.
	 */
	__u64 fver_str, fver_sum;
	__u64 last_file_sum;
	__u16 fr_lo, fr_len; /* the bytes of a frame the walk uses: its first and last fields */
	__u64 wstart, whi;   /* what py_win holds of the thread's memory: [wstart, whi) */
	__u16 co_head;   /* bytes of a code object up to co_version's end: what a cache hit needs (3.12+) */
	__u16 co_full;   /* ... up to the last field naming reads */
	__u16 co_lo;     /* where the fields naming reads begin: what a hit reads from, before 3.12 */
	__u16 co_pad[3];
	__u64 seen[PY_CODE_SLOTS / 64]; /* codes[] slots named or checked in this walk */
	/* The strings and line table of the code object being checked. */
	__u64 cur_name, cur_file, cur_lt;
	struct py_code codes[PY_CODE_SLOTS];
	/* codes[]' file strings' hashes (-1: none): read once a walk a file. */
	__s64 file_hash[PY_CODE_SLOTS];
	struct py_thread thr;  /* the py_threads value written */
	struct profd_pysym sym;
	__u8 obj[264]; /* a frame, code object or thread state: an 8-byte word at any offset below 256 */
	__u8 str[128];
	__u8 nbuf[256], fbuf[256]; /* a name's and a file's header and text, from one read */
	__u8 lbuf[512];            /* a line table's header and bytes */
	struct py_place place;     /* the off-CPU walk's, for its place (slot 1) */
	/*
	 * The thread state found last on this CPU, for the thread cpu_tid:
	 * checked as a py_threads value is, and beside place, which every walk
	 * writes first, so a CPU sampling one thread again touches no map of
	 * its own for it (a py_threads lookup is a hash and two or three cold
	 * lines).
	 */
	struct py_thread cpu_thr;
	__u32 cpu_tid, cpu_pad;
	__u64 place_k[2];          /* the leaf frame's and its caller's part of place.sum */
	__u64 place_prev;          /* py_place_frame's caller */
	struct profd_pyproc adopt; /* a py_procs value made from py_files */
	struct profd_pyfile_key fkey; /* py_vma's answer: the file at the pc, */
	__u64 vstart, vpgoff;         /* and where the mapping starts */
};

/* One per program kind (on-CPU, off-CPU): a perf NMI may interrupt the sched_switch program. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct py_scratch);
} py_scratch SEC(".maps");

static __always_inline void pycount(enum profd_pycounter c)
{
	__sync_fetch_and_add(&pycounters[c], 1);
}

static __always_inline __u64 py_word(const __u8 *buf, __u32 off)
{
	return *(const __u64 *)(buf + (off & 255));
}

static __always_inline int py_read(__u64 *dst, __u64 addr)
{
	if (!addr || bpf_probe_read_user(dst, sizeof(*dst), (void *)addr)) {
		pycount(PROFD_PYCNT_BAD_READ);
		return -1;
	}
	return 0;
}

/*
 * A 64-bit sum of len bytes at p (words 8-byte words at most, the bytes
 * past len taken as 0) and seed: a text's length and flags. The same
 * from a name's zero-padded copy and from a read of the object.
 */
static __always_inline __u64 py_sum(const __u8 *p, __u32 len, __u32 words, __u64 seed)
{
	__u64 h = 0x84222325cbf29ce4ULL ^ seed, w;

	for (__u32 i = 0; i < words; i++) {
		w = 0;
		if (i * 8 < len) {
			w = *(const __u64 *)(p + i * 8);
			if (len - i * 8 < 8)
				w &= (1ULL << ((len - i * 8) * 8)) - 1;
		}
		h ^= w;
		h *= 0x9e3779b97f4a7c15ULL;
		h ^= h >> 31;
	}
	return h;
}

/*
 * Reads a str object's header and its first len bytes of compact ASCII
 * text (len <= 128) into buf (256 bytes): what comparing it with a kept
 * text of len bytes needs, and no cache line more. 0 or -1.
 */
static __always_inline int py_str_read(const struct profd_pyoffs *o, __u8 *buf, __u64 str, __u32 len)
{
	__u32 n = (o->str_ascii_data & 63) + (len & 255);

	/* One register for the bound and the call, or the verifier sees the unbounded read. */
	asm volatile("" : "+r"(n));
	if (!str || n > 192)
		return -1;
	return bpf_probe_read_user(buf, n, (void *)str) ? -1 : 0;
}

/*
 * 1 when buf, a py_str_read of a str object, holds a text of the sum want
 * (compact ASCII, at most 128 bytes, summed as py_file_sum and
 * py_name_sum sum a text kept whole): the object's text is the one named
 * before, whatever its address held then.
 */
static __always_inline int py_str_sum_is(const struct profd_pyoffs *o, const __u8 *buf, __u64 want, __u32 want_len)
{
	__u32 state = *(const __u32 *)(buf + (o->str_state & 63)), d = o->str_ascii_data & 63;
	__u64 len = *(const __u64 *)(buf + (o->str_length & 63));

	if ((state & 0x60) != 0x60 || len != want_len || len > 128)
		return 0; /* compact and ASCII (bits 5, 6) */
	return py_sum(buf + d, len, 16, len << 32) == want;
}

/*
 * Copies a str object's text into dst (cap bytes, a power of two): the
 * head (tail = 0) or the end (tail = 1). Returns the bytes copied, or -1.
 */
static __always_inline int py_str(const struct profd_pyoffs *o, __u8 *hdr, __u64 str, char *dst,
				  __u32 cap, int tail, __u32 *flags, __u32 cut_flag, __u32 raw_flag)
{
	__u64 len, data;
	__u32 state, n;

	if (!str || bpf_probe_read_user(hdr, PY_STR_HDR, (void *)str))
		return -1;
	len = *(__u64 *)(hdr + (o->str_length & 63));
	state = *(__u32 *)(hdr + (o->str_state & 63));
	/* state bits: interned:2, kind:3, compact:1, ascii:1 in every version the table knows. */
	if (!(state & (1u << 5)))
		return -1; /* not compact: code object names always are */
	if (state & (1u << 6)) {
		data = str + o->str_ascii_data;
	} else {
		data = *(__u64 *)(hdr + (o->str_utf8 & 63));
		len = *(__u64 *)(hdr + ((o->str_utf8 - 8) & 63));
		if (!data) {
			*flags |= raw_flag;
			return 0;
		}
	}
	if (len > 1 << 20)
		return -1;
	n = len;
	if (len > cap) {
		*flags |= cut_flag;
		if (tail)
			data += len - cap;
		n = cap;
	}
	/* One register for the bound and the call, or the verifier sees the unbounded copy. */
	asm volatile("" : "+r"(n));
	if (n > cap)
		return -1;
	if (n && bpf_probe_read_user(dst, n, (void *)data))
		return -1;
	return n;
}

static __always_inline __u64 py_sym_hash(const struct profd_pysym *s)
{
	const __u64 *w = (const __u64 *)s;
	__u64 h = 0x84222325cbf29ce4ULL;

	for (__u32 i = 0; i < sizeof(*s) / 8; i++) {
		h ^= w[i];
		h *= 0x9e3779b97f4a7c15ULL;
		h ^= h >> 31;
	}
	return h;
}

static __always_inline int py_sym_same(const struct profd_pysym *a, const struct profd_pysym *b)
{
	const __u64 *x = (const __u64 *)a, *y = (const __u64 *)b;

	for (__u32 i = 0; i < sizeof(*a) / 8; i++)
		if (x[i] != y[i])
			return 0;
	return 1;
}

/* The sum of a file part of a name: text, length and flags (CUT, RAW). */
static __always_inline __u64 py_file_sum(const struct profd_pysym *s, __u32 flags)
{
	return py_sum((const __u8 *)s->file, s->file_len, PROFD_PY_FILE_MAX / 8, (__u64)s->file_len << 32 | flags);
}

/* The sum of a name's text, its length and flags (CUT, RAW). */
static __always_inline __u64 py_name_sum(const struct profd_pysym *s, __u32 flags)
{
	return py_sum((const __u8 *)s->name, s->name_len, PROFD_PY_NAME_MAX / 8, (__u64)s->name_len << 32 | flags);
}

/* The sum of the line table bytes an id holds: their count, and whether the table was longer. */
static __always_inline __u64 py_lt_sum(const __u8 *p, __u32 n, __u32 cut)
{
	return py_sum(p, n, PROFD_PY_LT_MAX / 8, (__u64)n << 32 | (cut ? PY_LT_CUT : 0));
}

/*
 * Copies the start of a bytes object (a line table) into s->lt; returns
 * the bytes copied, or -1.
 */
static __always_inline int py_lt(const struct profd_pyoffs *o, __u8 *hdr, __u64 lt, struct profd_pysym *s)
{
	__u64 len;
	__u32 n;

	if (!lt || bpf_probe_read_user(hdr, 32, (void *)lt))
		return -1;
	len = py_word(hdr, o->bytes_size & 31);
	if (len > 1 << 24)
		return -1;
	n = len;
	if (len > PROFD_PY_LT_MAX) {
		s->flags |= PROFD_PYSYM_F_LT_CUT;
		n = PROFD_PY_LT_MAX;
	}
	asm volatile("" : "+r"(n));
	if (n > PROFD_PY_LT_MAX)
		return -1;
	if (n && bpf_probe_read_user(s->lt, n, (void *)(lt + o->bytes_data)))
		return -1;
	return n;
}

/*
 * 1 when the line table object at lt holds what the code cache entry c's
 * id holds: the same length (or longer than what was kept, when it was
 * cut) and bytes of the same sum.
 */
static __always_inline int py_lt_is(const struct profd_pyoffs *o, __u8 *buf, __u64 lt, const struct py_code *c)
{
	__u32 n = c->lt_len & ~PY_LT_CUT, cut = c->lt_len & PY_LT_CUT, d = o->bytes_data & 63, sz;
	__u64 len;

	if (n > PROFD_PY_LT_MAX || !lt)
		return 0;
	/* One register for the bound and the call, or the verifier sees the unbounded read. */
	sz = d + n;
	asm volatile("" : "+r"(sz));
	if (sz > 512 || bpf_probe_read_user(buf, sz, (void *)lt))
		return 0;
	len = py_word(buf, o->bytes_size & 31);
	if (cut ? len <= PROFD_PY_LT_MAX : len != n)
		return 0;
	return py_lt_sum(buf + d, n, cut) == c->lt_hash;
}

/* A str's or bytes object's cached hash in a read of its start; -1 when the layout has none. */
static __always_inline __s64 py_hash_at(const __u8 *buf, __u16 off)
{
	return off == PROFD_PY_NONE ? -1 : *(const __s64 *)(buf + (off & 31));
}

/*
 * 1 when the object at addr carries the hash want (not -1); reads the
 * hash's word alone into buf: one cache line, whatever the object's place.
 */
static __always_inline int py_hash_is(__u8 *buf, __u64 addr, __u16 off, __s64 want)
{
	return off != PROFD_PY_NONE && !bpf_probe_read_user(buf, 8, (void *)(addr + (off & 31))) &&
	       *(const __s64 *)buf == want;
}

#define PY_PART_FILE 1
#define PY_PART_NAME 2
#define PY_PART_LT 4

/*
 * 1 when the objects of the code object cached in slot i that parts
 * names (its file and name strings, its line table), read in full, hold
 * the text its id was made from, by the sums the entry kept; the entry
 * then keeps each object's hash if CPython has computed it since. A
 * global function: the verifier walks its loops once, not once per path
 * through the caller.
 */
__noinline int py_code_bytes_same(const struct profd_pyproc *pp, struct py_scratch *sc, __u32 i, __u32 parts)
{
	struct py_code *c;
	__s64 h;

	if (!pp || !sc)
		return 0;
	/*
	 * The slot in the scratch and the entry found again from it: few
	 * values live across calls, so few spilled, and the sched_switch
	 * program's stack is near its limit.
	 */
	sc->slot = i & (PY_CODE_SLOTS - 1);
	if (parts & PY_PART_FILE) {
		c = &sc->codes[sc->slot & (PY_CODE_SLOTS - 1)];
		if (py_str_read(&pp->o, sc->fbuf, sc->cur_file, c->file_len) ||
		    !py_str_sum_is(&pp->o, sc->fbuf, c->file_sum, c->file_len))
			return 0;
		sc->file_hash[sc->slot & (PY_CODE_SLOTS - 1)] = py_hash_at(sc->fbuf, pp->o.str_hash);
		sc->fver_str = sc->cur_file;
		sc->fver_sum = c->file_sum;
	}
	if (parts & PY_PART_NAME) {
		c = &sc->codes[sc->slot & (PY_CODE_SLOTS - 1)];
		if (py_str_read(&pp->o, sc->nbuf, sc->cur_name, c->name_len) ||
		    !py_str_sum_is(&pp->o, sc->nbuf, c->name_hash, c->name_len))
			return 0;
		h = py_hash_at(sc->nbuf, pp->o.str_hash);
		if (h != -1) {
			c->name_hash = h;
			c->sums &= ~PY_SUM_NAME;
		}
	}
	if (parts & PY_PART_LT) {
		c = &sc->codes[sc->slot & (PY_CODE_SLOTS - 1)];
		if (!py_lt_is(&pp->o, sc->lbuf, sc->cur_lt, c))
			return 0;
		h = py_hash_at(sc->lbuf, pp->o.bytes_hash);
		if (h != -1) {
			c->lt_hash = h;
			c->sums &= ~PY_SUM_LT;
		}
	}
	return 1;
}

/*
 * Whether the code object cached in slot i, at its cached addresses,
 * still holds the name its id names, by the hashes the entry kept: -1
 * when it does not, else the PY_PART_* objects that had no hash kept, to
 * be compared by their bytes (py_code_bytes_same). A global function,
 * checked once on its own.
 */
__noinline int py_code_same(const struct profd_pyproc *pp, struct py_scratch *sc, __u32 i)
{
	const struct profd_pyoffs *o;
	struct py_code *c;
	int parts = 0;

	if (!pp || !sc)
		return -1;
	o = &pp->o;
	c = &sc->codes[i & (PY_CODE_SLOTS - 1)];
	/*
	 * The frames of one file share its string: checked once a walk, by
	 * its hash's word when the entry kept one (a cache line, where the
	 * text would be up to four), else by its bytes. The hash was kept
	 * with the sum, from one text: a match is the text of that sum.
	 */
	if (sc->cur_file != sc->fver_str || c->file_sum != sc->fver_sum) {
		__s64 fh = sc->file_hash[i & (PY_CODE_SLOTS - 1)];

		if (fh == -1) {
			parts |= PY_PART_FILE;
		} else {
			if (!py_hash_is(sc->nbuf, sc->cur_file, o->str_hash, fh))
				return -1;
			sc->fver_str = sc->cur_file;
			sc->fver_sum = c->file_sum;
		}
	}
	if (c->sums & PY_SUM_NAME)
		parts |= PY_PART_NAME;
	else if (!py_hash_is(sc->nbuf, sc->cur_name, o->str_hash, c->name_hash))
		return -1;
	if (c->sums & PY_SUM_LT)
		parts |= PY_PART_LT;
	else if (!py_hash_is(sc->lbuf, sc->cur_lt, o->bytes_hash, c->lt_hash))
		return -1;
	return parts;
}

/*
 * The interpreter file of a static entry: its inode, with the size of its
 * data and PyCode_Type's place in it, which another build that got a
 * deleted file's inode number would not share (dev is in the epoch).
 */
static __always_inline __u64 py_static_file(const struct profd_pyproc *pp)
{
	return pp->st_ino * 0x9e3779b97f4a7c15ULL ^ (pp->st_hi - pp->st_lo) << 24 ^ (pp->code_type - pp->st_lo);
}

static __always_inline int py_code_known(const struct profd_pyproc *pp, struct py_scratch *sc, __u32 slot)
{
	int parts = py_code_same(pp, sc, slot);

	return !parts || (parts > 0 && py_code_bytes_same(pp, sc, slot, parts));
}

/*
 * Names the code object at code into py_syms; returns its id, 0 when it
 * could not be named (counted), or -1 when code is not a code object.
 */
static __always_inline __s64 py_symbol_in(const struct profd_pyproc *pp, struct py_scratch *sc, __u64 code)
{
	const struct profd_pyoffs *o = &pp->o;
	struct profd_pysym *s = &sc->sym, *old;
	__u64 id, file, name, lt, key = code, kepoch = pp->epoch;
	struct py_code *c;
	__u32 flags = 0, first, version = 0, typed = 0, st = 0, base, slot, gen;
	int n, m;
	long err;

	if (code == sc->last_code)
		return sc->last_id;
	/*
	 * A code object in the interpreter file's initialised data is a
	 * static one (deep-frozen, 3.11+): the same object at the same offset
	 * in every process of the file, never freed. Its entry is keyed by
	 * the file and the offset, so that a new process's start-up finds the
	 * names its predecessors' made. Heap objects lie outside the range.
	 */
	if (code >= pp->st_lo && code < pp->st_hi) {
		key = code - pp->st_lo;
		kepoch = PY_EPOCH_STATIC | pp->st_dev;
		st = 1;
	}
	/* Entries of other processes' walks carry no generation of this one's. */
	gen = st ? 0 : sc->fgen;
	/* Two ways a set: two hot functions whose addresses hash alike do not evict each other at every walk. */
	base = ((key * 0x9e3779b97f4a7c15ULL) >> 57 & (PY_CODE_SLOTS / 2 - 1)) * 2;
	slot = base;
	if (sc->codes[base & (PY_CODE_SLOTS - 1)].code != key)
		slot = base + 1;
	slot &= PY_CODE_SLOTS - 1;
	c = &sc->codes[slot];
	/*
	 * Named or checked earlier in this walk, at a frame nearer the leaf:
	 * that frame holds the object while the thread is stopped, so the
	 * address is still that object and nothing need be read. Recursion
	 * through other functions and wrappers met at many levels cost one
	 * check a walk.
	 */
	if (c->code == key && (sc->seen[(slot >> 6) & 3] >> (slot & 63) & 1) &&
	    c->epoch == kepoch) {
		sc->cached++;
		return c->idc & PROFD_PY_ID_MASK;
	}
	/*
	 * Checked (by content, or by co_version) in an earlier walk that began
	 * at this free generation: no code object of the process has begun to
	 * be freed since that walk began, so the one checked then is still at
	 * this address, and names what it named (a code object's name, file,
	 * first line and line table never change). The check happened after
	 * the walk's start, which is what c->gen holds: a free of the checked
	 * object, or of one that held the address before it, moved the
	 * generation past it. A frame holds its code object, so none on this
	 * thread's chain is freed while the walk runs. Nothing of the object
	 * is read.
	 */
	if (gen && c->gen == gen && c->code == key && c->epoch == kepoch && PY_IDC_FRESH(c)) {
		c->used = sc->walk;
		sc->seen[(slot >> 6) & 3] |= 1ULL << (slot & 63);
		sc->cached++;
		sc->genhits++;
		return c->idc & PROFD_PY_ID_MASK;
	}
	/* A static code object named before in this file: nothing is read (see struct py_code). */
	if (st && c->code == key && c->epoch == kepoch && (c->sums & PY_SUM_STATIC) &&
	    c->ino == py_static_file(pp) && PY_IDC_FRESH(c)) {
		c->used = sc->walk;
		sc->seen[(slot >> 6) & 3] |= 1ULL << (slot & 63);
		sc->cached++;
		sc->sthits++;
		return c->idc & PROFD_PY_ID_MASK;
	}
	if (o->co_version == PROFD_PY_NONE) {
		/*
		 * Before 3.12 a hit reads the fields naming reads and not the
		 * object's head, a cache line less: the type is checked on a
		 * miss, before anything is named. A hit needs no type check: a
		 * live frame holds its code object, and what a hit returns was
		 * named from a code object whose name, file and line table
		 * objects held the bytes this one's hold now.
		 */
		n = sc->co_lo & 127;
		m = sc->co_full - n;
		/* One register for the bound and the call, or the verifier sees the unbounded read. */
		asm volatile("" : "+r"(m));
		if (m <= 0 || m > 136 || bpf_probe_read_user(sc->obj + n, m, (void *)(code + n))) {
			pycount(PROFD_PYCNT_BAD_READ);
			return -1;
		}
	} else {
		/*
		 * From 3.12 the object's head, up to co_version, is all a cache
		 * hit reads: the address, version and interpreter name one code
		 * object, whose strings a code object never changes. The rest on
		 * a miss only. A static code object's check by offsets reads
		 * its fields.
		 */
		n = (st ? sc->co_full : sc->co_head) & 255;
		if (bpf_probe_read_user(sc->obj, n, (void *)code)) {
			pycount(PROFD_PYCNT_BAD_READ);
			return -1;
		}
		if (py_word(sc->obj, 8) != pp->code_type)
			return -1;
		version = *(__u32 *)(sc->obj + (o->co_version & 255));
		typed = 1;
	}
	/* co_version names an object within one process: a static entry serves many. */
	if (st)
		version = 0;
	if (version && c->code == key && c->epoch == kepoch && (c->sums & PY_SUM_VERSIONED) &&
	    c->first == version && c->interp == sc->interp && PY_IDC_FRESH(c)) {
		c->used = sc->walk;
		c->gen = gen;
		sc->seen[(slot >> 6) & 3] |= 1ULL << (slot & 63);
		sc->cached++;
		return c->idc & PROFD_PY_ID_MASK;
	}
	if (typed && n < sc->co_full && bpf_probe_read_user(sc->obj, sc->co_full & 255, (void *)code)) {
		pycount(PROFD_PYCNT_BAD_READ);
		return -1;
	}
	file = py_word(sc->obj, o->co_filename);
	name = py_word(sc->obj, o->co_name);
	lt = py_word(sc->obj, o->co_linetable);
	first = *(__u32 *)(sc->obj + (o->co_firstlineno & 255));
	sc->cur_name = name;
	sc->cur_file = file;
	sc->cur_lt = lt;
	/*
	 * A static entry whose id is to be found in py_syms again: this file's
	 * code object at this offset, pointing at the objects at the offsets
	 * named then. Those are static too (the entry is made only so), never
	 * freed, and a str's or bytes object's text never changes: they hold
	 * the text the id was made from, and the first line is the object's own.
	 */
	if (st && c->code == key && c->epoch == kepoch && (c->sums & PY_SUM_STATIC)) {
		if (c->ino != py_static_file(pp) || c->first != first || name - pp->st_lo != c->name_off ||
		    file - pp->st_lo != c->file_off || lt - pp->st_lo != c->lt_off)
			goto read;
		id = c->idc & PROFD_PY_ID_MASK;
		if (!PY_IDC_FRESH(c)) {
			if (!bpf_map_lookup_elem(&py_syms, &id))
				goto read;
			c->idc = id | (py_syms_adds & 0xffffff) << PY_IDC_SHIFT;
		}
		c->used = sc->walk;
		sc->seen[(slot >> 6) & 3] |= 1ULL << (slot & 63);
		sc->cached++;
		sc->sthits++;
		return id;
	}
	/* Version 0: the counter ran out (or there is none), and 0 names nothing. */
	if (c->code == key && c->epoch == kepoch && !(c->sums & PY_SUM_STATIC)) {
		id = c->idc & PROFD_PY_ID_MASK;
		if (version ? (c->sums & PY_SUM_VERSIONED) && c->first == version &&
				      c->interp == sc->interp
			    : !(c->sums & PY_SUM_VERSIONED) && c->first == first &&
				      py_code_known(pp, sc, slot)) {
			if (!PY_IDC_FRESH(c)) {
				if (!bpf_map_lookup_elem(&py_syms, &id))
					goto read;
				c->idc = id | (py_syms_adds & 0xffffff) << PY_IDC_SHIFT;
			}
			c->used = sc->walk;
			c->gen = gen;
			sc->seen[(slot >> 6) & 3] |= 1ULL << (slot & 63);
			sc->cached++;
			return id;
		}
	}
read:
	if (!typed) {
		if (bpf_probe_read_user(sc->obj, 16, (void *)code)) {
			pycount(PROFD_PYCNT_BAD_READ);
			return -1;
		}
		if (py_word(sc->obj, 8) != pp->code_type)
			return -1;
		typed = 1;
	}
	/* The file part of sym is the last frame's when the string is the same (see last_file). */
	if (!file || file != sc->last_file) {
		sc->last_file = 0;
		__builtin_memset(s->file, 0, sizeof(s->file));
		m = py_str(o, sc->str, file, s->file, PROFD_PY_FILE_MAX, 1, &flags, PROFD_PYSYM_F_FILE_CUT,
			   PROFD_PYSYM_F_FILE_RAW);
		if (m < 0) {
			pycount(PROFD_PYCNT_BAD_READ);
			return 0;
		}
		s->file_len = m;
		sc->file_flags = flags;
		sc->file_ascii = !!(*(const __u32 *)(sc->str + (o->str_state & 63)) & (1u << 6));
		sc->last_file = file;
		/* A text kept raw is named again once it has its UTF-8 form: no hash to hit on. */
		sc->last_file_hash = flags & PROFD_PYSYM_F_FILE_RAW ? -1 : py_hash_at(sc->str, o->str_hash);
		/* Just read: the string holds this text for the rest of the walk. */
		sc->last_file_sum = py_file_sum(s, flags);
		sc->fver_str = file;
		sc->fver_sum = sc->last_file_sum;
	}
	flags = 0;
	__builtin_memset(s->name, 0, sizeof(s->name));
	__builtin_memset(s->lt, 0, sizeof(s->lt));
	s->firstlineno = first;
	s->pad = 0;
	n = py_str(o, sc->str, name, s->name, PROFD_PY_NAME_MAX, 0, &flags, PROFD_PYSYM_F_NAME_CUT,
		   PROFD_PYSYM_F_NAME_RAW);
	if (n < 0) {
		pycount(PROFD_PYCNT_BAD_READ);
		return 0;
	}
	s->name_len = n;
	sc->name_hash = flags & PROFD_PYSYM_F_NAME_RAW ? -1 : py_hash_at(sc->str, o->str_hash);
	/*
	 * A static entry only for compact ASCII texts: any other text may
	 * have its UTF-8 form made in one process and not in the next, which
	 * names it differently (PROFD_PYSYM_F_*_RAW).
	 */
	if (st && (!sc->file_ascii || !(*(const __u32 *)(sc->str + (o->str_state & 63)) & (1u << 6)) ||
		   name < pp->st_lo || name >= pp->st_hi || file < pp->st_lo || file >= pp->st_hi ||
		   lt < pp->st_lo || lt >= pp->st_hi))
		st = 2; /* keyed as static, checked by content */
	s->flags = flags | sc->file_flags | (pp->version < 0x030b ? PROFD_PYSYM_F_LT_310 : 0);
	n = py_lt(o, sc->str, lt, s);
	if (n < 0) {
		pycount(PROFD_PYCNT_BAD_READ);
		return 0;
	}
	s->lt_len = n;
	sc->lt_hash = py_hash_at(sc->str, o->bytes_hash);
	id = py_sym_hash(s) & PROFD_PY_ID_MASK;
	if (!id)
		id = 1;
	old = bpf_map_lookup_elem(&py_syms, &id);
	if (!old) {
		err = bpf_map_update_elem(&py_syms, &id, s, BPF_NOEXIST);
		if (err == 0) {
			__sync_fetch_and_add(&py_syms_adds, 1);
			goto named;
		}
		if (err != -17 /* EEXIST */) {
			pycount(PROFD_PYCNT_SYMS_FULL);
			return 0;
		}
		old = bpf_map_lookup_elem(&py_syms, &id);
	}
	if (old && py_sym_same(old, s))
		goto named;
	pycount(PROFD_PYCNT_SYM_CLASH);
	return 0;
named:
	/* Neither way held this object: the older goes. */
	if (c->code != key) {
		base &= PY_CODE_SLOTS - 2;
		slot = (__u16)(sc->walk - sc->codes[base].used) >= (__u16)(sc->walk - sc->codes[base + 1].used) ?
			       base :
			       base + 1;
		slot &= PY_CODE_SLOTS - 1;
		c = &sc->codes[slot];
	}
	sc->seen[(slot >> 6) & 3] |= 1ULL << (slot & 63);
	c->code = key;
	c->epoch = kepoch;
	c->idc = id | (py_syms_adds & 0xffffff) << PY_IDC_SHIFT;
	c->used = sc->walk;
	c->gen = gen;
	if (st == 1) {
		c->sums = PY_SUM_STATIC;
		c->first = first;
		c->name_off = name - pp->st_lo;
		c->file_off = file - pp->st_lo;
		c->lt_off = lt - pp->st_lo;
		c->st_pad = 0;
		c->ino = py_static_file(pp);
		sc->file_hash[slot] = -1;
	} else if (version) {
		c->sums = PY_SUM_VERSIONED;
		c->interp = sc->interp;
		c->first = version;
	} else {
		c->first = first;
		c->sums = 0;
		c->name_hash = sc->name_hash;
		if (c->name_hash == -1) {
			c->name_hash = py_name_sum(s, s->flags & (PROFD_PYSYM_F_NAME_CUT | PROFD_PYSYM_F_NAME_RAW));
			c->sums |= PY_SUM_NAME;
		}
		c->lt_hash = sc->lt_hash;
		if (c->lt_hash == -1) {
			c->lt_hash = py_lt_sum(s->lt, s->lt_len, s->flags & PROFD_PYSYM_F_LT_CUT);
			c->sums |= PY_SUM_LT;
		}
		c->lt_len = (s->lt_len & (PY_LT_CUT - 1)) | (s->flags & PROFD_PYSYM_F_LT_CUT ? PY_LT_CUT : 0);
		c->name_len = s->name_len > 128 ? 128 : s->name_len;
		c->file_len = s->file_len > 128 ? 128 : s->file_len;
		c->file_sum = sc->last_file_sum;
		sc->file_hash[slot] = sc->last_file_hash;
	}
	return id;
}

/*
 * A global function: the verifier checks it once, on its own, instead of
 * in every state of the frame loop that reaches it (a load took 2 s).
 * Leaves the id in sc->id; returns 0, or -1 when an argument is NULL.
 */
__noinline int py_symbol(const struct profd_pyproc *pp, struct py_scratch *sc, __u64 code)
{
	if (!pp || !sc)
		return -1;
	sc->id = py_symbol_in(pp, sc, code);
	if (sc->id > 0) {
		sc->last_code = code;
		sc->last_id = sc->id;
	}
	return 0;
}

/*
 * One context for the three loops of a sample (thread search, frame walk,
 * append), on the stack once: the on-CPU program's stack is near its limit.
 */
struct py_ctx {
	const struct profd_pyproc *pp;
	struct py_scratch *sc;
	__u64 *ips;
	__u64 cur;     /* the thread state or frame the loop is at */
	__u64 fsbase;  /* the sampled thread's pointer, its PyThreadState's thread_id */
	__u32 n, np;   /* append: frames in ips, Python frames to add */
};

/*
 * From 3.11 a thread's frames lie in its data stack: chunks of pages, each
 * frame pushed above its caller. One read from the start of the leaf
 * frame's page (at most PY_WIN bytes below its end) takes the frames
 * below it in that page at once, where a read a frame would cost a call
 * and a cache line each; a read never leaves the page of the frame it is
 * for, so it cannot fault on the unmapped page below a chunk. A frame
 * neither in the last read nor just below it (a generator's, in its heap
 * object) is read alone. 3.10's frames are heap objects, but a chain made
 * in call order comes from one allocator pool, each caller just below its
 * callee: a frame that lies just below the last read is read with the
 * rest of its page too (3.10's leaf frame, far from its caller as a rule,
 * is read alone).
 */
#define PY_WIN 4096

struct py_win {
	__u8 buf[PY_WIN + 256];
};

/* One per program kind, as py_scratch. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct py_win);
} py_win SEC(".maps");

/* Where field off of the frame lies past py_frame_bytes' pointer. */
#define PY_FR(sc, off) (((off) - (sc)->fr_lo) & 127)

/*
 * The bytes of the frame at w->cur from its first field the walk uses
 * (sc->fr_lo), read now or by an earlier read of this walk; NULL when
 * unreadable.
 */
static __always_inline const __u8 *py_frame_bytes(struct py_ctx *w)
{
	struct py_scratch *sc = w->sc;
	struct py_win *wb = bpf_map_lookup_elem(&py_win, &sc->kind);
	__u64 a = w->cur + (sc->fr_lo & 63), e = a + (sc->fr_len & 127), lo = a, size;

	if (!wb)
		return NULL;
	if (a < sc->wstart || e > sc->whi) {
		/* From 3.11 the first frame, or (any version) one just below the last read. */
		if ((!sc->whi && !(w->pp->o.flags & PROFD_PY_F_ALL_ENTRY)) ||
		    (e <= sc->wstart && sc->wstart - e < PY_WIN)) {
			lo = e > PY_WIN ? e - PY_WIN : 0;
			if (lo < (a & ~4095ULL))
				lo = a & ~4095ULL;
		}
		size = e - lo;
		/* One register for the bound and the call, or the verifier sees the unbounded read. */
		asm volatile("" : "+r"(size));
		if (size > PY_WIN || !size || bpf_probe_read_user(wb->buf, size, (void *)lo))
			return NULL;
		sc->wstart = lo;
		sc->whi = e;
	}
	return wb->buf + ((a - sc->wstart) & (PY_WIN - 1));
}

/* A frame's part of a py_place sum: its address, code object and instruction. */
static __always_inline __u64 py_place_word(__u64 addr, __u64 code, __u64 instr)
{
	__u64 h = (addr ^ 0x84222325cbf29ce4ULL) * 0x9e3779b97f4a7c15ULL;

	h = (h ^ h >> 31 ^ code) * 0xbf58476d1ce4e5b9ULL;
	h = (h ^ h >> 29 ^ instr) * 0x94d049bb133111ebULL;
	return h ^ h >> 32;
}

static __always_inline __u64 py_place_sum(const __u64 *k)
{
	return py_place_word(k[0], k[1], 0x7079);
}

static long py_step(__u64 index, void *arg)
{
	struct py_ctx *w = arg;
	const struct profd_pyoffs *o = &w->pp->o;
	struct py_scratch *sc = w->sc;
	__u64 code, prev, f = 0, lasti;
	const __u8 *fb;
	__s64 id;

	if (!w->cur)
		return 1;
	if (sc->n >= PROFD_PY_MAX_DEPTH) {
		pycount(PROFD_PYCNT_TRUNCATED);
		return 1;
	}
	fb = py_frame_bytes(w);
	if (!fb) {
		pycount(PROFD_PYCNT_BAD_READ);
		return 1;
	}
	prev = *(const __u64 *)(fb + PY_FR(sc, o->fr_previous));
	code = *(const __u64 *)(fb + PY_FR(sc, o->fr_code));
	/* The last instruction's index in code units, plus 2 (-1: not started); 0 when out of range. */
	if (o->flags & PROFD_PY_F_LASTI)
		lasti = (__u64)(__s64)*(const __s32 *)(fb + PY_FR(sc, o->fr_instr)) + 2;
	else
		lasti = (__u64)((__s64)(*(const __u64 *)(fb + PY_FR(sc, o->fr_instr)) - code - o->co_code) >> 1) + 2;
	if (lasti > PROFD_PY_LASTI_MASK)
		lasti = 0;
	if (o->flags & PROFD_PY_F_ALL_ENTRY)
		f = PROFD_PY_ENTRY;
	else if (o->fr_is_entry != PROFD_PY_NONE && fb[PY_FR(sc, o->fr_is_entry)])
		f = PROFD_PY_ENTRY;
	if (sc->kind && index < 2)
		sc->place_k[index & 1] =
			py_place_word(w->cur, code, o->flags & PROFD_PY_F_LASTI ?
							    *(const __u32 *)(fb + PY_FR(sc, o->fr_instr)) :
							    *(const __u64 *)(fb + PY_FR(sc, o->fr_instr)));
	if (o->fr_owner != PROFD_PY_NONE && fb[PY_FR(sc, o->fr_owner)] == 3 /* FRAME_OWNED_BY_CSTACK */) {
		/* An eval call's entry shim: the frame below it is the call's outermost. */
		if (sc->n)
			sc->frames[(sc->n - 1) & 63] |= PROFD_PY_ENTRY;
		w->cur = prev;
		return 0;
	}
	w->cur = prev;
	if (py_symbol(w->pp, sc, code))
		return 1;
	id = sc->id;
	if (id < 0) {
		/* 3.13 runs frames of other executables; before it, garbage: stop. */
		if (w->pp->version >= 0x030d)
			return 0;
		pycount(PROFD_PYCNT_NOT_CODE);
		return 1;
	}
	sc->frames[sc->n & 63] = PROFD_PY_FRAME | f | lasti << PROFD_PY_LASTI_SHIFT | (__u64)id;
	sc->n++;
	return 0;
}

/* Thread search: leaves the match in sc->found. */
static long py_tstep(__u64 index, void *arg)
{
	struct py_ctx *t = arg;
	__u64 id;

	if (!t->cur)
		return 1;
	if (py_read(&id, t->cur + t->pp->o.ts_thread_id))
		return 1;
	if (id == t->fsbase) {
		t->sc->found = t->cur;
		return 1;
	}
	return py_read(&t->cur, t->cur + t->pp->o.ts_next) ? 1 : 0;
}

/*
 * Whether a thread state kept for a thread (per CPU, or in py_threads) is
 * still its own: the same process and thread pointer, and the thread
 * state, read again into sc->obj, still names that thread pointer (the
 * interpreter reuses a freed thread state for another thread).
 */
static __always_inline int py_thr_holds(struct py_ctx *w, const struct py_thread *c, __u32 pid)
{
	return c->pid == pid && c->fsbase == w->fsbase && c->tstate &&
	       !bpf_probe_read_user(w->sc->obj, PY_TS_READ, (void *)c->tstate) &&
	       py_word(w->sc->obj, w->pp->o.ts_thread_id) == w->fsbase;
}

/*
 * The current thread's PyThreadState, matched by its thread pointer, its
 * first PY_TS_READ bytes left in sc->obj; 0: none.
 */
static __always_inline __u64 py_tstate(struct py_ctx *w, struct task_struct *task, __u32 pid, __u32 tid)
{
	const struct profd_pyproc *pp = w->pp;
	struct py_scratch *sc = w->sc;
	struct py_thread *c;
	__u64 id;

	/* A plain load: task is the current task's BTF pointer. */
	w->fsbase = task->thread.fsbase;
	if (sc->cpu_tid == tid && py_thr_holds(w, &sc->cpu_thr, pid)) {
		pycount(PROFD_PYCNT_THREAD_CACHED);
		return sc->cpu_thr.tstate;
	}
	c = bpf_map_lookup_elem(&py_threads, &tid);
	if (c && py_thr_holds(w, c, pid)) {
		pycount(PROFD_PYCNT_THREAD_CACHED);
		sc->cpu_thr.tstate = c->tstate;
		sc->cpu_thr.fsbase = w->fsbase;
		sc->cpu_thr.pid = pid;
		sc->cpu_tid = tid;
		return c->tstate;
	}
	if (py_read(&id, pp->runtime + pp->o.rt_interp_head) || !id || py_read(&w->cur, id + pp->o.is_tstate_head))
		return 0;
	sc->found = 0;
	bpf_loop(256, py_tstep, w, 0);
	if (!sc->found) {
		pycount(PROFD_PYCNT_NO_THREAD);
		return 0;
	}
	if (bpf_probe_read_user(sc->obj, PY_TS_READ, (void *)sc->found)) {
		pycount(PROFD_PYCNT_BAD_READ);
		return 0;
	}
	sc->thr.tstate = sc->found;
	sc->thr.fsbase = w->fsbase;
	sc->thr.pid = pid;
	sc->thr.pad = 0;
	bpf_map_update_elem(&py_threads, &tid, &sc->thr, BPF_ANY);
	sc->cpu_thr = sc->thr;
	sc->cpu_tid = tid;
	return sc->found;
}

/* bpf_find_vma's callback: the file and place of the mapping at the pc, in the scratch. */
static long py_vma(struct task_struct *task, struct vm_area_struct *vma, void *arg)
{
	struct py_ctx *w = arg;
	struct py_scratch *sc = w->sc;
	struct file *f = BPF_CORE_READ(vma, vm_file);

	if (!sc || !f)
		return 0;
	sc->fkey.ino = BPF_CORE_READ(f, f_inode, i_ino);
	sc->fkey.dev = BPF_CORE_READ(f, f_inode, i_sb, s_dev);
	sc->vstart = BPF_CORE_READ(vma, vm_start);
	sc->vpgoff = BPF_CORE_READ(vma, vm_pgoff);
	return 0;
}


/* Whether the current thread's name starts with "python": py_adopt's candidates. */
static __always_inline int py_named_python(struct task_struct *task)
{
	return task->comm[0] == 'p' && task->comm[1] == 'y' && task->comm[2] == 't' &&
	       task->comm[3] == 'h' && task->comm[4] == 'o' && task->comm[5] == 'n';
}

/*
 * A process named python* that user space has not made known yet: when
 * the sampled pc lies in an interpreter file probed before (py_files), its
 * py_procs value is made here (the exec hook makes most of them, once
 * ld.so is done; this is for images that map an interpreter later).
 */
static __always_inline const struct profd_pyproc *py_adopt(struct py_ctx *w, struct task_struct *task, __u32 pid)
{
	struct py_scratch *sc = w->sc;
	const struct profd_pyfile *pf;
	struct pt_regs *regs;

	if (!py_named_python(task))
		return NULL;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	sc->fkey.dev = sc->fkey.ino = 0;
	if (bpf_find_vma(task, regs->ip, py_vma, w, 0) || !sc->fkey.ino)
		return NULL;
	pf = bpf_map_lookup_elem(&py_files, &sc->fkey);
	if (!pf || py_from_file(pf, sc->vstart, sc->vpgoff, pid, task->mm->start_code, &sc->adopt))
		return NULL;
	if (bpf_map_update_elem(&py_procs, &pid, &sc->adopt, BPF_NOEXIST) == 0) {
		py_gen_bump(pid);
		pycount(PROFD_PYCNT_ADOPTED);
	}
	return bpf_map_lookup_elem(&py_procs, &pid);
}

/* off's end when the layout has the field and it ends past end. */
static __always_inline __u32 py_end(__u32 end, __u16 off, __u32 width)
{
	return off != PROFD_PY_NONE && off + width > end ? off + width : end;
}

/* off when the layout has the field and it starts before start. */
static __always_inline __u32 py_start(__u32 start, __u16 off)
{
	return off != PROFD_PY_NONE && off < start ? off : start;
}

/*
 * A frame and a code object are read from the first to the last byte the
 * walk looks at: each cache line costs.
 */
static __always_inline void py_read_sizes(const struct profd_pyoffs *o, struct py_scratch *sc)
{
	__u32 n = py_end(0, o->fr_previous, 8), lo = py_start(PY_FRAME_READ, o->fr_previous);

	n = py_end(n, o->fr_code, 8);
	n = py_end(n, o->fr_instr, o->flags & PROFD_PY_F_LASTI ? 4 : 8);
	n = py_end(n, o->fr_is_entry, 1);
	n = py_end(n, o->fr_owner, 1);
	lo = py_start(lo, o->fr_code);
	lo = py_start(lo, o->fr_instr);
	lo = py_start(lo, o->fr_is_entry);
	lo = py_start(lo, o->fr_owner);
	if (n > PY_FRAME_READ)
		n = PY_FRAME_READ;
	lo &= ~7u;
	if (lo > 63 || lo > n)
		lo = 0;
	sc->fr_lo = lo;
	sc->fr_len = n - lo;
	n = py_end(16, o->co_filename, 8);
	n = py_end(n, o->co_name, 8);
	n = py_end(n, o->co_linetable, 8);
	n = py_end(n, o->co_firstlineno, 4);
	n = py_end(n, o->co_version, 4);
	sc->co_full = n > PY_OBJ_READ ? PY_OBJ_READ : n;
	lo = py_start(PY_OBJ_READ, o->co_filename);
	lo = py_start(lo, o->co_name);
	lo = py_start(lo, o->co_linetable);
	lo = py_start(lo, o->co_firstlineno) & ~7u;
	sc->co_lo = lo < sc->co_full && lo < 128 && sc->co_full - lo <= 136 ? lo : 0;
	n = o->co_version != PROFD_PY_NONE ? py_end(16, o->co_version, 4) : sc->co_full;
	sc->co_head = n > sc->co_full ? sc->co_full : n;
}

/*
 * Reads the current thread's Python frames into the slot's scratch (w->sc),
 * leaf first; returns how many (0: not a known CPython process, or none).
 */
static __always_inline __u32 py_frames(struct py_ctx *w, __u32 slot)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 pid_tgid = bpf_get_current_pid_tgid(), ts, none;
	__u32 pid = pid_tgid >> 32, zero = 0;
	/* On-CPU only: its pc is where the process runs. */
	int adopt = slot == 0 && py_named_python(task);
	struct py_none *nc;
	__u64 *ns = NULL;

	w->sc = bpf_map_lookup_elem(&py_scratch, &slot);
	if (!w->sc)
		return 0;
	/* Only the off-CPU walk's place is read (py_place_take): an on-CPU sample leaves its line alone. */
	if (slot)
		w->sc->place.src = 0;
	/* Read before the lookup: an insert after it bumps the pid's py_gen past this. */
	none = (__u64)pid << 32 |
	       (__u32)(*(volatile __u32 *)&py_gen[pid & (PROFD_PY_GEN_SLOTS - 1)] + 1);
	nc = bpf_map_lookup_elem(&py_none, &zero);
	if (nc) {
		ns = &nc->s[pid & (PY_NONE_SLOTS - 1)];
		if (*ns == none && !adopt)
			return 0;
	}
	w->pp = bpf_map_lookup_elem(&py_procs, &pid);
	if (!w->pp) {
		if (adopt)
			w->pp = py_adopt(w, task, pid);
		else if (ns)
			*ns = none;
	}
	if (!w->pp || w->pp->start_code != task->mm->start_code)
		return 0;
	/* In the scratch, not on the stack: the on-CPU program's stack is near its limit. */
	w->sc->t0 = slot == 0 && py_cost_tgid && pid == py_cost_tgid ? bpf_ktime_get_ns() : 0;
	pycount(PROFD_PYCNT_WALKS);
	ts = py_tstate(w, task, pid, (__u32)pid_tgid);
	if (!ts)
		goto none;
	w->cur = py_word(w->sc->obj, w->pp->o.ts_frame);
	w->sc->interp = py_word(w->sc->obj, w->pp->o.ts_interp);
	if ((w->pp->o.flags & PROFD_PY_F_CFRAME) && (!w->cur || py_read(&w->cur, w->cur + w->pp->o.cf_current_frame)))
		goto none;
	if (slot) {
		struct py_place *pl = &w->sc->place;

		pl->src = ts + w->pp->o.ts_frame;
		pl->cf = w->pp->o.flags & PROFD_PY_F_CFRAME ? w->pp->o.cf_current_frame : PROFD_PY_NONE;
		pl->code = w->pp->o.fr_code;
		pl->prev = w->pp->o.fr_previous;
		pl->instr = w->pp->o.fr_instr;
		pl->lasti = !!(w->pp->o.flags & PROFD_PY_F_LASTI);
		w->sc->place_k[0] = w->sc->place_k[1] = 0;
	}
	w->sc->n = 0;
	w->sc->last_code = w->sc->last_file = w->sc->fver_str = 0;
	w->sc->wstart = w->sc->whi = 0;
	for (__u32 i = 0; i < PY_CODE_SLOTS / 64; i++)
		w->sc->seen[i] = 0;
	w->sc->pid = pid;
	w->sc->cached = 0;
	w->sc->genhits = 0;
	w->sc->sthits = 0;
	/*
	 * The free generation before any code object of this walk is checked:
	 * entries checked in it carry it (py_symbol_in). Up to 2^32 - 2 frees;
	 * past that the slot's process is checked by content as without the
	 * hook, never matched by a wrapped value.
	 */
	w->sc->fgen = 0;
	if (w->pp->o.flags & PROFD_PY_F_FREE_HOOK) {
		__u64 g = *(volatile __u64 *)&py_freegen[pid & (PROFD_PY_GEN_SLOTS - 1)];

		if (g < 0xfffffffeULL)
			w->sc->fgen = (__u32)g + 1;
	}
	w->sc->kind = slot;
	w->sc->walk++;
	py_read_sizes(&w->pp->o, w->sc);
	bpf_loop(PROFD_PY_MAX_DEPTH + 16, py_step, w, 0);
	if (slot) {
		w->sc->place.lo = w->sc->fr_lo;
		w->sc->place.len = w->sc->fr_len;
		w->sc->place.sum = py_place_sum(w->sc->place_k);
	}
	/* Counted once a walk: an atomic add per frame is a shared cache line per frame. */
	__sync_fetch_and_add(&pycounters[PROFD_PYCNT_FRAMES], w->sc->n);
	__sync_fetch_and_add(&pycounters[PROFD_PYCNT_CODE_CACHED], w->sc->cached);
	if (w->sc->genhits)
		__sync_fetch_and_add(&pycounters[PROFD_PYCNT_CODE_GEN_HITS], w->sc->genhits);
	if (w->sc->sthits)
		__sync_fetch_and_add(&pycounters[PROFD_PYCNT_CODE_STATIC_HITS], w->sc->sthits);
	if (w->sc->t0)
		__sync_fetch_and_add(&py_cost_ns, bpf_ktime_get_ns() - w->sc->t0);
	return w->sc->n;
none:
	if (w->sc->t0)
		__sync_fetch_and_add(&py_cost_ns, bpf_ktime_get_ns() - w->sc->t0);
	return 0;
}

/* Under bpf_loop: as a plain loop the verifier walked it once per frame count. */
static long py_append_step(__u64 i, void *arg)
{
	struct py_ctx *a = arg;
	__u32 j = a->n;

	if (i >= a->np || j >= PROFD_MAX_DEPTH)
		return 1;
	a->ips[j] = a->sc->frames[i & 63];
	a->n = j + 1;
	return 0;
}

/*
 * user_stack with the Python frames after the native ones: the native walk
 * leaves room for them. Returns bytes written, or -errno.
 */
static __always_inline long py_user_stack(void *ctx, __u64 *ips, __u32 slot)
{
	struct py_ctx w = {};
	__u32 np = py_frames(&w, slot);
	long r;

	if (!np || !w.sc)
		return user_stack(ctx, ips, PROFD_MAX_DEPTH * sizeof(__u64));
	if (np > PROFD_PY_MAX_DEPTH)
		np = PROFD_PY_MAX_DEPTH;
	r = user_stack(ctx, ips, (PROFD_MAX_DEPTH - np) * sizeof(__u64));
	w.ips = ips;
	w.n = r > 0 ? r / sizeof(__u64) : 0;
	w.np = np;
	bpf_loop(PROFD_PY_MAX_DEPTH, py_append_step, &w, 0);
	return w.n * sizeof(__u64);
}

/*
 * The frame at a, read into sc->obj as a walk reads it: its part of a
 * py_place sum in sc->place_k[i], its caller in sc->place_prev. 0, or -1
 * when unreadable. A NULL frame is a part of 0, as in the walk.
 */
static __always_inline int py_place_frame(struct py_scratch *sc, const struct py_place *p, __u64 a,
					  __u32 i)
{
	const __u8 *b = sc->obj;
	__u64 len = p->len, instr;

	sc->place_k[i & 1] = sc->place_prev = 0;
	if (!a)
		return 0;
	/* One register for the bound and the call, or the verifier sees the unbounded read. */
	asm volatile("" : "+r"(len));
	if (!len || len > PY_FRAME_READ || bpf_probe_read_user(sc->obj, len, (void *)(a + (p->lo & 63))))
		return -1;
	instr = p->lasti ? *(const __u32 *)(b + ((p->instr - p->lo) & 127)) :
			   *(const __u64 *)(b + ((p->instr - p->lo) & 127));
	sc->place_k[i & 1] = py_place_word(a, *(const __u64 *)(b + ((p->code - p->lo) & 127)), instr);
	sc->place_prev = *(const __u64 *)(b + ((p->prev - p->lo) & 127));
	return 0;
}

/*
 * For the off-CPU hook's reuse of a place whose capture read Python
 * frames: 1 when the current thread's leaf frame and its caller are the
 * ones read then (the same frames, code objects and instructions), so the
 * kept stacks still hold its Python frames. Four user reads at most.
 */
static __always_inline int py_place_same(const struct py_place *p)
{
	__u32 one = 1;
	struct py_scratch *sc = bpf_map_lookup_elem(&py_scratch, &one);
	__u64 f;

	if (!sc || !p->src || bpf_probe_read_user(&f, sizeof(f), (void *)p->src))
		return 0;
	if (p->cf != PROFD_PY_NONE && (!f || bpf_probe_read_user(&f, sizeof(f), (void *)(f + p->cf))))
		return 0;
	if (py_place_frame(sc, p, f, 0) || py_place_frame(sc, p, sc->place_prev, 1))
		return 0;
	return py_place_sum(sc->place_k) == p->sum;
}

/* Before a capture: no Python place until its walk reads one. */
static __always_inline void py_place_clear(void)
{
	__u32 one = 1;
	struct py_scratch *sc = bpf_map_lookup_elem(&py_scratch, &one);

	if (sc)
		sc->place.src = 0;
}

/* After a capture: the place its walk read into dst; 1 when there is one. */
static __always_inline __u8 py_place_take(struct py_place *dst)
{
	__u32 one = 1;
	struct py_scratch *sc = bpf_map_lookup_elem(&py_scratch, &one);

	if (!sc || !sc->place.src) {
		dst->src = 0;
		return 0;
	}
	__builtin_memcpy(dst, &sc->place, sizeof(*dst));
	return 1;
}

#endif
