/* The state directory: append-only segment files of compressed windows, an index, retention. */
#ifndef PROFD_STORE_H
#define PROFD_STORE_H

#include <stddef.h>
#include <stdint.h>

struct profile;
struct store;

struct store_opts {
	const char *dir;
	int writer;               /* 1: profd (creates dir 0700, recovers torn tails); 0: reader */
	int zstd_level;           /* 0: default */
	int64_t max_age_ns;       /* retention by age; 0: none */
	uint64_t max_bytes;       /* retention by total size; 0: none */
	uint64_t segment_bytes;   /* start a new segment past this size; 0: default */
	int64_t segment_span_ns;  /* or past this time span; 0: default */
	/* Non-fatal damage found while opening or reading (corrupt record, torn tail). */
	void (*warn)(void *arg, const char *msg);
	void *warn_arg;
};

struct store_window_info {
	int64_t start_ns, end_ns;   /* CLOCK_REALTIME */
	uint64_t samples;           /* on-CPU samples in the window */
	uint64_t lost;              /* samples lost, all reasons */
	uint64_t bytes;             /* record size on disk */
	const char *segment;        /* file name inside the state dir */
	uint64_t offset;            /* record offset in that file */
};

struct store_stats {
	uint64_t windows_written, bytes_written, write_errors, windows_dropped;
	uint64_t segments, bytes_on_disk, segments_removed, corrupt_records;
};

int store__open(const struct store_opts *o, struct store **out);
void store__close(struct store *s);

/* Appends one window as a record (encode, compress, checksum, write). */
int store__append(struct store *s, const struct profile *window);
/* Removes whole segments, oldest first, past the age or size limit. */
int store__retain(struct store *s, int64_t now_ns);

typedef int (*store_info_fn)(const struct store_window_info *w, void *arg);
typedef int (*store_window_fn)(const struct store_window_info *w, const struct profile *p, void *arg);
/* Windows overlapping [since, until), oldest first, from the index (no decompression). */
int store__list(struct store *s, int64_t since, int64_t until, store_info_fn fn, void *arg);
/* The same windows decoded; p is valid only during the call. A non-zero return from fn stops and is returned. */
int store__read(struct store *s, int64_t since, int64_t until, store_window_fn fn, void *arg);

void store__stats(const struct store *s, struct store_stats *out);

#endif
