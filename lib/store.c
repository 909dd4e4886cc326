/*
 * The state directory: segment files of checksummed, zstd-compressed window
 * records. docs/FORMAT.md is the specification; this file implements it.
 *
 * Invariants the code relies on:
 * - Only the writer (holding the flock on "lock") creates, appends to,
 *   truncates, renames or removes segments.
 * - A record is written with one pwritev() at the end of the open segment,
 *   header first. A reader trusts a record only when its header checksum is
 *   right and the whole record lies inside the file size it saw, and trusts
 *   its payload only when the payload checksum is right. So a reader racing
 *   the writer sees either nothing of a record or all of it, without locks.
 * - Within a segment, record start times never go down (the writer opens a
 *   new segment when the clock steps back), so a scan stops at the first
 *   record starting at or after `until`.
 * - The open segment is "seg-<start>.pfd"; sealing renames it to
 *   "seg-<start>-<end>.pfd". Names alone decide which segments a time range
 *   needs, so opening a year of segments reads one directory.
 */
#include "clock.h"
#include "store.h"
#include "codec.h"
#include "crc32c.h"
#include "modframes.h"
#include "profile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#define REC_MAGIC        0x52444650u /* "PFDR" little-endian */
#define REC_VERSION      2           /* 1 is still read */
#define REC_HDR          64
#define REC_FLAG_ZSTD    1u
#define REC_FLAG_DELTA   2u          /* refers to the tables of earlier records of its chain */
#define REC_FLAG_SUMMARY 4u          /* a summary file's record: merged by function and name */
#define REC_FLAG_WHOLE   8u          /* the summary of the whole segment */
#define REC_FLAG_PIDS    16u         /* with WHOLE: merged by function only, pids and tids kept */
#define REC_FLAG_NAMED   32u         /* segments only: rolled up by function and name, no pids */
#define REC_FLAG_PREFIX  64u         /* segments only: the record before is its zstd prefix (read only) */
#define REC_FLAG_STREAM  128u        /* segments only: the chain's records are one zstd frame */
/*
 * A chain's zstd frame: its window and match tables are sized from the
 * raw bytes of the compressor's chains (stream_start): at most a 2 MiB
 * window and tables of 2^19 entries (a busy 2-CPU host's chain, 30
 * windows of about 35-45 KB raw: a 6 MB compressor, where level 9's own
 * for a stream of unknown size take 17 MB); a quiet host's chain of
 * 1.5-5 KB a window takes 128-512 KiB and 0.7-1.8 MB. Readers refuse a
 * window past 16 MiB.
 */
#define STREAM_WLOG      21          /* at most */
#define STREAM_WLOG_MIN  16
#define STREAM_TLOG_LESS 2           /* tables of 2^(wlog - 2) entries */
#define STREAM_WLOG_MAX  24
#define STREAM_PART_MIN  4096        /* a payload part flushed as blocks of its own */
#define DEF_NAMED_AGE    (3600ll * 1000000000ll)
#define DEF_FOLD_SHARE   10000u
#define DEF_PRESSURE_PCT 75          /* of max_bytes: rollups go ahead of their age past this */
#define DEF_ROLL_LEVEL   19
#define READ_PIDS        (1u << 16)  /* query flag: whole-segment summaries with pids, for --pid */
#define SUM_BUCKET_NS    (600ll * 1000000000ll) /* a summary record per 10 min of wall clock */
#define SUM_MERGE        (PF_MERGE_BY_FUNCTION | PF_MERGE_BY_NAME)
#define SUM_MAX_RECORDS  4096        /* 28 days of 10-minute records: more is not a summary we wrote */
#define DAY_NS           (86400ll * 1000000000ll) /* a day summary per UTC day */
#define REC_MAX_LEVEL    15
#define REC_MAX_PAYLOAD  (256u << 20) /* either length; a 10 s window is a few MB at most */

#define DEF_ZSTD_LEVEL   9
#define DEF_SEG_BYTES    (8ull << 20)
#define MIN_SEG_BYTES    (64ull << 10)
#define DEF_SEG_SPAN_NS  (3600ll * 1000000000ll)
#define DEF_CHAIN        30          /* records per chain: 5 min of 10 s windows */
#define DEF_ROLL_CHAIN   60          /* in rolled-up segments: an hour of 1-minute windows */

#define NAME_MAX_LEN     64

static const struct store_rollup def_tiers[2];
static void remove_roll_tmps(struct store *s);
static void roll_end(struct store *s);
static void roll_drop(struct store *s);
static int roll_reads(const struct store *s, const char *name);
static int remove_stale_days(struct store *s);

struct rec_hdr {
	uint32_t flags, comp_len, raw_len, payload_crc;
	int64_t start_ns, end_ns;
	uint64_t samples, lost;
	uint32_t windows; /* flushed windows merged into this record (1 in version 1) */
	uint8_t level;    /* 0: as flushed; n: rolled up by tier n */
};

struct seg {
	char name[NAME_MAX_LEN];
	int64_t start, end; /* end: INT64_MAX while unsealed */
	int sealed;
	uint64_t size;
};

struct seg_list {
	struct seg *v;
	size_t n, cap;
};

/*
 * A writer's chain in one segment file: the next record is a key when len
 * is 0. Its records are one zstd frame of the compressor it is written
 * with, which therefore writes no other chain while it lasts.
 */
struct chain {
	uint64_t key_off; /* offset of the chain's key record */
	uint32_t len;     /* records in the chain so far */
};

/* A record found by a reader: where it is and its header. */
struct rec_ref {
	uint64_t off;
	struct rec_hdr h;
};

/*
 * What records are read, decompressed and decoded with: the store's for
 * queries (its zbuf is the appends' too), and a summary's own while it
 * reads its segment, which the summary's thread may use meanwhile.
 */
struct reader {
	struct codec *codec;
	struct profile *prof;  /* decoded into */
	ZSTD_DCtx *dctx;
	ZSTD_DCtx *sdctx;      /* a chain's frame, record after record (flag bit 7) */
	uint8_t *zbuf, *rbuf;
	size_t zcap, rcap;
	/* The raw payload decompressed last, the prefix of the record after it. */
	uint8_t *pbuf;
	size_t pcap, plen;
	dev_t pdev;
	ino_t pino;
	uint64_t pnext;        /* the offset right after that record; 0: none held */
	int slive;             /* that record was of a chain's frame, which sdctx has decoded up to it */
};

struct store {
	struct store_opts o;
	char *dir;
	int dfd, lockfd;
	struct reader rd;
	dev_t chain_dev;  /* the file whose chain rd.codec holds (reads); 0: none */
	ino_t chain_ino;
	ZSTD_CCtx *cctx;
	ZSTD_CCtx *rcctx;      /* rollups and days: written once in the background, a higher level */
	struct zsizing { uint64_t raw; uint32_t n; int wlog; } asz, rsz; /* cctx's, rcctx's chain so far */
	uint64_t seg_bytes;
	int64_t seg_span;
	uint32_t chain_max;
	uint32_t roll_chain_max; /* records per chain in rolled-up segments */
	/* the open segment (writer only); afd < 0 when none */
	int afd;
	char aname[NAME_MAX_LEN];
	int64_t astart, alast_start, amax_end;
	uint64_t asize;
	struct chain achain;
	/* rollups (writer only) */
	struct store_rollup tiers[STORE_MAX_TIERS];
	size_t ntiers;
	struct codec *rcodec;
	struct profile *rprof;
	/* by tier: every sealed segment starting at or before this is done for it */
	int64_t rolled_upto[STORE_MAX_TIERS];
	unsigned roll_backoff; /* calls to skip after a failed rollup */
	struct roll *roll;     /* the rollup (or summary) in progress, if any */
	struct profile *wprof; /* a summary's whole segment so far, by name */
	struct profile *pprof; /* the same by function only: pids kept */
	struct profile *fprof; /* a named rollup's merged window, its small entries folded */
	struct modtail *mtail; /* a named rollup's merged window, its fold half done */
	/* What a rollup's or summary's record cost per raw byte, read in all and merged (rollups). */
	double read_rate[2], merge_rate;
	struct modcalls *calls; /* o.calls_by_function, o.runq_entry_frame: functions met, the window as written */
	int64_t summed_upto;   /* every sealed segment starting at or before this has its summary or failed */
	int64_t dayed_upto;    /* every day starting at or before this has its day summary */
	int64_t pressed_upto;  /* every sealed segment starting at or before this is at the last tier */
	int in_sum;            /* reading a summary file */
	struct store_stats st;
};

/* ---- small helpers ---- */

static void warnf(struct store *s, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!s->o.warn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	s->o.warn(s->o.warn_arg, msg);
}

static void put32(uint8_t *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static uint64_t get64(const uint8_t *b)
{
	return (uint64_t)get32(b) | (uint64_t)get32(b + 4) << 32;
}

static void hdr_pack(const struct rec_hdr *h, uint8_t b[REC_HDR])
{
	memset(b, 0, REC_HDR);
	put32(b + 0, REC_MAGIC);
	b[4] = REC_VERSION;
	b[5] = h->level;
	b[6] = REC_HDR;
	b[7] = 0;
	put32(b + 8, h->flags);
	put32(b + 12, h->comp_len);
	put32(b + 16, h->raw_len);
	put32(b + 20, h->payload_crc);
	put64(b + 24, (uint64_t)h->start_ns);
	put64(b + 32, (uint64_t)h->end_ns);
	put64(b + 40, h->samples);
	put64(b + 48, h->lost);
	put32(b + 56, h->windows);
	put32(b + 60, crc32c(0, b, 60));
}

/* 0: a version 1 or 2 header we can frame by; -EBADMSG otherwise. */
static int hdr_unpack(const uint8_t b[REC_HDR], struct rec_hdr *h)
{
	if (get32(b) != REC_MAGIC || get32(b + 60) != crc32c(0, b, 60))
		return -EBADMSG;
	if (b[4] < 1 || b[4] > REC_VERSION || b[6] != REC_HDR || b[7])
		return -EBADMSG;
	if (b[4] == 1) {
		if (b[5])
			return -EBADMSG;
		h->level = 0;
		h->windows = 1;
	} else {
		h->level = b[5];
		h->windows = get32(b + 56);
		if (h->level > REC_MAX_LEVEL || !h->windows)
			return -EBADMSG;
	}
	h->flags = get32(b + 8);
	h->comp_len = get32(b + 12);
	h->raw_len = get32(b + 16);
	h->payload_crc = get32(b + 20);
	h->start_ns = (int64_t)get64(b + 24);
	h->end_ns = (int64_t)get64(b + 32);
	h->samples = get64(b + 40);
	h->lost = get64(b + 48);
	if (h->comp_len > REC_MAX_PAYLOAD || h->raw_len > REC_MAX_PAYLOAD)
		return -EBADMSG;
	/* Version 1 had no chains: a delta flag there is an unknown flag. */
	if (b[4] == 1 && (h->flags & REC_FLAG_DELTA))
		h->flags |= 1u << 31;
	return 0;
}

/* A window [start, end) overlaps [since, until); an empty window counts as 1 ns long. */
static int64_t eff_end(int64_t start, int64_t end)
{
	if (end > start)
		return end;
	return start == INT64_MAX ? start : start + 1;
}

static int overlaps(int64_t start, int64_t end, int64_t since, int64_t until)
{
	return start < until && eff_end(start, end) > since;
}

static ssize_t pread_full(int fd, void *buf, size_t n, uint64_t off)
{
	size_t done = 0;
	while (done < n) {
		ssize_t r = pread(fd, (uint8_t *)buf + done, n - done, (off_t)(off + done));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

/* Two growable buffers change places, so that a payload is kept without a copy. */
static void swap_buf(uint8_t **a, size_t *acap, uint8_t **b, size_t *bcap)
{
	uint8_t *t = *a;
	size_t tcap = *acap;

	*a = *b;
	*acap = *bcap;
	*b = t;
	*bcap = tcap;
}

static int grow_buf(uint8_t **b, size_t *cap, size_t n)
{
	if (n <= *cap)
		return 0;
	uint8_t *p = realloc(*b, n);
	if (!p)
		return -ENOMEM;
	*b = p;
	*cap = n;
	return 0;
}

/* Room for element n of *v (elements of size bytes): doubled from min when full. */
static int grow_slots(void **v, size_t *cap, size_t n, size_t size, size_t min)
{
	if (n < *cap)
		return 0;
	size_t ncap = *cap ? *cap * 2 : min;
	void *p = ncap <= SIZE_MAX / size ? realloc(*v, ncap * size) : NULL;
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = ncap;
	return 0;
}

/* ---- segment names ---- */

/* Exactly 19 decimal digits (the width of INT64_MAX), non-negative, no overflow. */
static int parse19(const char *p, int64_t *out)
{
	uint64_t v = 0;
	for (int i = 0; i < 19; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -EINVAL;
		v = v * 10 + (uint64_t)(p[i] - '0');
	}
	if (v > INT64_MAX)
		return -EINVAL;
	*out = (int64_t)v;
	return 0;
}

static int parse_name(const char *name, const char *prefix, struct seg *g)
{
	size_t n = strlen(name);
	if (strncmp(name, prefix, 4) || parse19(name + 4, &g->start))
		return -EINVAL;
	if (n == 27 && !strcmp(name + 23, ".pfd")) {
		g->sealed = 0;
		g->end = INT64_MAX;
	} else if (n == 47 && name[23] == '-' && !parse19(name + 24, &g->end) && !strcmp(name + 43, ".pfd")) {
		g->sealed = 1;
	} else {
		return -EINVAL;
	}
	memcpy(g->name, name, n + 1);
	return 0;
}

static int cmp_seg(const void *a, const void *b)
{
	const struct seg *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	/* the same start: sealed before the open one, which is newer */
	return x->sealed != y->sealed ? y->sealed - x->sealed : strcmp(x->name, y->name);
}

/* Reads the directory: names of one kind ("seg-", "sum-") only, sorted by start; sizes with want_size. */
static int list_files(struct store *s, struct seg_list *l, int want_size, const char *prefix)
{
	int fd = -1, err = 0;
	DIR *d = NULL;
	struct dirent *de;

	l->n = 0;
	/* A fresh descriptor: a DIR stream shares the offset of the fd it wraps. */
	fd = openat(s->dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	d = fdopendir(fd);
	if (!d) {
		err = -errno;
		goto out;
	}
	fd = -1;
	while ((errno = 0, de = readdir(d))) {
		struct seg g;
		if (parse_name(de->d_name, prefix, &g))
			continue;
		g.size = 0;
		if (want_size) {
			struct stat st;
			if (fstatat(s->dfd, g.name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
				continue;
			g.size = (uint64_t)st.st_size;
		}
		if ((err = grow_slots((void **)&l->v, &l->cap, l->n, sizeof(*l->v), 64)))
			goto out;
		l->v[l->n++] = g;
	}
	if (errno)
		err = -errno;
	if (l->n)
		qsort(l->v, l->n, sizeof(*l->v), cmp_seg);
out:
	if (d)
		closedir(d);
	if (fd >= 0)
		close(fd);
	return err;
}

static int list_segments(struct store *s, struct seg_list *l, int want_size)
{
	return list_files(s, l, want_size, "seg-");
}

/* Summary files (docs/FORMAT.md, "Summaries"): sealed names only, like their segments'. */
static int list_sums(struct store *s, struct seg_list *l, int want_size)
{
	size_t k = 0;
	int err = list_files(s, l, want_size, "sum-");

	for (size_t i = 0; !err && i < l->n; i++)
		if (l->v[i].sealed)
			l->v[k++] = l->v[i];
	if (!err)
		l->n = k;
	return err;
}

/* Day summary files: sealed names of a whole UTC day only. */
static int list_days(struct store *s, struct seg_list *l, int want_size)
{
	size_t k = 0;
	int err = list_files(s, l, want_size, "day-");

	for (size_t i = 0; !err && i < l->n; i++)
		if (l->v[i].sealed && l->v[i].start % DAY_NS == 0 && l->v[i].end - l->v[i].start == DAY_NS)
			l->v[k++] = l->v[i];
	if (!err)
		l->n = k;
	return err;
}

/* Segment g lies inside the day d. */
static int in_day(const struct seg *g, const struct seg *d)
{
	return g->sealed && g->start >= d->start && g->end <= d->end;
}

/* The summary of segment g in l (same start and end), or NULL. */
static const struct seg *find_sum(const struct seg_list *l, const struct seg *g)
{
	for (size_t i = 0; g->sealed && i < l->n; i++)
		if (l->v[i].start == g->start && l->v[i].end == g->end)
			return &l->v[i];
	return NULL;
}

/*
 * Opens a segment for reading. O_NOFOLLOW: a symlink planted in the state
 * dir is never followed; O_NONBLOCK: a planted FIFO does not hang the open.
 */
static int open_seg(struct store *s, const char *name, int flags, uint64_t *size)
{
	struct stat st;
	int fd = openat(s->dfd, name, flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EBADF;
	}
	*size = (uint64_t)st.st_size;
	return fd;
}

/* ---- scanning one segment ---- */

enum scan_flags {
	SCAN_QUIET_TAIL = 1, /* an incomplete last record is the writer at work, not damage */
	SCAN_VERIFY = 2,     /* read and check every payload (recovery) */
};

struct scan {
	int64_t since, until;
	int flags;
	/* called for every record with a good header (and good payload with SCAN_VERIFY) */
	int (*fn)(struct store *s, const struct seg *g, int fd, uint64_t off,
		  const struct rec_hdr *h, void *arg);
	/* called for the good records before [since, until): a later one may need their tables */
	int (*skip)(struct store *s, const struct rec_hdr *h, uint64_t off, void *arg);
	void *arg;
	/* 1: pause before this record (it is read again by the next scan from next_off) */
	int (*stop_before)(struct store *s, const struct rec_hdr *h, void *arg);
	uint64_t start_off; /* where to start (a record boundary) */
	int64_t budget;     /* > 0: pause once this many flushed windows were handed to fn */
	/*
	 * > 0: or before a record (not the first) that would take the thread's
	 * CPU clock past this, at *ns_per_byte of its raw length: what the
	 * records before cost, the highest lately (updated here).
	 */
	int64_t cpu_until;
	double *ns_per_byte;
	int paused;         /* out: stopped for the budget; next_off is where to go on */
	uint64_t next_off;  /* out */
	uint64_t good_end;  /* out: end of the last good record */
	int64_t max_end;    /* out: largest effective end of a good record */
	uint64_t nrecords;  /* out */
	uint64_t nfn;       /* out: records handed to fn */
};

/* Records shorter than this cost more per byte than the scan's rate tells: they do not set it. */
#define RATE_MIN_RAW 4096

/*
 * After damage at off: finds the next offset holding a valid record header,
 * or size when there is none. Reads the rest of the file in blocks; this is
 * only paid on damage.
 */
static uint64_t resync(int fd, uint64_t off, uint64_t size)
{
	uint8_t buf[65536 + REC_HDR];
	uint64_t pos = off + 1;

	while (pos + REC_HDR <= size) {
		size_t want = sizeof(buf);
		if (size - pos < want)
			want = (size_t)(size - pos);
		ssize_t r = pread_full(fd, buf, want, pos);
		if (r < REC_HDR)
			return size;
		for (size_t i = 0; i + REC_HDR <= (size_t)r; i++) {
			struct rec_hdr h;
			if (buf[i] == 'P' && !hdr_unpack(buf + i, &h))
				return pos + i;
		}
		pos += (uint64_t)r - REC_HDR + 1;
	}
	return size;
}

/* A reader's decompression contexts: 0, or -ENOMEM, -EINVAL (reader_release() either way). */
static int reader_init(struct reader *x)
{
	x->dctx = ZSTD_createDCtx();
	x->sdctx = ZSTD_createDCtx();
	if (!x->dctx || !x->sdctx)
		return -ENOMEM;
	if (ZSTD_isError(ZSTD_DCtx_setParameter(x->sdctx, ZSTD_d_windowLogMax, STREAM_WLOG_MAX)))
		return -EINVAL;
	return 0;
}

/* Its contexts and buffers; its codec and profile are their owner's. */
static void reader_release(struct reader *x)
{
	ZSTD_freeDCtx(x->dctx);
	ZSTD_freeDCtx(x->sdctx);
	free(x->zbuf);
	free(x->rbuf);
	free(x->pbuf);
	*x = (struct reader){ .codec = x->codec, .prof = x->prof };
}

static int check_payload(struct reader *x, int fd, uint64_t off, const struct rec_hdr *h, const char **why)
{
	int err = grow_buf(&x->zbuf, &x->zcap, h->comp_len ? h->comp_len : 1);
	if (err)
		return err;
	ssize_t r = pread_full(fd, x->zbuf, h->comp_len, off + REC_HDR);
	if (r < 0)
		return (int)r;
	if ((size_t)r != h->comp_len) {
		*why = "payload cut short";
		return -EBADMSG;
	}
	if (crc32c(0, x->zbuf, h->comp_len) != h->payload_crc) {
		*why = "payload checksum mismatch";
		return -EBADMSG;
	}
	return 0;
}

static int scan_segment(struct store *s, const struct seg *g, int fd, uint64_t size, struct scan *sc)
{
	uint64_t off = sc->start_off;
	int err = 0;

	sc->paused = 0;
	sc->good_end = 0;
	sc->max_end = INT64_MIN;
	sc->nrecords = 0;
	sc->nfn = 0;
	while (off < size) {
		uint8_t b[REC_HDR];
		struct rec_hdr h;
		const char *why = NULL;

		if (size - off < REC_HDR) {
			if (!(sc->flags & SCAN_QUIET_TAIL)) {
				warnf(s, "%s/%s: offset %llu: truncated record header (%llu bytes), ignored",
				      s->dir, g->name, (unsigned long long)off, (unsigned long long)(size - off));
				s->st.corrupt_records++;
			}
			break;
		}
		ssize_t r = pread_full(fd, b, REC_HDR, off);
		if (r < 0) {
			err = (int)r;
			goto out;
		}
		if (r < REC_HDR) /* the file shrank under us: it is being recovered or removed */
			break;
		if (hdr_unpack(b, &h)) {
			uint64_t next = resync(fd, off, size);
			/* Garbage up to end of file in the open segment is a torn write, not a broken record. */
			if (!(next == size && (sc->flags & SCAN_QUIET_TAIL))) {
				warnf(s, "%s/%s: offset %llu: bad record header, skipped %llu bytes",
				      s->dir, g->name, (unsigned long long)off, (unsigned long long)(next - off));
				s->st.corrupt_records++;
			}
			off = next;
			continue;
		}
		uint64_t end = off + REC_HDR + h.comp_len;
		if (end > size) {
			if (!(sc->flags & SCAN_QUIET_TAIL)) {
				warnf(s, "%s/%s: offset %llu: record runs past end of file (%llu > %llu), ignored",
				      s->dir, g->name, (unsigned long long)off, (unsigned long long)end,
				      (unsigned long long)size);
				s->st.corrupt_records++;
			}
			break;
		}
		if (sc->flags & SCAN_VERIFY) {
			err = check_payload(&s->rd, fd, off, &h, &why);
			if (err == -EBADMSG) {
				warnf(s, "%s/%s: offset %llu: %s, record skipped",
				      s->dir, g->name, (unsigned long long)off, why);
				s->st.corrupt_records++;
				err = 0;
				off = end;
				continue;
			}
			if (err)
				goto out;
		}
		sc->good_end = end;
		sc->nrecords++;
		if (eff_end(h.start_ns, h.end_ns) > sc->max_end)
			sc->max_end = eff_end(h.start_ns, h.end_ns);
		if (h.start_ns >= sc->until)
			break;
		if (sc->stop_before && sc->stop_before(s, &h, sc->arg)) {
			sc->paused = 1;
			break;
		}
		/*
		 * A record's cost is about proportional to its raw length (a chain's
		 * key record, all its tables, costs five of the records after it):
		 * known before it is started, unlike the time the one before took.
		 */
		int64_t t0 = sc->cpu_until > 0 ? clock__ns(CLOCK_THREAD_CPUTIME_ID) : 0;
		if (sc->cpu_until > 0 && sc->nfn && t0 + (double)h.raw_len * *sc->ns_per_byte >= (double)sc->cpu_until) {
			sc->paused = 1;
			break;
		}
		int called = sc->fn && overlaps(h.start_ns, h.end_ns, sc->since, sc->until);
		if (called) {
			err = sc->fn(s, g, fd, off, &h, sc->arg);
			sc->nfn++;
		} else if (sc->skip) {
			err = sc->skip(s, &h, off, sc->arg);
		}
		if (err)
			goto out;
		off = end;
		if (called && sc->cpu_until > 0 && h.raw_len >= RATE_MIN_RAW) {
			double r = (double)(clock__ns(CLOCK_THREAD_CPUTIME_ID) - t0) / h.raw_len;
			/* Up at once, down slowly: one cheap record does not let a costly one in. */
			*sc->ns_per_byte = r > *sc->ns_per_byte ? r : (3 * *sc->ns_per_byte + r) / 4;
		}
		if (sc->budget > 0 && (sc->budget -= h.windows) <= 0) {
			sc->paused = off < size;
			break;
		}
	}
out:
	sc->next_off = off;
	return err;
}

/* ---- open, recovery, sealing ---- */

static int sync_dir(struct store *s)
{
	return fsync(s->dfd) < 0 ? -errno : 0;
}

static void seal_name(char *out, int64_t start, int64_t end)
{
	snprintf(out, NAME_MAX_LEN, "seg-%019lld-%019lld.pfd", (long long)start, (long long)end);
}

/* Renames an open segment to its sealed name; end is bumped past a name clash. */
static int seal_as(struct store *s, const char *name, int64_t start, int64_t end)
{
	char sealed[NAME_MAX_LEN];
	for (int i = 0; i < 16; i++, end++) {
		seal_name(sealed, start, end);
		if (!renameat2(s->dfd, name, s->dfd, sealed, RENAME_NOREPLACE))
			return sync_dir(s);
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/*
 * Writer start-up for a segment left open by an earlier run: keeps every
 * record whose header and payload check out, cuts the file after the last
 * one (the torn tail of a crash; the only in-place change the format
 * allows), and seals it. An open segment with no good record is removed.
 */
static int recover_segment(struct store *s, const struct seg *g)
{
	/* QUIET_TAIL: the cut below reports an incomplete tail once. */
	struct scan sc = { .since = INT64_MIN, .until = INT64_MAX, .flags = SCAN_VERIFY | SCAN_QUIET_TAIL };
	uint64_t size;
	int err, fd = open_seg(s, g->name, O_RDWR, &size);

	if (fd == -ELOOP || fd == -EBADF) {
		warnf(s, "%s/%s: not a regular file, ignored", s->dir, g->name);
		return 0;
	}
	if (fd < 0)
		return fd;
	err = scan_segment(s, g, fd, size, &sc);
	if (err)
		goto out;
	if (sc.good_end < size) {
		warnf(s, "%s/%s: offset %llu: torn tail of %llu bytes cut",
		      s->dir, g->name, (unsigned long long)sc.good_end,
		      (unsigned long long)(size - sc.good_end));
		if (ftruncate(fd, (off_t)sc.good_end) < 0 || fdatasync(fd) < 0) {
			err = -errno;
			goto out;
		}
	}
	if (!sc.nrecords) {
		if (unlinkat(s->dfd, g->name, 0) < 0)
			err = -errno;
		goto out;
	}
	err = seal_as(s, g->name, g->start, sc.max_end);
out:
	close(fd);
	return err;
}

/* Segments in l, summary files in m. */
static int list_both(struct store *s, struct seg_list *l, struct seg_list *m, int want_size)
{
	int err = list_segments(s, l, want_size);

	return err ? err : list_sums(s, m, want_size);
}

static int refresh_disk_stats(struct store *s)
{
	struct seg_list l = { 0 }, m = { 0 }, d = { 0 };
	int err = list_both(s, &l, &m, 1);

	if (!err)
		err = list_days(s, &d, 1);
	if (!err) {
		s->st.segments = l.n;
		s->st.summaries = m.n;
		s->st.days = d.n;
		s->st.bytes_on_disk = s->st.summary_bytes = 0;
		for (size_t i = 0; i < l.n; i++)
			s->st.bytes_on_disk += l.v[i].size;
		for (size_t i = 0; i < m.n; i++)
			s->st.summary_bytes += m.v[i].size;
		for (size_t i = 0; i < d.n; i++)
			s->st.summary_bytes += d.v[i].size;
		s->st.bytes_on_disk += s->st.summary_bytes;
	}
	free(l.v);
	free(m.v);
	free(d.v);
	return err;
}

/* Summaries whose segment is gone (a crash between the two removals of retention). */
static int remove_orphan_sums(struct store *s)
{
	struct seg_list l = { 0 }, m = { 0 };
	int err = list_both(s, &l, &m, 0);

	/* Matched by start and end, as a summary to its segment (only sealed segments have an end). */
	for (size_t i = 0; !err && i < m.n; i++)
		if (!find_sum(&l, &m.v[i]))
			(void)unlinkat(s->dfd, m.v[i].name, 0);
	free(l.v);
	free(m.v);
	return err;
}

static mode_t dir_mode(const struct store *s)
{
	return s->o.group_read ? 0750 : 0700;
}

static int open_dir(struct store *s)
{
	struct stat st;

	if (s->o.writer && mkdir(s->dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	/* A writer never follows a symbolic link in the directory's place to a directory elsewhere. */
	s->dfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (s->o.writer ? O_NOFOLLOW : 0));
	if (s->dfd < 0)
		return -errno;
	if (!s->o.writer)
		return 0;
	if (fstat(s->dfd, &st) < 0)
		return -errno;
	/* Someone else's directory could hold files planted for us to trust. */
	if (st.st_uid != geteuid())
		return -EPERM;
	if (s->o.group_read && st.st_gid != s->o.group_gid && fchown(s->dfd, -1, s->o.group_gid) < 0)
		return -errno;
	if ((st.st_mode & 07777) != dir_mode(s) && fchmod(s->dfd, dir_mode(s)) < 0)
		return -errno;
	return 0;
}

/* A new file of the writer: readable by the group when asked (open's mode is cut by the umask). */
static int own_file(struct store *s, int fd)
{
	if (!s->o.group_read)
		return 0;
	if (fchown(fd, -1, s->o.group_gid) < 0 || fchmod(fd, 0640) < 0)
		return -errno;
	return 0;
}

/* Files (segments, summaries) written before group_read was asked for. */
static void own_files(struct store *s, const struct seg_list *l)
{
	for (size_t i = 0; s->o.group_read && i < l->n; i++) {
		int fd = openat(s->dfd, l->v[i].name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);

		if (fd < 0)
			continue;
		if (own_file(s, fd))
			warnf(s, "%s/%s: cannot make it readable by group %u: %s", s->dir, l->v[i].name,
			      s->o.group_gid, strerror(errno));
		close(fd);
	}
}

int store__open(const struct store_opts *o, struct store **out)
{
	struct seg_list l = { 0 };
	struct store *s;
	int err;

	if (!o || !o->dir || !*o->dir)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->o = *o;
	s->dfd = s->lockfd = s->afd = -1;
	s->dir = strdup(o->dir);
	if (!s->dir) {
		err = -ENOMEM;
		goto fail;
	}
	s->o.dir = s->dir;
	if (!s->o.zstd_level)
		s->o.zstd_level = DEF_ZSTD_LEVEL;
	s->seg_bytes = o->segment_bytes ? o->segment_bytes : DEF_SEG_BYTES;
	/* Retention removes whole segments: keep them small against the size limit. */
	if (o->max_bytes && s->seg_bytes > o->max_bytes / 8)
		s->seg_bytes = o->max_bytes / 8 > MIN_SEG_BYTES ? o->max_bytes / 8 : MIN_SEG_BYTES;
	s->seg_span = o->segment_span_ns > 0 ? o->segment_span_ns : DEF_SEG_SPAN_NS;
	s->chain_max = o->chain_records ? o->chain_records : DEF_CHAIN;
	s->roll_chain_max = o->rollup_chain_records ? o->rollup_chain_records : DEF_ROLL_CHAIN;
	for (size_t i = 0; i < STORE_MAX_TIERS; i++)
		s->rolled_upto[i] = INT64_MIN;
	s->summed_upto = INT64_MIN;
	s->dayed_upto = INT64_MIN;
	s->pressed_upto = INT64_MIN;
	if (!o->no_rollup) {
		const struct store_rollup *t = o->rollup[0].window_ns ? o->rollup : def_tiers;
		size_t max = o->rollup[0].window_ns ? STORE_MAX_TIERS : sizeof(def_tiers) / sizeof(def_tiers[0]);
		for (size_t i = 0; i < max && t[i].window_ns > 0; i++) {
			/* Ages must grow and windows must be coarser from one tier to the next. */
			if (t[i].age_ns <= 0 || (i && (t[i].age_ns <= t[i - 1].age_ns || t[i].window_ns < t[i - 1].window_ns))) {
				err = -EINVAL;
				goto fail;
			}
			s->tiers[s->ntiers++] = t[i];
		}
	}

	if ((err = codec__new(&s->rd.codec)) || (err = profile__new(&s->rd.prof)) ||
	    (err = codec__set_value_unit(s->rd.codec, s->o.value_unit_ns)))
		goto fail;
	if ((err = reader_init(&s->rd)) || (err = open_dir(s)))
		goto fail;

	if (s->o.writer) {
		s->cctx = ZSTD_createCCtx();
		if (!s->cctx) {
			err = -ENOMEM;
			goto fail;
		}
		if (ZSTD_isError(ZSTD_CCtx_setParameter(s->cctx, ZSTD_c_compressionLevel, s->o.zstd_level))) {
			err = -EINVAL;
			goto fail;
		}
		s->rcctx = ZSTD_createCCtx();
		if (!s->rcctx) {
			err = -ENOMEM;
			goto fail;
		}
		if (ZSTD_isError(ZSTD_CCtx_setParameter(s->rcctx, ZSTD_c_compressionLevel,
							 s->o.rollup_zstd_level ? s->o.rollup_zstd_level :
										  DEF_ROLL_LEVEL))) {
			err = -EINVAL;
			goto fail;
		}
		s->lockfd = openat(s->dfd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
		if (s->lockfd < 0) {
			err = -errno;
			goto fail;
		}
		/* One writer per directory: a second profd would interleave records. */
		if (flock(s->lockfd, LOCK_EX | LOCK_NB) < 0) {
			err = errno == EWOULDBLOCK ? -EBUSY : -errno;
			goto fail;
		}
		remove_roll_tmps(s);
		if ((err = list_segments(s, &l, 0)))
			goto fail;
		for (size_t i = 0; i < l.n; i++) {
			if (l.v[i].sealed)
				continue;
			err = recover_segment(s, &l.v[i]);
			if (err)
				goto fail;
		}
		if ((err = remove_orphan_sums(s)))
			goto fail;
		own_files(s, &l);
		free(l.v);
		l = (struct seg_list){ 0 };
		if ((err = list_sums(s, &l, 0)))
			goto fail;
		own_files(s, &l);
		free(l.v);
		l = (struct seg_list){ 0 };
		if ((err = remove_stale_days(s)) || (err = list_days(s, &l, 0)))
			goto fail;
		own_files(s, &l);
	}
	err = refresh_disk_stats(s);
	if (err)
		goto fail;
	free(l.v);
	*out = s;
	return 0;
fail:
	free(l.v);
	store__close(s);
	return err;
}

static void close_active(struct store *s, int seal)
{
	s->achain.len = 0;
	if (s->afd < 0)
		return;
	close(s->afd);
	s->afd = -1;
	/* A failed seal leaves an open segment; the next writer start recovers and seals it. */
	if (seal)
		(void)seal_as(s, s->aname, s->astart, s->amax_end);
}

void store__close(struct store *s)
{
	if (!s)
		return;
	roll_end(s);
	close_active(s, 1);
	if (s->lockfd >= 0)
		close(s->lockfd);
	if (s->dfd >= 0)
		close(s->dfd);
	ZSTD_freeCCtx(s->cctx);
	ZSTD_freeCCtx(s->rcctx);
	reader_release(&s->rd);
	codec__free(s->rd.codec);
	profile__free(s->rd.prof);
	codec__free(s->rcodec);
	profile__free(s->rprof);
	profile__free(s->wprof);
	profile__free(s->pprof);
	profile__free(s->fprof);
	modframes__tail_free(s->mtail);
	modframes__calls_free(s->calls);
	free(s->dir);
	free(s);
}

/* ---- appending ---- */

static int open_new_segment(struct store *s, int64_t start)
{
	/* Names must be non-negative and unique; start - i keeps the name a lower bound. */
	int64_t name_start = start < 0 ? 0 : start;
	for (int i = 0; i < 16; i++, name_start = name_start ? name_start - 1 : 0) {
		snprintf(s->aname, sizeof(s->aname), "seg-%019lld.pfd", (long long)name_start);
		int fd = openat(s->dfd, s->aname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
		if (fd < 0) {
			if (errno == EEXIST && name_start)
				continue;
			return -errno;
		}
		if (own_file(s, fd) < 0) {
			int err = -errno;

			close(fd);
			unlinkat(s->dfd, s->aname, 0);
			return err;
		}
		s->afd = fd;
		s->astart = name_start;
		s->alast_start = start;
		s->amax_end = eff_end(start, start);
		s->asize = 0;
		s->st.segments++;
		/* The new name must survive a crash, or its fdatasync'd records are lost with it. */
		int err = sync_dir(s);
		if (err)
			close_active(s, 0);
		return err;
	}
	return -EEXIST;
}

/* Writes one record at off with one pwritev (header then payload); no sync. */
static int write_at(int fd, uint64_t off, const uint8_t *hdr, const uint8_t *payload, size_t plen)
{
	struct iovec iov[2] = {
		{ (void *)hdr, REC_HDR },
		{ (void *)payload, plen },
	};
	size_t total = REC_HDR + plen, done = 0;

	while (done < total) {
		/* One pwritev per record, so readers see a record appear whole or not at all. */
		struct iovec v[2];
		int nv = 0;
		size_t skip = done;
		for (int i = 0; i < 2; i++) {
			if (skip >= iov[i].iov_len) {
				skip -= iov[i].iov_len;
				continue;
			}
			v[nv].iov_base = (uint8_t *)iov[i].iov_base + skip;
			v[nv].iov_len = iov[i].iov_len - skip;
			skip = 0;
			nv++;
		}
		ssize_t r = pwritev(fd, v, nv, (off_t)(off + done));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -EIO;
		done += (size_t)r;
	}
	return 0;
}

static int write_record(struct store *s, const uint8_t *hdr, const uint8_t *payload, size_t plen)
{
	int err = write_at(s->afd, s->asize, hdr, payload, plen);

	if (err)
		return err;
	/*
	 * fdatasync per record: at one record per flush interval (10 s) it costs
	 * a few ms of disk time per window and bounds a crash to the open window.
	 */
	if (fdatasync(s->afd) < 0)
		return -errno;
	return 0;
}

/*
 * Starts a chain's frame on z_ctx, its window and tables sized from the
 * raw bytes per record of the chain z_ctx wrote before (half its key
 * when there was none): a window of twice chain_records such records
 * (the tables, a quarter of its entries, then keep most of the chain's
 * positions), and never smaller than z_ctx's before: zstd keeps the
 * larger workspace it has, so a smaller window would cost bytes and
 * save no memory. So the largest chain sizes the compressor, and a
 * quiet host's stays small. Rollups size theirs from theirs.
 */
static int stream_start(struct store *s, ZSTD_CCtx *z_ctx, size_t keylen)
{
	struct zsizing *zs = z_ctx == s->cctx ? &s->asz : z_ctx == s->rcctx ? &s->rsz : NULL;
	uint64_t per = zs && zs->n ? zs->raw / zs->n : keylen / 2 + 1;
	uint32_t records = z_ctx == s->rcctx ? s->roll_chain_max : s->chain_max;
	uint64_t want = 2 * per * (records ? records : 1);
	int wlog = zs && zs->wlog ? zs->wlog : STREAM_WLOG_MIN;

	while (wlog < STREAM_WLOG && (1ull << wlog) < want)
		wlog++;
	if (zs)
		*zs = (struct zsizing){ .wlog = wlog };
	if (ZSTD_isError(ZSTD_CCtx_reset(z_ctx, ZSTD_reset_session_only)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(z_ctx, ZSTD_c_windowLog, wlog)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(z_ctx, ZSTD_c_hashLog, wlog - STREAM_TLOG_LESS)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(z_ctx, ZSTD_c_chainLog, wlog - STREAM_TLOG_LESS)))
		return -EIO;
	return 0;
}

/*
 * A record being compressed. Rollups' and days' records are compressed
 * in pieces of at most `chunk` raw bytes, each flushed as blocks of its
 * own, over as many store__compact calls as their CPU bound takes: level
 * 19 compresses 1-2 MB a second, and a 64-CPU host's merged window is
 * megabytes. The pieces depend on the payload alone, so the bytes do
 * not depend on where a call stopped.
 */
struct rec_out {
	ZSTD_CCtx *z;
	const uint8_t *raw;    /* the codec's payload: kept until its next encode */
	size_t rawlen, from;   /* raw bytes compressed so far */
	const size_t *ends;    /* the payload's parts */
	size_t np, part;       /* the next part to reach */
	size_t chunk;          /* 0: a part (or the whole payload of a frame of its own) at once */
	int own, ended;        /* a frame of its own (summaries, days), and its end written */
	int delta;
	struct profile *lend;  /* a key: encoded with this profile lent as its chain's tables */
	uint8_t **buf;
	size_t *cap;
	ZSTD_outBuffer out;
	struct rec_hdr h;
};

/* p's record header so far, and whether it is a delta in chain ch (it has records and room for one more). */
static void rec_head(struct store *s, struct rec_out *w, ZSTD_CCtx *z_ctx, const struct profile *p,
		     const struct chain *ch, uint8_t level, uint32_t windows, uint32_t flags)
{
	const struct pf_meta *m = profile__meta_const(p);

	w->h = (struct rec_hdr){ .flags = REC_FLAG_ZSTD | flags, .level = level, .windows = windows,
				 .start_ns = m->start_ns, .end_ns = m->end_ns };
	codec__totals(p, &w->h.samples, &w->h.lost);
	w->delta = ch->len && ch->len < (z_ctx == s->rcctx ? s->roll_chain_max : s->chain_max);
}

/* p encoded by c into w->raw: the one step of a record that is not done in pieces. */
static int rec_encode(struct rec_out *w, struct codec *c, const struct profile *p, const struct chain *ch)
{
	if (w->lend && !w->delta)
		return codec__encode_key_lent(c, w->lend, &w->raw, &w->rawlen);
	return codec__encode_chain(c, p, w->delta ? ch->key_off + 1 : 0, &w->raw, &w->rawlen);
}

/* Readies the compression of w's payload, encoded by c, on z_ctx into *w->buf. */
static int rec_ready(struct store *s, struct rec_out *w, ZSTD_CCtx *z_ctx, struct codec *c, uint32_t flags,
		     size_t chunk)
{
	int err;

	if (w->rawlen > REC_MAX_PAYLOAD)
		return -EFBIG;
	/* Room for a flushed block per part and per piece (header and a stored block's overhead). */
	size_t bound = ZSTD_compressBound(w->rawlen) + 64 + 16 * CODEC_MAX_PARTS +
		       (chunk ? 16 * (w->rawlen / chunk + 1) : 0);
	if ((err = grow_buf(w->buf, w->cap, bound)))
		return err;
	w->out = (ZSTD_outBuffer){ *w->buf, bound, 0 };
	w->z = z_ctx;
	w->from = w->part = 0;
	w->np = codec__parts(c, &w->ends);
	w->chunk = chunk;
	w->own = !!(flags & REC_FLAG_SUMMARY);
	w->ended = 0;
	/*
	 * Segments: the chain's records are one frame, each record's blocks
	 * flushed whole; a key starts it. A summary's or day's record is a
	 * frame of its own: it is read without the ones before it.
	 */
	if (!w->own) {
		if (!w->delta && (err = stream_start(s, z_ctx, w->rawlen)))
			return err;
		if (z_ctx == s->cctx || z_ctx == s->rcctx) {
			struct zsizing *zs = z_ctx == s->cctx ? &s->asz : &s->rsz;
			zs->raw += w->rawlen;
			zs->n++;
		}
		w->h.flags |= REC_FLAG_STREAM;
	} else if (z_ctx == s->rcctx &&
		   /* A day file's record: the rollups' compressor at its largest, shrunk to the record by zstd. */
		   (ZSTD_isError(ZSTD_CCtx_reset(z_ctx, ZSTD_reset_session_only)) ||
		    ZSTD_isError(ZSTD_CCtx_setParameter(z_ctx, ZSTD_c_windowLog, STREAM_WLOG)) ||
		    ZSTD_isError(ZSTD_CCtx_setParameter(z_ctx, ZSTD_c_hashLog, STREAM_WLOG - STREAM_TLOG_LESS)) ||
		    ZSTD_isError(ZSTD_CCtx_setParameter(z_ctx, ZSTD_c_chainLog, STREAM_WLOG - STREAM_TLOG_LESS)) ||
		    ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(z_ctx, w->rawlen)))) {
		return -EIO;
	}
	if (w->delta)
		w->h.flags |= REC_FLAG_DELTA;
	return 0;
}

/*
 * Encodes p as the next record of chain ch (a delta when the chain has
 * records and room for one more, else a key) and readies its compression
 * on z_ctx into *w->buf.
 */
static int rec_begin(struct store *s, struct rec_out *w, ZSTD_CCtx *z_ctx, struct codec *c,
		     const struct profile *p, const struct chain *ch, uint8_t level, uint32_t windows,
		     uint32_t flags, size_t chunk)
{
	int err;

	rec_head(s, w, z_ctx, p, ch, level, windows, flags);
	if ((err = rec_encode(w, c, p, ch)))
		return err;
	return rec_ready(s, w, z_ctx, c, flags, chunk);
}

/*
 * Compresses the rest of w's payload; with a deadline (thread CPU time)
 * stops before a piece that would take it past the deadline, judged by
 * what the piece before cost. 0: done; 1: call again.
 */
static int rec_feed(struct rec_out *w, int64_t cpu_until)
{
	if (w->own && !w->chunk) {
		size_t z = ZSTD_compress2(w->z, w->out.dst, w->out.size, w->raw, w->rawlen);
		if (ZSTD_isError(z))
			return -EIO;
		w->out.pos = z;
		w->from = w->rawlen;
		return 0;
	}
	/*
	 * A block (or more) per part of the payload, a part under
	 * STREAM_PART_MIN going with the next: each block's entropy tables
	 * then fit one kind of data (names, steps, values).
	 */
	while (w->part <= w->np && !w->ended) {
		size_t to = w->part < w->np ? w->ends[w->part] : w->rawlen;
		if (to > w->rawlen || to < w->from || (w->part < w->np && to - w->from < STREAM_PART_MIN)) {
			w->part++;
			continue;
		}
		if (w->chunk && to - w->from > w->chunk)
			to = w->from + w->chunk;
		else
			w->part++;
		int64_t t0 = cpu_until > 0 ? clock__ns(CLOCK_THREAD_CPUTIME_ID) : 0;
		ZSTD_EndDirective end = w->own && to == w->rawlen ? ZSTD_e_end : ZSTD_e_flush;
		ZSTD_inBuffer in = { w->raw + w->from, to - w->from, 0 };
		size_t left;
		do
			left = ZSTD_compressStream2(w->z, &w->out, &in, end);
		while (!ZSTD_isError(left) && left && w->out.pos < w->out.size);
		/* The frame is then unusable: the caller's next record is a key. */
		if (ZSTD_isError(left) || left)
			return -EIO;
		w->from = to;
		w->ended = end == ZSTD_e_end;
		if (cpu_until > 0 && w->from < w->rawlen) {
			int64_t t1 = clock__ns(CLOCK_THREAD_CPUTIME_ID);
			if (t1 + (t1 - t0) >= cpu_until)
				return 1;
		}
	}
	return w->from == w->rawlen && (!w->own || w->ended) ? 0 : -EIO;
}

/* The record compressed: its header, checksums included, into hdr; its payload's length. */
static size_t rec_finish(struct rec_out *w, uint8_t hdr[REC_HDR])
{
	w->h.comp_len = (uint32_t)w->out.pos;
	w->h.raw_len = (uint32_t)w->rawlen;
	w->h.payload_crc = crc32c(0, w->out.dst, w->out.pos);
	hdr_pack(&w->h, hdr);
	return w->out.pos;
}

/*
 * Encodes, compresses and checksums p as the next record of chain ch, in
 * one go. The record is in hdr and s->rd.zbuf; *delta says which it is.
 */
static int make_record(struct store *s, ZSTD_CCtx *z_ctx, struct codec *c, const struct profile *p,
		       const struct chain *ch,
		       uint8_t level, uint32_t windows, uint32_t flags, uint8_t hdr[REC_HDR], size_t *plen,
		       int *delta)
{
	struct rec_out w = { .buf = &s->rd.zbuf, .cap = &s->rd.zcap };
	int err = rec_begin(s, &w, z_ctx, c, p, ch, level, windows, flags, 0);

	*delta = w.delta;
	if (!err)
		err = rec_feed(&w, 0);
	if (err)
		return err;
	*plen = rec_finish(&w, hdr);
	return 0;
}

/* The record just made is on disk: it is the chain's. */
static void chain_added(struct store *s, struct chain *ch, uint64_t off, int delta)
{
	if (delta) {
		ch->len++;
	} else {
		ch->key_off = off;
		ch->len = 1;
	}
}

int store__append(struct store *s, const struct profile *window)
{
	const struct pf_meta *m = profile__meta_const(window);
	uint8_t hdr[REC_HDR];
	size_t z;
	int err, delta;

	if (!s->o.writer)
		return -EPERM;
	if (s->o.calls_by_function || s->o.runq_entry_frame) {
		err = s->calls ? 0 : modframes__calls_new(&s->calls, (s->o.calls_by_function ? MODCALLS_BY_FUNCTION : 0) |
									   (s->o.leaf_by_function ? MODCALLS_LEAF_BY_FUNCTION : 0) |
									   (s->o.runq_entry_frame ? MODCALLS_RUNQ_ENTRY : 0));
		if (err || (err = modframes__calls(s->calls, window, &window)))
			goto drop;
	}
	int64_t span;
	if (s->afd >= 0 &&
	    (m->start_ns < s->alast_start ||                       /* clock stepped back */
	     __builtin_sub_overflow(m->start_ns, s->astart, &span) || span >= s->seg_span))
		close_active(s, 1);
	err = make_record(s, s->cctx, s->rd.codec, window, &s->achain, 0, 1, 0, hdr, &z, &delta);
	if (err)
		goto drop;
	uint64_t rec = REC_HDR + z;
	if (s->afd >= 0 && s->asize && s->asize + rec > s->seg_bytes) {
		close_active(s, 1);
		/* Records never refer to another file: the first one of a segment is a key. */
		if (delta && (err = make_record(s, s->cctx, s->rd.codec, window, &s->achain, 0, 1, 0, hdr, &z, &delta)))
			goto drop;
		rec = REC_HDR + z;
	}
	if (s->afd < 0 && (err = open_new_segment(s, m->start_ns)))
		goto fail;

	err = write_record(s, hdr, s->rd.zbuf, z);
	if (err) {
		/*
		 * Cut what part of the record reached the file so the segment ends on
		 * a record boundary. If even that fails, or fdatasync failed (the page
		 * cache state is then unknown), give up on this segment: the next
		 * append starts a new one and the next writer start recovers this one.
		 */
		if (err == -EIO || ftruncate(s->afd, (off_t)s->asize) < 0)
			close_active(s, 0);
		goto fail;
	}
	chain_added(s, &s->achain, s->asize, delta);
	s->asize += rec;
	s->alast_start = m->start_ns;
	if (eff_end(m->start_ns, m->end_ns) > s->amax_end)
		s->amax_end = eff_end(m->start_ns, m->end_ns);
	s->st.windows_written++;
	s->st.bytes_written += rec;
	s->st.bytes_on_disk += rec;
	return 0;
fail:
	s->st.write_errors++;
drop:
	/* The encoder's tables may now hold what no record on disk carries. */
	s->achain.len = 0;
	s->st.windows_dropped++;
	return err;
}

/* ---- retention ---- */

int store__retain(struct store *s, int64_t now_ns)
{
	struct seg_list l = { 0 }, m = { 0 }, d = { 0 };
	uint64_t total = 0;
	int err, first_err = 0;

	if (!s->o.writer)
		return -EPERM;
	if ((err = list_both(s, &l, &m, 1)) || (err = list_days(s, &d, 1)))
		goto out;
	for (size_t i = 0; i < l.n; i++)
		total += l.v[i].size;
	for (size_t i = 0; i < m.n; i++)
		total += m.v[i].size;
	for (size_t i = 0; i < d.n; i++)
		total += d.v[i].size;
	int64_t cutoff = s->o.max_age_ns > 0 && now_ns > INT64_MIN + s->o.max_age_ns ?
			 now_ns - s->o.max_age_ns : INT64_MIN;
	for (size_t i = 0; i < l.n; i++) {
		const struct seg *g = &l.v[i];
		/* Never the open segment; an unsealed one left by a failed seal counts by size only. */
		if (s->afd >= 0 && !strcmp(g->name, s->aname))
			continue;
		int old = g->sealed && g->end <= cutoff;
		int big = s->o.max_bytes && total > s->o.max_bytes;
		if (!old && !big)
			continue;
		/* Removing what a rollup reads: its result must not bring the segment back. */
		if (roll_reads(s, g->name))
			roll_drop(s);
		if (unlinkat(s->dfd, g->name, 0) < 0) {
			if (!first_err && errno != ENOENT)
				first_err = -errno;
			continue;
		}
		total -= g->size;
		s->st.segments_removed++;
		/* Its summary goes with it (an orphan left by a crash here is removed at writer start). */
		const struct seg *sum = find_sum(&m, g);
		if (sum && !unlinkat(s->dfd, sum->name, 0))
			total -= sum->size;
		/* And the summary of its day, which no longer stands for it (a writer start removes one left). */
		for (size_t j = 0; j < d.n; j++)
			if (in_day(g, &d.v[j]) && !unlinkat(s->dfd, d.v[j].name, 0)) {
				total -= d.v[j].size;
				d.v[j].start = d.v[j].end = INT64_MIN;
			}
	}
	err = refresh_disk_stats(s);
	if (!err)
		err = first_err;
out:
	free(l.v);
	free(m.v);
	free(d.v);
	return err;
}

/* ---- queries ---- */

struct query {
	store_info_fn info;
	store_window_fn window;
	void *arg;
	unsigned flags; /* STORE_READ_* */
	/* reads only: NULL, or 0 for a record to pass over (a summary stands for it) */
	int (*want)(const struct query *q, const struct rec_hdr *h);
	const struct sum_plan *plan;
	const struct merge_ctx *into; /* store__merge: summaries decode straight into its profile */
	struct reader *rd; /* what records are decoded with; NULL: the store's */
	int stop; /* the callback's non-zero return */
	/* the records of the current chain so far, key first (reads only) */
	struct rec_ref *pend;
	size_t npend, pend_cap;
	int broken; /* a record of the current chain could not be decoded */
	struct rec_ref cur; /* the record handed to window */
};

static void fill_info(const struct seg *g, uint64_t off, const struct rec_hdr *h, struct store_window_info *w)
{
	w->start_ns = h->start_ns;
	w->end_ns = h->end_ns;
	w->samples = h->samples;
	w->lost = h->lost;
	w->bytes = REC_HDR + h->comp_len;
	w->segment = g->name;
	w->offset = off;
	w->windows = h->windows;
	w->level = h->level;
	w->summary = 0;
}

static int on_info(struct store *s, const struct seg *g, int fd, uint64_t off,
		   const struct rec_hdr *h, void *arg)
{
	struct query *q = arg;
	struct store_window_info w;

	fill_info(g, off, h, &w);
	return q->stop = q->info(&w, q->arg);
}

/* Reads, checks and decompresses a record's payload into *raw. */
static int load_payload(struct reader *x, int in_sum, int fd, uint64_t off, const struct rec_hdr *h,
			const uint8_t **raw, const char **why)
{
	/* Summary flags are right in summary files only, where every record has them. */
	uint32_t sflags = h->flags & (REC_FLAG_SUMMARY | REC_FLAG_WHOLE | REC_FLAG_PIDS);
	int err = check_payload(x, fd, off, h, why);
	if (err)
		return err;
	uint32_t known = REC_FLAG_ZSTD | REC_FLAG_DELTA | REC_FLAG_SUMMARY | REC_FLAG_WHOLE |
			 REC_FLAG_PIDS | REC_FLAG_NAMED | REC_FLAG_PREFIX | REC_FLAG_STREAM;
	int bad_sum = !(sflags & REC_FLAG_SUMMARY) ||
		      (h->flags & (REC_FLAG_NAMED | REC_FLAG_PREFIX | REC_FLAG_STREAM)) ||
		      ((sflags & REC_FLAG_PIDS) && !(sflags & REC_FLAG_WHOLE));
	uint32_t pre_needs = REC_FLAG_ZSTD | REC_FLAG_DELTA;
	int bad_pre = ((h->flags & REC_FLAG_PREFIX) && (h->flags & pre_needs) != pre_needs) ||
		      ((h->flags & REC_FLAG_STREAM) && (!(h->flags & REC_FLAG_ZSTD) || (h->flags & REC_FLAG_PREFIX)));
	int cont = (h->flags & REC_FLAG_STREAM) && (h->flags & REC_FLAG_DELTA);

	if ((h->flags & ~known) || bad_pre || (in_sum ? bad_sum : sflags != 0)) {
		*why = "unknown record flags";
		return -EBADMSG;
	}
	struct stat st = { 0 };
	int have = x->pnext && !fstat(fd, &st) && st.st_dev == x->pdev && st.st_ino == x->pino;
	if (((h->flags & REC_FLAG_PREFIX) || cont) && (!have || x->pnext != off || (cont && !x->slive)))
		return -ESTALE; /* the records before it first: its chain is decoded from the key */
	*raw = x->zbuf;
	if (h->flags & REC_FLAG_ZSTD) {
		/* One byte more: a record whose blocks hold more than raw_len bytes fills it. */
		if ((err = grow_buf(&x->rbuf, &x->rcap, (size_t)h->raw_len + 1)))
			return err;
		size_t r;
		if (h->flags & REC_FLAG_STREAM) {
			if (!cont && ZSTD_isError(ZSTD_DCtx_reset(x->sdctx, ZSTD_reset_session_only)))
				return -ENOMEM;
			ZSTD_inBuffer in = { x->zbuf, h->comp_len, 0 };
			ZSTD_outBuffer out = { x->rbuf, (size_t)h->raw_len + 1, 0 };
			size_t ip, op;
			/* Each call consumes or produces, or the loop ends: bounded by the bytes. */
			do {
				ip = in.pos;
				op = out.pos;
				r = ZSTD_decompressStream(x->sdctx, &out, &in);
			} while (!ZSTD_isError(r) && (in.pos != ip || out.pos != op) && out.pos < out.size);
			r = ZSTD_isError(r) || in.pos != in.size ? (size_t)-1 : out.pos;
		} else {
			if ((h->flags & REC_FLAG_PREFIX) &&
			    ZSTD_isError(ZSTD_DCtx_refPrefix(x->dctx, x->pbuf, x->plen)))
				return -ENOMEM;
			r = ZSTD_decompressDCtx(x->dctx, x->rbuf, h->raw_len, x->zbuf, h->comp_len);
		}
		if (ZSTD_isError(r) || r != h->raw_len) {
			x->pnext = 0;
			x->slive = 0;
			*why = "payload does not decompress";
			return -EBADMSG;
		}
		x->slive = !!(h->flags & REC_FLAG_STREAM);
		/* Kept as the next record's prefix: the two buffers change places. */
		swap_buf(&x->pbuf, &x->pcap, &x->rbuf, &x->rcap);
		x->plen = h->raw_len;
		if (!have && fstat(fd, &st) < 0)
			st.st_ino = 0;
		x->pdev = st.st_dev;
		x->pino = st.st_ino;
		x->pnext = st.st_ino ? off + REC_HDR + h->comp_len : 0;
		*raw = x->pbuf;
	} else if (x->pnext = 0, x->slive = 0, h->raw_len != h->comp_len) {
		*why = "raw and stored lengths differ";
		return -EBADMSG;
	}
	return 0;
}

/* Remembers the records of the current chain: a delta may need them all. */
static int chain_note(struct query *q, uint64_t off, const struct rec_hdr *h)
{
	if (!(h->flags & REC_FLAG_DELTA)) {
		q->npend = 0;
		q->broken = 0;
	}
	if (grow_slots((void **)&q->pend, &q->pend_cap, q->npend, sizeof(*q->pend), 32))
		return -ENOMEM;
	q->pend[q->npend++] = (struct rec_ref){ .off = off, .h = *h };
	return 0;
}

static int on_skip(struct store *s, const struct rec_hdr *h, uint64_t off, void *arg)
{
	return chain_note(arg, off, h);
}

struct merge_ctx {
	struct profile *dst;
	unsigned flags; /* PF_MERGE_* */
	profile_keep_fn keep;
	void *arg;
};

/*
 * Decodes a record with x: into x->prof, or merged straight into into's
 * profile (each name interned once, not twice). -ESTALE: a delta whose
 * chain x does not hold. *ndec counts the records decoded. It touches no
 * store state: a summary's thread decodes with it too.
 */
static int rd_decode(struct reader *x, int in_sum, int fd, const struct merge_ctx *into, const struct rec_ref *r,
		     unsigned flags, uint64_t *ndec, const char **why)
{
	const uint8_t *raw;
	int err = load_payload(x, in_sum, fd, r->off, &r->h, &raw, why);

	if (err)
		return err;
	if (into)
		err = codec__decode_merge(x->codec, raw, r->h.raw_len, r->off + 1, flags, into->flags, into->keep,
					  into->arg, into->dst);
	else
		err = codec__decode_chain(x->codec, raw, r->h.raw_len, r->off + 1, flags, x->prof);
	(*ndec)++;
	if (err == -EBADMSG)
		*why = "payload does not decode";
	return err;
}

static struct reader *q_reader(struct store *s, const struct query *q)
{
	return q->rd ? q->rd : &s->rd;
}

/* A record for q: into store__merge's profile straight away, or decoded for its callback. */
static int decode_for(struct store *s, int fd, const struct query *q, const struct rec_ref *r, unsigned flags,
		      const char **why)
{
	uint64_t n = 0;
	int err = rd_decode(q_reader(s, q), s->in_sum, fd, q->into, r, flags, &n, why);

	s->st.records_decoded += n;
	return err;
}

/*
 * cur, the last record q noted, decoded with x; first the records of its
 * chain before it, when x does not hold them (not decoded yet, before the
 * range, or into a profile reused since). Touches no store state.
 */
static int decode_chained(struct reader *x, int in_sum, int fd, const struct query *q, const struct rec_ref *cur,
			  uint64_t *ndec, const char **why)
{
	int err = rd_decode(x, in_sum, fd, q->into, cur, 0, ndec, why);

	if (err == -ESTALE && !q->broken && q->npend > 1 && !(q->pend[0].h.flags & REC_FLAG_DELTA)) {
		for (size_t i = 0; i + 1 < q->npend && (err == -ESTALE || !err); i++) {
			err = rd_decode(x, in_sum, fd, q->into, &q->pend[i], CODEC_TABLES_ONLY, ndec, why);
			if (err && err != -EBADMSG && err != -ESTALE)
				return err;
		}
		err = err ? -ESTALE : rd_decode(x, in_sum, fd, q->into, cur, 0, ndec, why);
	}
	return err;
}

/* A record decode_chained() could not decode is skipped, counted and told of: 0, or err if another error. */
static int decode_failed(struct store *s, struct query *q, const struct seg *g, uint64_t off, int err,
			 const char *why)
{
	if (err == -ESTALE) {
		q->broken = 1;
		why = "an earlier record of its chain is damaged";
	} else if (err != -EBADMSG) {
		return err;
	}
	warnf(s, "%s/%s: offset %llu: %s, record skipped", s->dir, g->name, (unsigned long long)off, why);
	s->st.corrupt_records++;
	return 0;
}

static int on_window(struct store *s, const struct seg *g, int fd, uint64_t off,
		     const struct rec_hdr *h, void *arg)
{
	struct query *q = arg;
	struct reader *x = q_reader(s, q);
	struct store_window_info w;
	struct rec_ref cur = { .off = off, .h = *h };
	const char *why = NULL;
	uint64_t n = 0;
	int err;

	if ((err = chain_note(q, off, h)))
		return err;
	if (q->want && !q->want(q, h))
		return 0;
	/*
	 * Merged straight into store__merge's profile, a chain's tables are
	 * interned there as that merge keeps them (by function: far fewer
	 * stacks than by pc), not kept whole in x->prof beside it.
	 */
	err = decode_chained(x, s->in_sum, fd, q, &cur, &n, &why);
	s->st.records_decoded += n;
	if (err == -ESTALE || err == -EBADMSG)
		return decode_failed(s, q, g, off, err, why);
	if (err || q->into)
		return err;
	fill_info(g, off, h, &w);
	q->cur = cur;
	return q->stop = q->window(&w, x->prof, q->arg);
}

/*
 * The writer may seal (rename) an open segment between our readdir and our
 * open: its sealed name starts the same way, so look it up again.
 */
static int reopen_sealed(struct store *s, struct seg *g, uint64_t *size)
{
	struct seg_list l = { 0 };
	int fd = -ENOENT;

	if (list_segments(s, &l, 0))
		goto out;
	for (size_t i = 0; i < l.n; i++) {
		if (l.v[i].sealed && l.v[i].start == g->start) {
			fd = open_seg(s, l.v[i].name, O_RDONLY, size);
			if (fd >= 0) {
				*g = l.v[i];
				break;
			}
		}
	}
out:
	free(l.v);
	return fd;
}

/* Whether the codec's chain is of another file than fd's; fd's from now on. */
static int chain_file(struct store *s, int fd)
{
	struct stat st;
	int other;

	if (fstat(fd, &st) < 0) {
		s->chain_dev = 0;
		s->chain_ino = 0;
		return 1;
	}
	other = !s->chain_dev || st.st_dev != s->chain_dev || st.st_ino != s->chain_ino;
	s->chain_dev = st.st_dev;
	s->chain_ino = st.st_ino;
	return other;
}

/* The records of one segment overlapping [since, until); 1 when the segment is gone. */
static int read_segment(struct store *s, struct seg *g, int64_t since, int64_t until, struct query *q)
{
	uint64_t size;
	int err, fd = open_seg(s, g->name, O_RDONLY, &size);

	if (fd == -ENOENT && !g->sealed)
		fd = reopen_sealed(s, g, &size);
	if (fd == -ENOENT) /* removed by retention meanwhile */
		return 1;
	if (fd == -ELOOP || fd == -EBADF) { /* a planted symlink, FIFO or directory */
		warnf(s, "%s/%s: not a regular file, ignored", s->dir, g->name);
		return 1;
	}
	if (fd < 0)
		return fd;
	/*
	 * Chains never cross files, and offsets repeat from one file to the next.
	 * The same file (records are never rewritten in place; a rollup renames
	 * a new inode in) keeps the chain, so that a reader that comes back for
	 * the next window, as profctl export --follow does, decodes only that.
	 */
	q->npend = 0;
	q->broken = 0;
	if (chain_file(s, fd))
		codec__chain_forget(s->rd.codec);
	struct scan sc = {
		.since = since, .until = until,
		.flags = g->sealed ? 0 : SCAN_QUIET_TAIL,
		.fn = q->info ? on_info : on_window,
		.skip = q->info ? NULL : on_skip,
		.arg = q,
	};
	err = scan_segment(s, g, fd, size, &sc);
	close(fd);
	return err;
}

/* ---- reading through summaries (docs/FORMAT.md, "Summaries") ---- */

static int merge_window(const struct store_window_info *w, const struct profile *p, void *arg)
{
	const struct merge_ctx *m = arg;

	return profile__merge_flags(m->dst, p, m->keep, m->arg, m->flags);
}

struct sum_rec {
	uint64_t off;
	struct rec_hdr h;
	int use;       /* stands for its records in this query */
	int tables;    /* not used, but a delta after it in its chain is: its tables are decoded */
	int bad;       /* a record of the segment in its bucket lies outside it */
	uint64_t seen; /* flushed windows of the segment's records in its bucket */
	int64_t min_end, max_start; /* of those records: do they all overlap the range? */
};

struct sum_plan {
	struct sum_rec *v;
	size_t n, cap;
	size_t b0, nb; /* the 10-minute records, v[b0 .. b0 + nb), in bucket order */
	size_t whole;  /* the whole segment by name */
};

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int collect_sum(struct store *s, const struct seg *g, int fd, uint64_t off, const struct rec_hdr *h,
		       void *arg)
{
	struct sum_plan *pl = arg;

	/* Each record of the segment looks its bucket up among these: keep the product bounded. */
	if (pl->n >= SUM_MAX_RECORDS)
		return -E2BIG;
	if (grow_slots((void **)&pl->v, &pl->cap, pl->n, sizeof(*pl->v), 16))
		return -ENOMEM;
	pl->v[pl->n++] = (struct sum_rec){ .off = off, .h = *h };
	return 0;
}

/* The bucket summary in use that stands for a segment record starting at t, or NULL. */
static struct sum_rec *bucket_for(const struct sum_plan *pl, int64_t t)
{
	int64_t b = floor_div(t, SUM_BUCKET_NS);
	size_t lo = pl->b0, hi = pl->b0 + pl->nb;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int64_t m = floor_div(pl->v[mid].h.start_ns, SUM_BUCKET_NS);
		if (m == b)
			return pl->v[mid].use ? &pl->v[mid] : NULL;
		if (m < b)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/*
 * The 10-minute records, one per bucket, buckets ascending, with only
 * whole-segment records before and after them: exactly one by name (a
 * crash never leaves less: the file is renamed whole), at most one with pids.
 */
static int sum_layout_ok(struct sum_plan *pl)
{
	size_t by_name = 0, with_pids = 0, i = 0;

	while (i < pl->n && (pl->v[i].h.flags & REC_FLAG_WHOLE))
		i++;
	pl->b0 = i;
	for (; i < pl->n && !(pl->v[i].h.flags & REC_FLAG_WHOLE); i++)
		if (i > pl->b0 && floor_div(pl->v[i].h.start_ns, SUM_BUCKET_NS) <=
				  floor_div(pl->v[i - 1].h.start_ns, SUM_BUCKET_NS))
			return 0;
	pl->nb = i - pl->b0;
	for (i = 0; i < pl->n; i++) {
		if (!(pl->v[i].h.flags & REC_FLAG_WHOLE)) {
			if (i < pl->b0 || i >= pl->b0 + pl->nb)
				return 0;
			continue;
		}
		if (pl->v[i].h.flags & REC_FLAG_PIDS) {
			with_pids++;
		} else {
			by_name++;
			pl->whole = i;
		}
	}
	return by_name == 1 && with_pids <= 1;
}

/*
 * Checks the payloads a query may decode: the records in use and, before a
 * delta in use, the records of its chain (their tables). A damaged one
 * takes the rest of its chain out of use: the segment is read for them.
 */
static int sum_check(struct store *s, const struct seg *sg, int fd, struct sum_plan *pl)
{
	const char *why = NULL;
	int need = 0, broken = 0, err;

	for (size_t i = pl->n; i-- > 0;) {
		struct sum_rec *r = &pl->v[i];
		r->tables = !r->use && need;
		need |= r->use;
		if (!(r->h.flags & REC_FLAG_DELTA))
			need = 0;
	}
	for (size_t i = 0; i < pl->n; i++) {
		struct sum_rec *r = &pl->v[i];
		if (!(r->h.flags & REC_FLAG_DELTA))
			broken = 0;
		if (broken)
			r->use = r->tables = 0;
		if (!r->use && !r->tables)
			continue;
		/* Checked before the records it stands for are passed over. */
		if ((err = check_payload(&s->rd, fd, r->off, &r->h, &why))) {
			if (err != -EBADMSG)
				return err;
			warnf(s, "%s/%s: offset %llu: %s, the segment is read instead", s->dir, sg->name,
			      (unsigned long long)r->off, why);
			s->st.corrupt_records++;
			r->use = r->tables = 0;
			broken = 1;
		}
	}
	return 0;
}

static int count_in_bucket(struct store *s, const struct seg *g, int fd, uint64_t off, const struct rec_hdr *h,
			   void *arg)
{
	struct sum_rec *r = bucket_for(arg, h->start_ns);

	if (!r)
		return 0;
	int first = !r->seen && !r->bad;

	if (first || eff_end(h->start_ns, h->end_ns) < r->min_end)
		r->min_end = eff_end(h->start_ns, h->end_ns);
	if (first || h->start_ns > r->max_start)
		r->max_start = h->start_ns;
	if (h->start_ns >= r->h.start_ns && eff_end(h->start_ns, h->end_ns) <= eff_end(r->h.start_ns, r->h.end_ns))
		r->seen += h->windows;
	else
		r->bad = 1;
	return 0;
}

static int want_raw(const struct query *q, const struct rec_hdr *h)
{
	return !bucket_for(q->plan, h->start_ns);
}

/*
 * Keeps the bucket summaries whose bucket holds exactly the records they
 * were made of (a rollup with windows that do not divide 10 min can move
 * records across): the same windows, all inside the summary's time range,
 * and each of them overlapping [since, until) as a whole (a record that
 * overlaps the range counts whole).
 */
static int check_buckets(struct store *s, const struct seg *g, struct sum_plan *pl, int64_t since,
			 int64_t until, size_t *nuse)
{
	uint64_t size;
	int err, fd = open_seg(s, g->name, O_RDONLY, &size);
	struct scan sc = { .since = INT64_MIN, .until = INT64_MAX, .fn = count_in_bucket, .arg = pl,
			   .flags = SCAN_QUIET_TAIL };

	if (fd < 0)
		return fd;
	err = scan_segment(s, g, fd, size, &sc);
	close(fd);
	*nuse = 0;
	for (size_t i = 0; !err && i < pl->n; i++) {
		struct sum_rec *r = &pl->v[i];
		if (r->use && (r->bad || r->seen != r->h.windows || r->min_end <= since || r->max_start >= until))
			r->use = 0;
		*nuse += (size_t)r->use;
	}
	return err;
}

static int sum_decode1(struct store *s, int fd, const struct query *q, const struct sum_rec *r, unsigned flags,
		       const char **why)
{
	struct rec_ref rr = { .off = r->off, .h = r->h };

	return decode_for(s, fd, q, &rr, flags, why);
}

/*
 * Decodes record i of a summary file, after the tables of its chain's key
 * unless the codec holds the chain up to *held. The records between are
 * decoded (tables only) when i turns out to need them: in a version 4
 * file they define nothing the key did not, and are passed over.
 */
static int sum_decode(struct store *s, int fd, const struct query *q, const struct sum_plan *pl, size_t i,
		      size_t *held, const char **why)
{
	size_t k = i;
	int err;

	while (k > 0 && (pl->v[k].h.flags & REC_FLAG_DELTA))
		k--;
	if (k != i) {
		if (*held < k || *held >= i) {
			if ((err = sum_decode1(s, fd, q, &pl->v[k], CODEC_TABLES_ONLY, why)))
				goto out;
			*held = k;
		}
		err = sum_decode1(s, fd, q, &pl->v[i], 0, why);
		if (err != -ESTALE)
			goto out;
		for (size_t j = *held + 1; j < i; j++)
			if ((err = sum_decode1(s, fd, q, &pl->v[j], CODEC_TABLES_ONLY, why)))
				goto out;
	}
	err = sum_decode1(s, fd, q, &pl->v[i], 0, why);
out:
	*held = err ? SIZE_MAX : i;
	return err;
}

/*
 * A sealed segment with a summary file: the whole-segment summary when the
 * segment lies inside [since, until), else the 10-minute summaries that
 * do, and the segment's other records. 1: read the segment instead.
 */
static int read_summarized(struct store *s, struct seg *g, const struct seg *sg, int64_t since, int64_t until,
			   struct query *q)
{
	struct sum_plan pl = { 0 };
	uint64_t size;
	int err = 0, fd = open_seg(s, sg->name, O_RDONLY, &size);
	int full = g->start >= since && g->end <= until;
	size_t nuse = 0;
	const char *why = NULL;

	if (fd < 0)
		return 1;
	struct scan sc = { .since = INT64_MIN, .until = INT64_MAX, .fn = collect_sum, .arg = &pl };
	if ((err = scan_segment(s, sg, fd, size, &sc)) == -E2BIG)
		err = 1;
	if (err)
		goto out;
	if (!sum_layout_ok(&pl)) {
		err = 1;
		goto out;
	}
	for (size_t i = 0; i < pl.n; i++) {
		struct sum_rec *r = &pl.v[i];
		if (q->flags & READ_PIDS)
			r->use = full && (r->h.flags & REC_FLAG_PIDS);
		else if (full)
			r->use = i == pl.whole;
		else
			r->use = !(r->h.flags & REC_FLAG_WHOLE) && overlaps(r->h.start_ns, r->h.end_ns, since, until);
	}
	for (size_t i = 0; i < pl.n; i++)
		nuse += (size_t)pl.v[i].use;
	if (nuse && !full && (err = check_buckets(s, g, &pl, since, until, &nuse)))
		goto out;
	if (nuse && (err = sum_check(s, sg, fd, &pl)))
		goto out;
	nuse = 0;
	for (size_t i = 0; i < pl.n; i++)
		nuse += (size_t)pl.v[i].use;
	if (!nuse) {
		err = 1;
		goto out;
	}
	if (!full) {
		q->want = want_raw;
		q->plan = &pl;
		err = read_segment(s, g, since, until, q);
		q->want = NULL;
		q->plan = NULL;
		if (err || q->stop)
			goto out;
	}
	s->in_sum = 1;
	codec__chain_forget(s->rd.codec);
	for (size_t i = 0, held = SIZE_MAX; i < pl.n && !err && !q->stop; i++) {
		struct rec_ref rr = { .off = pl.v[i].off, .h = pl.v[i].h };
		struct store_window_info w;

		if (!pl.v[i].use)
			continue;
		err = sum_decode(s, fd, q, &pl, i, &held, &why);
		if (err == -EBADMSG || err == -ESTALE) {
			warnf(s, "%s/%s: offset %llu: %s, record skipped", s->dir, sg->name,
			      (unsigned long long)rr.off, why ? why : "an earlier record of its chain is damaged");
			s->st.corrupt_records++;
			err = 0;
			continue;
		}
		if (err)
			break;
		if (q->into)
			continue;
		fill_info(sg, rr.off, &rr.h, &w);
		w.summary = 1;
		q->stop = q->window(&w, s->rd.prof, q->arg);
	}
	s->in_sum = 0;
	codec__chain_forget(s->rd.codec);
out:
	free(pl.v);
	close(fd);
	return err;
}

/* ---- day summaries (docs/FORMAT.md, "Day summaries") ---- */

/* The whole-segment record by name of summary file sg. 1: none usable. */
static int sum_whole_hdr(struct store *s, const struct seg *sg, struct rec_ref *out)
{
	struct sum_plan pl = { 0 };
	uint64_t size;
	int err, fd = open_seg(s, sg->name, O_RDONLY, &size);
	struct scan sc = { .since = INT64_MIN, .until = INT64_MAX, .fn = collect_sum, .arg = &pl };

	if (fd < 0)
		return 1;
	err = scan_segment(s, sg, fd, size, &sc);
	if (!err && sum_layout_ok(&pl)) {
		out->off = pl.v[pl.whole].off;
		out->h = pl.v[pl.whole].h;
	} else if (!err || err == -E2BIG) {
		err = 1;
	}
	free(pl.v);
	close(fd);
	return err;
}

/* The first record of a day file. 1: none. */
static int day_hdr(struct store *s, const struct seg *d, struct rec_ref *out)
{
	uint8_t b[REC_HDR];
	uint64_t size;
	int fd = open_seg(s, d->name, O_RDONLY, &size), ok;

	if (fd < 0)
		return 1;
	ok = size >= REC_HDR && pread_full(fd, b, REC_HDR, 0) == REC_HDR && !hdr_unpack(b, &out->h) &&
	     (out->h.flags & (REC_FLAG_SUMMARY | REC_FLAG_WHOLE | REC_FLAG_PIDS | REC_FLAG_DELTA)) ==
		     (REC_FLAG_SUMMARY | REC_FLAG_WHOLE) &&
	     REC_HDR + (uint64_t)out->h.comp_len <= size;
	out->off = 0;
	close(fd);
	return !ok;
}

/*
 * Whether day file d stands for the segments of l inside its day: all of
 * them sealed and summarised (m), their whole records' totals its own.
 * 1: yes; 0: no; < 0: error.
 */
static int day_usable(struct store *s, const struct seg_list *l, const struct seg_list *m, const struct seg *d,
		      struct rec_ref *dr)
{
	uint64_t windows = 0, samples = 0, lost = 0, n = 0;
	struct rec_ref wr;
	int err;

	if (day_hdr(s, d, dr))
		return 0;
	for (size_t i = 0; i < l->n; i++) {
		const struct seg *g = &l->v[i], *sg;

		if (g->start >= d->end)
			break;
		/* One starting in the day that is still open, or a crash's unsealed one: not done. */
		if (g->start >= d->start && !g->sealed)
			return 0;
		if (!in_day(g, d))
			continue;
		if (!(sg = find_sum(m, g)))
			return 0;
		if ((err = sum_whole_hdr(s, sg, &wr)))
			return err < 0 ? err : 0;
		windows += wr.h.windows;
		samples += wr.h.samples;
		lost += wr.h.lost;
		n++;
	}
	return n && windows == dr->h.windows && samples == dr->h.samples && lost == dr->h.lost;
}

/* Day files that no longer stand for their segments: the writer builds those days again. */
static int remove_stale_days(struct store *s)
{
	struct seg_list l = { 0 }, m = { 0 }, d = { 0 };
	struct rec_ref dr;
	int err = list_both(s, &l, &m, 0);

	if (!err)
		err = list_days(s, &d, 0);
	for (size_t i = 0; !err && i < d.n; i++) {
		int ok = day_usable(s, &l, &m, &d.v[i], &dr);
		if (ok < 0)
			err = ok;
		else if (!ok)
			(void)unlinkat(s->dfd, d.v[i].name, 0);
	}
	free(l.v);
	free(m.v);
	free(d.v);
	return err;
}

/* A usable day's record, read in place of its segments. 1: its payload is damaged, read them. */
static int read_day(struct store *s, const struct seg *d, const struct rec_ref *dr, struct query *q)
{
	uint64_t size;
	const char *why = NULL;
	struct store_window_info w;
	int err, fd = open_seg(s, d->name, O_RDONLY, &size);

	if (fd < 0)
		return 1;
	if ((err = check_payload(&s->rd, fd, dr->off, &dr->h, &why)) == -EBADMSG) {
		warnf(s, "%s/%s: offset 0: %s, its segments are read instead", s->dir, d->name, why);
		s->st.corrupt_records++;
		err = 1;
		goto out;
	}
	if (err)
		goto out;
	s->in_sum = 1;
	codec__chain_forget(s->rd.codec);
	err = decode_for(s, fd, q, dr, 0, &why);
	s->in_sum = 0;
	codec__chain_forget(s->rd.codec);
	if (err == -EBADMSG) {
		/* Past its checksum: part of it may be merged already, so its segments are not read. */
		warnf(s, "%s/%s: offset 0: %s, record skipped", s->dir, d->name, why);
		s->st.corrupt_records++;
		err = 0;
	} else if (!err && !q->into) {
		fill_info(d, dr->off, &dr->h, &w);
		w.summary = 1;
		q->stop = q->window(&w, s->rd.prof, q->arg);
	}
out:
	close(fd);
	return err;
}

/*
 * The days inside [since, until) that a query reads in place of their
 * segments: each one read, and kept in *used (the others dropped).
 */
static int read_days(struct store *s, const struct seg_list *l, const struct seg_list *m, int64_t since,
		     int64_t until, struct query *q, struct seg_list *used)
{
	struct rec_ref dr;
	size_t k = 0;
	int err = list_days(s, used, 0);

	for (size_t i = 0; !err && !q->stop && i < used->n; i++) {
		const struct seg *d = &used->v[i];
		int ok;

		if (d->start < since || d->end > until)
			continue;
		if ((ok = day_usable(s, l, m, d, &dr)) < 0) {
			err = ok;
			break;
		}
		if (!ok)
			continue;
		if ((err = read_day(s, d, &dr, q)) == 1) {
			err = 0;
			continue;
		}
		used->v[k++] = *d;
	}
	used->n = err ? 0 : k;
	return err;
}

/* Segment g is inside one of the days read. */
static int in_days(const struct seg_list *days, const struct seg *g)
{
	for (size_t i = 0; i < days->n; i++)
		if (in_day(g, &days->v[i]))
			return 1;
	return 0;
}

static int seg_named(struct store *s, const struct seg *g);

static int query(struct store *s, int64_t since, int64_t until, struct query *q)
{
	struct seg_list l = { 0 }, m = { 0 }, days = { 0 };
	int err;

	if ((err = list_segments(s, &l, 0)))
		goto out;
	if ((q->flags & STORE_READ_SUMMARIES) && (err = list_sums(s, &m, 0)))
		goto out;
	/* Without pids whole days are read from their day summaries. */
	if ((q->flags & STORE_READ_SUMMARIES) && !(q->flags & READ_PIDS) &&
	    (err = read_days(s, &l, &m, since, until, q, &days)))
		goto out;
	for (size_t i = 0; i < l.n && !err && !q->stop; i++) {
		struct seg g = l.v[i];
		const struct seg *sg = find_sum(&m, &g);

		if (g.start >= until)
			break;
		if (g.sealed && g.end <= since)
			continue;
		if (in_days(&days, &g))
			continue;
		/* A query by pid finds nothing in named windows (pid 0 there is not a pid). */
		if ((q->flags & READ_PIDS) && g.sealed && seg_named(s, &g))
			continue;
		/* With pids: only whole segments have a summary that keeps them. */
		if (sg && (!(q->flags & READ_PIDS) || (g.start >= since && g.end <= until)))
			err = read_summarized(s, &g, sg, since, until, q);
		else
			err = 1;
		if (err == 1 && !q->stop)
			err = read_segment(s, &g, since, until, q);
		if (err > 0)
			err = 0;
	}
	if (q->stop)
		err = q->stop;
out:
	free(q->pend);
	q->pend = NULL;
	q->npend = q->pend_cap = 0;
	free(l.v);
	free(m.v);
	free(days.v);
	return err;
}

int store__list(struct store *s, int64_t since, int64_t until, store_info_fn fn, void *arg)
{
	struct query q = { .info = fn, .arg = arg };
	return query(s, since, until, &q);
}

int store__read(struct store *s, int64_t since, int64_t until, store_window_fn fn, void *arg)
{
	return store__read_flags(s, since, until, 0, fn, arg);
}

int store__read_flags(struct store *s, int64_t since, int64_t until, unsigned flags, store_window_fn fn,
		      void *arg)
{
	struct query q = { .window = fn, .arg = arg, .flags = flags };
	return query(s, since, until, &q);
}

int store__merge(struct store *s, int64_t since, int64_t until, unsigned pf_flags, profile_keep_fn keep,
		 void *arg, struct profile *dst)
{
	struct merge_ctx m = { .dst = dst, .flags = pf_flags, .keep = keep, .arg = arg };
	struct query q = { .window = merge_window, .arg = &m };

	if ((pf_flags & SUM_MERGE) == SUM_MERGE) {
		q.flags = STORE_READ_SUMMARIES;
		q.into = &m;
	} else if (pf_flags & PF_MERGE_BY_FUNCTION) {
		q.flags = STORE_READ_SUMMARIES | READ_PIDS;
		q.into = &m;
	}
	return query(s, since, until, &q);
}

void store__stats(const struct store *s, struct store_stats *out)
{
	*out = s->st;
}

/* ---- rollups ---- */

/*
 * A sealed segment older than a tier's age is rewritten with its windows
 * merged into windows of the tier's length, into a temporary file that
 * readers ignore, which then replaces the segment by rename(2): a reader
 * sees the old file or the new one, never both and never neither, and a
 * crash at any step leaves one of them whole (the temporary file is
 * removed at the next writer start). docs/FORMAT.md, "Rollups".
 */

#define ROLL_TMP_PREFIX "roll-"
#define ROLL_RETRY_CALLS 60 /* after a failure: ten minutes at one call per flush */
/*
 * Flushed windows read per call, so that the caller's loop never stalls for
 * 100 ms: a rollup merges a 4-CPU window in about 3.7 ms, a summary in about
 * 1.5 ms (docs/BENCHMARKS.md, "Storage").
 */
#define ROLL_BUDGET      20
#define SUM_BUDGET       20
#define COMPACT_CPU_NS   (50ll * 1000000)
/*
 * A rollup's merge of a record, ns per raw byte, until one was timed: a
 * 64-CPU window's key record took 75, a 1-minute named one 130 on a 2-CPU
 * VM (docs/BENCHMARKS.md, "Storage"). Too high costs a call, not a stall.
 */
#define DEF_MERGE_RATE   100.0
/*
 * A profile's encoding costs about a microsecond per stack and a quarter
 * of one per sample (the sorts of both): from samples + 4 x stacks of
 * 131072, some 30-40 ms on this VM and up to 0.5 s for an hour of a busy
 * 4-CPU host's windows as flushed, it runs on a thread of its own.
 */
#define ENCODE_THREAD_MIN (1ll << 17)
/*
 * What a summary's or a day's merged profiles may take by default. The
 * unit gives profd MemoryHigh=128M; an hour as flushed of compiles on 2
 * CPUs merged into 28 MB by name and 72 MB with pids (profile__mem_bytes).
 */
#define DEF_SUMMARY_MEM (64ull << 20)
/*
 * Raw bytes of a rollup's or day's record compressed at a time, flushed as
 * blocks of their own: at level 19 about 10 ms of CPU on a 2-CPU VM, so
 * that a call stops near its bound whatever the record's size.
 */
#define ROLL_CHUNK       (32u << 10)

/* The thread CPU time one store__compact call stops at (about); 0: none. */
static int64_t compact_until(const struct store *s)
{
	if (s->o.compact_cpu_ns > 0)
		return clock__ns(CLOCK_THREAD_CPUTIME_ID) + s->o.compact_cpu_ns;
	return s->o.compact_windows ? 0 : clock__ns(CLOCK_THREAD_CPUTIME_ID) + COMPACT_CPU_NS;
}

static const struct store_rollup def_tiers[2] = {
	{ 3600ll * 1000000000ll, 60ll * 1000000000ll },
	{ 86400ll * 1000000000ll, 600ll * 1000000000ll },
};

/* A rollup in progress, carried from one store__compact() call to the next. */
struct roll {
	struct seg g;            /* the segment being rolled up or summarised */
	int sum;                 /* writing its summary file, not a rollup */
	int day;                 /* writing a day summary (g: the day) */
	int named;               /* rollup: by function and name; summary: of such a segment */
	int flush_due;           /* the next record starts another window: write this one first */
	int pressure;            /* rollup: ahead of its age, the store past its pressure threshold */
	int no_pids;             /* summary: its record with pids dropped (summary_mem_max) */
	int no_pids_counted;
	int over;                /* summary: its record by name alone passed summary_mem_max */
	uint64_t mem_max, wpeak, ppeak; /* summary_mem_max; its profiles' largest, by name and with pids */
	int folded;              /* named: the window to write is folded into fprof already */
	int planned;             /* named: its fold's first step is done (s->mtail) */
	size_t tier;
	char tmp[NAME_MAX_LEN];
	int in, out;
	uint64_t in_size, in_off, out_size;
	struct chain ch;         /* of the new file */
	struct query q;          /* reading the old one (its chain so far) */
	int64_t bucket_id;
	uint32_t windows;        /* flushed windows in the bucket */
	uint32_t wwindows;       /* summary: flushed windows in the whole segment so far */
	int phase;               /* summary: SUM_* */
	struct seg_list parts;   /* day summary: the summary files of its segments */
	size_t nparts;           /* day summary: merged so far */
	int64_t first_bucket, last_bucket; /* summary: the 10-minute buckets the segment's records start in */
	uint64_t nin, nout;
	int err;
	int64_t cpu_until;       /* this call's CPU bound (thread CPU time); 0: none */
	struct rec_out w;        /* the record being encoded or compressed, when wbusy */
	int wbusy;
	/*
	 * Encoding w on thread eth (started, not joined): it alone touches
	 * s->rcodec and the profile meanwhile, and sets edone when through.
	 */
	int encoding;
	int dropped;             /* ended once the encoding is through (it is not waited for) */
	pthread_t eth;
	int edone;               /* atomic */
	int eerr;
	const struct profile *ep;
	struct codec *ecodec;
	struct chain ech;        /* ch as it was when the encoding started */
	/*
	 * Day: a segment's whole summary merged into s->wprof on thread eth
	 * instead (encoding set too), from its payload copied to mraw.
	 */
	int dmerge;
	uint8_t *mraw;
	size_t mrawcap;
	uint32_t mrawlen, mrwin;
	uint8_t *zbuf;           /* its compressed bytes: appends between calls use s->rd.zbuf */
	size_t zcap;
	/*
	 * Summary: its read of the whole segment decodes with rd (s->rcodec
	 * into s->rprof, both idle until its writes), never with the store's
	 * reader, which appends and queries use between calls. Each call's
	 * records (items, found by the call's scan) are noted in q, decoded
	 * and merged into s->wprof and s->pprof on thread eth (encoding set
	 * too, reading set while they are not picked up).
	 */
	struct reader rd;
	int reading;
	struct rd_item { struct rec_ref ref; int err, decoded; uint64_t ndec; const char *why; } *items;
	size_t nitems, items_cap, items_done;
	struct profile *twprof, *tpprof;
	/*
	 * Rollup: the record read last is decoded in s->rd.prof, to be merged in
	 * the next call (its generation and sizes tell whether s->rd.prof still
	 * holds it), or merged now, not left for the next call.
	 */
	int merge_due, merge_now;
	struct rec_ref mref;
	uint32_t mwindows;
	uint64_t mgen;
	size_t mstacks, msamples;
};

/*
 * A summary takes two reads of its segment: the whole segment first, whose
 * record by name (a key) then defines every table, so that the 10-minute
 * records of the second read and the record with pids carry samples only.
 * Each write is a step of its own: encoding costs as much as reading.
 */
enum { SUM_READ_WHOLE, SUM_WRITE_WHOLE, SUM_READ_BUCKETS, SUM_WRITE_PIDS };

static void crash_point(struct store *s, int step)
{
	if (s->o.crash_point)
		s->o.crash_point(s->o.crash_arg, step);
}

static void *encode_main(void *arg)
{
	struct roll *r = arg;

	r->eerr = rec_encode(&r->w, r->ecodec, r->ep, &r->ech);
	__atomic_store_n(&r->edone, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * fn(r) on the roll's thread, p and s->rcodec its own until it ends: 0
 * when it started. It takes no signal: they are the loop's.
 */
static int roll_thread_start(struct store *s, struct roll *r, const struct profile *p, void *(*fn)(void *))
{
	sigset_t all, old;
	int err;

	r->ep = p;
	r->ecodec = s->rcodec;
	r->edone = 0;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&r->eth, NULL, fn, r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		return -err;
	r->encoding = 1;
	s->st.encoding = 1;
	return 0;
}

/* Encodes p on the roll's thread: 0 when it started. */
static int encode_start(struct store *s, struct roll *r, const struct profile *p)
{
	int err;

	r->ech = r->ch;
	if ((err = roll_thread_start(s, r, p, encode_main)))
		return err;
	s->st.records_threaded++;
	return 0;
}

static void *day_merge_main(void *arg)
{
	struct roll *r = arg;

	r->eerr = codec__decode_merge(r->ecodec, r->mraw, r->mrawlen, 0, 0, SUM_MERGE, NULL, NULL,
				      (struct profile *)r->ep);
	codec__chain_forget(r->ecodec);
	__atomic_store_n(&r->edone, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * A day's merge of one summary record (raw: its payload) on a thread of
 * its own, as a big record's encoding: 0 when it started. The payload is
 * copied (s->rd.rbuf is the loop's), and the roll's codec decodes it: the
 * loop's own codec serves appends and queries meanwhile.
 */
static int day_merge_start(struct store *s, struct roll *r, const uint8_t *raw, uint32_t len, uint32_t windows)
{
	int err;

	if ((err = grow_buf(&r->mraw, &r->mrawcap, len ? len : 1)))
		return err;
	memcpy(r->mraw, raw, len);
	r->mrawlen = len;
	r->mrwin = windows;
	codec__chain_forget(s->rcodec);
	if ((err = roll_thread_start(s, r, s->wprof, day_merge_main)))
		return err;
	s->st.records_threaded++;
	r->dmerge = 1;
	return 0;
}

static void sum_mem_note(struct roll *r, const struct profile *wprof, struct profile **pprof);

/* A summary's record of its segment merged into the whole segment's profiles: by name, and with pids. */
static int sum_whole_merge(struct profile *wprof, struct profile *pprof, int named, const struct profile *p)
{
	int err = profile__merge_flags(wprof, p, NULL, NULL, SUM_MERGE);

	/* pprof NULL: dropped for summary_mem_max. */
	if (!err && !named && pprof)
		err = profile__merge_flags(pprof, p, NULL, NULL, PF_MERGE_BY_FUNCTION);
	return err;
}

/* The 10-minute buckets and windows of the whole segment so far, with one more record. */
static void sum_whole_note(struct roll *r, int64_t start_ns, uint32_t windows)
{
	int64_t id = floor_div(start_ns, SUM_BUCKET_NS);

	if (!r->wwindows)
		r->first_bucket = id;
	r->last_bucket = id;
	r->wwindows += windows ? windows : 1;
}

/*
 * The call's records of the segment, in order, as on_window would read
 * them: noted in their chain, decoded with the roll's reader, merged. It
 * stops at a merge's failure (items_done: those through).
 */
static void *read_main(void *arg)
{
	struct roll *r = arg;

	r->eerr = 0;
	for (r->items_done = 0; r->items_done < r->nitems && !r->eerr; r->items_done++) {
		struct rd_item *it = &r->items[r->items_done];

		if ((r->eerr = chain_note(&r->q, it->ref.off, &it->ref.h)))
			break;
		it->ndec = 0;
		it->why = NULL;
		it->err = decode_chained(&r->rd, 0, r->in, &r->q, &it->ref, &it->ndec, &it->why);
		it->decoded = !it->err;
		if (it->err == -ESTALE)
			r->q.broken = 1;
		if (it->decoded) {
			r->eerr = sum_whole_merge(r->twprof, r->tpprof, r->named, r->rd.prof);
			sum_mem_note(r, r->twprof, &r->tpprof);
			if (r->over)
				break; /* not built: what is left is not read */
		} else if (it->err != -EBADMSG && it->err != -ESTALE) {
			r->eerr = it->err;
		}
	}
	__atomic_store_n(&r->edone, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* A record found by the call's scan, for the thread. */
static int read_collect(struct store *s, const struct seg *g, int fd, uint64_t off, const struct rec_hdr *h,
			void *arg)
{
	struct roll *r = arg;

	if (grow_slots((void **)&r->items, &r->items_cap, r->nitems, sizeof(*r->items), 32))
		return -ENOMEM;
	r->items[r->nitems++] = (struct rd_item){ .ref = { .off = off, .h = *h } };
	return 0;
}

/* The encoding thread's end, waited for: at once when it set edone. */
static int encode_join(struct store *s, struct roll *r)
{
	if (!r->encoding)
		return 0;
	pthread_join(r->eth, NULL);
	r->encoding = 0;
	s->st.encoding = 0;
	return r->eerr;
}

/*
 * Appends p to the new file as the next record of its chain. 1: it is
 * encoded or compressed in part, up to this call's CPU bound; the caller
 * calls again with the same p, unchanged, in a later call.
 */
static int roll_write(struct store *s, struct roll *r, const struct profile *p, uint8_t level, uint32_t windows,
		      uint32_t flags)
{
	int64_t min = s->o.encode_thread_min ? s->o.encode_thread_min : ENCODE_THREAD_MIN;
	uint8_t hdr[REC_HDR];
	size_t z;
	int err = 0;

	/*
	 * Rollups', summaries' and days' records alike: written once and kept
	 * longest, so at the rollups' level, in pieces over as many calls as
	 * that takes (a summary's whole-segment records of windows as flushed
	 * are the largest records a step encodes).
	 */
	if (!r->wbusy) {
		r->w = (struct rec_out){ .buf = &r->zbuf, .cap = &r->zcap };
		rec_head(s, &r->w, s->rcctx, p, &r->ch, level, windows, flags);
		/*
		 * A summary's or a day's record by name, its file's key: s->wprof
		 * stays as it is until the roll ends, so it is lent to the codec
		 * as the chain's tables, not copied (a copy as large as its
		 * tables, beside the payload and the compressor). The records
		 * after it in the file intern what they add into it.
		 */
		if (p == s->wprof && !(flags & REC_FLAG_PIDS))
			r->w.lend = s->wprof;
		r->wbusy = 1;
		/*
		 * A big profile's encoding (a summary's whole segment: up to 0.5 s,
		 * 16 s on a 64-CPU host) is one step that cannot be cut: off the
		 * calling thread, picked up by a later call. A thread that cannot
		 * start leaves it to this one.
		 */
		if (min > 0 && (int64_t)(profile__nsamples(p) + 4 * profile__nstacks(p)) >= min &&
		    !encode_start(s, r, p))
			return 1;
		if (!(err = rec_encode(&r->w, s->rcodec, p, &r->ch)))
			err = rec_ready(s, &r->w, s->rcctx, s->rcodec, flags, ROLL_CHUNK);
		if (err) {
			r->wbusy = 0;
			return err;
		}
		/* Encoding a profile can take the call's CPU bound alone: its first piece then goes in the next. */
		if (r->cpu_until > 0 && clock__ns(CLOCK_THREAD_CPUTIME_ID) >= r->cpu_until)
			return 1;
	} else if (r->encoding) {
		if (!__atomic_load_n(&r->edone, __ATOMIC_ACQUIRE))
			return 1;
		if (!(err = encode_join(s, r)))
			err = rec_ready(s, &r->w, s->rcctx, s->rcodec, flags, ROLL_CHUNK);
		if (err) {
			r->wbusy = 0;
			return err;
		}
	}
	err = rec_feed(&r->w, r->cpu_until);
	if (err == 1)
		return 1;
	r->wbusy = 0;
	if (err)
		return err;
	z = rec_finish(&r->w, hdr);
	if ((err = write_at(r->out, r->out_size, hdr, r->zbuf, z)))
		return err;
	chain_added(s, &r->ch, r->out_size, r->w.delta);
	r->out_size += REC_HDR + z;
	if (++r->nout == 1)
		crash_point(s, STORE_CRASH_ROLL_WRITING);
	return 0;
}

/*
 * A named window's small entries folded into their callers: a sort and a
 * walk of its call tree, about what encoding costs, so two steps of their
 * own (the sort and the tree, then the walk; a 10-minute window of a
 * 64-CPU host is 60-75 ms in one). Its module frames were made as each
 * window was merged.
 */
static int roll_fold(struct store *s, struct roll *r)
{
	uint64_t moved[PF_KIND_MAX] = { 0 };
	int err;

	if (!s->fprof && (err = profile__new(&s->fprof)))
		return err;
	if (s->o.fold_share < 0) {
		profile__reset(s->fprof);
		err = profile__merge(s->fprof, s->rprof, NULL, NULL);
	} else if (!r->planned) {
		if ((!s->mtail && (err = modframes__tail_new(&s->mtail))) ||
		    (err = modframes__tail_plan(s->mtail, s->rprof,
						s->o.fold_share ? (uint32_t)s->o.fold_share : DEF_FOLD_SHARE)))
			return err;
		r->planned = 1;
		return 0;
	} else {
		r->planned = 0;
		err = modframes__tail_apply(s->mtail, s->fprof, moved);
	}
	if (err)
		return err;
	s->st.cpu_folded += moved[PF_KIND_CPU];
	for (size_t i = 0; i < profile__nsamples(s->fprof); i++)
		if (profile__sample(s->fprof, i)->kind == PF_KIND_CPU)
			s->st.cpu_named += profile__sample(s->fprof, i)->value;
	r->folded = 1;
	return 0;
}

static int roll_flush(struct store *s, struct roll *r)
{
	int err;

	if (!r->windows)
		return 0;
	if (!r->sum && r->named) {
		while (!r->folded) /* its two steps in one call, where a caller did not give them theirs */
			if ((err = roll_fold(s, r)))
				return err;
		err = roll_write(s, r, s->fprof, (uint8_t)(r->tier + 1), r->windows,
				 REC_FLAG_NAMED);
		if (err)
			return err;
		profile__reset(s->fprof);
		r->folded = 0;
	} else {
		err = roll_write(s, r, s->rprof, r->sum ? 0 : (uint8_t)(r->tier + 1), r->windows,
				 r->sum ? REC_FLAG_SUMMARY : 0);
	}
	if (err)
		return err;
	r->windows = 0;
	profile__reset(s->rprof);
	return 0;
}

/* A record decoded into p merged into the rollup's window: the part of a read step after decoding. */
static int roll_merge(struct store *s, struct roll *r, const struct profile *p, uint32_t windows, uint32_t raw_len)
{
	int64_t t0 = clock__ns(CLOCK_THREAD_CPUTIME_ID);
	int err;

	/*
	 * A rollup keeps every pc, thread and pid, only time is coarser, unless
	 * its tier is old enough to keep what summaries keep.
	 */
	if (!r->sum && r->named)
		/*
		 * Module frames folded in the merge itself: a folded copy of the
		 * chain between the two would hold tables as big as s->prof's.
		 */
		err = modframes__fold_merge(s->rprof, p, SUM_MERGE);
	else
		err = profile__merge_flags(s->rprof, p, NULL, NULL, r->sum ? SUM_MERGE : 0);
	if (err)
		return r->err = err;
	r->windows += windows;
	r->nin++;
	if (!r->sum && raw_len >= RATE_MIN_RAW) {
		double rate = (double)(clock__ns(CLOCK_THREAD_CPUTIME_ID) - t0) / raw_len;

		s->merge_rate = rate > s->merge_rate ? rate : (3 * s->merge_rate + rate) / 4;
	}
	return 0;
}

static uint64_t sum_mem_max(const struct store *s)
{
	return s->o.summary_mem_max ? s->o.summary_mem_max : DEF_SUMMARY_MEM;
}

/*
 * A summary's profiles grow with what its segment held, not with its
 * windows: a 64-CPU host's hour of short-lived processes would take
 * gigabytes. Past the budget the record with pids goes first (a query with
 * pids reads the segment, as it does once the hour is rolled up by name),
 * when it alone takes half or both pass it; a summary whose record by name
 * alone passes it is not built (queries read the segment). The roll's
 * alone: its thread calls it too (sum_mem_apply counts on the loop).
 */
static void sum_mem_note(struct roll *r, const struct profile *wprof, struct profile **pprof)
{
	uint64_t w = profile__mem_bytes(wprof), p = *pprof && !r->named ? profile__mem_bytes(*pprof) : 0;

	if (w > r->wpeak)
		r->wpeak = w;
	if (p > r->ppeak)
		r->ppeak = p;
	if (p && (p > r->mem_max / 2 || w + p > r->mem_max)) {
		profile__free(*pprof);
		*pprof = NULL;
		r->no_pids = 1;
	}
	if (w > r->mem_max)
		r->over = 1;
}

static void sum_mem_apply(struct store *s, struct roll *r)
{
	if (r->wpeak > s->st.summary_mem_peak)
		s->st.summary_mem_peak = r->wpeak;
	if (r->ppeak > s->st.summary_pids_mem_peak)
		s->st.summary_pids_mem_peak = r->ppeak;
	if (r->no_pids && !r->no_pids_counted) {
		r->no_pids_counted = 1;
		s->st.summaries_no_pids++;
	}
}

static int roll_window(const struct store_window_info *w, const struct profile *p, void *arg)
{
	struct store *s = arg;
	struct roll *r = s->roll;
	int64_t id = floor_div(w->start_ns, r->sum ? SUM_BUCKET_NS : s->tiers[r->tier].window_ns);
	int err;

	if (r->sum && r->phase == SUM_READ_WHOLE) {
		if ((err = sum_whole_merge(s->wprof, s->pprof, r->named, p)))
			return r->err = err;
		sum_whole_note(r, w->start_ns, w->windows);
		sum_mem_note(r, s->wprof, &s->pprof);
		sum_mem_apply(s, r);
		return 0;
	}
	if (r->windows && id != r->bucket_id) {
		/* Not reached for rollups (roll_stop_before): a write inside a read goes in one go. */
		int64_t until = r->cpu_until;
		r->cpu_until = 0;
		err = roll_flush(s, r);
		r->cpu_until = until;
		if (err)
			return r->err = err;
	}
	r->bucket_id = id;
	/*
	 * A 64-CPU window's merge costs as much as its read, or twice: when
	 * it would take this call past its bound, it is the next call's step.
	 */
	if (!r->sum && !r->merge_now && r->cpu_until > 0 &&
	    clock__ns(CLOCK_THREAD_CPUTIME_ID) + (double)r->q.cur.h.raw_len * s->merge_rate >= (double)r->cpu_until) {
		r->merge_due = 1;
		r->mref = r->q.cur;
		r->mwindows = w->windows ? w->windows : 1;
		r->mgen = profile__gen(p);
		r->mstacks = profile__nstacks(p);
		r->msamples = profile__nsamples(p);
		return 0;
	}
	return roll_merge(s, r, p, w->windows ? w->windows : 1, r->q.cur.h.raw_len);
}

/*
 * Writing a merged window costs about as much as reading the windows in it:
 * a step of its own, before the record that starts the next one is read.
 */
static int roll_stop_before(struct store *s, const struct rec_hdr *h, void *arg)
{
	struct roll *r = s->roll;

	if (r->merge_due || r->over)
		return 1;
	if (r->day || (r->sum && r->phase != SUM_READ_BUCKETS) || !r->windows ||
	    floor_div(h->start_ns, r->sum ? SUM_BUCKET_NS : s->tiers[r->tier].window_ns) == r->bucket_id)
		return 0;
	r->flush_due = 1;
	return 1;
}

/* A segment's level, and whether it is named: its first record's (all are alike). */
static int seg_level(struct store *s, const struct seg *g, int *named)
{
	uint8_t b[REC_HDR];
	struct rec_hdr h;
	uint64_t size;
	int fd = open_seg(s, g->name, O_RDONLY, &size), level = 0;

	*named = 0;
	if (fd < 0)
		return fd;
	if (pread_full(fd, b, REC_HDR, 0) == REC_HDR && !hdr_unpack(b, &h)) {
		level = h.level;
		*named = !!(h.flags & REC_FLAG_NAMED);
	}
	close(fd);
	return level;
}

/* Rollups into tier t merge by function and name. */
static int tier_named(const struct store *s, size_t t)
{
	int64_t age = s->o.named_age_ns ? s->o.named_age_ns : DEF_NAMED_AGE;

	return age > 0 && s->tiers[t].age_ns >= age;
}

/* The rollup or summary in progress reads segment name, or the day being built holds it. */
static int roll_reads(const struct store *s, const char *name)
{
	struct seg g;

	if (!s->roll)
		return 0;
	if (s->roll->day)
		return !parse_name(name, "seg-", &g) && in_day(&g, &s->roll->g);
	return !strcmp(s->roll->g.name, name);
}

static void roll_end(struct store *s)
{
	struct roll *r = s->roll;

	if (!r)
		return;
	/* The profiles and s->rcodec are the encoding thread's until it ends. */
	(void)encode_join(s, r);
	/* A read on the thread that dropped the profile with pids freed it; read_done never ran. */
	if (r->no_pids)
		s->pprof = NULL;
	if (r->in >= 0)
		close(r->in);
	if (r->out >= 0)
		close(r->out);
	(void)unlinkat(s->dfd, r->tmp, 0);
	free(r->q.pend);
	free(r->parts.v);
	free(r->zbuf);
	free(r->mraw);
	free(r->items);
	reader_release(&r->rd);
	free(r);
	s->roll = NULL;
	/* s->wprof was lent to s->rcodec as a chain's tables: its next record is a key. */
	if (s->rcodec)
		codec__lend_end(s->rcodec);
	/* A segment's worth of samples by pid is megabytes: not kept between summaries. */
	profile__free(s->wprof);
	profile__free(s->pprof);
	s->wprof = s->pprof = NULL;
}

/* The rollup in progress ended without a result: at once, or by a later call when it is encoding. */
static void roll_drop(struct store *s)
{
	if (s->roll && s->roll->encoding)
		s->roll->dropped = 1;
	else
		roll_end(s);
}

static int roll_start(struct store *s, const struct seg *g, size_t tier, int sum, int named)
{
	struct roll *r;
	int err;

	if ((!s->rcodec && ((err = codec__new(&s->rcodec)) ||
			    (err = codec__set_value_unit(s->rcodec, s->o.value_unit_ns)))) ||
	    (!s->rprof && (err = profile__new(&s->rprof))) ||
	    (sum && !s->wprof && (err = profile__new(&s->wprof))) ||
	    (sum && !s->pprof && (err = profile__new(&s->pprof))))
		return err;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	s->roll = r;
	r->g = *g;
	r->sum = sum;
	r->tier = tier;
	r->named = named;
	r->mem_max = sum_mem_max(s);
	r->in = r->out = -1;
	r->q.window = roll_window;
	r->q.arg = s;
	profile__reset(s->rprof);
	if (!s->merge_rate)
		s->merge_rate = DEF_MERGE_RATE;
	snprintf(r->tmp, sizeof(r->tmp), ROLL_TMP_PREFIX "%019lld%s.tmp", (long long)g->start, sum ? "-sum" : "");
	(void)unlinkat(s->dfd, r->tmp, 0);
	r->in = open_seg(s, g->name, O_RDONLY, &r->in_size);
	if (r->in < 0)
		return r->in;
	r->out = openat(s->dfd, r->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
	if (r->out < 0 || own_file(s, r->out) < 0)
		return -errno;
	codec__chain_forget(s->rd.codec);
	s->chain_dev = 0;
	if (sum) {
		r->rd.codec = s->rcodec;
		r->rd.prof = s->rprof;
		codec__chain_forget(s->rcodec);
		if ((err = reader_init(&r->rd)))
			return err;
		r->q.rd = &r->rd;
	}
	return 0;
}

/* p emptied with its room given back: a profile's capacity is what it held at its largest. */
static int profile_renew(struct profile **p)
{
	struct profile *fresh;
	int err = profile__new(&fresh);

	if (err)
		return err;
	profile__free(*p);
	*p = fresh;
	return 0;
}

/* The store's reader's decoded chain let go (its room given back): the next read starts at a key. */
static int reader_shrink(struct store *s)
{
	int err = profile_renew(&s->rd.prof);

	if (err)
		return err;
	codec__chain_forget(s->rd.codec);
	s->chain_dev = 0;
	s->chain_ino = 0;
	return 0;
}

/* A whole-segment record of a summary: by name (the key), or with pids (the file's last record). */
static int sum_whole(struct store *s, struct roll *r, int pids)
{
	return roll_write(s, r, pids ? s->pprof : s->wprof, 0, r->wwindows,
			  REC_FLAG_SUMMARY | REC_FLAG_WHOLE | (pids ? REC_FLAG_PIDS : 0));
}

/*
 * A summary's next step after a read of its segment, or its next write
 * (or the next pieces of one: a write that returned 1 is resumed by the
 * next call, in the same phase). 1: the file is complete.
 */
static int sum_step(struct store *s, struct roll *r)
{
	int err;

	switch (r->phase) {
	case SUM_READ_WHOLE:
		/* s->rcodec and s->rprof are the writes' from now on; the second read uses the store's reader. */
		codec__chain_forget(s->rcodec);
		/* s->rprof's room is a decoded chain's: a fresh one for the buckets' merges, a fraction of it. */
		if ((err = profile_renew(&s->rprof)))
			return err;
		r->rd.prof = s->rprof;
		reader_release(&r->rd);
		r->q.rd = NULL;
		r->phase = SUM_WRITE_WHOLE;
		return 0;
	case SUM_WRITE_WHOLE:
		/* s->wprof stays: the file's tables, lent to s->rcodec until the roll ends. */
		if ((err = sum_whole(s, r, 0)))
			return err == 1 ? 0 : err;
		/*
		 * A named segment's records are merged by function and name already:
		 * a query reads them for a part of it, and there are no pids to keep.
		 */
		if (r->named)
			return 1;
		/* One 10-minute bucket is the whole segment: its record would repeat the whole one. */
		if (r->first_bucket == r->last_bucket && r->no_pids)
			return 1;
		r->phase = r->first_bucket == r->last_bucket ? SUM_WRITE_PIDS : SUM_READ_BUCKETS;
		r->in_off = 0;
		r->q.npend = 0;
		r->q.broken = 0;
		codec__chain_forget(s->rd.codec);
		return 0;
	case SUM_READ_BUCKETS:
		if ((err = roll_flush(s, r)))
			return err == 1 ? 0 : err;
		if (r->no_pids)
			return 1;
		/*
		 * The record with pids is the largest encoding: the room of the
		 * read's decoded chain and of the last bucket's merge go first.
		 */
		if ((err = profile_renew(&s->rprof)) || (err = reader_shrink(s)))
			return err;
		r->phase = SUM_WRITE_PIDS;
		return 0;
	default:
		return (err = sum_whole(s, r, 1)) ? (err == 1 ? 0 : err) : 1;
	}
}

static int read_threads(const struct store *s)
{
	return s->o.encode_thread_min >= 0;
}

/* The records the roll's thread read, picked up: as on_window would have ended with each. */
static int read_done(struct store *s, struct roll *r)
{
	int err = encode_join(s, r);

	if (!err)
		err = r->eerr; /* also when read_main ran here */
	r->reading = 0;
	for (size_t i = 0; i < r->items_done; i++) {
		struct rd_item *it = &r->items[i];

		s->st.records_decoded += it->ndec;
		if (it->err == -EBADMSG || it->err == -ESTALE) /* q->broken is set already */
			(void)decode_failed(s, &r->q, &r->g, it->ref.off, it->err, it->why);
		else if (it->decoded)
			sum_whole_note(r, it->ref.h.start_ns, it->ref.h.windows);
	}
	r->nitems = 0;
	/* The thread freed the profile with pids it dropped. */
	if (r->no_pids)
		s->pprof = NULL;
	sum_mem_apply(s, r);
	return err;
}

/*
 * A summary's read of the whole segment, off the loop: the pickup of what
 * the thread read, then the next records found (their headers checked
 * here) handed to it. 1: the read is through.
 */
static int read_step(struct store *s, struct roll *r)
{
	struct scan sc = {
		.since = INT64_MIN, .until = INT64_MAX, .fn = read_collect, .arg = r, .start_off = r->in_off,
		.budget = s->o.compact_windows ? s->o.compact_windows : SUM_BUDGET,
	};
	int64_t min = s->o.encode_thread_min ? s->o.encode_thread_min : ENCODE_THREAD_MIN;
	uint64_t raw = 0;
	int err;

	if (r->reading) {
		if (!__atomic_load_n(&r->edone, __ATOMIC_ACQUIRE))
			return 0;
		if ((err = read_done(s, r)))
			return err;
		if (r->over)
			return 0;
	}
	r->nitems = 0;
	if ((err = scan_segment(s, &r->g, r->in, r->in_size, &sc)))
		return err;
	r->in_off = sc.next_off;
	if (!r->nitems)
		return 1;
	for (size_t i = 0; i < r->nitems; i++)
		raw += r->items[i].ref.h.raw_len;
	r->twprof = s->wprof;
	r->tpprof = s->pprof;
	/*
	 * Decoded and merged twice, a raw byte costs 300-1000 ns (a key's
	 * tables most, a profile's growth in spikes): from a quarter of the
	 * encoding's threshold in bytes, some 10-30 ms, on the thread.
	 */
	if (raw >= (uint64_t)min / 4 && !roll_thread_start(s, r, NULL, read_main)) {
		s->st.reads_threaded += r->nitems;
		r->reading = 1;
		return 0;
	}
	/* Few bytes, or no thread: the same, here; at the segment's end the next step goes on in this call. */
	read_main(r);
	err = read_done(s, r);
	return err ? err : !sc.paused;
}

/* A summary past summary_mem_max: 1 with no file, summed_upto passes it, this writer does not try again. */
static int sum_over(struct store *s)
{
	s->st.summaries_over_mem++;
	warnf(s, "%s/%s: its summary would take over %llu MiB of memory: not built, "
	      "queries read the segment (raise summary-memory to build it)", s->dir, s->roll->g.name,
	      (unsigned long long)(sum_mem_max(s) >> 20));
	return 1;
}

/* Reads the next records of the segment; at its end swaps the new file in. 1: finished. */
static int roll_continue(struct store *s)
{
	struct roll *r = s->roll;
	struct scan sc = {
		.since = INT64_MIN, .until = INT64_MAX, .fn = on_window, .skip = on_skip,
		.arg = &r->q, .start_off = r->in_off, .stop_before = roll_stop_before,
		.budget = s->o.compact_windows ? s->o.compact_windows : r->sum ? SUM_BUDGET : ROLL_BUDGET,
		/* A loaded host makes each window slower: the CPU spent bounds the step too. */
		.cpu_until = r->cpu_until = compact_until(s),
		.ns_per_byte = &s->read_rate[!!r->sum],
	};
	uint64_t nin = r->nin;
	int err = 0;

	/*
	 * A summary's first read decodes and merges with the roll's reader:
	 * on its thread, so that no call holds a key record's decode (all its
	 * chain's tables) or a profile's growth; in the call without threads.
	 */
	if (r->sum && r->phase == SUM_READ_WHOLE && read_threads(s)) {
		err = read_step(s, r);
		if (err >= 0 && r->over)
			return sum_over(s);
		if (err != 1)
			return err;
	}
	if (r->merge_due) {
		r->merge_due = 0;
		if (profile__gen(s->rd.prof) == r->mgen && profile__nstacks(s->rd.prof) == r->mstacks &&
		    profile__nsamples(s->rd.prof) == r->msamples)
			return roll_merge(s, r, s->rd.prof, r->mwindows, r->mref.h.raw_len);
		/* s->rd.prof was decoded into since (a query): the record is read again, its chain noted once. */
		r->q.npend--;
		r->merge_now = 1;
		err = on_window(s, &r->g, r->in, r->mref.off, &r->mref.h, &r->q);
		r->merge_now = 0;
		return err ? err : r->err;
	}
	if (r->flush_due) {
		if (!r->sum && r->named && !r->folded)
			return roll_fold(s, r);
		/* A merged window's record may take more calls than this one. */
		if ((err = roll_flush(s, r)) == 1)
			return 0;
		r->flush_due = 0;
		return err;
	}
	/* A record compressed in part is finished before anything more is read. */
	if (!r->wbusy && (!r->sum || (r->phase == SUM_READ_WHOLE && !read_threads(s)) ||
			  r->phase == SUM_READ_BUCKETS)) {
		err = scan_segment(s, &r->g, r->in, r->in_size, &sc);
		if (!err)
			err = r->err;
		if (err)
			return err;
		r->in_off = sc.next_off;
		if (r->over)
			return sum_over(s);
		if (sc.paused || r->merge_due)
			return 0;
	}
	/* The segment's last merged window too is written in a call of its own, and folded in one. */
	if (!r->sum && r->windows && (r->nin != nin || (r->named && !r->folded))) {
		r->flush_due = 1;
		return 0;
	}
	if (r->sum && r->phase == SUM_READ_WHOLE && !r->wwindows) /* nothing readable: no summary */
		return 1;
	/* sum_step's 1 is a file complete; a record compressed in part is 0, as a step done. */
	if (r->sum && (err = sum_step(s, r)) != 1)
		return err;
	if (!r->sum && (err = roll_flush(s, r)))
		return err < 0 ? err : 0;
	if (!r->nout) /* nothing readable: leave the segment as it is */
		return 1;
	/* The new file whole on disk before its name can replace the old one. */
	if (fdatasync(r->out) < 0)
		return -errno;
	crash_point(s, STORE_CRASH_ROLL_WRITTEN);
	char sum_name[NAME_MAX_LEN];
	snprintf(sum_name, sizeof(sum_name), "sum-%019lld-%019lld.pfd", (long long)r->g.start, (long long)r->g.end);
	/*
	 * A named segment gets a summary of its own, a fraction of the one with
	 * pids and 10-minute records. Removed first: a crash before the rename
	 * leaves the segment as it was without a summary, which is built again.
	 */
	if (!r->sum && r->named) {
		if (unlinkat(s->dfd, sum_name, 0) < 0 && errno != ENOENT)
			return -errno;
		if (s->summed_upto >= r->g.start)
			s->summed_upto = r->g.start - 1;
	}
	if (renameat(s->dfd, r->tmp, s->dfd, r->sum ? sum_name : r->g.name) < 0)
		return -errno;
	crash_point(s, STORE_CRASH_ROLL_RENAMED);
	if (r->sum) {
		s->st.summaries_built++;
	} else {
		s->st.rollups++;
		s->st.windows_rolled += r->nin;
	}
	if ((err = sync_dir(s)))
		return err;
	return 1;
}

/* Leftovers of a rollup cut short by a crash: the segment they were for is whole. */
static void remove_roll_tmps(struct store *s)
{
	int fd = openat(s->dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, ROLL_TMP_PREFIX, strlen(ROLL_TMP_PREFIX)) &&
		    strlen(de->d_name) > 4 && !strcmp(de->d_name + strlen(de->d_name) - 4, ".tmp"))
			(void)unlinkat(s->dfd, de->d_name, 0);
	closedir(d);
}

/* ---- writing day summaries ---- */

static int day_start(struct store *s, int64_t day, struct seg_list *parts)
{
	struct roll *r;
	int err;

	if ((!s->rcodec && ((err = codec__new(&s->rcodec)) ||
			    (err = codec__set_value_unit(s->rcodec, s->o.value_unit_ns)))) ||
	    (!s->wprof && (err = profile__new(&s->wprof))))
		return err;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	s->roll = r;
	r->day = 1;
	r->g.start = day;
	r->g.end = day + DAY_NS;
	r->g.sealed = 1;
	snprintf(r->g.name, sizeof(r->g.name), "day-%019lld-%019lld.pfd", (long long)day, (long long)(day + DAY_NS));
	r->parts = *parts;
	*parts = (struct seg_list){ 0 };
	r->in = r->out = -1;
	profile__reset(s->wprof);
	snprintf(r->tmp, sizeof(r->tmp), ROLL_TMP_PREFIX "%019lld-day.tmp", (long long)day);
	(void)unlinkat(s->dfd, r->tmp, 0);
	r->out = openat(s->dfd, r->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
	if (r->out < 0 || own_file(s, r->out) < 0)
		return -errno;
	return 0;
}

/*
 * The oldest past UTC day without a day file whose segments are all
 * sealed and summarised (and before the open one), if any: its build starts.
 */
static int day_pick(struct store *s, const struct seg_list *l, int64_t now_ns)
{
	struct seg_list m = { 0 }, d = { 0 }, parts = { 0 };
	int err = list_sums(s, &m, 0);

	if (!err)
		err = list_days(s, &d, 0);
	for (size_t i = 0; !err && i < l->n && !s->roll; i++) {
		struct seg day = { .start = floor_div(l->v[i].start, DAY_NS) * DAY_NS, .sealed = 1 };
		int ok = 1, have = 0;
		size_t j;

		day.end = day.start + DAY_NS;
		if (day.start <= s->dayed_upto || !in_day(&l->v[i], &day))
			continue;
		for (j = 0; j < d.n && !have; j++)
			have = d.v[j].start == day.start;
		if (day.end > now_ns || (s->afd >= 0 && s->astart < day.end))
			break; /* the day is not over: nor are the ones after it */
		parts.n = 0;
		for (j = i; j < l->n && l->v[j].start < day.end && ok; j++) {
			const struct seg *g = &l->v[j], *sg;
			if (!g->sealed) {
				ok = 0;
			} else if (in_day(g, &day)) {
				if (!(sg = find_sum(&m, g))) {
					ok = 0;
				} else if (!have) {
					if ((err = grow_slots((void **)&parts.v, &parts.cap, parts.n, sizeof(*parts.v), 32)))
						break;
					parts.v[parts.n++] = *sg;
				}
			}
		}
		if (err || !ok)
			continue;
		/* Every segment of the day is summarised: done, or built now. */
		if (have)
			s->dayed_upto = day.start;
		else
			err = day_start(s, day.start, &parts);
	}
	free(m.v);
	free(d.v);
	free(parts.v);
	return err;
}

/* After a merge into a day: 1 (no file, not tried again by this writer) when it passed the budget. */
static int day_mem_check(struct store *s, struct roll *r)
{
	uint64_t w = profile__mem_bytes(s->wprof);

	if (w > s->st.summary_mem_peak)
		s->st.summary_mem_peak = w;
	if (w <= sum_mem_max(s))
		return 0;
	s->st.days_over_mem++;
	warnf(s, "%s/%s: it would take over %llu MiB of memory: not built, queries read the day's "
	      "summaries (raise summary-memory to build it)", s->dir, r->g.name,
	      (unsigned long long)(sum_mem_max(s) >> 20));
	return 1;
}

/* Merges the next segment's whole summary into the day; at the end writes and swaps it in. 1: done. */
static int day_continue(struct store *s)
{
	struct roll *r = s->roll;
	struct rec_ref wr;
	const uint8_t *raw;
	const char *why = NULL;
	uint64_t size;
	int err, fd;

	r->cpu_until = compact_until(s);
	if (r->dmerge) {
		if (!__atomic_load_n(&r->edone, __ATOMIC_ACQUIRE))
			return 0;
		r->dmerge = 0;
		if ((err = encode_join(s, r)))
			return err;
		r->wwindows += r->mrwin;
		return day_mem_check(s, r);
	}
	if (r->nparts < r->parts.n) {
		const struct seg *sg = &r->parts.v[r->nparts++];
		int64_t min = s->o.encode_thread_min ? s->o.encode_thread_min : ENCODE_THREAD_MIN;

		if ((err = sum_whole_hdr(s, sg, &wr)))
			return err < 0 ? err : -EBADMSG;
		if ((fd = open_seg(s, sg->name, O_RDONLY, &size)) < 0)
			return fd;
		err = load_payload(&s->rd, 1, fd, wr.off, &wr.h, &raw, &why);
		close(fd);
		/*
		 * A big summary record's merge (an hour as flushed: 90 ms here, 32
		 * times that on a 64-CPU host) is one step that cannot be cut: off
		 * the calling thread, by its raw bytes (about 56 ns each). A thread
		 * that cannot start leaves it to this one.
		 */
		if (!err && min > 0 && (int64_t)wr.h.raw_len >= min &&
		    !day_merge_start(s, r, raw, wr.h.raw_len, wr.h.windows))
			return 0;
		if (!err)
			err = codec__decode_merge(s->rd.codec, raw, wr.h.raw_len, 0, 0, SUM_MERGE, NULL, NULL, s->wprof);
		codec__chain_forget(s->rd.codec);
		if (!err)
			r->wwindows += wr.h.windows;
		return err ? err : day_mem_check(s, r);
	}
	/* The day's one record, at the rollups' level: maybe over several calls (1: not yet written). */
	err = roll_write(s, r, s->wprof, 0, r->wwindows, REC_FLAG_SUMMARY | REC_FLAG_WHOLE);
	if (err)
		return err < 0 ? err : 0;
	if (fdatasync(r->out) < 0)
		return -errno;
	crash_point(s, STORE_CRASH_ROLL_WRITTEN);
	if (renameat(s->dfd, r->tmp, s->dfd, r->g.name) < 0)
		return -errno;
	crash_point(s, STORE_CRASH_ROLL_RENAMED);
	s->st.days_built++;
	if ((err = sync_dir(s)))
		return err;
	return 1;
}

/* With no rollup due: the oldest sealed segment without a summary file gets one. */
static int seg_named(struct store *s, const struct seg *g)
{
	int named;

	return seg_level(s, g, &named) >= 0 && named;
}

static int sum_pick(struct store *s, const struct seg_list *l)
{
	struct seg_list m = { 0 };
	int err = list_sums(s, &m, 0);

	for (size_t i = 0; !err && i < l->n && !s->roll; i++) {
		const struct seg *g = &l->v[i];

		if (!g->sealed || g->start <= s->summed_upto)
			continue;
		if (find_sum(&m, g))
			s->summed_upto = g->start;
		else
			err = roll_start(s, g, 0, 1, seg_named(s, g));
	}
	free(m.v);
	return err;
}

/*
 * Past its pressure threshold, the store rolls the oldest sealed segment
 * that is not at the last tier yet into its next tier, ahead of its age:
 * coarser old windows instead of no old windows at all, which is what
 * retention by size would make room with. The first tier's age is the
 * floor: the windows as flushed (the last hour by default) are rolled up
 * by age alone.
 */
static int pressure_pick(struct store *s, const struct seg_list *l, int64_t now_ns)
{
	int pct = s->o.rollup_pressure_pct ? s->o.rollup_pressure_pct : DEF_PRESSURE_PCT;
	int done = 1;

	if (pct < 0 || !s->o.max_bytes || !s->ntiers || now_ns < INT64_MIN + s->tiers[0].age_ns ||
	    s->st.bytes_on_disk <= s->o.max_bytes / 100 * (uint64_t)pct)
		return 0;
	int64_t floor = now_ns - s->tiers[0].age_ns;
	for (size_t i = 0; i < l->n; i++) {
		const struct seg *g = &l->v[i];

		if (!g->sealed || (s->afd >= 0 && !strcmp(g->name, s->aname))) {
			done = 0;
			continue;
		}
		if (g->end > floor) /* in time order: the rest are younger still */
			break;
		if (g->start <= s->pressed_upto)
			continue;
		int named, level = seg_level(s, g, &named);
		if (level < 0) {
			done = 0;
			continue;
		}
		if ((size_t)level >= s->ntiers) {
			if (done)
				s->pressed_upto = g->start;
			continue;
		}
		int err = roll_start(s, g, (size_t)level, 0, tier_named(s, (size_t)level));
		if (!err)
			s->roll->pressure = 1;
		return err;
	}
	return 0;
}

int store__compact(struct store *s, int64_t now_ns)
{
	struct seg_list l = { 0 };
	int err = 0;

	if (!s->o.writer)
		return -EPERM;
	if (s->roll && s->roll->dropped) {
		if (!__atomic_load_n(&s->roll->edone, __ATOMIC_ACQUIRE))
			return 0;
		roll_end(s);
	}
	if (s->roll_backoff) {
		s->roll_backoff--;
		return 0;
	}
	if (!s->roll) {
		if ((err = list_segments(s, &l, 0)))
			goto out;
		for (size_t i = 0; i < l.n && !s->roll; i++) {
			struct seg *g = &l.v[i];
			size_t t = s->ntiers;

			/* An unsealed one is sealed (and then rolled up) at the next writer start. */
			if (!g->sealed || (s->afd >= 0 && !strcmp(g->name, s->aname)))
				continue;
			while (t > 0 && (now_ns < INT64_MIN + s->tiers[t - 1].age_ns ||
					 g->end > now_ns - s->tiers[t - 1].age_ns))
				t--;
			if (!t) /* segments are in time order: the rest are younger still */
				break;
			/* Oldest first, one at a time: everything before g that is due for tier t is done. */
			if (g->start <= s->rolled_upto[t - 1])
				continue;
			int named, level = seg_level(s, g, &named);
			if (level < 0)
				continue;
			/* Also a segment rolled up when its tier kept pids, if it no longer does. */
			if ((size_t)level >= t && (named || !tier_named(s, t - 1))) {
				s->rolled_upto[t - 1] = g->start;
				continue;
			}
			if ((err = roll_start(s, g, t - 1, 0, tier_named(s, t - 1))))
				goto out;
		}
		if (!s->roll && (err = sum_pick(s, &l)))
			goto out;
		if (!s->roll && (err = pressure_pick(s, &l, now_ns)))
			goto out;
		if (!s->roll && (err = day_pick(s, &l, now_ns)))
			goto out;
		if (!s->roll)
			goto out;
	}
	err = s->roll->day ? day_continue(s) : roll_continue(s);
	if (err == 1) {
		/* Also when nothing in it could be read: it is not read again for this tier. */
		if (s->roll->day)
			s->dayed_upto = s->roll->g.start;
		else if (s->roll->sum)
			s->summed_upto = s->roll->g.start;
		else if (!s->roll->pressure)
			s->rolled_upto[s->roll->tier] = s->roll->g.start;
		else if (!s->roll->nout) /* nothing in it could be read: its level stays */
			s->pressed_upto = s->roll->g.start;
		roll_end(s);
		err = refresh_disk_stats(s);
	}
out:
	if (err < 0) {
		roll_end(s);
		s->roll_backoff = ROLL_RETRY_CALLS;
	}
	free(l.v);
	return err < 0 ? err : 0;
}
