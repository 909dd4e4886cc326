/* Segment store: round trips, crash recovery, damage, retention, write errors, permissions. */
#include "codec.h"
#include "diff.h"
#include "fold.h"
#include "query.h"
#include "profile.h"
#include "store.h"
#include "t.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SEC 1000000000ll
#define T0 (1764000000ll * SEC)

static int nwarn;
static char lastwarn[512];

static void on_warn(void *arg, const char *msg)
{
	nwarn++;
	snprintf(lastwarn, sizeof(lastwarn), "%s", msg);
	if (getenv("T_VERBOSE"))
		fprintf(stderr, "warn: %s\n", msg);
}

static int rm_cb(const char *p, const struct stat *sb, int type, struct FTW *ftw)
{
	return remove(p);
}

static void rm_rf(const char *dir)
{
	nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* A test window's span and rate, as the daemon's flush sets them. */
static struct pf_meta *set_meta(struct profile *p, int64_t start, int64_t len)
{
	struct pf_meta *m = profile__meta(p);

	m->start_ns = start;
	m->end_ns = start + len;
	m->frequency = 99;
	return m;
}

/* A small window: i decides its time and contents. */
static void make_window(struct profile *p, int i, int64_t start, int64_t len)
{
	uint32_t s_main, s_f, s_mod, s_comm, s_host, f[3], st;
	char name[32];

	profile__reset(p);
	profile__intern_str(p, "main", &s_main);
	snprintf(name, sizeof(name), "func_%d", i % 7);
	profile__intern_str(p, name, &s_f);
	profile__intern_str(p, "/usr/bin/app", &s_mod);
	profile__intern_str(p, "app", &s_comm);
	profile__intern_str(p, "host-a", &s_host);
	struct pf_frame fr[3] = {
		{ .name = s_main, .module = s_mod, .offset = 0x1000, .kind = PF_FRAME_USER },
		{ .name = s_f, .module = s_mod, .offset = 0x2000 + (uint64_t)i, .kind = PF_FRAME_USER },
		{ .name = s_f, .module = 0, .offset = 0xffffffff81000000ull, .kind = PF_FRAME_KERNEL },
	};
	for (int k = 0; k < 3; k++)
		profile__frame_add(p, &fr[k], &f[k]);
	profile__stack_add(p, f, 3, &st);
	struct pf_sample s = { .pid = 100 + (uint32_t)i, .tid = 100 + (uint32_t)i, .comm = s_comm,
			       .thread = s_comm, .stack = st, .kind = PF_KIND_CPU, .value = 10 + (uint64_t)i };
	profile__add(p, &s);
	s.kind = PF_KIND_OFFCPU;
	s.value = 1000000;
	profile__add(p, &s);
	profile__counter_add(p, "lost.map_full", (uint64_t)i % 3);
	set_meta(p, start, len)->host = s_host;
}

struct seen {
	int n;
	int64_t starts[4096];
	uint64_t samples_sum;
	int bad;
};

static int on_info(const struct store_window_info *w, void *arg)
{
	struct seen *s = arg;
	if (s->n < 4096)
		s->starts[s->n] = w->start_ns;
	s->n++;
	s->samples_sum += w->samples;
	return 0;
}

/* Checks each window decodes to what make_window() built for its start time. */
static int on_window(const struct store_window_info *w, const struct profile *p, void *arg)
{
	struct seen *s = arg;
	int i = (int)((w->start_ns - T0) / (10 * SEC));
	const struct pf_meta *m = profile__meta_const(p);

	if (s->n < 4096)
		s->starts[s->n] = w->start_ns;
	s->n++;
	if (m->start_ns != w->start_ns || m->end_ns != w->end_ns || profile__nsamples(p) != 2 ||
	    profile__sample(p, 0)->value != 10 + (uint64_t)i || strcmp(profile__str(p, m->host), "host-a") ||
	    w->samples != 10 + (uint64_t)i || w->lost != (uint64_t)i % 3)
		s->bad++;
	return 0;
}

static int open_store(const char *dir, int writer, struct store **s, struct store_opts *extra)
{
	struct store_opts o = { .dir = dir, .writer = writer, .warn = on_warn };
	if (extra) {
		o.segment_bytes = extra->segment_bytes;
		o.segment_span_ns = extra->segment_span_ns;
		o.max_age_ns = extra->max_age_ns;
		o.max_bytes = extra->max_bytes;
		o.chain_records = extra->chain_records;
		memcpy(o.rollup, extra->rollup, sizeof(o.rollup));
		o.no_rollup = extra->no_rollup;
		o.runq_entry_frame = extra->runq_entry_frame;
	}
	return store__open(&o, s);
}

static int count_files(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;
	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, prefix, strlen(prefix)))
			n++;
	closedir(d);
	return n;
}

/* The only segment file, or the first by name. */
static int seg_path(const char *dir, char *out, size_t n)
{
	struct dirent **names;
	int k = scandir(dir, &names, NULL, alphasort), found = -1;
	for (int i = 0; i < k; i++) {
		if (found < 0 && !strncmp(names[i]->d_name, "seg-", 4)) {
			snprintf(out, n, "%s/%s", dir, names[i]->d_name);
			found = 0;
		}
		free(names[i]);
	}
	free(names);
	return found;
}

static void test_roundtrip(const char *base)
{
	char dir[256];
	struct store *w, *r;
	struct profile *p;
	struct seen s;
	struct store_opts o = { .segment_span_ns = 600 * SEC }; /* 60 windows a segment */
	struct stat st;

	snprintf(dir, sizeof(dir), "%s/rt", base);
	profile__new(&p);
	CHECK_EQ_INT(open_store(dir, 1, &w, &o), 0);
	CHECK(!stat(dir, &st) && (st.st_mode & 0777) == 0700);
	for (int i = 0; i < 200; i++) {
		make_window(p, i, T0 + i * 10 * SEC, 10 * SEC);
		CHECK_EQ_INT(store__append(w, p), 0);
	}
	/* A second writer is refused; a reader works while the writer is open. */
	struct store *w2;
	CHECK_EQ_INT(open_store(dir, 1, &w2, NULL), -EBUSY);
	CHECK_EQ_INT(open_store(dir, 0, &r, NULL), 0);

	memset(&s, 0, sizeof(s));
	CHECK_EQ_INT(store__list(r, INT64_MIN, INT64_MAX, on_info, &s), 0);
	CHECK_EQ_INT(s.n, 200);
	int sorted = 1;
	for (int i = 1; i < 200; i++)
		sorted &= s.starts[i] > s.starts[i - 1];
	CHECK(sorted);

	/* [T0+95s, T0+125s) overlaps windows 9..12. */
	memset(&s, 0, sizeof(s));
	CHECK_EQ_INT(store__read(r, T0 + 95 * SEC, T0 + 125 * SEC, on_window, &s), 0);
	CHECK_EQ_INT(s.n, 4);
	CHECK_EQ_INT(s.bad, 0);
	CHECK_EQ_INT(s.starts[0], T0 + 90 * SEC);

	/* A range across segment boundaries, and one past the end. */
	memset(&s, 0, sizeof(s));
	CHECK_EQ_INT(store__read(r, T0 + 550 * SEC, T0 + 1300 * SEC, on_window, &s), 0);
	CHECK_EQ_INT(s.n, 75);
	CHECK_EQ_INT(s.bad, 0);
	memset(&s, 0, sizeof(s));
	CHECK_EQ_INT(store__list(r, T0 + 2000 * SEC, INT64_MAX, on_info, &s), 0);
	CHECK_EQ_INT(s.n, 0);
	CHECK_EQ_INT(store__append(r, p), -EPERM);
	store__close(r);

	struct store_stats ss;
	store__stats(w, &ss);
	CHECK_EQ_INT(ss.windows_written, 200);
	CHECK_EQ_INT(ss.write_errors, 0);
	CHECK_EQ_INT(ss.segments, 4);
	store__close(w);
	CHECK_EQ_INT(count_files(dir, "seg-"), 4);
	CHECK_EQ_INT(nwarn, 0);

	/* Clock stepped back: a new segment, every window still listed. */
	CHECK_EQ_INT(open_store(dir, 1, &w, NULL), 0);
	make_window(p, 5, T0 + 50 * SEC + 1, 10 * SEC);
	CHECK_EQ_INT(store__append(w, p), 0);
	memset(&s, 0, sizeof(s));
	CHECK_EQ_INT(store__list(w, INT64_MIN, INT64_MAX, on_info, &s), 0);
	CHECK_EQ_INT(s.n, 201);
	memset(&s, 0, sizeof(s));
	CHECK_EQ_INT(store__list(w, T0 + 50 * SEC, T0 + 51 * SEC, on_info, &s), 0);
	CHECK_EQ_INT(s.n, 2);
	store__close(w);

	/* Every file 0600. */
	DIR *d = opendir(dir);
	struct dirent *de;
	int badmode = 0;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char path[512];
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (stat(path, &st) || (st.st_mode & 0777) != 0600)
			badmode++;
	}
	if (d)
		closedir(d);
	CHECK_EQ_INT(badmode, 0);
	profile__free(p);
}

/* Writes n windows from a child that dies without closing: the segment stays open. */
static void crash_writer(const char *dir, int n)
{
	pid_t pid = fork();
	if (!pid) {
		struct store *w;
		struct profile *p;
		profile__new(&p);
		if (open_store(dir, 1, &w, NULL))
			_exit(1);
		for (int i = 0; i < n; i++) {
			make_window(p, i, T0 + i * 10 * SEC, 10 * SEC);
			if (store__append(w, p))
				_exit(1);
		}
		_exit(0);
	}
	int status;
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static int read_all(const char *dir, struct seen *s)
{
	struct store *r;
	int err = open_store(dir, 0, &r, NULL);
	if (err)
		return err;
	memset(s, 0, sizeof(*s));
	err = store__read(r, INT64_MIN, INT64_MAX, on_window, s);
	store__close(r);
	return err;
}

static void test_torn_tail(const char *base)
{
	char dir[256], path[512];
	struct seen s;
	struct stat st;
	struct store *w;

	snprintf(dir, sizeof(dir), "%s/torn", base);
	crash_writer(dir, 10);
	CHECK(!seg_path(dir, path, sizeof(path)));
	CHECK(strlen(strrchr(path, '/')) == 28); /* still the open name */
	CHECK(!stat(path, &st));
	off_t full = st.st_size;

	/* A reader copes with the unsealed segment silently. */
	nwarn = 0;
	CHECK_EQ_INT(read_all(dir, &s), 0);
	CHECK_EQ_INT(s.n, 10);
	CHECK_EQ_INT(nwarn, 0);

	/* Tear the last record: cut 5 bytes off its payload, then add garbage. */
	CHECK(!truncate(path, full - 5));
	int fd = open(path, O_WRONLY | O_APPEND);
	CHECK(write(fd, "garbage", 7) == 7);
	close(fd);
	nwarn = 0;
	CHECK_EQ_INT(read_all(dir, &s), 0);
	CHECK_EQ_INT(s.n, 9);
	CHECK_EQ_INT(nwarn, 1); /* the last header is fine but its payload is not */

	/* The writer cuts the tail and seals the segment; nothing else changes. */
	nwarn = 0;
	CHECK_EQ_INT(open_store(dir, 1, &w, NULL), 0);
	CHECK_EQ_INT(nwarn, 2); /* the bad payload, then the cut */
	CHECK(strstr(lastwarn, "torn tail") && strstr(lastwarn, "seg-"));
	struct profile *p;
	profile__new(&p);
	make_window(p, 10, T0 + 100 * SEC, 10 * SEC);
	CHECK_EQ_INT(store__append(w, p), 0);
	store__close(w);
	profile__free(p);
	nwarn = 0;
	CHECK_EQ_INT(read_all(dir, &s), 0);
	CHECK_EQ_INT(s.n, 10);
	CHECK_EQ_INT(s.bad, 0);
	CHECK_EQ_INT(nwarn, 0);
	CHECK_EQ_INT(count_files(dir, "seg-"), 2);

	/* A crash right after creating a segment leaves an empty file: removed on start. */
	snprintf(dir, sizeof(dir), "%s/torn2", base);
	crash_writer(dir, 0);
	mkdir(dir, 0700);
	snprintf(path, sizeof(path), "%s/seg-%019lld.pfd", dir, (long long)T0);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	CHECK(write(fd, "PFD", 3) == 3);
	close(fd);
	CHECK_EQ_INT(open_store(dir, 1, &w, NULL), 0);
	store__close(w);
	CHECK_EQ_INT(count_files(dir, "seg-"), 0);
}

/* Copies a segment file with one change, then reads it back. */
static int damaged_read(const char *dir, const char *name, const uint8_t *data, size_t len, struct seen *s)
{
	char path[512];
	rm_rf(dir);
	mkdir(dir, 0700);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, data, len) != (ssize_t)len)
		return -EIO;
	close(fd);
	return read_all(dir, s);
}

static void test_damage(const char *base)
{
	char dir[256], path[512], work[256];
	struct seen s;
	struct store *w;
	struct profile *p;
	const int N = 6;

	snprintf(dir, sizeof(dir), "%s/dmg", base);
	snprintf(work, sizeof(work), "%s/dmgwork", base);
	profile__new(&p);
	/* Keys only: each record stands alone (chains: test_chain_damage). */
	struct store_opts keys = { .chain_records = 1 };
	CHECK_EQ_INT(open_store(dir, 1, &w, &keys), 0);
	for (int i = 0; i < N; i++) {
		make_window(p, i, T0 + i * 10 * SEC, 10 * SEC);
		CHECK_EQ_INT(store__append(w, p), 0);
	}
	store__close(w);
	profile__free(p);
	CHECK(!seg_path(dir, path, sizeof(path)));
	const char *name = strrchr(path, '/') + 1;
	FILE *f = fopen(path, "rb");
	uint8_t data[65536];
	size_t len = fread(data, 1, sizeof(data), f);
	fclose(f);
	CHECK(len > 0 && len < sizeof(data));
	printf("damage tests over a %zu-byte segment of %d records\n", len, N);

	/* Truncation at every byte: only whole records before the cut are read, with a warning unless the cut falls on a boundary. */
	int trunc_bad = 0, trunc_nowarn = 0;
	for (size_t cut = 0; cut < len; cut++) {
		nwarn = 0;
		if (damaged_read(work, name, data, cut, &s) || s.bad) {
			trunc_bad++;
			continue;
		}
		size_t whole = (size_t)s.n * (len / N); /* records are near equal in size */
		if (whole > cut + 64)
			trunc_bad++;
		if (!nwarn && cut % (len / N))
			trunc_nowarn++;
	}
	CHECK_EQ_INT(trunc_bad, 0);
	CHECK_EQ_INT(trunc_nowarn, 0);

	/* Every single bit flipped: exactly one record lost, always reported. */
	int flip_bad = 0, flip_nowarn = 0;
	for (size_t bit = 0; bit < len * 8; bit++) {
		data[bit / 8] ^= (uint8_t)(1 << (bit % 8));
		nwarn = 0;
		int err = damaged_read(work, name, data, len, &s);
		if (err || s.bad || s.n != N - 1) {
			if (flip_bad++ < 5)
				fprintf(stderr, "bit %zu: err %d, %d windows, %d bad\n", bit, err, s.n, s.bad);
		}
		if (!nwarn)
			flip_nowarn++;
		data[bit / 8] ^= (uint8_t)(1 << (bit % 8));
	}
	CHECK_EQ_INT(flip_bad, 0);
	CHECK_EQ_INT(flip_nowarn, 0);

	/* One warning names the file and the offset. */
	data[200] ^= 0xff;
	nwarn = 0;
	damaged_read(work, name, data, len, &s);
	CHECK_EQ_INT(nwarn, 1);
	CHECK(strstr(lastwarn, name) && strstr(lastwarn, "offset "));
	data[200] ^= 0xff;
}


/* Record offsets of a clean segment, from its headers (comp_len at byte 12). */
static int record_offsets(const uint8_t *data, size_t len, size_t *offs, int max)
{
	int n = 0;
	for (size_t off = 0; off + 64 <= len && n < max; n++) {
		offs[n] = off;
		off += 64 + ((size_t)data[off + 12] | (size_t)data[off + 13] << 8 | (size_t)data[off + 14] << 16 |
			     (size_t)data[off + 15] << 24);
	}
	return n;
}

/*
 * Chains: a damaged record costs itself and the rest of its chain (whose
 * deltas need its tables), never a record of another chain, and is always
 * reported.
 */
static void test_chain_damage(const char *base)
{
	char dir[256], path[512], work[256];
	struct seen s;
	struct store *w;
	struct profile *p;
	const int N = 9, CHAIN = 3;
	struct store_opts o = { .chain_records = CHAIN };

	snprintf(dir, sizeof(dir), "%s/chain-dmg", base);
	snprintf(work, sizeof(work), "%s/chain-dmgwork", base);
	profile__new(&p);
	CHECK_EQ_INT(open_store(dir, 1, &w, &o), 0);
	for (int i = 0; i < N; i++) {
		make_window(p, i, T0 + i * 10 * SEC, 10 * SEC);
		CHECK_EQ_INT(store__append(w, p), 0);
	}
	store__close(w);
	profile__free(p);
	CHECK(!seg_path(dir, path, sizeof(path)));
	const char *name = strrchr(path, '/') + 1;
	FILE *f = fopen(path, "rb");
	uint8_t data[65536];
	size_t len = fread(data, 1, sizeof(data), f), offs[16];
	fclose(f);
	CHECK_EQ_INT(record_offsets(data, len, offs, 16), N);
	/* Deltas are smaller than the keys they extend. */
	CHECK(offs[2] - offs[1] < offs[1] - offs[0]);
	CHECK_EQ_INT(read_all(dir, &s), 0);
	CHECK_EQ_INT(s.n, N);
	CHECK_EQ_INT(s.bad, 0);

	int flip_bad = 0, flip_nowarn = 0;
	for (size_t bit = 0; bit < len * 8; bit++) {
		int k = 0;
		while (k + 1 < N && offs[k + 1] <= bit / 8)
			k++;
		int lost = (k / CHAIN + 1) * CHAIN - k;
		data[bit / 8] ^= (uint8_t)(1 << (bit % 8));
		nwarn = 0;
		int err = damaged_read(work, name, data, len, &s);
		if (err || s.bad || s.n != N - lost) {
			if (flip_bad++ < 5)
				fprintf(stderr, "chain bit %zu (record %d): err %d, %d windows, %d bad\n", bit, k, err,
					s.n, s.bad);
		}
		if (!nwarn)
			flip_nowarn++;
		data[bit / 8] ^= (uint8_t)(1 << (bit % 8));
	}
	CHECK_EQ_INT(flip_bad, 0);
	CHECK_EQ_INT(flip_nowarn, 0);
}

/* A range that starts inside a chain decodes the chain's earlier records' tables first. */
static void test_chain_ranges(const char *base)
{
	char dir[256];
	struct seen s;
	struct store *w, *r;
	struct profile *p;
	const int N = 70;

	snprintf(dir, sizeof(dir), "%s/chain-ranges", base);
	profile__new(&p);
	CHECK_EQ_INT(open_store(dir, 1, &w, NULL), 0);
	for (int i = 0; i < N; i++) {
		make_window(p, i, T0 + i * 10 * SEC, 10 * SEC);
		CHECK_EQ_INT(store__append(w, p), 0);
	}
	store__close(w);
	profile__free(p);
	CHECK_EQ_INT(open_store(dir, 0, &r, NULL), 0);
	int bad = 0;
	nwarn = 0;
	for (int a = 0; a < N; a += 3) {
		for (int b = a + 1; b <= N; b += 7) {
			memset(&s, 0, sizeof(s));
			int err = store__read(r, T0 + a * 10 * SEC, T0 + b * 10 * SEC, on_window, &s);
			if (err || s.bad || s.n != b - a || s.starts[0] != T0 + a * 10 * SEC)
				bad++;
		}
	}
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(nwarn, 0);
	store__close(r);
}

/* Version 1 segments (tests/unit/data, written by the version 1 writer) are still read, beside new ones. */
static void test_v1_compat(const char *base)
{
	char dir[256], cmd[600];
	struct seen s;
	struct store *w;
	struct profile *p;
	const char *data = getenv("T_DATA") ? getenv("T_DATA") : "tests/unit/data";

	nwarn = 0;
	CHECK_EQ_INT(read_all(data, &s), 0);
	CHECK_EQ_INT(s.n, 12);
	CHECK_EQ_INT(s.bad, 0);
	CHECK_EQ_INT(nwarn, 0);
	memset(&s, 0, sizeof(s));
	struct store *r;
	CHECK_EQ_INT(open_store(data, 0, &r, NULL), 0);
	CHECK_EQ_INT(store__list(r, INT64_MIN, INT64_MAX, on_info, &s), 0);
	CHECK_EQ_INT(s.n, 12);
	store__close(r);

	/* A writer keeps them and appends version 2 records after them. */
	snprintf(dir, sizeof(dir), "%s/v1", base);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s' && cp '%s'/seg-*.pfd '%s'/", dir, data, dir);
	CHECK_EQ_INT(system(cmd), 0);
	CHECK_EQ_INT(open_store(dir, 1, &w, NULL), 0);
	profile__new(&p);
	for (int i = 12; i < 20; i++) {
		make_window(p, i, T0 + i * 10 * SEC, 10 * SEC);
		CHECK_EQ_INT(store__append(w, p), 0);
	}
	store__close(w);
	profile__free(p);
	CHECK_EQ_INT(read_all(dir, &s), 0);
	CHECK_EQ_INT(s.n, 20);
	CHECK_EQ_INT(s.bad, 0);
	CHECK_EQ_INT(nwarn, 0);
}

/*
 * Version 2 segments (tests/unit/data/v2, written by the version 2 writer:
 * 12 windows in chains of 5 over two files) are still read, in full and
 * from inside a chain.
 */
static void test_v2_compat(void)
{
	char dir[256];
	struct seen s;
	struct store *r;
	const char *data = getenv("T_DATA") ? getenv("T_DATA") : "tests/unit/data";

	snprintf(dir, sizeof(dir), "%s/v2", data);
	nwarn = 0;
	CHECK_EQ_INT(read_all(dir, &s), 0);
	CHECK_EQ_INT(s.n, 12);
	CHECK_EQ_INT(s.bad, 0);
	CHECK_EQ_INT(nwarn, 0);
	CHECK_EQ_INT(open_store(dir, 0, &r, NULL), 0);
	memset(&s, 0, sizeof(s));
	CHECK_EQ_INT(store__read(r, T0 + 30 * SEC, T0 + 90 * SEC, on_window, &s), 0);
	CHECK_EQ_INT(s.n, 6);
	CHECK_EQ_INT(s.bad, 0);
	CHECK(s.starts[0] == T0 + 30 * SEC);
	CHECK_EQ_INT(nwarn, 0);
	store__close(r);
}


/* ---- rollups ---- */

#define RW 240 /* 40 min of 10 s windows */

struct totals {
	uint64_t cpu[RW], off[RW]; /* by window index (pid - 100) */
	uint64_t windows, records, bad;
};

static int sum_window(const struct store_window_info *w, const struct profile *p, void *arg)
{
	struct totals *t = arg;
	for (size_t i = 0; i < profile__nsamples(p); i++) {
		const struct pf_sample *x = profile__sample(p, i);
		if (x->pid < 100 || x->pid >= 100 + RW) {
			t->bad++;
			continue;
		}
		if (x->kind == PF_KIND_CPU)
			t->cpu[x->pid - 100] += x->value;
		else
			t->off[x->pid - 100] += x->value;
	}
	t->windows += w->windows;
	t->records++;
	return 0;
}

/* Every window's samples, exactly once: what a rollup must never change. */
static int totals_ok(const char *dir, uint64_t *records)
{
	static struct totals t;
	struct store *r;
	int ok = 1;

	memset(&t, 0, sizeof(t));
	if (open_store(dir, 0, &r, NULL))
		return 0;
	if (store__read(r, INT64_MIN, INT64_MAX, sum_window, &t))
		ok = 0;
	store__close(r);
	for (int i = 0; i < RW; i++)
		if (t.cpu[i] != 10 + (uint64_t)i || t.off[i] != 1000000)
			ok = 0;
	if (t.windows != RW || t.bad)
		ok = 0;
	if (records)
		*records = t.records;
	return ok;
}

static const struct store_opts roll_opts = {
	.segment_span_ns = 600 * SEC, /* 60 windows a segment */
	.rollup = { { 600 * SEC, 60 * SEC }, { 1200 * SEC, 300 * SEC } },
};

typedef void make_fn(struct profile *p, int i, int64_t start, int64_t len);

/* RW windows of 10 s from make, written with roll_opts into a new store at dir. */
static void write_made(const char *dir, make_fn *make)
{
	struct store *w;
	struct profile *p;

	rm_rf(dir);
	profile__new(&p);
	CHECK_EQ_INT(open_store(dir, 1, &w, (struct store_opts *)&roll_opts), 0);
	for (int i = 0; i < RW; i++) {
		make(p, i, T0 + i * 10 * SEC, 10 * SEC);
		CHECK_EQ_INT(store__append(w, p), 0);
	}
	store__close(w);
	profile__free(p);
}

static void write_rw(const char *dir)
{
	write_made(dir, make_window);
}

static int open_roller(const char *dir, struct store **s, void (*cp)(void *, int), void *arg)
{
	struct store_opts o = roll_opts;
	o.dir = dir;
	o.writer = 1;
	o.warn = on_warn;
	o.crash_point = cp;
	o.crash_arg = arg;
	return store__open(&o, s);
}

/*
 * Compacts until nothing is due (a call does part of one segment at most:
 * a named window takes a read, two fold and a write step); returns the
 * rollups done.
 */
static int compact_all(struct store *s, int64_t now)
{
	struct store_stats st;
	for (int i = 0; i < 200; i++)
		if (store__compact(s, now))
			return -1;
	store__stats(s, &st);
	return (int)st.rollups;
}

/* A profd started after a crash mid-rollup: it finishes them, with no warning, no roll- file left. */
static void finish_rollups(const struct store_opts *o, const char *dir, int64_t now)
{
	struct store *s;

	nwarn = 0;
	CHECK_EQ_INT(store__open(o, &s), 0);
	compact_all(s, now);
	store__close(s);
	CHECK_EQ_INT(nwarn, 0);
	CHECK_EQ_INT(count_files(dir, "roll-"), 0);
}

struct lvl_count {
	int n[4];
	uint64_t windows;
};

static int on_level(const struct store_window_info *w, void *arg)
{
	struct lvl_count *c = arg;
	if (w->level >= 0 && w->level < 4)
		c->n[w->level]++;
	c->windows += w->windows;
	return 0;
}

static const char *cp_dir;
static int cp_die_at, cp_checked, cp_bad;

/* In-process: a reader at each step sees every window once, from the old file or the new. */
static void check_at_step(void *arg, int step)
{
	cp_checked++;
	if (!totals_ok(cp_dir, NULL))
		cp_bad++;
}

static void die_at_step(void *arg, int step)
{
	if (step == cp_die_at)
		raise(SIGKILL);
}

/* A writer opened with o, compacting at time now, killed (SIGKILL) at crash point step: 1 if it was. */
static int killed_compacting(const struct store_opts *o, int step, int64_t now)
{
	int status = 0;
	pid_t pid = fork();

	if (pid == 0) {
		struct store_opts k = *o;
		struct store *s;

		cp_die_at = step;
		k.crash_point = die_at_step;
		if (store__open(&k, &s))
			_exit(1);
		compact_all(s, now);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

static void test_rollup(const char *base)
{
	char dir[256];
	struct store *s;
	struct lvl_count c;
	uint64_t records;
	struct profile *p2;
	const int64_t now = T0 + RW * 10 * SEC;

	snprintf(dir, sizeof(dir), "%s/roll", base);
	write_rw(dir);
	CHECK(totals_ok(dir, &records));
	CHECK_EQ_INT(records, RW);

	/* Segments 0-1 ended 20 min ago or more (5 min windows), 2 10 min ago (1 min), 3 is young. */
	cp_dir = dir;
	cp_checked = cp_bad = 0;
	nwarn = 0;
	CHECK_EQ_INT(open_roller(dir, &s, check_at_step, NULL), 0);
	CHECK_EQ_INT(compact_all(s, now), 3);
	CHECK_EQ_INT(compact_all(s, now), 3); /* nothing more is due: no work, no change */
	store__close(s);
	CHECK(cp_checked >= 9);
	CHECK_EQ_INT(cp_bad, 0);
	CHECK_EQ_INT(nwarn, 0);
	CHECK(totals_ok(dir, &records));
	CHECK_EQ_INT(records, 2 * 2 + 10 + 60);
	memset(&c, 0, sizeof(c));
	CHECK_EQ_INT(open_store(dir, 0, &s, NULL), 0);
	CHECK_EQ_INT(store__list(s, INT64_MIN, INT64_MAX, on_level, &c), 0);
	CHECK_EQ_INT(c.n[0], 60);
	CHECK_EQ_INT(c.n[1], 10);
	CHECK_EQ_INT(c.n[2], 4);
	CHECK_EQ_INT(c.windows, RW);
	/* A range inside a rolled-up segment finds the windows that overlap it. */
	memset(&c, 0, sizeof(c));
	CHECK_EQ_INT(store__list(s, T0 + 61 * SEC, T0 + 62 * SEC, on_level, &c), 0);
	CHECK_EQ_INT(c.n[2], 1);
	CHECK_EQ_INT(c.windows, 30);
	store__close(s);

	/* Later, tier 1 segments move on to tier 2. */
	CHECK_EQ_INT(open_roller(dir, &s, NULL, NULL), 0);
	CHECK_EQ_INT(compact_all(s, now + 3600 * SEC), 2);
	store__close(s);
	CHECK(totals_ok(dir, &records));
	CHECK_EQ_INT(records, 4 * 2);

	/* kill -9 at each step: nothing lost or doubled, before or after the next writer start. */
	for (int step = STORE_CRASH_ROLL_WRITING; step <= STORE_CRASH_ROLL_RENAMED; step++) {
		write_rw(dir);
		struct store_opts ro = roll_opts;
		ro.dir = dir;
		ro.writer = 1;
		ro.warn = on_warn;
		CHECK(killed_compacting(&ro, step, now));
		CHECK(totals_ok(dir, NULL));
		CHECK_EQ_INT(count_files(dir, "roll-"), step < STORE_CRASH_ROLL_RENAMED ? 1 : 0);
		nwarn = 0;
		CHECK_EQ_INT(open_roller(dir, &s, NULL, NULL), 0);
		CHECK_EQ_INT(count_files(dir, "roll-"), 0);
		CHECK_EQ_INT(compact_all(s, now), step < STORE_CRASH_ROLL_RENAMED ? 3 : 2);
		store__close(s);
		CHECK_EQ_INT(nwarn, 0);
		CHECK(totals_ok(dir, &records));
		CHECK_EQ_INT(records, 2 * 2 + 10 + 60);
	}

	/*
	 * A segment longer than one call's budget (120 windows) is rolled up over
	 * several calls; meanwhile readers read the old file, and retention may
	 * remove it (the rollup is then dropped, not renamed into its place).
	 */
	{
		struct store_opts big = roll_opts;
		struct store_stats st;
		big.segment_span_ns = 1200 * SEC;
		big.compact_windows = 60;
		rm_rf(dir);
		profile__new(&p2);
		big.dir = dir;
		big.writer = 1;
		big.warn = on_warn;
		CHECK_EQ_INT(store__open(&big, &s), 0);
		for (int i = 0; i < RW; i++) {
			make_window(p2, i, T0 + i * 10 * SEC, 10 * SEC);
			CHECK_EQ_INT(store__append(s, p2), 0);
		}
		store__close(s);
		profile__free(p2);
		big.rollup[1].window_ns = 0; /* one tier: 1 min after 10 min */
		CHECK_EQ_INT(store__open(&big, &s), 0);
		CHECK_EQ_INT(store__compact(s, now), 0);
		store__stats(s, &st);
		CHECK_EQ_INT(st.rollups, 0);
		CHECK_EQ_INT(count_files(dir, "roll-"), 1);
		CHECK(totals_ok(dir, &records));
		CHECK_EQ_INT(records, RW);
		/* Each merged window is written in a call of its own: 20 of them. */
		int calls = 1;
		for (; calls < 100 && !st.rollups; calls++) {
			CHECK_EQ_INT(store__compact(s, now), 0);
			store__stats(s, &st);
		}
		CHECK_EQ_INT(st.rollups, 1);
		CHECK(calls > 20);
		CHECK_EQ_INT(count_files(dir, "roll-"), 0);
		CHECK(totals_ok(dir, &records));
		CHECK_EQ_INT(records, 20 + 120);
		/* The second segment: half done when retention takes it. */
		CHECK_EQ_INT(store__compact(s, now + 600 * SEC), 0);
		CHECK_EQ_INT(count_files(dir, "roll-"), 1);
		store__close(s);
		big.max_age_ns = 60 * SEC;
		CHECK_EQ_INT(store__open(&big, &s), 0);
		CHECK_EQ_INT(store__compact(s, now + 600 * SEC), 0);
		CHECK_EQ_INT(store__retain(s, now + 600 * SEC), 0);
		CHECK_EQ_INT(compact_all(s, now + 600 * SEC), 0);
		store__close(s);
		CHECK_EQ_INT(count_files(dir, "seg-"), 0);
		CHECK_EQ_INT(count_files(dir, "roll-"), 0);
	}

	/* Rollups off: nothing happens. */
	write_rw(dir);
	struct store_opts o = roll_opts;
	o.dir = dir;
	o.writer = 1;
	o.no_rollup = 1;
	CHECK_EQ_INT(store__open(&o, &s), 0);
	CHECK_EQ_INT(compact_all(s, now), 0);
	store__close(s);
	/* Tiers out of order are refused. */
	o.no_rollup = 0;
	o.rollup[1].age_ns = 60 * SEC;
	CHECK_EQ_INT(store__open(&o, &s), -EINVAL);
}



static char *range_text(struct store *r, int64_t a, int64_t b, unsigned flags, uint64_t *decoded);

static uint64_t dir_bytes(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	uint64_t n = 0;
	char path[512];
	struct stat st;

	while (d && (de = readdir(d)))
		if (!strncmp(de->d_name, prefix, strlen(prefix))) {
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			if (!stat(path, &st))
				n += (uint64_t)st.st_size;
		}
	if (d)
		closedir(d);
	return n;
}

static uint64_t mix64(uint64_t x);

/*
 * A window whose payload is larger than a piece of a rollup record's
 * compression (32 KiB): 1,500 functions with long names, new every
 * minute, under one process per window.
 */
static void make_wide_window(struct profile *p, int i, int64_t start, int64_t len)
{
	uint32_t s_main, s_mod, s_comm, f[2], st;
	char name[96];

	profile__reset(p);
	profile__intern_str(p, "main", &s_main);
	profile__intern_str(p, "/usr/bin/wide", &s_mod);
	profile__intern_str(p, "wide", &s_comm);
	for (int k = 0; k < 1500; k++) {
		snprintf(name, sizeof(name), "wide::pass_%016llx::run(tree_node*, int)",
			 (unsigned long long)mix64((uint64_t)(k + 1500 * (i / 6))));
		uint32_t s_f;
		profile__intern_str(p, name, &s_f);
		struct pf_frame fr[2] = {
			{ .name = s_main, .module = s_mod, .offset = 0x1000, .kind = PF_FRAME_USER },
			{ .name = s_f, .module = s_mod, .offset = 0x10000 + 0x40 * (uint64_t)k, .kind = PF_FRAME_USER },
		};
		profile__frame_add(p, &fr[0], &f[0]);
		profile__frame_add(p, &fr[1], &f[1]);
		profile__stack_add(p, f, 2, &st);
		struct pf_sample x = { .pid = 100 + (uint32_t)i, .tid = 100 + (uint32_t)i, .comm = s_comm,
				       .thread = s_comm, .stack = st, .kind = PF_KIND_CPU,
				       .value = 1 + mix64((uint64_t)(i * 1500 + k)) % 5 };
		profile__add(p, &x);
	}
	set_meta(p, start, len);
}

/* Calls until rollups segments are rolled up (at most max): the calls made. */
static int compact_until_rolled(struct store *s, int64_t now, uint64_t rollups, int max)
{
	struct store_stats st;
	int calls = 0;

	do {
		if (store__compact(s, now))
			return -1;
		store__stats(s, &st);
	} while (++calls < max && st.rollups < rollups);
	return st.rollups == rollups ? calls : -1;
}

/* The bytes of dir's first file (by name) whose name starts with prefix, malloc'd. */
static uint8_t *file_bytes(const char *dir, const char *prefix, size_t *len)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[512], first[256] = "";
	uint8_t *b = NULL;
	struct stat st;

	*len = 0;
	while (d && (de = readdir(d)))
		if (!strncmp(de->d_name, prefix, strlen(prefix)) && (!first[0] || strcmp(de->d_name, first) < 0))
			snprintf(first, sizeof(first), "%s", de->d_name);
	if (d)
		closedir(d);
	if (!first[0])
		return NULL;
	snprintf(path, sizeof(path), "%s/%s", dir, first);
	FILE *f = fopen(path, "rb");
	if (f && !fstat(fileno(f), &st) && (b = malloc((size_t)st.st_size + 1)))
		*len = fread(b, 1, (size_t)st.st_size, f);
	if (f)
		fclose(f);
	return b;
}

/* A query's window, counted: what it decodes matters, not what it holds. */
static int count_read(const struct store_window_info *w, const struct profile *p, void *arg)
{
	(*(int *)arg)++;
	return 0;
}

/*
 * A rolled-up window's record is compressed in pieces over as many calls
 * as the CPU bound takes, and a record read is merged in the call after
 * the one that decoded it when the bound comes first: the segment written
 * is the same, byte for byte, whether each call does one such step or all
 * of them, also with a query on the same store between calls (it decodes
 * into the profile a merge left for the next call was to use), and reads
 * back the windows that went in.
 */
static void test_rollup_pieces(const char *base)
{
	char one[256], many[256], again[256];
	struct store *s;
	struct store_opts o = roll_opts;
	const int64_t now = T0 + RW * 10 * SEC;

	snprintf(one, sizeof(one), "%s/pieces-one", base);
	snprintf(many, sizeof(many), "%s/pieces-many", base);
	snprintf(again, sizeof(again), "%s/pieces-again", base);
	write_made(one, make_wide_window);
	write_made(many, make_wide_window);
	write_made(again, make_wide_window);
	CHECK_EQ_INT(open_store(one, 0, &s, NULL), 0);
	char *before = range_text(s, INT64_MIN, INT64_MAX, 2, NULL);
	store__close(s);
	CHECK(strcmp(before, "") != 0 && strcmp(before, "error") != 0);

	o.rollup[1].window_ns = 0; /* one tier: 1-minute windows after 10 minutes */
	o.writer = 1;
	o.warn = on_warn;
	nwarn = 0;
	/* No CPU bound: a record is compressed whole in the call that writes it. */
	o.dir = one;
	o.compact_windows = 60;
	CHECK_EQ_INT(store__open(&o, &s), 0);
	int calls_one = compact_until_rolled(s, now, 3, 1000);
	store__close(s);
	/* A bound of 1 ns: each call compresses one piece and stops. */
	o.dir = many;
	o.compact_cpu_ns = 1;
	CHECK_EQ_INT(store__open(&o, &s), 0);
	int calls_many = compact_until_rolled(s, now, 3, 20000);
	store__close(s);
	/* A bound of 1 ns and the store's first window read after every call. */
	o.dir = again;
	CHECK_EQ_INT(store__open(&o, &s), 0);
	struct store_stats st;
	int calls_again = 0, nread = 0;
	do {
		CHECK_EQ_INT(store__compact(s, now), 0);
		CHECK_EQ_INT(store__read(s, T0, T0 + 10 * SEC, count_read, &nread), 0);
		store__stats(s, &st);
	} while (++calls_again < 20000 && st.rollups < 3);
	store__close(s);
	CHECK_EQ_INT(st.rollups, 3);
	CHECK_EQ_INT(nread, calls_again);
	CHECK_EQ_INT(nwarn, 0);
	CHECK(calls_one > 0);
	/* 30 merged windows of 1,500 new names (about 60 KB of strings each): two pieces or more each. */
	CHECK(calls_many > calls_one + 30);
	CHECK_EQ_INT(count_files(many, "roll-"), 0);

	size_t n_one, n_many;
	uint8_t *b_one = file_bytes(one, "seg-", &n_one), *b_many = file_bytes(many, "seg-", &n_many);
	CHECK(b_one && b_many);
	CHECK_EQ_INT(n_one, n_many);
	CHECK(b_one && b_many && n_one == n_many && !memcmp(b_one, b_many, n_one));
	CHECK_EQ_INT(dir_bytes(one, "seg-"), dir_bytes(many, "seg-"));
	size_t n_again;
	uint8_t *b_again = file_bytes(again, "seg-", &n_again);
	CHECK(b_one && b_again && n_one == n_again && !memcmp(b_one, b_again, n_one));
	CHECK_EQ_INT(dir_bytes(one, "seg-"), dir_bytes(again, "seg-"));
	free(b_one);
	free(b_many);
	free(b_again);

	struct lvl_count c = { 0 };
	CHECK_EQ_INT(open_store(many, 0, &s, NULL), 0);
	CHECK_EQ_INT(store__list(s, INT64_MIN, INT64_MAX, on_level, &c), 0);
	char *after = range_text(s, INT64_MIN, INT64_MAX, 2, NULL);
	store__close(s);
	CHECK_EQ_INT(c.n[1], 30);
	CHECK_EQ_INT(c.windows, RW);
	CHECK(strcmp(before, after) == 0);
	free(before);
	free(after);
}

/* While a record is encoded on the store's thread: a call a millisecond, as a loop's would be. */
static int compact_waiting(struct store *s, int64_t now)
{
	struct store_stats st;
	int err = store__compact(s, now);

	for (store__stats(s, &st); !err && st.encoding; store__stats(s, &st)) {
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
		err = store__compact(s, now);
	}
	return err;
}

/*
 * Calls until the store's thread is started for a record's encoding (read
 * 0) or a summary's read of one (read 1), not picked up yet: 0, or -1.
 * Threads of the other kind are waited for, a call a millisecond.
 */
static int compact_until_thread(struct store *s, int read)
{
	struct store_stats st;

	for (int i = 0; i < 100000; i++) {
		if (store__compact(s, T0 + 3600 * SEC))
			return -1;
		store__stats(s, &st);
		if (st.encoding && (read ? st.reads_threaded : st.records_threaded))
			return 0;
		if (st.encoding)
			nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	return -1;
}

/* Calls, a millisecond apart, while the store's thread is busy: 0 once it is done, -1 if it never is. */
static int compact_while_encoding(struct store *s)
{
	struct store_stats st;

	store__stats(s, &st);
	for (int i = 0; i < 100000 && st.encoding; i++) {
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
		if (store__compact(s, T0 + 3600 * SEC))
			return -1;
		store__stats(s, &st);
	}
	return st.encoding ? -1 : 0;
}

/*
 * Calls until every sealed segment has a summary file (at most max): the
 * calls made, not counting those that found a record still being encoded.
 */
static int compact_until_summarised(struct store *s, uint64_t built, int max)
{
	struct store_stats st;
	int calls = 0;

	do {
		if (compact_waiting(s, T0 + RW * 10 * SEC))
			return -1;
		store__stats(s, &st);
	} while (++calls < max && st.summaries_built < built);
	return st.summaries_built == built ? calls : -1;
}

/*
 * A summary's records are compressed in pieces, as rolled-up windows':
 * the summary files are the same, byte for byte, whether each call
 * compresses one piece or a whole record, and queries that read them
 * answer as the segments do.
 */
static void test_summary_pieces(const char *base)
{
	char one[256], many[256];
	struct store *s;
	struct store_opts o = roll_opts;

	snprintf(one, sizeof(one), "%s/sumpieces-one", base);
	snprintf(many, sizeof(many), "%s/sumpieces-many", base);
	write_made(one, make_wide_window);
	write_made(many, make_wide_window);
	o.no_rollup = 1; /* summaries alone */
	o.writer = 1;
	o.warn = on_warn;
	nwarn = 0;
	/* No CPU bound: each record compressed whole in the call that writes it. */
	o.dir = one;
	o.compact_windows = 60;
	CHECK_EQ_INT(store__open(&o, &s), 0);
	int calls_one = compact_until_summarised(s, RW / 60, 1000);
	store__close(s);
	/*
	 * A bound of 1 ns: each call reads one record, or compresses one piece,
	 * and stops; every step in the call (no thread), so that each is counted.
	 */
	o.dir = many;
	o.compact_windows = 0;
	o.compact_cpu_ns = 1;
	o.encode_thread_min = -1;
	CHECK_EQ_INT(store__open(&o, &s), 0);
	int calls_many = compact_until_summarised(s, RW / 60, 20000);
	store__close(s);
	CHECK_EQ_INT(nwarn, 0);
	CHECK(calls_one > 0);
	/*
	 * Each segment (one 10-minute bucket: read once) is read a record a
	 * call (60 calls), and its two whole-segment records (10 minutes of
	 * 1,500 new names a minute, hundreds of KB raw each) take several
	 * pieces each: in one go they would be two calls.
	 */
	fprintf(stderr, "summary pieces: %d calls in one go, %d one piece a call\n", calls_one, calls_many);
	CHECK(calls_many > RW / 60 * (60 + 2 * 8));
	CHECK_EQ_INT(count_files(many, "roll-"), 0);
	CHECK_EQ_INT(count_files(many, "sum-"), RW / 60);
	CHECK_EQ_INT(dir_bytes(one, "sum-"), dir_bytes(many, "sum-"));
	size_t n_one, n_many;
	uint8_t *b_one = file_bytes(one, "sum-", &n_one), *b_many = file_bytes(many, "sum-", &n_many);
	CHECK(b_one && b_many && n_one == n_many && n_one > 0 && !memcmp(b_one, b_many, n_one));
	free(b_one);
	free(b_many);

	/* Whole segments: one summary record each, the answer the windows give. */
	uint64_t dec_sum = 0, dec_raw = 0;
	CHECK_EQ_INT(open_store(many, 0, &s, NULL), 0);
	char *x = range_text(s, INT64_MIN, INT64_MAX, 0, &dec_raw);
	char *y = range_text(s, INT64_MIN, INT64_MAX, STORE_READ_SUMMARIES, &dec_sum);
	char *u = range_text(s, T0 + 5 * 60 * SEC, T0 + 25 * 60 * SEC, 4, NULL);
	char *v = range_text(s, T0 + 5 * 60 * SEC, T0 + 25 * 60 * SEC, 5, NULL);
	store__close(s);
	CHECK(strcmp(x, "") != 0 && strcmp(x, "error") != 0);
	CHECK(strcmp(x, y) == 0);
	CHECK(strcmp(u, v) == 0);
	CHECK_EQ_INT(dec_raw, RW);
	CHECK_EQ_INT(dec_sum, RW / 60);
	free(x);
	free(y);
	free(u);
	free(v);
}

/*
 * A window of 6,000 stacks 8 deep, each a walk through 20,000 functions:
 * an hour's summary of 60 of them has 360,000 stacks, whose encoding takes
 * about as long as a busy 4-CPU host's hour as flushed (half a second).
 */
#define DEEP_STACKS 6000
/*
 * Window i of program prog: nstacks stacks 8 deep through 20,000
 * functions named "prog::step_NNNNN(node*)", stack k walking from seed
 * first + k, its value 1 + (k + shift) % vmod.
 */
static void make_walk_window(struct profile *p, const char *prog, int nstacks, uint64_t first, int shift,
			     int vmod, int64_t start, int64_t len)
{
	uint32_t s_mod, s_comm, f[8], st;
	char name[64];

	profile__reset(p);
	snprintf(name, sizeof(name), "/usr/bin/%s", prog);
	profile__intern_str(p, name, &s_mod);
	profile__intern_str(p, prog, &s_comm);
	for (int k = 0; k < nstacks; k++) {
		for (int d = 0; d < 8; d++) {
			uint32_t fn = (uint32_t)(mix64(((first + (uint64_t)k) << 3) + (uint64_t)d) % 20000), s_f;
			snprintf(name, sizeof(name), "%s::step_%05u(node*)", prog, fn);
			profile__intern_str(p, name, &s_f);
			struct pf_frame fr = { .name = s_f, .module = s_mod, .offset = 0x10000 + 0x40 * (uint64_t)fn,
					       .kind = PF_FRAME_USER };
			profile__frame_add(p, &fr, &f[d]);
		}
		profile__stack_add(p, f, 8, &st);
		struct pf_sample x = { .pid = 1000 + (uint32_t)(k % 16), .tid = 1000 + (uint32_t)(k % 16),
				       .comm = s_comm, .thread = s_comm, .stack = st, .kind = PF_KIND_CPU,
				       .value = 1 + (uint64_t)((k + shift) % vmod) };
		profile__add(p, &x);
	}
	set_meta(p, start, len);
}

/* 60 windows of make_walk_window() at dir, one sealed segment, chains of chain_records (0: default). */
static void write_walk(const char *dir, void (*make)(struct profile *, int, int64_t, int64_t), uint32_t chain_records)
{
	struct store_opts o = roll_opts;
	struct store *w;
	struct profile *p;

	rm_rf(dir);
	o.chain_records = chain_records;
	profile__new(&p);
	CHECK_EQ_INT(open_store(dir, 1, &w, &o), 0);
	for (int i = 0; i < 60; i++) {
		make(p, i, T0 + i * 10 * SEC, 10 * SEC);
		CHECK_EQ_INT(store__append(w, p), 0);
	}
	store__close(w);
	profile__free(p);
}

static void make_deep_window(struct profile *p, int i, int64_t start, int64_t len)
{
	make_walk_window(p, "deep", DEEP_STACKS, (uint64_t)i * DEEP_STACKS, 0, 3, start, len);
}

/* One segment of 60 deep windows, sealed, at dir. */
static void write_deep(const char *dir)
{
	write_walk(dir, make_deep_window, roll_opts.chain_records);
}

/* Records read, on-CPU value, and each frame's function number times its sample's value. */
static int deep_totals(const struct store_window_info *w, const struct profile *p, void *arg)
{
	uint64_t *t = arg;

	t[0]++;
	for (size_t i = 0; i < profile__nsamples(p); i++) {
		const struct pf_sample *x = profile__sample(p, i);
		uint32_t n;
		const uint32_t *fr = profile__stack(p, x->stack, &n);
		t[1] += x->value;
		for (uint32_t d = 0; d < n; d++)
			t[2] += x->value * (uint64_t)atoi(profile__str(p, profile__frame(p, fr[d])->name) + 11);
	}
	return 0;
}

/*
 * Builds dir's summary with threshold thread_min: the thread CPU (ns) of
 * the longest call that decoded no record (a write step), or -1. Read
 * steps merge windows into the segment's profile, bounded on their own.
 */
static int64_t summarise_timed(const char *dir, int64_t thread_min, uint64_t *threaded)
{
	struct store_opts o = roll_opts;
	struct store_stats st;
	struct store *s;
	int64_t worst = 0;

	o.dir = dir;
	o.writer = 1;
	o.no_rollup = 1;
	o.warn = on_warn;
	o.rollup_zstd_level = 1; /* the encoding is what is timed, not zstd's level 19 */
	o.encode_thread_min = thread_min;
	/* Its summary with pids passes half the default budget: kept, the encoding is what is tested. */
	o.summary_mem_max = 1ull << 40;
	if (store__open(&o, &s))
		return -1;
	store__stats(s, &st);
	for (int i = 0; i < 100000; i++) {
		struct timespec a, b;
		uint64_t decoded = st.records_decoded;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
		int err = store__compact(s, T0 + 3600 * SEC);
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
		int64_t ns = (b.tv_sec - a.tv_sec) * SEC + (b.tv_nsec - a.tv_nsec);
		store__stats(s, &st);
		if (st.records_decoded == decoded && ns > worst)
			worst = ns;
		if (err || st.summaries_built)
			break;
		if (st.encoding)
			nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	*threaded = st.records_threaded;
	store__close(s);
	return st.summaries_built == 1 ? worst : -1;
}

/*
 * A summary's whole-segment records of a big segment are encoded on the
 * store's thread: no store__compact call that writes takes 100 ms of its
 * caller's CPU where encoding in the call takes more than that (half a
 * second on a 2-CPU VM), and the file is the same, byte for byte. A writer closed
 * while a record is being encoded leaves no temporary file, and the next
 * one writes the same summary.
 */
static void test_encode_thread(const char *base)
{
	char in[256], off[256], cut[256];
	uint64_t n_in = 0, n_off = 0;

	snprintf(in, sizeof(in), "%s/enc-in", base);
	snprintf(off, sizeof(off), "%s/enc-off", base);
	snprintf(cut, sizeof(cut), "%s/enc-cut", base);
	write_deep(in);
	write_deep(off);
	write_deep(cut);
	nwarn = 0;
	int64_t worst_in = summarise_timed(in, -1, &n_in);
	int64_t worst_off = summarise_timed(off, 0, &n_off);
	fprintf(stderr, "encoding off the loop: longest write step %.1f ms CPU encoding in the call, %.1f ms with %llu "
		"records encoded on the thread\n", worst_in / 1e6, worst_off / 1e6, (unsigned long long)n_off);
	CHECK_EQ_INT(nwarn, 0);
	CHECK_EQ_INT(n_in, 0);
	CHECK_EQ_INT(n_off, 2); /* the record by name and the one with pids */
	/* The test can fail: in the call, encoding alone takes longer than the bound. */
	CHECK(worst_in > 100 * 1000000ll);
	CHECK(worst_off >= 0 && worst_off < 100 * 1000000ll);
	size_t len_in, len_off;
	uint8_t *b_in = file_bytes(in, "sum-", &len_in), *b_off = file_bytes(off, "sum-", &len_off);
	CHECK(b_in && b_off && len_in == len_off && len_in > 0 && !memcmp(b_in, b_off, len_in));
	free(b_off);

	/* Closed mid-encoding: nothing of the summary on disk; the next writer writes it whole. */
	struct store_opts o = roll_opts;
	struct store_stats st = { 0 };
	struct store *s;
	o.dir = cut;
	o.writer = 1;
	o.no_rollup = 1;
	o.warn = on_warn;
	o.rollup_zstd_level = 1;
	CHECK_EQ_INT(store__open(&o, &s), 0);
	CHECK_EQ_INT(compact_until_thread(s, 0), 0);
	store__stats(s, &st);
	CHECK_EQ_INT(st.encoding, 1);
	CHECK_EQ_INT(st.records_threaded, 1);
	store__close(s);
	CHECK_EQ_INT(count_files(cut, "roll-"), 0);
	CHECK_EQ_INT(count_files(cut, "sum-"), 0);
	uint64_t n_cut = 0;
	CHECK(summarise_timed(cut, 0, &n_cut) >= 0);
	size_t len_cut;
	uint8_t *b_cut = file_bytes(cut, "sum-", &len_cut);
	CHECK(b_in && b_cut && len_cut == len_in && !memcmp(b_in, b_cut, len_in));
	free(b_in);
	free(b_cut);

	/*
	 * Retention removing the segment mid-encoding: the call returns at once,
	 * and the summary is dropped once the thread is through (no file left).
	 */
	write_deep(cut);
	o.max_age_ns = 60 * SEC;
	CHECK_EQ_INT(store__open(&o, &s), 0);
	CHECK_EQ_INT(compact_until_thread(s, 0), 0);
	store__stats(s, &st);
	CHECK_EQ_INT(st.encoding, 1);
	CHECK_EQ_INT(st.records_threaded, 1);
	struct timespec ra, rb;
	clock_gettime(CLOCK_MONOTONIC, &ra);
	CHECK_EQ_INT(store__retain(s, T0 + 3600 * SEC), 0);
	clock_gettime(CLOCK_MONOTONIC, &rb);
	/* Not waiting for the thread: the rest of its encoding is 400 ms or more. */
	CHECK((rb.tv_sec - ra.tv_sec) * SEC + (rb.tv_nsec - ra.tv_nsec) < 250 * 1000000ll);
	CHECK_EQ_INT(count_files(cut, "seg-"), 0);
	CHECK_EQ_INT(compact_while_encoding(s), 0);
	CHECK_EQ_INT(count_files(cut, "roll-"), 0);
	store__close(s);
	CHECK_EQ_INT(count_files(cut, "sum-"), 0);

	/* The summary answers as the windows do: the same samples from one record, not 60. */
	uint64_t raw[3] = { 0 }, sum[3] = { 0 };
	CHECK_EQ_INT(open_store(off, 0, &s, NULL), 0);
	CHECK_EQ_INT(store__read_flags(s, INT64_MIN, INT64_MAX, 0, deep_totals, raw), 0);
	CHECK_EQ_INT(store__read_flags(s, INT64_MIN, INT64_MAX, STORE_READ_SUMMARIES, deep_totals, sum), 0);
	store__close(s);
	CHECK_EQ_INT(raw[0], 60);
	CHECK_EQ_INT(sum[0], 1);
	CHECK(raw[1] > 0 && raw[1] == sum[1]);
	CHECK(raw[2] > 0 && raw[2] == sum[2]);
	CHECK_EQ_INT(nwarn, 0);
}

/*
 * A window of KEYED_STACKS stacks 8 deep, the same stacks in every window
 * (only values change): a chain's key record holds every table, a few
 * hundred KB raw, and each delta after it samples alone, some tens of KB.
 */
#define KEYED_STACKS 3000
#define KEYED_THREAD_MIN 65536 /* the whole records' encodings stay in the call */
static void make_keyed_window(struct profile *p, int i, int64_t start, int64_t len)
{
	make_walk_window(p, "keyed", KEYED_STACKS, 0, i, 5, start, len);
}

/* One sealed segment of 60 keyed windows at dir, in 3 chains of 20. */
static void write_keyed(const char *dir)
{
	write_walk(dir, make_keyed_window, 20);
}

static uint64_t keyed_mem_max; /* store_opts.summary_mem_max of open_keyed's store */

static int open_keyed(const char *dir, int64_t thread_min, int64_t max_age, struct store **s)
{
	struct store_opts o = roll_opts;

	o.dir = dir;
	o.writer = 1;
	o.no_rollup = 1;
	o.warn = on_warn;
	o.rollup_zstd_level = 1;
	o.encode_thread_min = thread_min;
	o.max_age_ns = max_age;
	o.summary_mem_max = keyed_mem_max;
	return store__open(&o, s);
}

/* Calls until dir's summary is built: its reads on the thread, or UINT64_MAX when it was not built. */
static uint64_t summarise_keyed(const char *dir, int64_t thread_min, uint64_t *encoded)
{
	struct store_stats st = { 0 };
	struct store *s;

	if (open_keyed(dir, thread_min, 0, &s))
		return UINT64_MAX;
	for (int i = 0; i < 100000 && !st.summaries_built; i++) {
		if (compact_waiting(s, T0 + 3600 * SEC))
			break;
		store__stats(s, &st);
	}
	store__close(s);
	*encoded = st.records_threaded;
	return st.summaries_built == 1 ? st.reads_threaded : UINT64_MAX;
}

/*
 * A summary's first read of its segment (each chain's key holds every
 * table) is decoded and merged on the store's thread with the summary's
 * own codec: each of the segment's 60 records once, and the summary file
 * is the one built with every read in the call, byte for byte. Meanwhile a query
 * and an append through the same store answer and write as ever, close
 * waits for the read, and retention that removes the segment drops the
 * summary once the read is through.
 */
static void test_read_thread(const char *base)
{
	char in[256], th[256], mid[256], cut[256];
	uint64_t enc_in = 0, enc_th = 0;
	struct store_stats st;
	struct store *s, *r;

	snprintf(in, sizeof(in), "%s/rd-in", base);
	snprintf(th, sizeof(th), "%s/rd-th", base);
	snprintf(mid, sizeof(mid), "%s/rd-mid", base);
	snprintf(cut, sizeof(cut), "%s/rd-cut", base);
	write_keyed(in);
	write_keyed(th);
	write_keyed(mid);
	write_keyed(cut);
	nwarn = 0;
	CHECK_EQ_INT(summarise_keyed(in, -1, &enc_in), 0);
	CHECK_EQ_INT(summarise_keyed(th, KEYED_THREAD_MIN, &enc_th), 60);
	CHECK_EQ_INT(enc_in, 0);
	CHECK_EQ_INT(enc_th, 0); /* its whole records are small: the reads alone were threaded */
	size_t len_in, len_th;
	uint8_t *b_in = file_bytes(in, "sum-", &len_in), *b_th = file_bytes(th, "sum-", &len_th);
	CHECK(b_in && b_th && len_in > 0 && len_in == len_th && !memcmp(b_in, b_th, len_in));
	free(b_th);

	/* What a query over the segment answers: from the store summarised in the call. */
	CHECK_EQ_INT(open_store(in, 0, &r, NULL), 0);
	char *want = range_text(r, INT64_MIN, INT64_MAX, 0, NULL);
	char *want_sum = range_text(r, INT64_MIN, INT64_MAX, STORE_READ_SUMMARIES, NULL);
	store__close(r);
	CHECK(strcmp(want, want_sum) == 0);

	/* A query and an append mid-read, through the writer's store. */
	CHECK_EQ_INT(open_keyed(mid, KEYED_THREAD_MIN, 0, &s), 0);
	CHECK_EQ_INT(compact_until_thread(s, 1), 0);
	store__stats(s, &st);
	CHECK_EQ_INT(st.encoding, 1);
	char *got = range_text(s, INT64_MIN, INT64_MAX, 0, NULL);
	CHECK(strcmp(want, got) == 0);
	free(got);
	struct profile *p;
	profile__new(&p);
	make_keyed_window(p, 60, T0 + 600 * SEC, 10 * SEC);
	CHECK_EQ_INT(store__append(s, p), 0);
	profile__free(p);
	for (int i = 0; i < 100000 && !st.summaries_built; i++) {
		CHECK_EQ_INT(compact_waiting(s, T0 + 3600 * SEC), 0);
		store__stats(s, &st);
	}
	CHECK_EQ_INT(st.summaries_built, 1);
	CHECK_EQ_INT(st.reads_threaded, 60);
	got = range_text(s, INT64_MIN, T0 + 600 * SEC, STORE_READ_SUMMARIES, NULL);
	CHECK(strcmp(want, got) == 0);
	free(got);
	store__close(s);
	size_t len_mid;
	uint8_t *b_mid = file_bytes(mid, "sum-", &len_mid);
	CHECK(b_in && b_mid && len_mid == len_in && !memcmp(b_in, b_mid, len_in));
	free(b_mid);

	/* Closed mid-read: it waits for the thread, and leaves nothing of the summary. */
	CHECK_EQ_INT(open_keyed(cut, KEYED_THREAD_MIN, 0, &s), 0);
	CHECK_EQ_INT(compact_until_thread(s, 1), 0);
	store__stats(s, &st);
	CHECK_EQ_INT(st.encoding, 1);
	store__close(s);
	CHECK_EQ_INT(count_files(cut, "roll-"), 0);
	CHECK_EQ_INT(count_files(cut, "sum-"), 0);
	/* The same with a budget the first read passes: the thread frees the profile with pids it drops. */
	keyed_mem_max = 1;
	CHECK_EQ_INT(open_keyed(cut, KEYED_THREAD_MIN, 0, &s), 0);
	CHECK_EQ_INT(compact_until_thread(s, 1), 0);
	store__close(s);
	keyed_mem_max = 0;
	CHECK_EQ_INT(count_files(cut, "roll-"), 0);
	CHECK_EQ_INT(count_files(cut, "sum-"), 0);

	/* Retention removing the segment mid-read: the summary is dropped once the thread is through. */
	CHECK_EQ_INT(open_keyed(cut, KEYED_THREAD_MIN, 60 * SEC, &s), 0);
	CHECK_EQ_INT(compact_until_thread(s, 1), 0);
	CHECK_EQ_INT(store__retain(s, T0 + 3600 * SEC), 0);
	CHECK_EQ_INT(count_files(cut, "seg-"), 0);
	CHECK_EQ_INT(compact_while_encoding(s), 0);
	CHECK_EQ_INT(count_files(cut, "roll-"), 0);
	for (int i = 0; i < 10; i++)
		CHECK_EQ_INT(store__compact(s, T0 + 3600 * SEC), 0);
	store__close(s);
	CHECK_EQ_INT(count_files(cut, "sum-"), 0);
	CHECK_EQ_INT(nwarn, 0);
	free(b_in);
	free(want);
	free(want_sum);
}

/* Answers by function and name over the store and ranges on rolled-up window edges. */
static char *named_answers(const char *dir)
{
	static const int64_t cuts[][2] = { { 0, RW }, { 0, 60 }, { 60, 180 }, { 150, 180 }, { 90, RW } };
	struct store *r;
	char *all = strdup("");

	if (open_store(dir, 0, &r, NULL))
		return all;
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		int64_t a = T0 + cuts[i][0] * 10 * SEC, b = T0 + cuts[i][1] * 10 * SEC;
		char *x = range_text(r, a, b, 0, NULL), *y = range_text(r, a, b, 2, NULL);
		size_t n = strlen(all) + strlen(x) + strlen(y) + 2;
		char *t = malloc(n);
		snprintf(t, n, "%s%s|%s|", all, x, y);
		free(all);
		free(x);
		free(y);
		all = t;
	}
	store__close(r);
	return all;
}

struct pid_seen {
	uint64_t with_pid, records, named;
};

static int on_pid(const struct store_window_info *w, const struct profile *p, void *arg)
{
	struct pid_seen *ps = arg;
	ps->records++;
	for (size_t i = 0; i < profile__nsamples(p); i++)
		ps->with_pid += profile__sample(p, i)->pid != 0;
	return 0;
}

/* splitmix64's finalizer: a fixed, well-spread hash. */
static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/*
 * A busy window: 50 processes, new every window, each at its own pc in one
 * of 10 functions, the pcs spread over the function as sampled pcs are
 * (a fixed hash: the same bytes every run), not in equal steps.
 */
static void make_busy_window(struct profile *p, int i, int64_t start, int64_t len)
{
	uint32_t s_main, s_mod, s_comm[2], f[2], st, s_f;
	char name[32];

	profile__reset(p);
	profile__intern_str(p, "main", &s_main);
	profile__intern_str(p, "/usr/bin/cc1", &s_mod);
	profile__intern_str(p, "cc1", &s_comm[0]);
	profile__intern_str(p, "as", &s_comm[1]);
	for (int k = 0; k < 50; k++) {
		snprintf(name, sizeof(name), "pass_%d", k % 10);
		profile__intern_str(p, name, &s_f);
		struct pf_frame fr[2] = {
			{ .name = s_main, .module = s_mod, .offset = 0x1000, .kind = PF_FRAME_USER },
			{ .name = s_f, .module = s_mod,
			  .offset = 0x20000 + (mix64((uint64_t)(i * 50 + k)) >> 44),
			  .kind = PF_FRAME_USER },
		};
		profile__frame_add(p, &fr[0], &f[0]);
		profile__frame_add(p, &fr[1], &f[1]);
		profile__stack_add(p, f, 2, &st);
		struct pf_sample x = { .pid = 1000 + (uint32_t)(i * 50 + k), .comm = s_comm[k % 2],
				       .thread = s_comm[k % 2], .stack = st, .kind = PF_KIND_CPU, .value = 1 };
		x.tid = x.pid;
		profile__add(p, &x);
	}
	set_meta(p, start, len);
}

/* Bytes of segments after every rollup is done, named from named_age on. */
static uint64_t busy_rolled(const char *dir, int64_t named_age)
{
	struct store *w;
	struct profile *p;
	struct store_opts o = roll_opts;

	rm_rf(dir);
	o.dir = dir;
	o.writer = 1;
	o.named_age_ns = named_age;
	profile__new(&p);
	if (store__open(&o, &w))
		return 0;
	for (int i = 0; i < RW; i++) {
		make_busy_window(p, i, T0 + i * 10 * SEC, 10 * SEC);
		store__append(w, p);
	}
	profile__free(p);
	/* Reopened: the last segment is sealed too, and rolled up with the others. */
	store__close(w);
	if (store__open(&o, &w))
		return 0;
	for (int i = 0; i < 400; i++)
		store__compact(w, T0 + RW * 10 * SEC + 3600 * SEC);
	store__close(w);
	return dir_bytes(dir, "seg-");
}

/*
 * Rollups old enough to be named keep what summaries keep: the answers by
 * function and process name are those of the windows as flushed, the
 * store is smaller, and pids are gone from those windows only.
 */
static void test_named_rollup(const char *base)
{
	char dir[256];
	struct store *s;
	struct store_opts o = roll_opts;
	const int64_t now = T0 + RW * 10 * SEC;
	struct pid_seen ps = { 0 };

	snprintf(dir, sizeof(dir), "%s/named", base);
	write_rw(dir);
	char *before = named_answers(dir);
	CHECK(strcmp(before, "") != 0 && !strstr(before, "error"));

	/* Lossless rollups of the same windows, for their size. */
	CHECK_EQ_INT(open_roller(dir, &s, NULL, NULL), 0);
	CHECK_EQ_INT(compact_all(s, now), 3);
	store__close(s);
	uint64_t lossless = dir_bytes(dir, "seg-");

	write_rw(dir);
	o.dir = dir;
	o.writer = 1;
	o.warn = on_warn;
	o.named_age_ns = 1200 * SEC; /* the second tier only */
	nwarn = 0;
	CHECK_EQ_INT(store__open(&o, &s), 0);
	CHECK_EQ_INT(compact_all(s, now), 3);
	store__close(s);
	CHECK_EQ_INT(nwarn, 0);
	char *after = named_answers(dir);
	CHECK(strcmp(before, after) == 0);
	free(after);
	fprintf(stderr, "named rollups: %llu bytes of segments, lossless %llu\n",
		(unsigned long long)dir_bytes(dir, "seg-"), (unsigned long long)lossless);
	CHECK(dir_bytes(dir, "seg-") < lossless);
	/* Segments 0-1 (tier 2) hold no pids; segment 2 (tier 1) and 3 keep theirs. */
	CHECK_EQ_INT(open_store(dir, 0, &s, NULL), 0);
	CHECK_EQ_INT(store__read(s, INT64_MIN, T0 + 1200 * SEC, on_pid, &ps), 0);
	CHECK_EQ_INT(ps.with_pid, 0);
	CHECK_EQ_INT(ps.records, 4);
	memset(&ps, 0, sizeof(ps));
	CHECK_EQ_INT(store__read(s, T0 + 1200 * SEC, INT64_MAX, on_pid, &ps), 0);
	CHECK_EQ_INT(ps.with_pid, 2 * 120);
	store__close(s);

	/* Lossless segments move on to a named tier when it is due, and so would rolled ones. */
	uint64_t sum_before = dir_bytes(dir, "sum-");
	CHECK(sum_before > 0);
	CHECK_EQ_INT(store__open(&o, &s), 0);
	CHECK_EQ_INT(compact_all(s, now + 3600 * SEC), 2);
	store__close(s);
	after = named_answers(dir);
	CHECK(strcmp(before, after) == 0);
	free(after);
	memset(&ps, 0, sizeof(ps));
	CHECK_EQ_INT(open_store(dir, 0, &s, NULL), 0);
	CHECK_EQ_INT(store__read(s, INT64_MIN, INT64_MAX, on_pid, &ps), 0);
	CHECK_EQ_INT(ps.with_pid, 0);
	/* A query by pid does not read windows that hold no pids. */
	uint64_t decoded = 1;
	char *t = range_text(s, INT64_MIN, INT64_MAX, 4, &decoded);
	CHECK_EQ_INT(decoded, 0);
	CHECK(strcmp(t, "") == 0);
	free(t);
	store__close(s);

	/* kill -9 at each step of a named rollup: the same answers, before and after the next start. */
	for (int step = STORE_CRASH_ROLL_WRITING; step <= STORE_CRASH_ROLL_RENAMED; step++) {
		write_rw(dir);
		CHECK_EQ_INT(store__open(&o, &s), 0); /* summaries first: a named rollup replaces them */
		compact_all(s, T0 + 700 * SEC);
		store__close(s);
		CHECK(killed_compacting(&o, step, now));
		after = named_answers(dir);
		CHECK(strcmp(before, after) == 0);
		free(after);
		finish_rollups(&o, dir, now);
		after = named_answers(dir);
		CHECK(strcmp(before, after) == 0);
		free(after);
	}
	free(before);

	/*
	 * Where processes come and go and pcs vary inside functions (a build
	 * host), named windows take a fraction of the bytes: the size goal's
	 * lever, checked on data that cannot vary between runs.
	 */
	uint64_t busy_lossless = busy_rolled(dir, -1), busy_named = busy_rolled(dir, 600 * SEC);
	fprintf(stderr, "busy store rolled up: %llu bytes lossless, %llu named\n",
		(unsigned long long)busy_lossless, (unsigned long long)busy_named);
	CHECK(busy_named > 0 && busy_named * 4 < busy_lossless);
}

/* ---- summaries ---- */

#define SW 180 /* 3 h of 60 s windows: six segments of 30 min */

static int merge_by_name(const struct store_window_info *w, const struct profile *p, void *arg)
{
	return profile__merge_flags(arg, p, NULL, NULL, PF_MERGE_BY_FUNCTION | PF_MERGE_BY_NAME);
}

static int merge_no_thread(const struct store_window_info *w, const struct profile *p, void *arg)
{
	return profile__merge_flags(arg, p, NULL, NULL, PF_MERGE_BY_FUNCTION | PF_MERGE_BY_NAME | PF_MERGE_NO_THREAD);
}

static int cmp_strp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A profile as sorted lines of labels, frames and value: the same text, the same answer. */
static char *profile_text(const struct profile *p)
{
	size_t n = profile__nsamples(p), len = 1;
	char **lines = calloc(n + 1, sizeof(*lines)), *out;

	for (size_t i = 0; i < n; i++) {
		const struct pf_sample *x = profile__sample(p, i);
		char buf[4096];
		int k = snprintf(buf, sizeof(buf), "%u %u %u %s %s %s", x->pid, x->tid, x->kind,
				 profile__str(p, x->comm), profile__str(p, x->thread), profile__str(p, x->cgroup));
		uint32_t nf;
		const uint32_t *f = profile__stack(p, x->stack, &nf);
		for (uint32_t j = 0; j < nf && k < 3500; j++) {
			const struct pf_frame *fr = profile__frame(p, f[j]);
			k += snprintf(buf + k, sizeof(buf) - (size_t)k, ";%s:%s:%llx:%u", profile__str(p, fr->module),
				      profile__str(p, fr->name), (unsigned long long)fr->offset, fr->kind);
		}
		snprintf(buf + k, sizeof(buf) - (size_t)k, " %llu\n", (unsigned long long)x->value);
		lines[i] = strdup(buf);
		len += strlen(buf);
	}
	qsort(lines, n, sizeof(*lines), cmp_strp);
	out = calloc(1, len);
	/* Appended at a running end: strcat from the start is quadratic in a wide profile's lines. */
	for (size_t i = 0, at = 0; i < n; i++) {
		size_t l = strlen(lines[i]);
		memcpy(out + at, lines[i], l);
		at += l;
		free(lines[i]);
	}
	free(lines);
	return out;
}

static int merge_by_func(const struct store_window_info *w, const struct profile *p, void *arg)
{
	return profile__merge_flags(arg, p, NULL, NULL, PF_MERGE_BY_FUNCTION);
}

/*
 * A window of a stripped compiler: its frames under main have no symbol
 * and a pc of their own each window, in cc1 and in libc; write() is named,
 * the kernel frame has no module. pid and pcs change every window.
 */
static void make_stripped_window(struct profile *p, int i, int64_t start, int64_t len)
{
	uint32_t s_main, s_write, s_cc1, s_libc, s_comm, f[6], st;

	profile__reset(p);
	profile__intern_str(p, "main", &s_main);
	profile__intern_str(p, "write", &s_write);
	profile__intern_str(p, "/usr/libexec/gcc/x86_64-linux-gnu/13/cc1", &s_cc1);
	profile__intern_str(p, "/usr/lib/x86_64-linux-gnu/libc.so.6", &s_libc);
	profile__intern_str(p, "cc1", &s_comm);
	struct pf_frame fr[6] = {
		{ .name = s_main, .module = s_cc1, .offset = 0x1000 + (uint64_t)i % 3, .kind = PF_FRAME_USER },
		{ .module = s_cc1, .offset = 0x50000 + (uint64_t)i * 8, .kind = PF_FRAME_USER },
		{ .module = s_cc1, .offset = 0x60000 + (uint64_t)i * 8, .kind = PF_FRAME_USER },
		{ .module = s_libc, .offset = 0x2000 + (uint64_t)i, .kind = PF_FRAME_USER },
		{ .name = s_write, .module = s_libc, .offset = 0x3000, .kind = PF_FRAME_USER },
		{ .offset = 0xffffffff81000000ull + (uint64_t)i, .kind = PF_FRAME_KERNEL },
	};
	for (int k = 0; k < 6; k++)
		profile__frame_add(p, &fr[k], &f[k]);
	profile__stack_add(p, f, 6, &st);
	struct pf_sample x = { .pid = 3000 + (uint32_t)i, .tid = 3000 + (uint32_t)i, .comm = s_comm,
			       .thread = s_comm, .stack = st, .kind = PF_KIND_CPU, .value = 5 };
	profile__add(p, &x);
	x.kind = PF_KIND_RUNQ;
	x.value = 2000000;
	profile__add(p, &x);
	/* A stack of named frames only, as in the other tests: kept as it is. */
	profile__stack_add(p, f, 1, &st);
	x.stack = st;
	x.kind = PF_KIND_CPU;
	x.value = 1;
	profile__add(p, &x);
	set_meta(p, start, len);
}

static void write_stripped(const char *dir)
{
	write_made(dir, make_stripped_window);
}

/* What a view prints of the store over [a, b), by name: labels "frame;frame value kind" per stack. */
struct folded_seen {
	uint64_t by_kind[PF_KIND_MAX];
	uint64_t unnamed;     /* frames without a name in the answer */
	uint64_t module_cpu;  /* on-CPU value of main;[cc1];[libc.so.6];write;[unknown]_[k] */
	uint64_t module_runq; /* the same for run-queue time */
	uint64_t main_cpu;    /* on-CPU value of the stack "main" alone */
};

static void see_folded(const struct profile *p, struct folded_seen *fs)
{
	memset(fs, 0, sizeof(*fs));
	for (size_t i = 0; i < profile__nframes(p); i++)
		fs->unnamed += !*profile__str(p, profile__frame(p, (uint32_t)i)->name);
	for (size_t i = 0; i < profile__nsamples(p); i++) {
		const struct pf_sample *x = profile__sample(p, i);
		char line[1024] = "", label[256];
		uint32_t n;
		const uint32_t *f = profile__stack(p, x->stack, &n);

		fs->by_kind[x->kind] += x->value;
		for (uint32_t k = 0; k < n; k++) {
			fold__frame_label(p, f[k], label, sizeof(label));
			snprintf(line + strlen(line), sizeof(line) - strlen(line), "%s%s", k ? ";" : "", label);
		}
		if (!strcmp(line, "main;[cc1];[libc.so.6];write;[unknown]_[k]"))
			*(x->kind == PF_KIND_CPU ? &fs->module_cpu : &fs->module_runq) += x->value;
		if (!strcmp(line, "main") && x->kind == PF_KIND_CPU)
			fs->main_cpu += x->value;
	}
}

static int read_folded(const char *dir, int64_t a, int64_t b, unsigned flags, struct folded_seen *fs)
{
	struct store *r;
	struct profile *p;
	int err;

	if ((err = open_store(dir, 0, &r, NULL)))
		return err;
	profile__new(&p);
	err = store__read_flags(r, a, b, flags, merge_by_name, p);
	see_folded(p, fs);
	profile__free(p);
	store__close(r);
	return err;
}

/*
 * A window with one hot stack and a tail: five stacks under main;grow seen
 * once each (a name of their own every window) and a stack of its own root
 * seen once, on-CPU and in the run queue.
 */
static void make_tail_window(struct profile *p, int i, int64_t start, int64_t len)
{
	uint32_t s_mod, s_comm, s_name, f[4], st;
	char name[32];

	profile__reset(p);
	profile__intern_str(p, "/usr/bin/tailwork", &s_mod);
	profile__intern_str(p, "tailwork", &s_comm);
	struct pf_sample x = { .pid = 4000 + (uint32_t)i, .tid = 4000 + (uint32_t)i, .comm = s_comm,
			       .thread = s_comm, .kind = PF_KIND_CPU };
	static const char *const hot[] = { "main", "work" }, *const grow[] = { "main", "grow" };
	for (int k = 0; k < 2; k++) {
		profile__intern_str(p, hot[k], &s_name);
		profile__frame_add(p, &(struct pf_frame){ .name = s_name, .module = s_mod, .offset = 16u * k }, &f[k]);
	}
	profile__stack_add(p, f, 2, &x.stack);
	x.value = 20000;
	profile__add(p, &x);
	x.kind = PF_KIND_RUNQ;
	x.value = 1000000;
	profile__add(p, &x);
	profile__intern_str(p, grow[1], &s_name);
	profile__frame_add(p, &(struct pf_frame){ .name = s_name, .module = s_mod, .offset = 64 }, &f[1]);
	profile__intern_str(p, "leaf", &s_name);
	profile__frame_add(p, &(struct pf_frame){ .name = s_name, .module = s_mod, .offset = 256 }, &f[3]);
	for (int k = 0; k < 6; k++) {
		snprintf(name, sizeof(name), k < 5 ? "mid%d" : "lonely%d", i * 5 + k);
		profile__intern_str(p, name, &s_name);
		profile__frame_add(p, &(struct pf_frame){ .name = s_name, .module = s_mod, .offset = 128 }, &f[2]);
		if (k < 5)
			profile__stack_add(p, f, 4, &st);
		else
			profile__stack_add(p, &f[2], 1, &st);
		x.stack = st;
		x.kind = k == 4 ? PF_KIND_RUNQ : PF_KIND_CPU;
		x.value = 1;
		profile__add(p, &x);
	}
	set_meta(p, start, len);
}

/* What the store says over [a, b) by name: values by kind, and of a few lines. */
struct tail_seen {
	uint64_t by_kind[PF_KIND_MAX];
	uint64_t hot_cpu;       /* main;work */
	uint64_t leaf_cpu;      /* main;grow;[folded];leaf */
	uint64_t lonely_cpu;    /* a lonely root alone */
	uint64_t tail_lines;    /* lines with a mid or lonely frame */
	uint64_t marker_frames; /* "[folded]" frames in one stack, at most */
};

static int read_tail(const char *dir, int64_t a, int64_t b, struct tail_seen *ts)
{
	struct store *r;
	struct profile *p;
	int err;

	memset(ts, 0, sizeof(*ts));
	if ((err = open_store(dir, 0, &r, NULL)))
		return err;
	profile__new(&p);
	err = store__read_flags(r, a, b, 0, merge_by_name, p);
	for (size_t i = 0; i < profile__nsamples(p); i++) {
		const struct pf_sample *x = profile__sample(p, i);
		char line[1024] = "", label[256];
		uint32_t n, markers = 0;
		const uint32_t *f = profile__stack(p, x->stack, &n);

		ts->by_kind[x->kind] += x->value;
		for (uint32_t k = 0; k < n; k++) {
			fold__frame_label(p, f[k], label, sizeof(label));
			markers += !strcmp(label, "[folded]");
			snprintf(line + strlen(line), sizeof(line) - strlen(line), "%s%s", k ? ";" : "", label);
		}
		if (markers > ts->marker_frames)
			ts->marker_frames = markers;
		ts->tail_lines += strstr(line, "mid") || strstr(line, "lonely");
		if (x->kind != PF_KIND_CPU)
			continue;
		ts->hot_cpu += !strcmp(line, "main;work") ? x->value : 0;
		ts->leaf_cpu += !strcmp(line, "main;grow;[folded];leaf") ? x->value : 0;
		ts->lonely_cpu += n == 1 && !strncmp(line, "lonely", 6) ? x->value : 0;
	}
	profile__free(p);
	store__close(r);
	return err;
}

/*
 * Named windows fold the frames between each entry's leaf and its deepest
 * caller that carries 1/10000 of its kind's total into one "[folded]"
 * frame: a user sees main;grow;[folded];leaf where stacks seen once through
 * main;grow;midN;leaf were, so leaf's self time is whole; a root seen once
 * has nothing between and stays; the hot stack and every total stay, and a
 * store that folds nothing keeps every stack.
 */
static void test_named_tail(const char *base)
{
	char dir[256];
	struct store *s;
	struct store_opts o = roll_opts;
	const int64_t now = T0 + RW * 10 * SEC, named_end = T0 + 1800 * SEC;
	struct tail_seen raw, named, young;

	snprintf(dir, sizeof(dir), "%s/tail", base);
	write_made(dir, make_tail_window);
	CHECK_EQ_INT(read_tail(dir, INT64_MIN, INT64_MAX, &raw), 0);
	CHECK_EQ_INT(raw.tail_lines, RW * 6);
	CHECK_EQ_INT(raw.leaf_cpu, 0);
	CHECK_EQ_INT(raw.lonely_cpu, RW);
	o.dir = dir;
	o.writer = 1;
	o.warn = on_warn;
	o.named_age_ns = 600 * SEC; /* both tiers */
	nwarn = 0;
	CHECK_EQ_INT(store__open(&o, &s), 0);
	CHECK_EQ_INT(compact_all(s, now), 3);
	struct store_stats st;
	store__stats(s, &st);
	store__close(s);
	CHECK_EQ_INT(nwarn, 0);
	/* Segments 0-2 (180 windows) are named, in 300 s windows of the second tier. */
	CHECK_EQ_INT(read_tail(dir, INT64_MIN, named_end, &named), 0);
	CHECK_EQ_INT(named.tail_lines, 180); /* the lonely roots */
	CHECK_EQ_INT(named.hot_cpu, 180 * 20000);
	CHECK_EQ_INT(named.leaf_cpu, 180 * 4);
	CHECK_EQ_INT(named.lonely_cpu, 180);
	CHECK_EQ_INT(named.marker_frames, 1);
	CHECK_EQ_INT(st.cpu_folded, 180 * 4); /* each segment straight to the second tier */
	CHECK_EQ_INT(read_tail(dir, named_end, INT64_MAX, &young), 0);
	CHECK_EQ_INT(young.tail_lines, 60 * 6);
	CHECK_EQ_INT(read_tail(dir, INT64_MIN, INT64_MAX, &named), 0);
	for (int k = 0; k < PF_KIND_MAX; k++)
		CHECK_EQ_INT(named.by_kind[k], raw.by_kind[k]);

	write_made(dir, make_tail_window);
	o.fold_share = -1;
	CHECK_EQ_INT(store__open(&o, &s), 0);
	CHECK_EQ_INT(compact_all(s, now), 3);
	store__close(s);
	CHECK_EQ_INT(read_tail(dir, INT64_MIN, INT64_MAX, &named), 0);
	CHECK_EQ_INT(named.tail_lines, RW * 6);
	CHECK_EQ_INT(named.marker_frames, 0);
	for (int k = 0; k < PF_KIND_MAX; k++)
		CHECK_EQ_INT(named.by_kind[k], raw.by_kind[k]);
}

/*
 * Windows whose folded lines join what a merge by function keeps apart:
 * one function in two files, unnamed pcs of no known file, two cgroups,
 * pids; new pcs every window, so that deltas define frames and stacks.
 */
static void make_label_window(struct profile *p, int i, int64_t start, int64_t len)
{
	static const char *const mods[] = { "/usr/bin/app", "/usr/lib/libapp.so" };
	static const char *const cgs[] = { "/a.slice/x.service", "/b.slice/y.service" };
	static const char *const comms[] = { "app", "worker" };
	uint32_t fr[5], st, id;

	profile__reset(p);
	for (int k = 0; k < 24; k++) {
		struct pf_frame f[5] = {
			{ .kind = PF_FRAME_USER, .offset = 0x100 },
			{ .kind = PF_FRAME_USER, .offset = 0x2000 + 16 * (uint64_t)((i + k) % 7) },
			{ .kind = PF_FRAME_USER, .offset = 0x7f0000 + 8 * (uint64_t)((i * 3 + k) % 11) },
			{ .kind = PF_FRAME_USER, .offset = 0x500 + 4 * (uint64_t)(k % 5) },
			{ .kind = PF_FRAME_KERNEL, .offset = 0x40 },
		};
		uint32_t n = 3 + (uint32_t)(k % 3);

		profile__intern_str(p, "main", &f[0].name);
		profile__intern_str(p, mods[k % 2], &f[0].module);
		profile__intern_str(p, "work", &f[1].name);
		profile__intern_str(p, mods[(k / 2) % 2], &f[1].module);
		profile__intern_str(p, mods[1], &f[3].module);
		profile__intern_str(p, "do_syscall_64", &f[4].name);
		for (uint32_t j = 0; j < n; j++)
			profile__frame_add(p, &f[j], &fr[j]);
		profile__stack_add(p, fr, n, &st);
		for (int c = 0; c < 2; c++) {
			struct pf_sample x = { .pid = 100 + (uint32_t)(k % 4), .stack = st,
					       .kind = (k + c) % 3 ? PF_KIND_CPU : PF_KIND_OFFCPU,
					       .value = 1 + (uint64_t)((i + k + c) % 5) * 1000 };

			x.tid = x.pid + (uint32_t)c;
			profile__intern_str(p, comms[k % 2], &x.comm);
			profile__intern_str(p, c ? "io" : comms[k % 2], &x.thread);
			profile__intern_str(p, cgs[(k / 3 + c) % 2], &x.cgroup);
			profile__add(p, &x);
		}
	}
	profile__intern_str(p, "host", &id);
	set_meta(p, start, len)->host = id;
}

static char *written(const struct query *q, const struct profile *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CHECK(f && fold__write(q, c, f) == 0);
	fclose(f);
	return buf;
}

/*
 * A merge by label (what profctl's folded views read) prints what the
 * collapse of a merge by function prints, line for line, for a range
 * that starts inside a chain or at a key, with the filters those views
 * merge by label with; and it holds as many samples as that collapse,
 * fewer samples and frames than the merge by function.
 */
static void test_merge_by_label(const char *base)
{
	char dir[256];
	struct store *r;
	const int64_t ranges[][2] = { { T0 + 35 * 10 * SEC, T0 + 65 * 10 * SEC },
				      { T0 + 60 * 10 * SEC, T0 + 70 * 10 * SEC },
				      { INT64_MIN, INT64_MAX } };
	int joined = 0;

	snprintf(dir, sizeof(dir), "%s/label", base);
	write_made(dir, make_label_window);
	CHECK_EQ_INT(open_store(dir, 0, &r, NULL), 0);
	for (size_t g = 0; g < sizeof(ranges) / sizeof(ranges[0]); g++)
		for (int v = 0; v < 8; v++) {
			struct query q = { .type = v & 1 ? QUERY_OFFCPU : QUERY_CPU, .threads = !!(v & 2),
					   .cgroup = v & 4 ? "/a.slice" : NULL };
			unsigned fl = PF_MERGE_BY_FUNCTION | PF_MERGE_BY_NAME | (q.threads ? 0 : PF_MERGE_NO_THREAD);
			struct profile *m, *c, *l;
			char *want, *got;

			CHECK(profile__new(&m) == 0 && profile__new(&c) == 0 && profile__new(&l) == 0);
			CHECK_EQ_INT(store__merge(r, ranges[g][0], ranges[g][1], fl, query__keep, &q, m), 0);
			CHECK_EQ_INT(fold__collapse(&q, m, c), 0);
			CHECK_EQ_INT(store__merge(r, ranges[g][0], ranges[g][1],
						  fl | PF_MERGE_BY_LABEL | PF_MERGE_NO_CGROUP, query__keep, &q, l), 0);
			want = written(&q, c);
			got = written(&q, l);
			CHECK(profile__nsamples(c) > 1);
			CHECK_EQ_STR(got, want);
			CHECK_EQ_INT(profile__nsamples(l), profile__nsamples(c));
			joined += profile__nsamples(l) < profile__nsamples(m) && profile__nframes(l) < profile__nframes(m);
			free(want);
			free(got);
			profile__free(m);
			profile__free(c);
			profile__free(l);
		}
	CHECK_EQ_INT(joined, 3 * 8);
	store__close(r);
}

/* The diff view between [a, b) and [b, c): raw before and after of one folded line. */
static int diff_line_of(const char *dir, int64_t a, int64_t b, int64_t c, const char *want, uint64_t *before,
			uint64_t *after)
{
	struct store *r;
	struct profile *m[2], *col[2];
	struct query q = { .type = QUERY_CPU };
	struct diff *d = NULL;
	int err;

	*before = *after = 0;
	if ((err = open_store(dir, 0, &r, NULL)))
		return err;
	for (int k = 0; k < 2; k++) {
		profile__new(&m[k]);
		profile__new(&col[k]);
		q.since_ns = k ? b : a;
		q.until_ns = k ? c : b;
		if (!err)
			err = store__merge(r, q.since_ns, q.until_ns, PF_MERGE_BY_FUNCTION | PF_MERGE_BY_NAME,
					   query__keep, &q, m[k]);
		if (!err)
			err = fold__collapse(&q, m[k], col[k]);
	}
	if (!err)
		err = diff__new(&q, col[0], col[1], &d);
	for (size_t i = 0; !err && i < diff__count(d); i++) {
		const struct diff_line *l = diff__line(d, i);
		const char *stack = diff__stack(d, i);
		if (!stack) {
			err = -ENOMEM;
			break;
		}
		if (!strcmp(stack, want)) {
			*before += l->raw_base;
			*after += l->value;
		}
	}
	diff__free(d);
	for (int k = 0; k < 2; k++) {
		profile__free(m[k]);
		profile__free(col[k]);
	}
	store__close(r);
	return err;
}

/*
 * Named windows fold unnamed frames into their module, one frame for each
 * run of them: what a user sees there is "[cc1]" and "[libc.so.6]" under
 * main, with all the time of the pcs they stood for; named frames and
 * totals stay, rolling up again changes nothing, and a kill -9 at each
 * step leaves the same answers.
 */
static void test_named_modules(const char *base)
{
	char dir[256];
	struct store *s;
	struct store_opts o = roll_opts;
	const int64_t now = T0 + RW * 10 * SEC;
	struct folded_seen raw, named, sum, part;

	snprintf(dir, sizeof(dir), "%s/stripped", base);
	write_stripped(dir);
	CHECK_EQ_INT(read_folded(dir, INT64_MIN, INT64_MAX, 0, &raw), 0);
	CHECK(raw.unnamed > 0 && raw.module_cpu == 0);
	CHECK_EQ_INT(raw.by_kind[PF_KIND_CPU], RW * 6);
	uint64_t lossless_bytes;
	/* Every segment rolled up by both tiers, keeping pcs, for their size. */
	CHECK_EQ_INT(open_roller(dir, &s, NULL, NULL), 0);
	CHECK(compact_all(s, now + 3600 * SEC) >= 4);
	store__close(s);
	lossless_bytes = dir_bytes(dir, "seg-");

	write_stripped(dir);
	o.dir = dir;
	o.writer = 1;
	o.warn = on_warn;
	o.named_age_ns = 600 * SEC; /* both tiers */
	nwarn = 0;
	CHECK_EQ_INT(store__open(&o, &s), 0);
	CHECK_EQ_INT(compact_all(s, now), 3);
	store__close(s);
	CHECK_EQ_INT(nwarn, 0);
	/* Segments 0-2 are named (the fourth is young): 180 windows folded, 60 as flushed. */
	CHECK_EQ_INT(read_folded(dir, INT64_MIN, T0 + 1800 * SEC, 0, &named), 0);
	CHECK_EQ_INT(named.unnamed, 0);
	CHECK_EQ_INT(named.module_cpu, 180 * 5);
	CHECK_EQ_INT(named.module_runq, 180 * 2000000ull);
	CHECK_EQ_INT(named.main_cpu, 180);
	CHECK_EQ_INT(named.by_kind[PF_KIND_CPU], 180 * 6);
	CHECK_EQ_INT(read_folded(dir, INT64_MIN, INT64_MAX, 0, &named), 0);
	CHECK_EQ_INT(named.by_kind[PF_KIND_CPU], raw.by_kind[PF_KIND_CPU]);
	CHECK_EQ_INT(named.by_kind[PF_KIND_RUNQ], raw.by_kind[PF_KIND_RUNQ]);
	/* The young segment keeps its pcs. */
	CHECK_EQ_INT(read_folded(dir, T0 + 1800 * SEC, INT64_MAX, 0, &part), 0);
	CHECK(part.unnamed > 0 && part.module_cpu == 0);
	/* diff of named windows against windows that keep pcs: the same code on one line. */
	uint64_t before, after;
	CHECK_EQ_INT(diff_line_of(dir, T0, T0 + 1800 * SEC, T0 + RW * 10 * SEC,
				  "cc1;main;[cc1];[libc.so.6];write;[unknown]_[k]", &before, &after), 0);
	CHECK_EQ_INT(before, 180 * 5);
	CHECK_EQ_INT(after, 60 * 5);
	/* Summaries of named segments say the same as their records. */
	CHECK_EQ_INT(read_folded(dir, INT64_MIN, T0 + 1800 * SEC, STORE_READ_SUMMARIES, &sum), 0);
	CHECK(dir_bytes(dir, "sum-") > 0);
	CHECK_EQ_INT(sum.module_cpu, 180 * 5);
	CHECK_EQ_INT(sum.unnamed, 0);
	/* Named windows rolled up again (the second tier) are folded already: the same answer. */
	CHECK_EQ_INT(store__open(&o, &s), 0);
	CHECK_EQ_INT(compact_all(s, now + 3600 * SEC), 2);
	store__close(s);
	CHECK_EQ_INT(read_folded(dir, INT64_MIN, INT64_MAX, 0, &part), 0);
	CHECK_EQ_INT(part.unnamed, 0);
	CHECK_EQ_INT(part.module_cpu, RW * 5);
	CHECK_EQ_INT(part.by_kind[PF_KIND_CPU], raw.by_kind[PF_KIND_CPU]);
	uint64_t named_bytes = dir_bytes(dir, "seg-");
	fprintf(stderr, "stripped store rolled up: %llu bytes lossless, %llu named\n",
		(unsigned long long)lossless_bytes, (unsigned long long)named_bytes);
	CHECK(named_bytes * 2 < lossless_bytes);

	/* kill -9 at each step: the old windows or the folded ones, whole, never both. */
	for (int step = STORE_CRASH_ROLL_WRITING; step <= STORE_CRASH_ROLL_RENAMED; step++) {
		write_stripped(dir);
		CHECK(killed_compacting(&o, step, now));
		CHECK_EQ_INT(read_folded(dir, INT64_MIN, INT64_MAX, 0, &part), 0);
		CHECK_EQ_INT(part.by_kind[PF_KIND_CPU], raw.by_kind[PF_KIND_CPU]);
		CHECK_EQ_INT(part.by_kind[PF_KIND_RUNQ], raw.by_kind[PF_KIND_RUNQ]);
		CHECK(part.module_cpu % (6 * 5) == 0 && part.module_cpu <= 180 * 5);
		finish_rollups(&o, dir, now);
		CHECK_EQ_INT(read_folded(dir, INT64_MIN, T0 + 1800 * SEC, 0, &part), 0);
		CHECK_EQ_INT(part.unnamed, 0);
		CHECK_EQ_INT(part.module_cpu, 180 * 5);
		CHECK_EQ_INT(part.main_cpu, 180);
	}
}

static int keep_cpu(const struct profile *p, const struct pf_sample *x, void *arg)
{
	return x->kind == PF_KIND_CPU;
}

/*
 * [a, b) merged by function and name, through summaries or not, or by
 * store__merge (flags 2: all samples, 3: on-CPU only; 6 and 7: without thread
 * names, merged while decoded or window by window); records decoded in *decoded.
 */
static char *range_text(struct store *r, int64_t a, int64_t b, unsigned flags, uint64_t *decoded)
{
	struct profile *p;
	struct store_stats s0, s1;
	char *t;
	int err;

	profile__new(&p);
	store__stats(r, &s0);
	if (flags == 4) /* pids kept (--pid) */
		err = store__merge(r, a, b, PF_MERGE_BY_FUNCTION, NULL, NULL, p);
	else if (flags == 6) /* no thread names: decoded straight into p */
		err = store__merge(r, a, b, PF_MERGE_BY_FUNCTION | PF_MERGE_BY_NAME | PF_MERGE_NO_THREAD, NULL, NULL, p);
	else if (flags == 7) /* the same, window by window */
		err = store__read(r, a, b, merge_no_thread, p);
	else if (flags == 5)
		err = store__read(r, a, b, merge_by_func, p);
	else if (flags >= 2)
		err = store__merge(r, a, b, PF_MERGE_BY_FUNCTION | PF_MERGE_BY_NAME, flags == 3 ? keep_cpu : NULL,
				   NULL, p);
	else
		err = store__read_flags(r, a, b, flags, merge_by_name, p);
	store__stats(r, &s1);
	if (decoded)
		*decoded = s1.records_decoded - s0.records_decoded;
	t = err ? strdup("error") : profile_text(p);
	profile__free(p);
	return t;
}

/* Ranges over the store, each read both ways: how many answers differ. */
static int sum_mismatches(const char *dir, uint64_t *dec_sum, uint64_t *dec_raw)
{
	struct store *r;
	int bad = 0;

	if (open_store(dir, 0, &r, NULL))
		return -1;
	for (int a = 0; a < SW; a += 11) {
		for (int b = a + 1; b <= SW + 1; b += 17) {
			int64_t since = T0 + a * 60 * SEC - 7 * SEC, until = T0 + b * 60 * SEC + (b % 2) * 30 * SEC;
			char *x = range_text(r, since, until, 0, NULL);
			char *y = range_text(r, since, until, STORE_READ_SUMMARIES, NULL);
			char *z = range_text(r, since, until, 2, NULL);
			char *u = range_text(r, since, until, 4, NULL), *v = range_text(r, since, until, 5, NULL);
			char *n6 = range_text(r, since, until, 6, NULL), *n7 = range_text(r, since, until, 7, NULL);
			if (strcmp(x, y) || strcmp(x, z) || strcmp(u, v) || strcmp(n6, n7) || !strcmp(x, "error")) {
				if (bad++ < 3)
					fprintf(stderr, "summaries: [%d, %d) differs\n", a, b);
			}
			free(x);
			free(y);
			free(z);
			free(u);
			free(v);
			free(n6);
			free(n7);
		}
	}
	free(range_text(r, INT64_MIN, INT64_MAX, STORE_READ_SUMMARIES, dec_sum));
	free(range_text(r, INT64_MIN, INT64_MAX, 0, dec_raw));
	/* A filter (here: on-CPU only) reads the same summaries and keeps the same samples. */
	{
		struct profile *p;
		uint64_t dec_f;
		profile__new(&p);
		store__read(r, INT64_MIN, INT64_MAX, merge_by_name, p);
		struct profile *q;
		profile__new(&q);
		profile__merge(q, p, keep_cpu, NULL);
		char *x = profile_text(q), *y = range_text(r, INT64_MIN, INT64_MAX, 3, &dec_f);
		if (strcmp(x, y) || (dec_sum && dec_f != *dec_sum))
			bad++;
		free(x);
		free(y);
		profile__free(p);
		profile__free(q);
	}
	store__close(r);
	return bad;
}

/* A new store of n windows of len from T0, in segments of span. */
static void write_windows(const char *dir, int n, int64_t len, int64_t span)
{
	struct store *w;
	struct profile *p;
	struct store_opts o = { .segment_span_ns = span, .no_rollup = 1 };

	rm_rf(dir);
	profile__new(&p);
	CHECK_EQ_INT(open_store(dir, 1, &w, &o), 0);
	for (int i = 0; i < n; i++) {
		make_window(p, i, T0 + i * len, len);
		CHECK_EQ_INT(store__append(w, p), 0);
	}
	store__close(w);
	profile__free(p);
}

static void write_sw_span(const char *dir, int64_t span)
{
	write_windows(dir, SW, 60 * SEC, span);
}

static void write_sw(const char *dir)
{
	write_sw_span(dir, 1800 * SEC);
}

/* Calls store__compact at time now until it has no more to do; summaries built (day summaries in *days). */
/* Records in dir's files named prefix*, from their headers. */
static int records_in_files(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[600];
	int n = 0;

	while (d && (de = readdir(d))) {
		if (strncmp(de->d_name, prefix, strlen(prefix)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		FILE *f = fopen(path, "rb");
		uint8_t *b = malloc(64 << 20);
		size_t len = f && b ? fread(b, 1, 64 << 20, f) : 0;
		size_t offs[4096];
		n += record_offsets(b, len, offs, 4096);
		free(b);
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

/* summarise_at()'s store_opts.encode_thread_min; its records on a thread are counted in sum_threaded. */
static int64_t sum_thread_min;
static uint64_t sum_mem_budget;     /* store_opts.summary_mem_max of summarise_at's writer */
static struct store_stats sum_last; /* its stats when it closed */
static uint64_t sum_threaded;

static int summarise_at(const char *dir, const struct store_rollup *tier, void (*cp)(void *, int), int64_t now,
			int *days)
{
	struct store_opts o = { .dir = dir, .writer = 1, .warn = on_warn, .crash_point = cp,
				.encode_thread_min = sum_thread_min, .summary_mem_max = sum_mem_budget };
	struct store_stats st;
	struct store *w;

	if (tier)
		o.rollup[0] = *tier;
	else
		o.no_rollup = 1;
	if (store__open(&o, &w))
		return -1;
	for (int i = 0; i < 400; i++)
		if (compact_waiting(w, now))
			break;
	store__stats(w, &st);
	sum_last = st;
	sum_threaded += st.records_threaded;
	store__close(w);
	if (days)
		*days = (int)st.days_built;
	return (int)st.summaries_built;
}

/* A writer summarising at time now, killed (SIGKILL) at crash point step: 1 if it was. */
static int killed_at(const char *dir, int step, int64_t now)
{
	int status = 0;
	pid_t pid = fork();

	if (pid == 0) {
		cp_die_at = step;
		summarise_at(dir, NULL, die_at_step, now, NULL);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

/* The same the evening the windows of write_sw() were written: their UTC day is not over. */
static int summarise_all(const char *dir, const struct store_rollup *tier, void (*cp)(void *, int))
{
	return summarise_at(dir, tier, cp, T0 + 4 * 3600 * SEC, NULL);
}

/* Flips a payload byte of the first record of the file whose flags & mask are want: 0, or -1 if none. */
/* Records of dir's files named prefix*: all, deltas, and those of a chain's frame (flag bit 7; bit 6 counts 10^6). */
static void count_prefixed(const char *dir, const char *prefix, int *recs, int *deltas,
			   int *prefixed)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[600];
	uint8_t h[64];

	*recs = *deltas = *prefixed = 0;
	while (d && (e = readdir(d))) {
		if (strncmp(e->d_name, prefix, strlen(prefix)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		int fd = open(path, O_RDONLY);
		for (off_t off = 0; fd >= 0 && pread(fd, h, sizeof(h), off) == (ssize_t)sizeof(h);) {
			uint32_t flags = h[8] | h[9] << 8 | (uint32_t)h[10] << 16 | (uint32_t)h[11] << 24;
			uint32_t comp = h[12] | h[13] << 8 | (uint32_t)h[14] << 16 | (uint32_t)h[15] << 24;
			(*recs)++;
			*deltas += !!(flags & 2);
			/* This writer writes a chain as one frame (bit 7), never a delta against the record before (bit 6). */
			*prefixed += (flags & 192) == 128 ? 1 : (flags & 64) ? 1000000 : 0;
			off += 64 + comp;
		}
		if (fd >= 0)
			close(fd);
	}
	if (d)
		closedir(d);
}

static int flip_in_record(const char *path, uint32_t mask, uint32_t want)
{
	int fd = open(path, O_RDWR), ret = -1;
	uint8_t h[64], b;
	off_t off = 0;

	while (fd >= 0 && pread(fd, h, sizeof(h), off) == (ssize_t)sizeof(h)) {
		uint32_t flags = h[8] | h[9] << 8 | (uint32_t)h[10] << 16 | (uint32_t)h[11] << 24;
		uint32_t comp = h[12] | h[13] << 8 | (uint32_t)h[14] << 16 | (uint32_t)h[15] << 24;
		if ((flags & mask) == want && comp > 4) {
			if (pread(fd, &b, 1, off + 64 + comp / 2) == 1) {
				b ^= 0x10;
				ret = pwrite(fd, &b, 1, off + 64 + comp / 2) == 1 ? 0 : -1;
			}
			break;
		}
		off += 64 + comp;
	}
	if (fd >= 0)
		close(fd);
	return ret;
}

static void test_summaries(const char *base)
{
	char dir[256], path[600];
	uint64_t dec_sum = 0, dec_raw = 0;
	struct seen s;

	snprintf(dir, sizeof(dir), "%s/sum", base);
	write_sw(dir);
	nwarn = 0;
	CHECK_EQ_INT(summarise_all(dir, NULL, NULL), 6);
	CHECK_EQ_INT(count_files(dir, "sum-"), 6);
	CHECK_EQ_INT(summarise_all(dir, NULL, NULL), 0); /* all done: nothing rebuilt */
	/* Segments' chains are one zstd frame each, keys and deltas; summaries' records frames of their own. */
	{
		int recs, deltas, prefixed;
		count_prefixed(dir, "seg-", &recs, &deltas, &prefixed);
		CHECK(recs == SW && deltas > recs / 2 && prefixed == recs);
		count_prefixed(dir, "sum-", &recs, &deltas, &prefixed);
		CHECK(recs >= 12 && deltas > 0 && prefixed == 0);
	}
	CHECK_EQ_INT(sum_mismatches(dir, &dec_sum, &dec_raw), 0);
	CHECK_EQ_INT(nwarn, 0);
	/* A query's cost: one record per segment, not one per window. */
	CHECK_EQ_INT(dec_raw, SW);
	CHECK_EQ_INT(dec_sum, 6);
	/* Readers without the flag see the segments as they were. */
	CHECK_EQ_INT(read_all(dir, &s), 0);
	CHECK_EQ_INT(s.n, SW);
	/*
	 * Cost by range: an hour of two whole segments is two records, the
	 * last 10 minutes at most one summary and its edge records, and the
	 * whole store three times the hour: records decoded grow with
	 * segments covered, not with windows.
	 */
	{
		struct store *r;
		uint64_t d1h, d10m, dall;
		CHECK_EQ_INT(open_store(dir, 0, &r, NULL), 0);
		free(range_text(r, T0 + 3600 * SEC, T0 + 7200 * SEC, 2, &d1h));
		free(range_text(r, T0 + (SW - 10) * 60 * SEC, T0 + SW * 60 * SEC, 2, &d10m));
		free(range_text(r, T0, T0 + SW * 60 * SEC, 2, &dall));
		store__close(r);
		CHECK_EQ_INT(d1h, 2);
		if (!(d10m >= 1 && d10m <= 10))
			fprintf(stderr, "d10m %llu\n", (unsigned long long)d10m);
		CHECK(d10m >= 1 && d10m <= 10);
		CHECK_EQ_INT(dall, 3 * d1h);
		/* With pids kept (--pid), whole segments are two records each: the tables by name, then the pids. */
		CHECK_EQ_INT(open_store(dir, 0, &r, NULL), 0);
		free(range_text(r, T0, T0 + SW * 60 * SEC, 4, &dall));
		store__close(r);
		CHECK_EQ_INT(dall, 2 * 6);
	}

	/* Segments of 5 minutes, inside one 10-minute bucket or across two. */
	write_sw_span(dir, 300 * SEC);
	CHECK_EQ_INT(summarise_all(dir, NULL, NULL), 36);
	CHECK_EQ_INT(sum_mismatches(dir, &dec_sum, &dec_raw), 0);
	CHECK_EQ_INT(dec_sum, 36);
	CHECK_EQ_INT(nwarn, 0);
	write_sw(dir);
	CHECK_EQ_INT(summarise_all(dir, NULL, NULL), 6);

	/*
	 * Rolled up into 10 min windows: a record overlapping the range counts
	 * whole, so the 10-minute summaries at the range's edges stand for it.
	 */
	{
		struct store_rollup ten = { 1, 600 * SEC };
		struct store *r;
		uint64_t d;
		write_sw(dir);
		CHECK_EQ_INT(summarise_all(dir, &ten, NULL), 6);
		CHECK_EQ_INT(sum_mismatches(dir, &dec_sum, &dec_raw), 0);
		CHECK_EQ_INT(open_store(dir, 0, &r, NULL), 0);
		free(range_text(r, T0 + 25 * 60 * SEC, T0 + 85 * 60 * SEC, 2, &d));
		store__close(r);
		/* 5 records, and for the two 10-minute ones the tables of their chain's key (the whole segment). */
		CHECK_EQ_INT(d, 5 + 2);
		write_sw(dir);
		CHECK_EQ_INT(summarise_all(dir, NULL, NULL), 6);
	}

	/* Rolled up into 20 min windows across the 10 min buckets: those fall back to the records. */
	struct store_rollup tier = { 1, 1200 * SEC };
	CHECK_EQ_INT(summarise_all(dir, &tier, NULL), 0);
	CHECK_EQ_INT(sum_mismatches(dir, &dec_sum, &dec_raw), 0);
	CHECK_EQ_INT(dec_sum, 6);
	CHECK_EQ_INT(nwarn, 0);

	/*
	 * A damaged summary record is not trusted: the segment is read, with a
	 * warning, for it and for the records after it in its chain. The whole
	 * segment by name (then a whole-segment query reads the 30 windows), the
	 * first 10-minute record (the key of their chain), the record with pids.
	 */
	static const uint32_t damaged[3][2] = { { 24, 8 }, { 8, 0 }, { 24, 24 } };
	for (int k = 0; k < 3; k++) {
		write_sw(dir);
		CHECK_EQ_INT(summarise_all(dir, NULL, NULL), 6);
		CHECK_EQ_INT(seg_path(dir, path, sizeof(path)), 0);
		memcpy(strrchr(path, '/') + 1, "sum", 3);
		CHECK_EQ_INT(flip_in_record(path, damaged[k][0], damaged[k][1]), 0);
		nwarn = 0;
		CHECK_EQ_INT(sum_mismatches(dir, &dec_sum, &dec_raw), 0);
		CHECK(nwarn > 0);
		CHECK_EQ_INT(dec_sum, k == 0 ? 5 + 30 : 6);
	}

	/* kill -9 at each step of writing a summary: answers stay right, the next writer finishes. */
	for (int step = STORE_CRASH_ROLL_WRITING; step <= STORE_CRASH_ROLL_RENAMED; step++) {
		write_sw(dir);
		CHECK(killed_at(dir, step, T0 + 4 * 3600 * SEC));
		CHECK_EQ_INT(count_files(dir, "roll-"), step < STORE_CRASH_ROLL_RENAMED ? 1 : 0);
		CHECK_EQ_INT(count_files(dir, "sum-"), step < STORE_CRASH_ROLL_RENAMED ? 0 : 1);
		nwarn = 0;
		CHECK_EQ_INT(sum_mismatches(dir, NULL, NULL), 0);
		CHECK_EQ_INT(summarise_all(dir, NULL, NULL), step < STORE_CRASH_ROLL_RENAMED ? 6 : 5);
		CHECK_EQ_INT(count_files(dir, "roll-"), 0);
		CHECK_EQ_INT(sum_mismatches(dir, &dec_sum, NULL), 0);
		CHECK_EQ_INT(dec_sum, 6);
		CHECK_EQ_INT(nwarn, 0);
	}

	/* Retention takes a segment's summary with it; one left by a crash goes at the next start. */
	{
		struct store_opts o = { .max_age_ns = 3600 * SEC };
		struct store *w;
		CHECK_EQ_INT(open_store(dir, 1, &w, &o), 0);
		CHECK_EQ_INT(store__retain(w, T0 + 3 * 3600 * SEC), 0);
		store__close(w);
		CHECK_EQ_INT(count_files(dir, "seg-"), 2);
		CHECK_EQ_INT(count_files(dir, "sum-"), 2);
		CHECK_EQ_INT(seg_path(dir, path, sizeof(path)), 0);
		CHECK_EQ_INT(unlink(path), 0);
		CHECK_EQ_INT(summarise_all(dir, NULL, NULL), 0);
		CHECK_EQ_INT(count_files(dir, "sum-"), 1);
		CHECK_EQ_INT(sum_mismatches(dir, NULL, NULL), 0);
	}
}

/* ---- day summaries ---- */

#define DW (3 * 48) /* 3 days of 30-minute windows from T0 (16:00 UTC): four UTC days, 2-hour segments */
#define DAY (86400 * SEC)
#define DAY0 (T0 - 16 * 3600 * SEC)

/* Ranges over the day store read through summaries and days, and raw: how many answers differ. */
static int day_mismatches(const char *dir)
{
	static const int64_t r[][2] = {
		{ INT64_MIN, INT64_MAX }, { DAY0 + DAY, DAY0 + 3 * DAY }, { DAY0 + DAY + 3600 * SEC, DAY0 + 3 * DAY + 1800 * SEC },
		{ T0 + 5 * 3600 * SEC, T0 + 40 * 3600 * SEC }, { DAY0, DAY0 + 2 * DAY - 1 }, { DAY0 + 2 * DAY, INT64_MAX },
	};
	struct store *s;
	int bad = 0;

	if (open_store(dir, 0, &s, NULL))
		return -1;
	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		char *x = range_text(s, r[i][0], r[i][1], 0, NULL), *y = range_text(s, r[i][0], r[i][1], 1, NULL);
		char *z = range_text(s, r[i][0], r[i][1], 2, NULL), *u = range_text(s, r[i][0], r[i][1], 4, NULL);
		char *v = range_text(s, r[i][0], r[i][1], 5, NULL), *c = range_text(s, r[i][0], r[i][1], 3, NULL);
		struct profile *p, *q;
		profile__new(&p);
		profile__new(&q);
		store__read(s, r[i][0], r[i][1], merge_by_name, p);
		profile__merge(q, p, keep_cpu, NULL);
		char *cr = profile_text(q);
		if (strcmp(x, y) || strcmp(x, z) || strcmp(u, v) || strcmp(c, cr) || !strcmp(x, "error")) {
			if (bad++ < 3)
				fprintf(stderr, "days: range %zu differs\n", i);
		}
		free(x), free(y), free(z), free(u), free(v), free(c), free(cr);
		profile__free(p);
		profile__free(q);
	}
	store__close(s);
	return bad;
}

static uint64_t decodes(const char *dir, int64_t a, int64_t b)
{
	struct store *s;
	uint64_t d = 0;

	if (open_store(dir, 0, &s, NULL))
		return UINT64_MAX;
	free(range_text(s, a, b, 2, &d));
	store__close(s);
	return d;
}

/*
 * A summary's or a day's merged profiles past summary_mem_max: the record
 * with pids goes first, then the summary; a day is not built. Every answer
 * stays the same (the segment, or the day's summaries, are read instead),
 * nothing is left behind, and the writer does not start again what it gave up.
 */
static void test_summary_memory(const char *base)
{
	char dir[256];
	uint64_t wpeak, ppeak, dec_sum, d;
	struct store *r;
	int days = -1, recs;

	snprintf(dir, sizeof(dir), "%s/summem", base);
	write_sw(dir);
	nwarn = 0;
	CHECK_EQ_INT(summarise_all(dir, NULL, NULL), 6);
	recs = records_in_files(dir, "sum-");
	wpeak = sum_last.summary_mem_peak;
	ppeak = sum_last.summary_pids_mem_peak;
	/* With pids kept, a segment's merged profile is the larger one. */
	CHECK(wpeak > 0 && ppeak > wpeak / 2);
	CHECK_EQ_INT(sum_last.summaries_no_pids + sum_last.summaries_over_mem, 0);

	/* Room for every record by name, not for one with its pids beside it. */
	write_sw(dir);
	sum_mem_budget = wpeak + 1;
	CHECK_EQ_INT(summarise_all(dir, NULL, NULL), 6);
	CHECK_EQ_INT(sum_last.summaries_no_pids, 6);
	CHECK_EQ_INT(sum_last.summaries_over_mem, 0);
	CHECK(sum_last.summary_mem_peak <= sum_mem_budget);
	CHECK_EQ_INT(records_in_files(dir, "sum-"), recs - 6); /* one with pids less in each */
	CHECK_EQ_INT(sum_mismatches(dir, &dec_sum, NULL), 0);
	CHECK_EQ_INT(dec_sum, 6);
	CHECK_EQ_INT(nwarn, 0);
	/* Read in the calls (no thread), the same files. */
	{
		char in[300];
		snprintf(in, sizeof(in), "%s/summem-inline", base);
		write_sw(in);
		sum_thread_min = -1;
		CHECK_EQ_INT(summarise_all(in, NULL, NULL), 6);
		sum_thread_min = 0;
		CHECK_EQ_INT(sum_last.summaries_no_pids, 6);
		CHECK_EQ_INT(dir_bytes(in, "sum-"), dir_bytes(dir, "sum-"));
		size_t na, nb;
		uint8_t *a = file_bytes(dir, "sum-", &na), *b = file_bytes(in, "sum-", &nb);
		CHECK(a && b && na == nb && na > 0 && !memcmp(a, b, na));
		free(a);
		free(b);
	}
	/* A query with pids reads the segments' windows, where it read two records a segment. */
	CHECK_EQ_INT(open_store(dir, 0, &r, NULL), 0);
	free(range_text(r, T0, T0 + SW * 60 * SEC, 4, &d));
	store__close(r);
	CHECK_EQ_INT(d, SW);

	/* No room for a record by name: no summary, and the writer does not try again. */
	write_sw(dir);
	sum_mem_budget = wpeak / 4;
	CHECK_EQ_INT(summarise_all(dir, NULL, NULL), 0);
	CHECK_EQ_INT(sum_last.summaries_over_mem, 6);
	CHECK(sum_last.summary_mem_peak > sum_mem_budget);
	CHECK_EQ_INT(count_files(dir, "sum-"), 0);
	CHECK_EQ_INT(count_files(dir, "roll-"), 0);
	CHECK(nwarn >= 6);
	nwarn = 0;
	CHECK_EQ_INT(sum_mismatches(dir, &dec_sum, NULL), 0);
	CHECK_EQ_INT(dec_sum, SW);
	CHECK_EQ_INT(nwarn, 0);
	/* The next writer (a restart) tries each once again; with the default budget it builds them. */
	CHECK_EQ_INT(summarise_all(dir, NULL, NULL), 0);
	CHECK_EQ_INT(sum_last.summaries_over_mem, 6);
	sum_mem_budget = 0;
	CHECK_EQ_INT(summarise_all(dir, NULL, NULL), 6);

	/* Days: the segments' summaries fit, a day does not (its first merge passes one byte). */
	snprintf(dir, sizeof(dir), "%s/summem-days", base);
	write_windows(dir, DW, 1800 * SEC, 7200 * SEC);
	CHECK_EQ_INT(summarise_at(dir, NULL, NULL, T0 + 4 * 3600 * SEC, &days), 36);
	CHECK_EQ_INT(days, 0);
	sum_mem_budget = 1;
	nwarn = 0;
	CHECK_EQ_INT(summarise_at(dir, NULL, NULL, T0 + 100 * 3600 * SEC, &days), 0);
	CHECK_EQ_INT(days, 0);
	CHECK_EQ_INT(sum_last.days_over_mem, 4);
	CHECK_EQ_INT(count_files(dir, "day-"), 0);
	CHECK_EQ_INT(count_files(dir, "roll-"), 0);
	CHECK(nwarn >= 4);
	nwarn = 0;
	CHECK_EQ_INT(day_mismatches(dir), 0);
	CHECK_EQ_INT(nwarn, 0);
	/* Each day is read from its segments' summaries: 12 records a day. */
	CHECK_EQ_INT(decodes(dir, DAY0 + DAY, DAY0 + 2 * DAY), 12);
	sum_mem_budget = 0;
	CHECK_EQ_INT(summarise_at(dir, NULL, NULL, T0 + 100 * 3600 * SEC, &days), 0);
	CHECK_EQ_INT(days, 4);
}

static void test_days(const char *base)
{
	const int64_t later = T0 + 100 * 3600 * SEC;
	char dir[256], path[600];
	int days = -1;

	snprintf(dir, sizeof(dir), "%s/days", base);
	write_windows(dir, DW, 1800 * SEC, 7200 * SEC);
	nwarn = 0;
	/*
	 * Every record's encoding and every day's merge of a summary on a
	 * thread of its own (a big one's, by default): the same files.
	 */
	{
		char thr[300];
		snprintf(thr, sizeof(thr), "%s/days-threaded", base);
		write_windows(thr, DW, 1800 * SEC, 7200 * SEC);
		sum_thread_min = 1;
		sum_threaded = 0;
		CHECK_EQ_INT(summarise_at(thr, NULL, NULL, later, &days), 36);
		CHECK_EQ_INT(days, 4);
		sum_thread_min = 0;
		/* Each record written, and each day's merge of a segment's summary (36 segments, none across midnight). */
		CHECK_EQ_INT(sum_threaded, (uint64_t)(records_in_files(thr, "sum-") + records_in_files(thr, "day-") + 36));
		CHECK_EQ_INT(summarise_at(dir, NULL, NULL, later, &days), 36);
		CHECK_EQ_INT(days, 4);
		CHECK_EQ_INT(dir_bytes(dir, "day-"), dir_bytes(thr, "day-"));
		CHECK_EQ_INT(dir_bytes(dir, "sum-"), dir_bytes(thr, "sum-"));
		size_t na, nb;
		uint8_t *a = file_bytes(dir, "day-", &na), *b = file_bytes(thr, "day-", &nb);
		CHECK(a && b && na == nb && na > 0 && !memcmp(a, b, na));
		free(a);
		free(b);
		CHECK_EQ_INT(day_mismatches(thr), 0);
		/* The rest of this test builds them step by step again. */
		for (int k = 0; k < 2; k++) {
			DIR *d = opendir(dir);
			struct dirent *de;
			while (d && (de = readdir(d)))
				if (!strncmp(de->d_name, k ? "sum-" : "day-", 4)) {
					snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
					unlink(path);
				}
			if (d)
				closedir(d);
		}
	}
	/* The last day is not over yet: three days. */
	CHECK_EQ_INT(summarise_at(dir, NULL, NULL, T0 + 73 * 3600 * SEC, &days), 36);
	CHECK_EQ_INT(days, 3);
	CHECK_EQ_INT(summarise_at(dir, NULL, NULL, later, &days), 0);
	CHECK_EQ_INT(days, 1);
	CHECK_EQ_INT(count_files(dir, "day-"), 4);
	CHECK_EQ_INT(day_mismatches(dir), 0);
	CHECK_EQ_INT(nwarn, 0);
	/* A query reads one record a day: 4 for all, 2 for two whole days, not 12 a day. */
	CHECK_EQ_INT(decodes(dir, INT64_MIN, INT64_MAX), 4);
	CHECK_EQ_INT(decodes(dir, DAY0 + DAY, DAY0 + 3 * DAY), 2);

	/* Retention takes the day of a segment it removes; the writer builds it again from what is left. */
	{
		struct store_opts o = { .max_age_ns = 10 * DAY };
		struct store *w;
		CHECK_EQ_INT(open_store(dir, 1, &w, &o), 0);
		CHECK_EQ_INT(store__retain(w, T0 + 2 * 3600 * SEC + 10 * DAY), 0);
		store__close(w);
		CHECK_EQ_INT(count_files(dir, "seg-"), 35);
		CHECK_EQ_INT(count_files(dir, "day-"), 3);
		CHECK_EQ_INT(day_mismatches(dir), 0);
		CHECK_EQ_INT(decodes(dir, INT64_MIN, INT64_MAX), 3 + 3);
		CHECK_EQ_INT(summarise_at(dir, NULL, NULL, later, &days), 0);
		CHECK_EQ_INT(days, 1);
		CHECK_EQ_INT(decodes(dir, INT64_MIN, INT64_MAX), 4);
	}

	/* A segment gone without its day (a crash between the two): the day is not used, then rebuilt. */
	CHECK_EQ_INT(seg_path(dir, path, sizeof(path)), 0);
	for (int k = 0; k < 2; k++) {
		CHECK_EQ_INT(unlink(path), 0);
		memcpy(strrchr(path, '/') + 1, "sum", 3);
	}
	CHECK_EQ_INT(day_mismatches(dir), 0);
	CHECK_EQ_INT(decodes(dir, INT64_MIN, INT64_MAX), 3 + 2);
	CHECK_EQ_INT(summarise_at(dir, NULL, NULL, later, &days), 0);
	CHECK_EQ_INT(days, 1);
	CHECK_EQ_INT(decodes(dir, INT64_MIN, INT64_MAX), 4);
	CHECK_EQ_INT(day_mismatches(dir), 0);

	/* A damaged day record: its segments are read instead, with a warning. */
	{
		struct dirent **names;
		int k = scandir(dir, &names, NULL, alphasort), done = 0;
		for (int i = 0; i < k; i++) {
			if (!done && !strncmp(names[i]->d_name, "day-", 4)) {
				snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
				CHECK_EQ_INT(flip_in_record(path, 0, 0), 0);
				done = 1;
			}
			free(names[i]);
		}
		free(names);
		nwarn = 0;
		CHECK_EQ_INT(day_mismatches(dir), 0);
		CHECK(nwarn > 0);
		/* The first day has two segments left (see above). */
		CHECK_EQ_INT(decodes(dir, INT64_MIN, INT64_MAX), 3 + 2);
	}

	/* kill -9 at each step of writing a day: answers stay right, the next writer finishes. */
	for (int step = STORE_CRASH_ROLL_WRITING; step <= STORE_CRASH_ROLL_RENAMED; step++) {
		struct dirent **names;
		int k = scandir(dir, &names, NULL, alphasort);
		for (int i = 0; i < k; i++) {
			if (!strncmp(names[i]->d_name, "day-", 4)) {
				snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
				CHECK_EQ_INT(unlink(path), 0);
			}
			free(names[i]);
		}
		free(names);
		CHECK(killed_at(dir, step, later));
		CHECK_EQ_INT(count_files(dir, "roll-"), step < STORE_CRASH_ROLL_RENAMED ? 1 : 0);
		CHECK_EQ_INT(count_files(dir, "day-"), step < STORE_CRASH_ROLL_RENAMED ? 0 : 1);
		nwarn = 0;
		CHECK_EQ_INT(day_mismatches(dir), 0);
		CHECK_EQ_INT(summarise_at(dir, NULL, NULL, later, &days), 0);
		CHECK_EQ_INT(days, step < STORE_CRASH_ROLL_RENAMED ? 4 : 3);
		CHECK_EQ_INT(count_files(dir, "roll-"), 0);
		CHECK_EQ_INT(day_mismatches(dir), 0);
		CHECK_EQ_INT(decodes(dir, INT64_MIN, INT64_MAX), 4);
		CHECK_EQ_INT(nwarn, 0);
	}
}

/*
 * Version 3 summary files (tests/unit/data/v3, written by the version 3
 * writer from write_sw()'s windows: every record a key, the record with
 * pids before the one by name) are still read, and give the answers the
 * segments give; a version 4 writer does not rebuild them.
 */
static void test_v3_compat(const char *base)
{
	char dir[256], cmd[1200];
	uint64_t dec_sum = 0, dec_raw = 0, dec_pids = 0;
	struct store *r;
	const char *data = getenv("T_DATA") ? getenv("T_DATA") : "tests/unit/data";

	snprintf(dir, sizeof(dir), "%s/v3", base);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s' && cp '%s'/v3/*.pfd '%s'/", dir, dir, data, dir);
	CHECK_EQ_INT(system(cmd), 0);
	CHECK_EQ_INT(count_files(dir, "sum-"), 6);
	nwarn = 0;
	CHECK_EQ_INT(sum_mismatches(dir, &dec_sum, &dec_raw), 0);
	CHECK_EQ_INT(dec_sum, 6);
	CHECK_EQ_INT(dec_raw, SW);
	CHECK_EQ_INT(open_store(dir, 0, &r, NULL), 0);
	free(range_text(r, T0, T0 + SW * 60 * SEC, 4, &dec_pids));
	store__close(r);
	CHECK_EQ_INT(dec_pids, 6);
	CHECK_EQ_INT(summarise_all(dir, NULL, NULL), 0);
	CHECK_EQ_INT(nwarn, 0);
}

/*
 * tests/unit/data/v4: a format 4 store as the writer before named rollups
 * wrote it (test_store --write-v4 DIR): write_sw()'s windows, their
 * summaries and their day file. Read as it is, then rolled up by name.
 */
static void write_v4(const char *dir)
{
	int days = 0;

	write_sw(dir);
	CHECK_EQ_INT(summarise_at(dir, NULL, NULL, T0 + 2 * 86400 * SEC, &days), 6);
	CHECK_EQ_INT(days, 1);
}

/* Whole-store and half-hour answers by function and name (and with pids: 4) as one text. */
static char *sw_answers(const char *dir, unsigned flags)
{
	struct store *r;
	char *all = strdup("");

	if (open_store(dir, 0, &r, NULL))
		return all;
	for (int a = -1; a < SW / 30; a++) {
		int64_t since = a < 0 ? INT64_MIN : T0 + a * 1800 * SEC;
		int64_t until = a < 0 ? INT64_MAX : since + 1800 * SEC;
		char *x = range_text(r, since, until, flags, NULL);
		size_t n = strlen(all) + strlen(x) + 2;
		char *t = malloc(n);
		snprintf(t, n, "%s%s|", all, x);
		free(all);
		free(x);
		all = t;
	}
	store__close(r);
	return all;
}

static const struct store_opts v4_named_opts = { .rollup = { { 3600 * SEC, 600 * SEC } } };

/* This version's writer on dir: ROUNDS compaction steps two days on; the rollups done, or -1. */
static int writer_rollups(const char *dir, int rounds)
{
	struct store_opts o = v4_named_opts;
	struct store_stats st;
	struct store *w;
	int err = 0;

	o.dir = dir;
	o.writer = 1;
	o.warn = on_warn;
	if (store__open(&o, &w))
		return -1;
	for (int i = 0; i < rounds && !err; i++)
		err = store__compact(w, T0 + 2 * 86400 * SEC);
	store__stats(w, &st);
	store__close(w);
	return err ? -1 : (int)st.rollups;
}

static void test_v4_compat(const char *base)
{
	char dir[256], cmd[1200];
	const char *data = getenv("T_DATA") ? getenv("T_DATA") : "tests/unit/data";

	snprintf(dir, sizeof(dir), "%s/v4", base);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s' && cp '%s'/v4/*.pfd '%s'/", dir, dir,
		 data, dir);
	CHECK_EQ_INT(system(cmd), 0);
	CHECK_EQ_INT(count_files(dir, "sum-"), 6);
	CHECK_EQ_INT(count_files(dir, "day-"), 1);
	nwarn = 0;
	/* Raw records, summaries and the day file give the same answers. */
	char *raw = sw_answers(dir, 0), *named = sw_answers(dir, 2), *pids = sw_answers(dir, 4);
	char *pids_raw = sw_answers(dir, 5);
	CHECK(strcmp(raw, named) == 0 && !strstr(raw, "error"));
	CHECK(strcmp(pids, pids_raw) == 0 && !strstr(pids, "error"));
	CHECK_EQ_INT(nwarn, 0);
	/* A writer of this version rolls them up by name: the same answers by name, no pids. */
	CHECK_EQ_INT(writer_rollups(dir, 400), 6);
	CHECK_EQ_INT(nwarn, 0);
	char *after = sw_answers(dir, 2), *after_raw = sw_answers(dir, 0);
	CHECK(strcmp(raw, after) == 0);
	CHECK(strcmp(raw, after_raw) == 0);
	free(after);
	free(after_raw);
	after = sw_answers(dir, 5);
	CHECK(strcmp(after, pids) != 0);
	CHECK(strstr(after, "\n100 ") == NULL && strncmp(after, "100 ", 4) != 0);
	free(after);
	free(raw);
	free(named);
	free(pids);
	free(pids_raw);
}

/*
 * tests/unit/data/v4-named: the format 4 store of write_v4() rolled up by
 * name into 10-minute windows by the last format 4 writer (payload version
 * 3 with named records; test_store --write-v4-named DIR). Read as it is,
 * with the answers by name of the windows as flushed (tests/unit/data/v4).
 */

static void write_v4_named(const char *dir)
{
	struct store_opts o = v4_named_opts;
	struct store *w;

	write_v4(dir);
	o.dir = dir;
	o.writer = 1;
	CHECK_EQ_INT(store__open(&o, &w), 0);
	for (int i = 0; i < 400; i++)
		CHECK_EQ_INT(store__compact(w, T0 + 2 * 86400 * SEC), 0);
	store__close(w);
}

static void test_v4_named_compat(const char *base)
{
	char dir[256], flushed[256], cmd[2048];
	const char *data = getenv("T_DATA") ? getenv("T_DATA") : "tests/unit/data";

	snprintf(dir, sizeof(dir), "%s/v4-named", base);
	snprintf(flushed, sizeof(flushed), "%s/v4-flushed", base);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s' && mkdir -p '%s' '%s' && cp '%s'/v4-named/*.pfd '%s'/ && "
		 "cp '%s'/v4/seg-*.pfd '%s'/", dir, flushed, dir, flushed, data, dir, data, flushed);
	CHECK_EQ_INT(system(cmd), 0);
	CHECK_EQ_INT(count_files(dir, "seg-"), 6);
	nwarn = 0;
	char *want = sw_answers(flushed, 0), *raw = sw_answers(dir, 0), *named = sw_answers(dir, 2);
	CHECK(!strstr(want, "error") && strlen(want) > 100);
	CHECK(strcmp(raw, want) == 0);
	CHECK(strcmp(named, want) == 0);
	CHECK_EQ_INT(nwarn, 0);
	/* This writer leaves it as it is: every segment is rolled up by name already. */
	CHECK_EQ_INT(writer_rollups(dir, 100), 0);
	CHECK_EQ_INT(nwarn, 0);
	char *after = sw_answers(dir, 2);
	CHECK(strcmp(after, want) == 0);
	free(after);
	free(want);
	free(raw);
	free(named);
}

/*
 * A window of a busy host, for the payload fixtures: processes that stay
 * and processes that come and go, threads with names of their own, every
 * kind, cgroups, a process that exec'd within the window (one pid and
 * tid, two names), off-CPU and run-queue waits in nanoseconds that are
 * not whole microseconds.
 */
static void rich_window(struct profile *p, int i, int64_t start, int64_t len)
{
	static const char *const fn[] = { "main", "loop", "parse", "emit", "hash" };
	static const char *const kfn[] = { "entry_SYSCALL_64", "do_syscall_64", "__x64_sys_read",
					   "asm_sysvec_apic_timer_interrupt", "__schedule" };
	uint32_t s_mod, s_host, f[8], uf[5], kf[5], st[6];
	char name[64];

	profile__reset(p);
	profile__intern_str(p, "/usr/bin/app", &s_mod);
	profile__intern_str(p, "host-a", &s_host);
	for (int k = 0; k < 5; k++) {
		uint32_t nm;
		profile__intern_str(p, fn[k], &nm);
		struct pf_frame fr = { .name = nm, .module = s_mod, .offset = 0x1000u * (k + 1) + (uint64_t)(i % 3),
				       .kind = PF_FRAME_USER };
		profile__frame_add(p, &fr, &uf[k]);
		profile__intern_str(p, kfn[k], &nm);
		fr = (struct pf_frame){ .name = nm, .offset = 0xffffffff81000000ull + 0x100u * k, .kind = PF_FRAME_KERNEL };
		profile__frame_add(p, &fr, &kf[k]);
	}
	f[0] = uf[0], f[1] = uf[1], f[2] = uf[2 + i % 2];
	profile__stack_add(p, f, 3, &st[0]);
	f[2] = uf[4];
	profile__stack_add(p, f, 3, &st[1]);
	f[2] = uf[2], f[3] = kf[0], f[4] = kf[1], f[5] = kf[2], f[6] = kf[4];
	profile__stack_add(p, f, 7, &st[2]); /* off-CPU: a read */
	profile__stack_add(p, &kf[3], 1, &st[3]);
	f[0] = kf[3], f[1] = kf[4];
	profile__stack_add(p, f, 2, &st[4]); /* run-queue: preempted by the timer */
	f[0] = kf[0], f[1] = kf[4];
	profile__stack_add(p, f, 2, &st[5]); /* run-queue: on the way out of a system call */
	for (int q = 0; q < 6; q++) {
		/* pids 500 and 501 stay; the others are new in every window. */
		uint32_t pid = q < 2 ? 500 + (uint32_t)q : 1000 + (uint32_t)(i * 4 + q);
		uint32_t comm, cg, thr;
		snprintf(name, sizeof(name), "%s", q == 0 ? "app" : q == 1 ? "python3" : "cc1");
		profile__intern_str(p, name, &comm);
		name[0] = 0;
		if (q % 3)
			snprintf(name, sizeof(name), "/user.slice/s-%d.scope", q % 3);
		profile__intern_str(p, name, &cg);
		for (uint32_t t = 0; t < (q == 0 ? 3u : 1u); t++) {
			if (t)
				snprintf(name, sizeof(name), "worker-%u", t);
			else
				snprintf(name, sizeof(name), "%s", profile__str(p, comm));
			profile__intern_str(p, name, &thr);
			struct pf_sample s = { .pid = pid, .tid = pid + t * 7, .comm = comm, .thread = thr, .cgroup = cg };
			s.kind = PF_KIND_CPU, s.stack = st[(t + (uint32_t)i) % 2], s.value = 1 + (uint64_t)(i + q + t) % 9;
			profile__add(p, &s);
			if ((i + q) % 3) {
				s.stack = st[3], s.value = 2;
				profile__add(p, &s);
			}
			s.kind = PF_KIND_OFFCPU, s.stack = st[2], s.value = 1234567 + (uint64_t)(i * 777 + q * 31 + t);
			profile__add(p, &s);
			s.kind = PF_KIND_RUNQ, s.stack = st[4 + (q + t) % 2], s.value = 45678 + (uint64_t)(i * 13 + t);
			profile__add(p, &s);
			s.stack = st[4 + (q + t + 1) % 2], s.value = 499 + (uint64_t)t;
			profile__add(p, &s);
		}
	}
	/* pid 700 exec'd bash -> cc1 within the window: one tid, two names. */
	uint32_t c1, c2;
	profile__intern_str(p, "bash", &c1);
	profile__intern_str(p, "cc1", &c2);
	struct pf_sample e = { .pid = 700, .tid = 700, .comm = c1, .thread = c1, .stack = st[0], .kind = PF_KIND_CPU,
			       .value = 3 };
	profile__add(p, &e);
	e.comm = c2, e.thread = c2, e.value = 4;
	profile__add(p, &e);
	profile__counter_add(p, "lost.map_full", (uint64_t)i % 2);
	set_meta(p, start, len)->host = s_host;
}

#define RICH_W 40

/* rich_window()'s windows, 10 s each from T0, in 5-minute segments, by this writer (runq_entry_frame: rq). */
static void write_rich_opts(const char *dir, int rq, int deeper)
{
	struct store_opts o = { .segment_span_ns = 300 * SEC, .no_rollup = 1, .runq_entry_frame = rq };
	struct store *w;
	struct profile *p;

	rm_rf(dir);
	profile__new(&p);
	CHECK_EQ_INT(open_store(dir, 1, &w, &o), 0);
	for (int i = 0; i < RICH_W; i++) {
		rich_window(p, i, T0 + i * 10 * SEC, 10 * SEC);
		if (deeper) {
			/* A wait of the main thread of pid 500 preempted deeper in the same interrupt. */
			static const char *const kfn[] = { "asm_sysvec_apic_timer_interrupt", "irq_exit_rcu",
							   "__schedule" };
			uint32_t f[3], st, app;
			for (int k = 0; k < 3; k++) {
				struct pf_frame fr = { .offset = 0xffffffff81000300ull + 0x100u * (k == 1), .kind = PF_FRAME_KERNEL };
				profile__intern_str(p, kfn[k], &fr.name);
				if (k == 2)
					fr.offset = 0xffffffff81000400ull;
				profile__frame_add(p, &fr, &f[k]);
			}
			profile__stack_add(p, f, 3, &st);
			profile__intern_str(p, "app", &app);
			struct pf_sample x = { .pid = 500, .tid = 500, .comm = app, .thread = app, .stack = st,
					       .kind = PF_KIND_RUNQ, .value = 777 };
			profile__add(p, &x);
		}
		CHECK_EQ_INT(store__append(w, p), 0);
	}
	store__close(w);
	profile__free(p);
}

static void write_rich(const char *dir)
{
	write_rich_opts(dir, 0, 0);
}

static int window_text(const struct store_window_info *w, const struct profile *p, void *arg)
{
	char **all = arg, *x = profile_text(p);
	size_t n = strlen(*all) + strlen(x) + 32;
	char *t = malloc(n);
	snprintf(t, n, "%s%lld\n%s", *all, (long long)w->start_ns, x);
	free(*all);
	free(x);
	*all = t;
	return 0;
}

/* Every window of dir as it decodes, sample by sample, in order. */
static char *windows_text(const char *dir)
{
	struct store *r;
	char *all = strdup("");

	if (open_store(dir, 0, &r, NULL))
		return all;
	if (store__read(r, INT64_MIN, INT64_MAX, window_text, &all)) {
		free(all);
		all = strdup("error");
	}
	store__close(r);
	return all;
}

/*
 * tests/unit/data/v5: rich_window()'s windows as the format 5 writer
 * with payload version 4 wrote them; tests/unit/data/v6: the same
 * windows as the format 6 writer wrote them, payload version 5, each
 * delta compressed with the record before it only (header flag bit 6).
 * Both written by test_store --write-rich DIR of their time. Read as
 * they are: every window the same as this writer's of the same windows.
 */
static void test_rich_compat(const char *base, const char *v)
{
	char dir[256], now[256], cmd[1200];
	const char *data = getenv("T_DATA") ? getenv("T_DATA") : "tests/unit/data";

	snprintf(dir, sizeof(dir), "%s/%s", base, v);
	snprintf(now, sizeof(now), "%s/%s-now", base, v);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s' && cp '%s'/%s/*.pfd '%s'/", dir, dir, data, v, dir);
	CHECK_EQ_INT(system(cmd), 0);
	write_rich(now);
	nwarn = 0;
	char *old = windows_text(dir), *cur = windows_text(now);
	CHECK(strlen(old) > 10000 && !strstr(old, "error"));
	CHECK(strcmp(old, cur) == 0);
	CHECK_EQ_INT(nwarn, 0);
	/* A range from inside a chain decodes the same. */
	struct store *r;
	if (!open_store(dir, 0, &r, NULL)) {
		char *x = range_text(r, T0 + 125 * SEC, T0 + 355 * SEC, 4, NULL);
		store__close(r);
		CHECK_EQ_INT(open_store(now, 0, &r, NULL), 0);
		char *y = range_text(r, T0 + 125 * SEC, T0 + 355 * SEC, 4, NULL);
		store__close(r);
		CHECK(strcmp(x, y) == 0 && strlen(x) > 1000);
		free(x);
		free(y);
	}
	free(old);
	free(cur);
}

static int keep_kind(const struct profile *p, const struct pf_sample *s, void *arg)
{
	return s->kind == *(const uint32_t *)arg;
}

static int merge_all(const struct store_window_info *w, const struct profile *p, void *arg)
{
	return profile__merge(arg, p, NULL, NULL);
}

/*
 * Run-queue entries by kernel entry: each run-queue stack is its first
 * kernel frame, never the scheduler; each thread's run-queue time is the
 * same as with every frame; on-CPU and off-CPU entries are untouched.
 */
static void test_runq_entry(const char *base)
{
	char full[256], entry[256];
	struct profile *a, *b, *x, *y;
	struct store *r;

	snprintf(full, sizeof(full), "%s/rq-full", base);
	snprintf(entry, sizeof(entry), "%s/rq-entry", base);
	write_rich_opts(full, 0, 1);
	write_rich_opts(entry, 1, 1);
	profile__new(&a);
	profile__new(&b);
	profile__new(&x);
	profile__new(&y);
	CHECK_EQ_INT(open_store(full, 0, &r, NULL), 0);
	CHECK_EQ_INT(store__read(r, INT64_MIN, INT64_MAX, merge_all, a), 0);
	store__close(r);
	CHECK_EQ_INT(open_store(entry, 0, &r, NULL), 0);
	CHECK_EQ_INT(store__read(r, INT64_MIN, INT64_MAX, merge_all, b), 0);
	store__close(r);
	for (uint32_t k = 0; k < PF_KIND_RUNQ; k++) {
		profile__reset(x);
		profile__reset(y);
		profile__merge(x, a, keep_kind, &k);
		profile__merge(y, b, keep_kind, &k);
		char *tx = profile_text(x), *ty = profile_text(y);
		CHECK(strcmp(tx, ty) == 0 && strlen(tx) > 1000);
		free(tx);
		free(ty);
	}
	/* Run-queue time by thread (pid, tid) both ways; the stacks of the entry store. */
	uint64_t ta = 0, tb = 0, mism = 0, nb = 0, bad = 0;
	for (size_t i = 0; i < profile__nsamples(a); i++) {
		const struct pf_sample *s = profile__sample(a, i);
		if (s->kind != PF_KIND_RUNQ)
			continue;
		ta += s->value;
		uint64_t sa = 0, sb = 0;
		for (size_t j = 0; j < profile__nsamples(a); j++) {
			const struct pf_sample *t = profile__sample(a, j);
			if (t->kind == PF_KIND_RUNQ && t->pid == s->pid && t->tid == s->tid)
				sa += t->value;
		}
		for (size_t j = 0; j < profile__nsamples(b); j++) {
			const struct pf_sample *t = profile__sample(b, j);
			if (t->kind == PF_KIND_RUNQ && t->pid == s->pid && t->tid == s->tid)
				sb += t->value;
		}
		mism += sa != sb;
	}
	for (size_t i = 0; i < profile__nsamples(b); i++) {
		const struct pf_sample *s = profile__sample(b, i);
		if (s->kind != PF_KIND_RUNQ)
			continue;
		uint32_t n;
		const uint32_t *f = profile__stack(b, s->stack, &n);
		const struct pf_frame *fr = n ? profile__frame(b, f[0]) : NULL;
		bad += n != 1 || fr->kind != PF_FRAME_KERNEL || !strcmp(profile__str(b, fr->name), "__schedule");
		tb += s->value;
		nb++;
	}
	CHECK(ta > 0 && ta == tb);
	CHECK_EQ_INT(mism, 0);
	CHECK_EQ_INT(bad, 0);
	/* Pid 500's two waits in the timer interrupt are one entry now: fewer entries than before. */
	size_t na = 0;
	for (size_t i = 0; i < profile__nsamples(a); i++)
		na += profile__sample(a, i)->kind == PF_KIND_RUNQ;
	CHECK(nb > 0 && nb < na);
	printf("run-queue by kernel entry: %zu entries from %zu, %llu bytes from %llu\n", (size_t)nb, na,
	       (unsigned long long)dir_bytes(entry, "seg-"), (unsigned long long)dir_bytes(full, "seg-"));
	profile__free(a);
	profile__free(b);
	profile__free(x);
	profile__free(y);
}

/* A writer asked to share the store with a group re-owns what an earlier writer left: segments and summaries. */
static void test_group_files(const char *base)
{
	const unsigned gid = 4242;
	char dir[256], path[600];
	struct store_opts o = { 0 };
	struct store *w;
	struct dirent *de;
	DIR *d;
	int nseg = 0, nsum = 0;

	if (geteuid() != 0) {
		printf("group files: not root, cannot give files to another group: not checked\n");
		return;
	}
	snprintf(dir, sizeof(dir), "%s/group", base);
	write_sw(dir);
	CHECK_EQ_INT(summarise_all(dir, NULL, NULL), 6);
	o.dir = dir;
	o.writer = 1;
	o.no_rollup = 1;
	o.group_read = 1;
	o.group_gid = gid;
	o.warn = on_warn;
	CHECK_EQ_INT(store__open(&o, &w), 0);
	store__close(w);
	d = opendir(dir);
	CHECK(d != NULL);
	while (d && (de = readdir(d))) {
		struct stat st;
		int seg = !strncmp(de->d_name, "seg-", 4), sum = !strncmp(de->d_name, "sum-", 4);
		if (!seg && !sum)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		CHECK_EQ_INT(stat(path, &st), 0);
		if (st.st_gid != gid || (st.st_mode & 0777) != 0640)
			fprintf(stderr, "%s: gid %u mode %o\n", de->d_name, (unsigned)st.st_gid, st.st_mode & 0777);
		CHECK_EQ_INT(st.st_gid, gid);
		CHECK_EQ_INT(st.st_mode & 0777, 0640);
		nseg += seg;
		nsum += sum;
	}
	if (d)
		closedir(d);
	CHECK_EQ_INT(nseg, 6);
	CHECK_EQ_INT(nsum, 6);
}

/*
 * Lossless tiers (younger than the named age), a 1-minute floor, 5-minute
 * segments: by age, those that ended less than 30 minutes ago wait at level 1.
 */
static const struct store_opts press_opts = {
	.segment_span_ns = 300 * SEC,
	.rollup = { { 60 * SEC, 60 * SEC }, { 1800 * SEC, 600 * SEC } },
};

/* RW windows appended one at a time, retention and one compact step after each, as profd does. */
static void press_run(const char *dir, uint64_t max_bytes, int pct, struct store_stats *st, struct lvl_count *c)
{
	struct store_opts o = press_opts;
	struct store *w;
	struct profile *p;

	rm_rf(dir);
	o.dir = dir;
	o.writer = 1;
	o.warn = on_warn;
	o.max_bytes = max_bytes;
	o.rollup_pressure_pct = pct;
	profile__new(&p);
	CHECK_EQ_INT(store__open(&o, &w), 0);
	for (int i = 0; i < RW; i++) {
		int64_t now = T0 + (i + 1) * 10 * SEC;
		make_window(p, i, T0 + i * 10 * SEC, 10 * SEC);
		CHECK_EQ_INT(store__append(w, p), 0);
		CHECK_EQ_INT(store__retain(w, now), 0);
		CHECK_EQ_INT(store__compact(w, now), 0);
	}
	store__stats(w, st);
	memset(c, 0, sizeof(*c));
	store__list(w, INT64_MIN, INT64_MAX, on_level, c);
	store__close(w);
	profile__free(p);
}

static int on_first(const struct store_window_info *w, void *arg)
{
	int64_t *first = arg;
	if (w->start_ns < *first)
		*first = w->start_ns;
	return 0;
}

static int64_t oldest_start(const char *dir)
{
	struct store *r;
	int64_t first = INT64_MAX;

	if (open_store(dir, 0, &r, NULL))
		return first;
	store__list(r, INT64_MIN, INT64_MAX, on_first, &first);
	store__close(r);
	return first;
}

static char *whole_answer(const char *dir)
{
	struct store *r;
	char *x, *y, *t;

	if (open_store(dir, 0, &r, NULL))
		return strdup("error");
	x = range_text(r, INT64_MIN, INT64_MAX, 0, NULL);
	y = range_text(r, INT64_MIN, INT64_MAX, 2, NULL);
	store__close(r);
	t = malloc(strlen(x) + strlen(y) + 2);
	sprintf(t, "%s|%s", x, y);
	free(x);
	free(y);
	return t;
}

/*
 * A store past its pressure threshold rolls old segments up to the last
 * tier ahead of their age instead of letting retention remove them: all
 * history kept, every window's samples once, under max_bytes.
 */
static void test_pressure(const char *base)
{
	char dir[256];
	struct store *s;
	struct store_stats st;
	struct lvl_count c;
	struct store_opts o = press_opts;
	const int64_t now = T0 + RW * 10 * SEC;

	snprintf(dir, sizeof(dir), "%s/press", base);
	/* No limit: rollups by age alone; segments 1 and 2 stay at level 1. */
	press_run(dir, 0, 0, &st, &c);
	uint64_t by_age = st.bytes_on_disk;
	CHECK_EQ_INT(st.segments_removed, 0);
	CHECK(c.n[1] > 0);
	char *want = whole_answer(dir);
	CHECK(strcmp(want, "") != 0 && !strstr(want, "error"));

	/* The same store, every segment past the floor at the last tier: what pressure can reach. */
	o.dir = dir;
	o.writer = 1;
	o.warn = on_warn;
	o.max_bytes = by_age;
	o.rollup_pressure_pct = 1;
	CHECK_EQ_INT(store__open(&o, &s), 0);
	compact_all(s, now);
	store__stats(s, &st);
	store__close(s);
	uint64_t coarse = st.bytes_on_disk;
	memset(&c, 0, sizeof(c));
	CHECK_EQ_INT(open_store(dir, 0, &s, NULL), 0);
	store__list(s, INT64_MIN, INT64_MAX, on_level, &c);
	store__close(s);
	CHECK_EQ_INT(c.n[1], 0);
	CHECK(totals_ok(dir, NULL));
	fprintf(stderr, "pressure: %llu bytes by age, %llu with every old segment at the last tier\n",
		(unsigned long long)by_age, (unsigned long long)coarse);
	CHECK(coarse < by_age);

	/* kill -9 at each step of a rollup by pressure: every window once, before and after the next start. */
	for (int step = STORE_CRASH_ROLL_WRITING; step <= STORE_CRASH_ROLL_RENAMED; step++) {
		struct store_opts q = o;
		press_run(dir, 0, 0, &st, &c);
		q.rollup_pressure_pct = -1; /* summaries first: the crash is in the rollup */
		CHECK_EQ_INT(store__open(&q, &s), 0);
		compact_all(s, now);
		store__close(s);
		CHECK(killed_compacting(&o, step, now));
		CHECK(totals_ok(dir, NULL));
		finish_rollups(&o, dir, now);
		CHECK(totals_ok(dir, NULL));
		memset(&c, 0, sizeof(c));
		CHECK_EQ_INT(open_store(dir, 0, &s, NULL), 0);
		store__list(s, INT64_MIN, INT64_MAX, on_level, &c);
		store__close(s);
		CHECK_EQ_INT(c.n[1], 0);
	}

	/*
	 * A limit between the two: by age alone, retention removes the oldest
	 * segments... Two thirds of the way: the last windows as flushed come
	 * on top of the coarse store while the last rollups by pressure run,
	 * about 1,100 bytes here (halfway left 4 bytes of room).
	 */
	uint64_t limit = coarse + (by_age - coarse) * 2 / 3;
	press_run(dir, limit, -1, &st, &c);
	CHECK(st.segments_removed > 0);
	CHECK(oldest_start(dir) > T0);

	/* ...by pressure (the default threshold), nothing is removed and every window is there once. */
	nwarn = 0;
	press_run(dir, limit, 0, &st, &c);
	CHECK_EQ_INT(nwarn, 0);
	CHECK_EQ_INT(st.segments_removed, 0);
	CHECK(st.bytes_on_disk <= limit);
	CHECK_EQ_INT(oldest_start(dir), T0);
	CHECK_EQ_INT(c.windows, RW);
	CHECK(c.n[2] > 0);
	CHECK(totals_ok(dir, NULL));
	char *got = whole_answer(dir);
	CHECK(strcmp(want, got) == 0);
	free(got);
	free(want);
	fprintf(stderr, "pressure: limit %llu: %llu bytes, %llu segments removed; levels %d/%d/%d\n",
		(unsigned long long)limit, (unsigned long long)st.bytes_on_disk,
		(unsigned long long)st.segments_removed, c.n[0], c.n[1], c.n[2]);
}

static void test_retention(const char *base)
{
	char dir[256];
	struct store *w;
	struct profile *p;
	struct seen s;
	struct store_stats st;
	struct store_opts o = { .segment_span_ns = 100 * SEC, .max_age_ns = 1000 * SEC };

	snprintf(dir, sizeof(dir), "%s/ret", base);
	profile__new(&p);
	CHECK_EQ_INT(open_store(dir, 1, &w, &o), 0);
	for (int i = 0; i < 300; i++) { /* 3000 s, 30 segments */
		make_window(p, i, T0 + i * 10 * SEC, 10 * SEC);
		CHECK_EQ_INT(store__append(w, p), 0);
	}
	/* By age: now = T0+3000s keeps windows ending after T0+2000s, whole segments only. */
	CHECK_EQ_INT(store__retain(w, T0 + 3000 * SEC), 0);
	memset(&s, 0, sizeof(s));
	store__list(w, INT64_MIN, INT64_MAX, on_info, &s);
	CHECK_EQ_INT(s.n, 100);
	CHECK_EQ_INT(s.starts[0], T0 + 2000 * SEC);
	store__stats(w, &st);
	CHECK_EQ_INT(st.segments_removed, 20);
	CHECK_EQ_INT(st.segments, 10);

	/* By size: a limit of about 4 segments, the open one included. */
	uint64_t per_seg = st.bytes_on_disk / 10;
	store__close(w);
	o.max_age_ns = 0;
	o.max_bytes = per_seg * 4 + per_seg / 2;
	CHECK_EQ_INT(open_store(dir, 1, &w, &o), 0);
	make_window(p, 300, T0 + 3000 * SEC, 10 * SEC);
	CHECK_EQ_INT(store__append(w, p), 0);
	CHECK_EQ_INT(store__retain(w, T0 + 3010 * SEC), 0);
	store__stats(w, &st);
	CHECK(st.bytes_on_disk <= o.max_bytes);
	memset(&s, 0, sizeof(s));
	store__list(w, INT64_MIN, INT64_MAX, on_info, &s);
	CHECK_EQ_INT(s.starts[s.n - 1], T0 + 3000 * SEC); /* newest kept */
	CHECK_EQ_INT(s.n, 41);
	store__close(w);
	profile__free(p);
}

static void test_write_errors(const char *base)
{
	char dir[256];
	struct store *w;
	struct profile *p;
	struct store_stats st;
	struct seen s;
	struct rlimit old, lim;

	/* RLIMIT_FSIZE stands in for a full disk: writes past it fail with EFBIG. */
	snprintf(dir, sizeof(dir), "%s/full", base);
	profile__new(&p);
	CHECK_EQ_INT(open_store(dir, 1, &w, NULL), 0);
	signal(SIGXFSZ, SIG_IGN);
	getrlimit(RLIMIT_FSIZE, &old);
	lim = old;
	lim.rlim_cur = 2000;
	CHECK(!setrlimit(RLIMIT_FSIZE, &lim));
	int ok = 0, failed = 0;
	for (int i = 0; i < 40; i++) {
		make_window(p, i, T0 + i * 10 * SEC, 10 * SEC);
		int err = store__append(w, p);
		if (!err)
			ok++;
		else if (err == -EFBIG)
			failed++;
	}
	CHECK(ok > 0 && failed > 0 && ok + failed == 40);
	store__stats(w, &st);
	CHECK_EQ_INT(st.write_errors, failed);
	CHECK_EQ_INT(st.windows_dropped, failed);
	/* Space returns: the same store writes again, and every written window reads. */
	CHECK(!setrlimit(RLIMIT_FSIZE, &old));
	for (int i = 40; i < 45; i++) {
		make_window(p, i, T0 + i * 10 * SEC, 10 * SEC);
		CHECK_EQ_INT(store__append(w, p), 0);
	}
	store__close(w);
	nwarn = 0;
	CHECK_EQ_INT(read_all(dir, &s), 0);
	CHECK_EQ_INT(s.n, ok + 5);
	CHECK_EQ_INT(s.bad, 0);
	CHECK_EQ_INT(nwarn, 0);
	profile__free(p);
}

static void test_symlinks(const char *base)
{
	char dir[256], link[512], target[512];
	struct store *w;
	struct seen s;

	snprintf(dir, sizeof(dir), "%s/sym", base);
	CHECK_EQ_INT(open_store(dir, 1, &w, NULL), 0);
	store__close(w);
	snprintf(target, sizeof(target), "%s/target", base);
	int fd = open(target, O_WRONLY | O_CREAT, 0600);
	close(fd);
	snprintf(link, sizeof(link), "%s/seg-%019lld.pfd", dir, (long long)T0);
	CHECK(!symlink(target, link));
	snprintf(link, sizeof(link), "%s/seg-%019lld-%019lld.pfd", dir, (long long)T0, (long long)T0 + 1);
	CHECK(!symlink(target, link));
	nwarn = 0;
	CHECK_EQ_INT(read_all(dir, &s), 0);
	CHECK_EQ_INT(s.n, 0);
	CHECK_EQ_INT(nwarn, 2);
	/* The writer neither follows nor truncates through a symlink; it warns and goes on. */
	CHECK_EQ_INT(open_store(dir, 1, &w, NULL), 0);
	store__close(w);
	struct stat st;
	CHECK(!lstat(target, &st) && S_ISREG(st.st_mode));
}

/*
 * Driver for tests/integration/41-store-full-disk.sh: MNT is a small tmpfs.
 * Fills it with a ballast file until the store's appends fail with ENOSPC,
 * checks the store stays usable and counts the drops, frees the ballast and
 * checks appends resume and every written window reads back.
 */
static int full_disk(const char *mnt)
{
	char dir[512], ballast[512];
	struct store *w;
	struct profile *p;
	struct store_stats st;
	struct seen s;
	static char junk[4096];
	int i = 0, ok = 0, nospc = 0;

	snprintf(dir, sizeof(dir), "%s/state", mnt);
	snprintf(ballast, sizeof(ballast), "%s/ballast", mnt);
	profile__new(&p);
	CHECK_EQ_INT(open_store(dir, 1, &w, NULL), 0);
	for (; i < 20; i++) {
		make_window(p, i, T0 + i * 10 * SEC, 10 * SEC);
		CHECK_EQ_INT(store__append(w, p), 0);
	}
	ok = i;
	/* Fill the file system to the last block. */
	int fd = open(ballast, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	while (write(fd, junk, sizeof(junk)) > 0)
		;
	while (write(fd, junk, 1) > 0)
		;
	for (int k = 0; k < 80; k++, i++) {
		make_window(p, i, T0 + i * 10 * SEC, 10 * SEC);
		int err = store__append(w, p);
		if (!err)
			ok++;
		else if (err == -ENOSPC)
			nospc++;
		else
			CHECK_EQ_INT(err, -ENOSPC);
	}
	printf("disk full: %d appends failed with ENOSPC\n", nospc);
	CHECK(nospc >= 40); /* deltas of these tiny windows are ~100 bytes: the last page holds dozens */
	store__stats(w, &st);
	CHECK_EQ_INT(st.write_errors, nospc);
	CHECK_EQ_INT(st.windows_dropped, nospc);
	/* Readers still read everything written, with no damage reported. */
	nwarn = 0;
	CHECK_EQ_INT(read_all(dir, &s), 0);
	CHECK_EQ_INT(s.n, ok);
	CHECK_EQ_INT(nwarn, 0);
	/* Space returns: the same store object writes again. */
	close(fd);
	CHECK(!unlink(ballast));
	for (int k = 0; k < 10; k++, i++) {
		make_window(p, i, T0 + i * 10 * SEC, 10 * SEC);
		CHECK_EQ_INT(store__append(w, p), 0);
	}
	ok += 10;
	store__close(w);
	nwarn = 0;
	CHECK_EQ_INT(read_all(dir, &s), 0);
	CHECK_EQ_INT(s.n, ok);
	CHECK_EQ_INT(s.bad, 0);
	CHECK_EQ_INT(nwarn, 0);
	profile__free(p);
	return 0;
}

/* Driver for the read-only half: MNT holds a store and is mounted read-only. */
static int read_only(const char *mnt)
{
	char dir[512];
	struct store *w;
	struct seen s;

	snprintf(dir, sizeof(dir), "%s/state", mnt);
	CHECK_EQ_INT(open_store(dir, 1, &w, NULL), -EROFS);
	nwarn = 0;
	CHECK_EQ_INT(read_all(dir, &s), 0);
	CHECK(s.n > 0);
	CHECK_EQ_INT(s.bad, 0);
	CHECK_EQ_INT(nwarn, 0);
	printf("read-only: writer refused with EROFS, %d windows read\n", s.n);
	return 0;
}


/*
 * A window of cc1 and python3: stacks that reach work() from two call
 * sites (pcs 0x2100 and 0x2200 + i) through a run of two unnamed cc1
 * callers, a Python caller, a kernel caller; leaves unnamed and named.
 */
static void make_calls_window(struct profile *p, int i)
{
	uint32_t s_main, s_work, s_leaf, s_cc1, s_py, s_pyf, s_comm, s_k, f[12], st[2];

	profile__reset(p);
	profile__intern_str(p, "main", &s_main);
	profile__intern_str(p, "work", &s_work);
	profile__intern_str(p, "leaf_fn", &s_leaf);
	profile__intern_str(p, "/usr/lib/gcc/cc1", &s_cc1);
	profile__intern_str(p, "/srv/app.py", &s_py);
	profile__intern_str(p, "handler (/srv/app.py)", &s_pyf);
	profile__intern_str(p, "entry_SYSCALL_64", &s_k);
	profile__intern_str(p, "cc1", &s_comm);
	struct pf_frame fr[8] = {
		{ .name = s_main, .module = s_cc1, .offset = 0x1000, .kind = PF_FRAME_USER },
		{ .name = s_work, .module = s_cc1, .offset = 0x2200 + (uint64_t)i, .kind = PF_FRAME_USER },
		{ .name = 0, .module = s_cc1, .offset = 0x5000 + (uint64_t)i, .kind = PF_FRAME_USER },
		{ .name = 0, .module = s_cc1, .offset = 0x6000, .kind = PF_FRAME_USER },
		{ .name = 0, .module = s_cc1, .offset = 0x7000 + (uint64_t)i, .kind = PF_FRAME_USER },
		{ .name = s_work, .module = s_cc1, .offset = 0x2100, .kind = PF_FRAME_USER },
		{ .name = s_pyf, .module = s_py, .offset = PF_PY_OFFSET(10, 12 + i), .kind = PF_FRAME_PY },
		{ .name = s_k, .module = 0, .offset = 0xffffffff81000000ull + (uint64_t)i,
		  .kind = PF_FRAME_KERNEL },
	};
	struct pf_frame leaf = { .name = s_leaf, .module = s_cc1, .offset = 0x3000 + (uint64_t)i,
				 .kind = PF_FRAME_USER };
	for (int k = 0; k < 8; k++)
		profile__frame_add(p, &fr[k], &f[k]);
	profile__frame_add(p, &leaf, &f[8]);
	/* main;work@i;?;?;?(leaf)  and  main;work@0x2100;handler;entry_SYSCALL_64;leaf_fn */
	uint32_t a[5] = { f[0], f[1], f[2], f[3], f[4] }, b[5] = { f[0], f[5], f[6], f[7], f[8] };
	profile__stack_add(p, a, 5, &st[0]);
	profile__stack_add(p, b, 5, &st[1]);
	for (int k = 0; k < 2; k++) {
		struct pf_sample s = { .pid = 300 + (uint32_t)i, .tid = 300 + (uint32_t)i + (uint32_t)k,
				       .comm = s_comm, .thread = s_comm, .stack = st[k], .kind = PF_KIND_CPU,
				       .value = 5 + (uint64_t)k };
		profile__add(p, &s);
		s.kind = PF_KIND_OFFCPU;
		s.value = 123456;
		profile__add(p, &s);
	}
	set_meta(p, T0 + i * 10 * SEC, 10 * SEC);
}

struct calls_seen {
	int windows, bad;
	uint64_t cpu, offcpu;
	char first[512], second[512];
};

/* "name@offset;..." of stack id. */
static void stack_text(const struct profile *p, uint32_t id, char *out, size_t n)
{
	uint32_t m;
	const uint32_t *f = profile__stack(p, id, &m);
	size_t len = 0;

	out[0] = 0;
	for (uint32_t k = 0; k < m && len < n; k++) {
		const struct pf_frame *fr = profile__frame(p, f[k]);
		len += (size_t)snprintf(out + len, n - len, "%s%s@%llx", k ? ";" : "", profile__str(p, fr->name),
					(unsigned long long)fr->offset);
	}
}

static int on_calls(const struct store_window_info *w, const struct profile *p, void *arg)
{
	struct calls_seen *c = arg;

	for (size_t i = 0; i < profile__nsamples(p); i++) {
		const struct pf_sample *s = profile__sample(p, i);
		char *out = s->tid == s->pid ? c->first : c->second;

		if (s->pid != 300 + (uint32_t)c->windows)
			c->bad++;
		if (s->kind == PF_KIND_CPU)
			c->cpu += s->value;
		else
			c->offcpu += s->value;
		if (c->windows == 1)
			stack_text(p, s->stack, out, 512);
	}
	c->windows++;
	return 0;
}

static int on_leaves(const struct store_window_info *w, const struct profile *p, void *arg)
{
	char *out = arg;
	size_t len = strlen(out);

	for (size_t i = 0; i < profile__nsamples(p); i++) {
		const struct pf_sample *s = profile__sample(p, i);

		len += (size_t)snprintf(out + len, 512 - len, "%u:%u:", s->tid, s->kind);
		stack_text(p, s->stack, out + len, 512 - len);
		len = strlen(out);
		len += (size_t)snprintf(out + len, 512 - len, "=%llu ", (unsigned long long)s->value);
	}
	return 0;
}

/*
 * Named leaves by function: entries of a thread and kind whose stacks then
 * are one become one entry, their values summed; a leaf met as a caller
 * before takes that function's pc; other threads and kinds stay apart.
 */
static void test_leaf_by_function(const char *base)
{
	char dir[256], seen[512] = "";
	struct store *s;
	struct profile *p;
	uint32_t s_main, s_fn, s_mod, s_comm, f[4], st[3];

	snprintf(dir, sizeof(dir), "%s/leaves", base);
	rm_rf(dir);
	CHECK_EQ_INT(profile__new(&p), 0);
	profile__intern_str(p, "main", &s_main);
	profile__intern_str(p, "fn", &s_fn);
	profile__intern_str(p, "/usr/bin/app", &s_mod);
	profile__intern_str(p, "app", &s_comm);
	struct pf_frame fr[4] = {
		{ .name = s_main, .module = s_mod, .offset = 0x100, .kind = PF_FRAME_USER },
		{ .name = s_fn, .module = s_mod, .offset = 0x210, .kind = PF_FRAME_USER }, /* fn as a caller */
		{ .name = s_fn, .module = s_mod, .offset = 0x220, .kind = PF_FRAME_USER },
		{ .name = s_main, .module = s_mod, .offset = 0x130, .kind = PF_FRAME_USER },
	};
	for (int k = 0; k < 4; k++)
		profile__frame_add(p, &fr[k], &f[k]);
	uint32_t a[3] = { f[0], f[1], f[3] }, b[2] = { f[0], f[2] }, c[2] = { f[0], f[1] };
	profile__stack_add(p, a, 3, &st[0]); /* main;fn@210;main@130 */
	profile__stack_add(p, b, 2, &st[1]); /* main;fn@220 */
	profile__stack_add(p, c, 2, &st[2]); /* main;fn@210 */
	struct pf_sample smp[] = {
		{ .pid = 50, .tid = 50, .stack = st[0], .kind = PF_KIND_CPU, .value = 1 },
		{ .pid = 50, .tid = 50, .stack = st[1], .kind = PF_KIND_CPU, .value = 2 },
		{ .pid = 50, .tid = 50, .stack = st[2], .kind = PF_KIND_CPU, .value = 4 },
		{ .pid = 50, .tid = 51, .stack = st[1], .kind = PF_KIND_CPU, .value = 8 },
		{ .pid = 50, .tid = 50, .stack = st[1], .kind = PF_KIND_OFFCPU, .value = 16000 },
	};
	for (size_t k = 0; k < sizeof(smp) / sizeof(smp[0]); k++) {
		smp[k].comm = smp[k].thread = s_comm;
		profile__add(p, &smp[k]);
	}
	profile__meta(p)->start_ns = T0;
	profile__meta(p)->end_ns = T0 + 10 * SEC;
	struct store_opts o = { .dir = dir, .writer = 1, .warn = on_warn, .calls_by_function = 1,
				.leaf_by_function = 1 };
	CHECK_EQ_INT(store__open(&o, &s), 0);
	CHECK_EQ_INT(store__append(s, p), 0);
	store__close(s);
	o.writer = 0;
	CHECK_EQ_INT(store__open(&o, &s), 0);
	CHECK_EQ_INT(store__read(s, INT64_MIN, INT64_MAX, on_leaves, seen), 0);
	store__close(s);
	/* The leaf main@130 at main's first pc; fn@220 and fn@210 one entry of 2 + 4. */
	CHECK_EQ_STR(seen, "50:0:main@100;fn@210=6 50:0:main@100;fn@210;main@100=1 51:0:main@100;fn@210=8 "
			   "50:1:main@100;fn@210=16000 ");
	profile__free(p);
}

static void test_calls_by_function(const char *base)
{
	char dir[256];
	struct store *s;
	struct profile *p;
	struct calls_seen c = { 0 };

	snprintf(dir, sizeof(dir), "%s/calls", base);
	CHECK_EQ_INT(profile__new(&p), 0);
	for (int by = 2; by >= 0; by--) {
		struct store_opts o = { .dir = dir, .writer = 1, .warn = on_warn, .calls_by_function = by > 0,
					.leaf_by_function = by == 2 };

		rm_rf(dir);
		CHECK_EQ_INT(store__open(&o, &s), 0);
		for (int i = 0; i < 2; i++) {
			make_calls_window(p, i);
			CHECK_EQ_INT(store__append(s, p), 0);
		}
		store__close(s);
		o.writer = 0;
		memset(&c, 0, sizeof(c));
		CHECK_EQ_INT(store__open(&o, &s), 0);
		CHECK_EQ_INT(store__read(s, INT64_MIN, INT64_MAX, on_calls, &c), 0);
		store__close(s);
		CHECK_EQ_INT(c.windows, 2);
		CHECK_EQ_INT(c.bad, 0);
		CHECK_EQ_INT(c.cpu, 2 * (5 + 6));
		CHECK_EQ_INT(c.offcpu, 4 * 123456);
		if (by == 2) {
			/*
			 * Named leaves by function as well: leaf_fn at the pc met
			 * first (window 0's), the unnamed leaf at its own pc.
			 */
			CHECK_EQ_STR(c.first, "main@1000;work@2200;[cc1]@0;@7001");
			CHECK_EQ_STR(c.second, "main@1000;work@2200;handler (/srv/app.py)@d0000000a;"
					       "entry_SYSCALL_64@ffffffff81000000;leaf_fn@3000");
		} else if (by) {
			/*
			 * The second window: work() and the kernel caller at the pcs
			 * the writer met first (in window 0), the run of unnamed
			 * callers one module frame; leaves and Python frames as they
			 * were appended.
			 */
			CHECK_EQ_STR(c.first, "main@1000;work@2200;[cc1]@0;@7001");
			CHECK_EQ_STR(c.second, "main@1000;work@2200;handler (/srv/app.py)@d0000000a;"
					       "entry_SYSCALL_64@ffffffff81000000;leaf_fn@3001");
		} else {
			CHECK_EQ_STR(c.first, "main@1000;work@2201;@5001;@6000;@7001");
			CHECK_EQ_STR(c.second, "main@1000;work@2100;handler (/srv/app.py)@d0000000a;"
					       "entry_SYSCALL_64@ffffffff81000001;leaf_fn@3001");
		}
	}
	profile__free(p);
	test_leaf_by_function(base);
}

int main(int argc, char **argv)
{
	char base[] = "/tmp/profd-test-store.XXXXXX";

	if (argc == 3 && !strcmp(argv[1], "--full-disk")) {
		full_disk(argv[2]);
		T_DONE();
	}
	if (argc == 3 && !strcmp(argv[1], "--read-only")) {
		read_only(argv[2]);
		T_DONE();
	}
	if (argc == 3 && !strcmp(argv[1], "--write-v4")) {
		write_v4(argv[2]);
		T_DONE();
	}
	if (argc == 3 && (!strcmp(argv[1], "--write-rich") || !strcmp(argv[1], "--write-v5"))) {
		write_rich(argv[2]);
		T_DONE();
	}
	if (argc == 3 && !strcmp(argv[1], "--write-v4-named")) {
		write_v4_named(argv[2]);
		T_DONE();
	}
	if (argc != 1) {
		fprintf(stderr, "usage: %s [--full-disk MNT | --read-only MNT | --write-v4 DIR | "
			"--write-v4-named DIR | --write-rich DIR]\n", argv[0]);
		return 2;
	}

	if (!mkdtemp(base)) {
		perror("mkdtemp");
		return 1;
	}
	test_roundtrip(base);
	test_torn_tail(base);
	test_damage(base);
	test_chain_damage(base);
	test_chain_ranges(base);
	test_v1_compat(base);
	test_v2_compat();
	test_rollup(base);
	test_named_rollup(base);
	test_rollup_pieces(base);
	test_summary_pieces(base);
	test_encode_thread(base);
	test_read_thread(base);
	test_named_modules(base);
	test_named_tail(base);
	test_merge_by_label(base);
	test_calls_by_function(base);
	test_summaries(base);
	test_v3_compat(base);
	test_v4_compat(base);
	test_v4_named_compat(base);
	test_rich_compat(base, "v5");
	test_rich_compat(base, "v6");
	test_runq_entry(base);
	test_days(base);
	test_summary_memory(base);
	test_group_files(base);
	test_retention(base);
	test_pressure(base);
	test_write_errors(base);
	test_symlinks(base);
	rm_rf(base);
	T_DONE();
}
