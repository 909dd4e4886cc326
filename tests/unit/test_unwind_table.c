/*
 * The unwind-table builder against binutils: every row `readelf
 * --debug-dump=frames-interp` prints for libc, libstdc++, ld.so, the [vdso]
 * and our own -fomit-frame-pointer test binaries must be what our table
 * answers at that pc, and the pc just past a function with nothing after
 * it must answer "no unwind info".
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>
#include <unistd.h>

#include "t.h"
#include "unwind_table.h"

struct fde {
	uint64_t start, end;
};

struct expect {
	int cfa;     /* PROFD_UR_CFA_*, or -1: any expression kind */
	int cfa_off;
	int rbp;     /* PROFD_UR_RBP_*, or -1: do not compare */
	int rbp_off;
};

static const char *cfa_name(int k)
{
	static const char *const n[] = { "none", "rsp", "rbp", "plt", "deref-rbp", "signal", "end", "unsup" };

	return k >= 0 && k < 8 ? n[k] : "?";
}

/* readelf's CFA, rbp and ra columns → the row we must produce. */
static struct expect expected(const char *cfa, const char *rbp, const char *ra, bool signal)
{
	struct expect e = { .rbp = -1 };
	long n;

	if (signal) {
		e.cfa = PROFD_UR_CFA_SIGNAL;
		return e;
	}
	if (!strcmp(ra, "u")) {
		e.cfa = PROFD_UR_CFA_END;
		return e;
	}
	if (strcmp(ra, "c-8")) {
		e.cfa = PROFD_UR_CFA_UNSUP;
		return e;
	}
	if (!strcmp(cfa, "exp")) {
		e.cfa = -1;
		return e;
	}
	if ((!strncmp(cfa, "rsp+", 4) || !strncmp(cfa, "rbp+", 4)) && (n = strtol(cfa + 4, NULL, 10)) <= 65535) {
		e.cfa = cfa[1] == 's' ? PROFD_UR_CFA_RSP : PROFD_UR_CFA_RBP;
		e.cfa_off = n;
	} else {
		e.cfa = PROFD_UR_CFA_UNSUP;
		return e;
	}
	if (!rbp || !strcmp(rbp, "u") || !strcmp(rbp, "s")) {
		e.rbp = PROFD_UR_RBP_SAME;
	} else if (rbp[0] == 'c' && (rbp[1] == '-' || rbp[1] == '+')) {
		e.rbp = PROFD_UR_RBP_AT_CFA;
		e.rbp_off = strtol(rbp + 1, NULL, 10) / 8;
	} else {
		e.rbp = PROFD_UR_RBP_UNDEF;
	}
	return e;
}

static int cmp_fde(const void *a, const void *b)
{
	const struct fde *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

struct result {
	size_t rows_compared, mismatches, gaps_checked;
};

/* Compares one file; returns the number of readelf rows compared. */
static void compare(const char *path, struct result *res)
{
	char cmd[512], line[1024], sec[64] = "";
	struct unwind_table *t = NULL;
	struct unwind_table_stats st;
	struct fde *fdes = NULL;
	size_t nfdes = 0, cap = 0;
	/* Column indexes of the current table, and its CIE's first row for empty FDEs. */
	int col_rbp = -1, col_ra = -1;
	bool in_fde = false, signal = false, cie_sig[4096] = { false };
	struct { char cfa[64], rbp[64], ra[64]; bool have; } cie_row[4096];
	unsigned cur_cie = 0, fde_rows = 0;
	uint64_t fde_start = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;
	FILE *p;

	memset(cie_row, 0, sizeof(cie_row));
	CHECK(fd >= 0);
	if (fd < 0) {
		fprintf(stderr, "cannot open %s: %s\n", path, strerror(errno));
		return;
	}
	err = unwind_table__open_fd(fd, &t);
	close(fd);
	CHECK_EQ_INT(err, 0);
	if (err)
		return;
	unwind_table__stats(t, &st);

	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=frames-interp '%s' 2>/dev/null", path);
	p = popen(cmd, "r");
	CHECK(p != NULL);
	while (p && fgets(line, sizeof(line), p)) {
		char a[64], b[64], c[64];
		unsigned off, cie;
		uint64_t lo, hi, loc;

		if (sscanf(line, "Contents of the %63s section", sec) == 1)
			continue;
		/* Only the section our table was built from. */
		if (strcmp(sec, st.source == 1 ? ".eh_frame" : ".debug_frame"))
			continue;
		if (sscanf(line, "%x %*s %*s CIE \"%63[^\"]\"", &off, a) == 2 ||
		    (sscanf(line, "%x %*s %*s CIE", &off) == 1 && strstr(line, " CIE"))) {
			if (!strstr(line, " CIE \""))
				a[0] = 0;
			in_fde = false;
			cur_cie = off % 4096;
			cie_sig[cur_cie] = strchr(a, 'S') != NULL;
			cie_row[cur_cie].have = false;
			continue;
		}
		if (sscanf(line, "%*x %*s %*s FDE cie=%x pc=%" SCNx64 "..%" SCNx64, &cie, &lo, &hi) == 3) {
			/* Close the previous FDE: no rows printed means the CIE's initial rule holds. */
			if (in_fde && fde_rows == 0 && cie_row[cur_cie].have) {
				struct expect e = expected(cie_row[cur_cie].cfa, cie_row[cur_cie].rbp[0] ? cie_row[cur_cie].rbp : NULL,
							   cie_row[cur_cie].ra, signal);
				struct profd_urow r;

				if (!unwind_table__lookup(t, fde_start, &r) && e.cfa >= 0 &&
				    PROFD_UR_CFA(r.kind) != e.cfa) {
					res->mismatches++;
				}
				res->rows_compared++;
			}
			in_fde = true;
			fde_rows = 0;
			fde_start = lo;
			cur_cie = cie % 4096;
			signal = cie_sig[cur_cie];
			if (hi > lo) {
				if (nfdes == cap) {
					cap = cap ? cap * 2 : 1024;
					fdes = realloc(fdes, cap * sizeof(*fdes));
				}
				fdes[nfdes++] = (struct fde){ lo, hi };
			}
			continue;
		}
		if (strstr(line, "LOC") && strstr(line, "CFA")) {
			char *tok, *save;
			int i = 0;

			col_rbp = col_ra = -1;
			for (tok = strtok_r(line, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save), i++) {
				if (!strcmp(tok, "rbp"))
					col_rbp = i;
				if (!strcmp(tok, "ra"))
					col_ra = i;
			}
			continue;
		}
		if (sscanf(line, "%" SCNx64 " %63s", &loc, a) == 2 && strlen(line) > 17 && line[16] == ' ') {
			char *cols[32], *tok, *save;
			int n = 0;
			struct expect e;
			struct profd_urow r;

			/* "r10 (r10)" is one column: a register rule with its name. */
			for (tok = strtok_r(line, " \t\n", &save); tok && n < 32; tok = strtok_r(NULL, " \t\n", &save))
				if (tok[0] != '(' || n == 0)
					cols[n++] = tok;
			if (col_ra < 0 || col_ra >= n)
				continue;
			snprintf(b, sizeof(b), "%s", col_rbp >= 0 && col_rbp < n ? cols[col_rbp] : "");
			snprintf(c, sizeof(c), "%s", cols[col_ra]);
			if (!in_fde) {
				snprintf(cie_row[cur_cie].cfa, 64, "%s", cols[1]);
				snprintf(cie_row[cur_cie].rbp, 64, "%s", b);
				snprintf(cie_row[cur_cie].ra, 64, "%s", c);
				cie_row[cur_cie].have = true;
				continue;
			}
			fde_rows++;
			e = expected(cols[1], b[0] ? b : NULL, c, signal);
			res->rows_compared++;
			if (unwind_table__lookup(t, loc, &r)) {
				if (res->mismatches++ < 10)
					fprintf(stderr, "%s: %#" PRIx64 ": no row\n", path, loc);
				continue;
			}
			{
				int k = PROFD_UR_CFA(r.kind);
				bool ok = e.cfa >= 0 ? k == e.cfa : (k == PROFD_UR_CFA_PLT || k == PROFD_UR_CFA_DEREF_RBP ||
								    k == PROFD_UR_CFA_UNSUP);

				if (ok && (e.cfa == PROFD_UR_CFA_RSP || e.cfa == PROFD_UR_CFA_RBP))
					ok = r.cfa_off == e.cfa_off;
				if (ok && e.rbp >= 0)
					ok = (int)PROFD_UR_RBP(r.kind) == e.rbp &&
					     (e.rbp != PROFD_UR_RBP_AT_CFA || r.rbp_off == e.rbp_off);
				if (!ok && res->mismatches++ < 10)
					fprintf(stderr, "%s: %#" PRIx64 ": readelf CFA %s rbp %s ra %s; ours %s+%u rbp kind %u off %d\n",
						path, loc, cols[1], b[0] ? b : "-", c, cfa_name(k), r.cfa_off,
						PROFD_UR_RBP(r.kind), r.rbp_off * 8);
			}
		}
	}
	if (p)
		pclose(p);

	/* Past the end of a function that nothing follows: no row may claim it. */
	if (nfdes)
		qsort(fdes, nfdes, sizeof(*fdes), cmp_fde);
	for (size_t i = 0; i < nfdes; i++) {
		uint64_t end = fdes[i].end;
		struct profd_urow r;
		bool covered = false;

		for (size_t j = i + 1; j < nfdes && fdes[j].start <= end; j++)
			if (fdes[j].end > end)
				covered = true;
		for (size_t j = 0; j < i && !covered; j++)
			if (fdes[j].start <= end && fdes[j].end > end)
				covered = true;
		if (covered)
			continue;
		res->gaps_checked++;
		if (!unwind_table__lookup(t, end, &r) && PROFD_UR_CFA(r.kind) != PROFD_UR_CFA_NONE &&
		    res->mismatches++ < 10)
			fprintf(stderr, "%s: %#" PRIx64 " (end of an FDE): row %s, expected none\n", path, end,
				cfa_name(PROFD_UR_CFA(r.kind)));
	}
	printf("%s: %u FDEs (%u bad), %u raw rows -> %zu rows and index (%zu bytes), %u unsupported; "
	       "%zu readelf rows compared\n",
	       path, st.fdes, st.bad_fdes, st.raw_rows, unwind_table__nrows(t),
	       unwind_table__nrows(t) * sizeof(struct profd_urow), st.unsupported, res->rows_compared);
	free(fdes);
	unwind_table__free(t);
}

static void check_file(const char *path, size_t min_rows)
{
	struct result r = { 0 };

	compare(path, &r);
	CHECK(r.rows_compared >= min_rows);
	CHECK_EQ_INT(r.mismatches, 0);
	CHECK(r.gaps_checked > 0);
}

/* The [vdso] has no file: dump our own image and hold the in-memory build to readelf too. */
static void check_vdso(void)
{
	uint64_t base = getauxval(AT_SYSINFO_EHDR), lo, hi;
	char line[512], path[] = "/tmp/profd-vdso.XXXXXX";
	FILE *f = fopen("/proc/self/maps", "re");
	struct unwind_table *t = NULL;
	size_t len = 0;
	int fd;

	CHECK(base != 0 && f);
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "[vdso]") && sscanf(line, "%" SCNx64 "-%" SCNx64, &lo, &hi) == 2 && lo == base)
			len = hi - lo;
	if (f)
		fclose(f);
	CHECK(len > 0);
	if (!len)
		return;
	CHECK_EQ_INT(unwind_table__open_mem((void *)base, len, &t), 0);
	CHECK(t && unwind_table__nrows(t) > 0);
	unwind_table__free(t);
	fd = mkstemp(path);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	CHECK_EQ_INT(write(fd, (void *)base, len), (long long)len);
	close(fd);
	check_file(path, 10);
	unlink(path);
}

/* A .debug_frame-only object: clang without asynchronous unwind tables. */
static void check_debug_frame(const char *build)
{
	char src[] = "/tmp/profd-df.XXXXXX", cmd[1024], out[64];
	struct unwind_table *t = NULL;
	struct unwind_table_stats st = { 0 };
	int fd = mkstemp(src);
	FILE *f;

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	f = fdopen(fd, "w");
	fputs("int g(int); int f(int x) { volatile char b[64]; b[x & 63] = x; return g(b[1]) + 1; }\n"
	      "int g(int x) { return x * 3; }\n", f);
	fclose(f);
	snprintf(out, sizeof(out), "%s.o", src);
	snprintf(cmd, sizeof(cmd), "clang -x c -O1 -g -fomit-frame-pointer -fno-asynchronous-unwind-tables "
		 "-fno-unwind-tables -c -o %s %s", out, src);
	CHECK_EQ_INT(system(cmd), 0);
	fd = open(out, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	if (fd >= 0) {
		CHECK_EQ_INT(unwind_table__open_fd(fd, &t), 0);
		close(fd);
	}
	if (t) {
		unwind_table__stats(t, &st);
		CHECK_EQ_INT(st.source, 2);
		CHECK(unwind_table__nrows(t) >= 2);
		unwind_table__free(t);
		check_file(out, 1);
	}
	unlink(src);
	unlink(out);
	(void)build;
}

/*
 * After its rows went to the kernel a table keeps answering what the daemon
 * still asks (row count, file offset to address) and nothing else.
 */
static void check_drop_rows(void)
{
	int fd = open("/lib/x86_64-linux-gnu/libc.so.6", O_RDONLY | O_CLOEXEC);
	struct unwind_table *t = NULL;
	struct profd_urow row;
	uint64_t va0 = 0, va1 = 1;
	size_t n;

	CHECK(fd >= 0);
	if (fd < 0 || unwind_table__open_fd(fd, &t)) {
		CHECK(!"libc's table");
		if (fd >= 0)
			close(fd);
		return;
	}
	close(fd);
	n = unwind_table__nrows(t);
	CHECK(unwind_table__rows(t) != NULL);
	CHECK_EQ_INT(unwind_table__lookup(t, unwind_table__rows(t)[n / 2].pc, &row), 0);
	CHECK_EQ_INT(unwind_table__file_to_vaddr(t, 0x1000, &va0), 0);
	unwind_table__drop_rows(t);
	CHECK_EQ_INT(unwind_table__nrows(t), n);
	CHECK(unwind_table__rows(t) == NULL);
	CHECK_EQ_INT(unwind_table__lookup(t, 0x30000, &row), -ENOENT);
	CHECK_EQ_INT(unwind_table__file_to_vaddr(t, 0x1000, &va1), 0);
	CHECK_EQ_INT(va1, va0);
	unwind_table__drop_rows(t); /* twice: harmless */
	unwind_table__free(t);
}

/* The last row at or below vaddr by a search of all rows: what the bucket index must narrow to. */
static const struct profd_urow *plain_lookup(const struct profd_urow *rows, size_t n,
					     uint64_t vaddr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rows[mid].pc <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &rows[lo - 1] : NULL;
}

/*
 * The block as the walker reads it: the header, index entries that never
 * go down and stay within the rows, each the last row at or below its
 * bucket's start, and a lookup through the index that answers what a
 * search of all rows answers, at every row's pc, just below it, and at
 * addresses between and beyond.
 */
static void check_index(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct unwind_table *t = NULL;
	const struct profd_uindex *h;
	const struct profd_urow *blk, *rows, *want;
	const uint32_t *idx;
	size_t nb, skip, n, bad = 0, lookups = 0, buckets_max = 0;
	uint64_t last, shift;
	struct profd_urow r;
	unsigned seed = 7;

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	CHECK_EQ_INT(unwind_table__open_fd(fd, &t), 0);
	close(fd);
	if (!t)
		return;
	blk = unwind_table__rows(t);
	h = (const struct profd_uindex *)blk;
	nb = PROFD_UIDX_NB(h);
	shift = PROFD_UIDX_SHIFT(h);
	skip = PROFD_UIDX_SLOTS(nb);
	CHECK(nb >= 1 && shift <= 32 && skip < unwind_table__nrows(t));
	if (!(nb >= 1 && shift <= 32 && skip < unwind_table__nrows(t))) {
		unwind_table__free(t);
		return;
	}
	n = unwind_table__nrows(t) - skip;
	rows = blk + skip;
	idx = (const uint32_t *)(blk + 1);
	last = rows[n - 1].pc;
	CHECK_EQ_INT(h->base, rows[0].pc);
	CHECK_EQ_INT(idx[nb], n - 1);
	/* About one bucket per ROWS_PER_BUCKET rows: the index is a small part of the block. */
	CHECK(nb <= n / 8 + 1 && ((last - h->base) >> shift) + 1 == nb);
	for (size_t b = 0; b < nb; b++) {
		uint64_t start = h->base + (b << shift);

		if (idx[b] > idx[b + 1] || idx[b] >= n || rows[idx[b]].pc > start ||
		    (idx[b] + 1 < n && rows[idx[b] + 1].pc <= start))
			bad++;
		if (idx[b + 1] - idx[b] > buckets_max)
			buckets_max = idx[b + 1] - idx[b];
	}
	CHECK_EQ_INT(bad, 0);
	for (size_t i = 0; i < n + 20000; i++) {
		uint64_t va = i < n ? rows[i].pc - (i & 1) :
				      h->base - 64 + rand_r(&seed) % (last - h->base + 128);

		want = plain_lookup(rows, n, va);
		lookups++;
		if (unwind_table__lookup(t, va, &r) ? want != NULL :
		    !want || memcmp(want, &r, sizeof(r))) {
			if (bad++ < 5)
				fprintf(stderr, "%s: %#" PRIx64 ": indexed lookup differs\n", path, va);
		}
	}
	CHECK_EQ_INT(bad, 0);
	printf("%s: %zu rows, %zu buckets of 2^%u bytes (at most %zu rows), %zu lookups compared\n", path,
	       n, nb, (unsigned)shift, buckets_max + 1, lookups);
	unwind_table__free(t);
}

static void check_garbage(void)
{
	/* Truncations and bit flips of a real file's image must fail cleanly or succeed, never crash. */
	int fd = open("/lib/x86_64-linux-gnu/libc.so.6", O_RDONLY | O_CLOEXEC);
	size_t len;
	uint8_t *img;
	unsigned seed = 7;

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	len = lseek(fd, 0, SEEK_END);
	img = malloc(len);
	CHECK(pread(fd, img, len, 0) == (ssize_t)len);
	close(fd);
	for (int i = 0; i < 30; i++) {
		uint8_t *copy = malloc(len);
		struct unwind_table *t = NULL;
		int err;

		memcpy(copy, img, len);
		for (int j = 0; j < 2000; j++) {
			/* Flips concentrated in the unwind sections' neighbourhood (the upper part of libc). */
			size_t at = len / 2 + (size_t)(rand_r(&seed) % (len / 2));

			copy[at] ^= 1 << (rand_r(&seed) % 8);
		}
		err = unwind_table__open_mem(copy, i % 2 ? len : len / 2 + i * 4096, &t);
		CHECK(err == 0 || err < 0);
		unwind_table__free(t);
		free(copy);
	}
	free(img);
}

int main(void)
{
	const char *build = getenv("BUILD") ? getenv("BUILD") : "build";
	char path[512];
	struct timespec t0, t1;
	struct unwind_table *t = NULL;
	int fd;

	check_file("/lib/x86_64-linux-gnu/libc.so.6", 10000);
	check_file("/usr/lib/x86_64-linux-gnu/libstdc++.so.6", 10000);
	check_file("/lib64/ld-linux-x86-64.so.2", 500);
	snprintf(path, sizeof(path), "%s/testprogs/phases_nofp", build);
	check_file(path, 20);
	snprintf(path, sizeof(path), "%s/testprogs/qsort_nofp", build);
	check_file(path, 10);
	check_vdso();
	check_debug_frame(build);
	check_drop_rows();
	check_index("/lib/x86_64-linux-gnu/libc.so.6");
	check_index("/usr/lib/x86_64-linux-gnu/libstdc++.so.6");
	snprintf(path, sizeof(path), "%s/testprogs/qsort_nofp", build);
	check_index(path);
	check_garbage();

	/* Not a check: the build time of libc's table, for docs/BENCHMARKS.md. */
	fd = open("/lib/x86_64-linux-gnu/libc.so.6", O_RDONLY | O_CLOEXEC);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < 10 && fd >= 0; i++) {
		unwind_table__free(t);
		t = NULL;
		unwind_table__open_fd(fd, &t);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (t)
		printf("libc table: %zu rows and index, %zu bytes, built in %.2f ms\n", unwind_table__nrows(t),
		       unwind_table__nrows(t) * sizeof(struct profd_urow),
		       ((t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6) / 10);
	unwind_table__free(t);
	if (fd >= 0)
		close(fd);
	T_DONE();
}
