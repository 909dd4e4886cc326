/*
 * The writer's memory on a kept store's windows (docs/BENCHMARKS.md, "Storage"):
 *
 *   cc -O2 -std=gnu11 -D_GNU_SOURCE -Ilib tests/bench/writer_mem.c build/libprofd.a \
 *      -lzstd -lz -lm -pthread -o build/writer_mem
 *   build/writer_mem DIR THIN REPS
 *
 * The windows of DIR, with the samples of pids divisible by THIN only (a
 * quieter host's windows: THIN 16 keeps one pid in 16), REPS times one
 * after the other, are written by a fresh writer with profd's defaults into
 * a temporary store. Prints the bytes written and the writer's peak RSS over
 * what the process held before it opened the store (VmHWM reset through
 * /proc/self/clear_refs after the windows were read).
 */
#include "profile.h"
#include "store.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ftw.h>
#define MAXWIN 4096
static struct profile *win[MAXWIN];
static int nwin, thin;
static int keep(const struct profile *p, const struct pf_sample *s, void *arg) { return s->pid % thin == 0; }
static int take(const struct store_window_info *w, const struct profile *p, void *arg)
{
	if (nwin == MAXWIN) return 1;
	profile__new(&win[nwin]);
	profile__merge(win[nwin], p, keep, NULL);
	nwin++;
	return 0;
}
static long field(const char *k)
{
	char line[256]; long v = -1; FILE *f = fopen("/proc/self/status", "r");
	while (fgets(line, sizeof(line), f)) if (!strncmp(line, k, strlen(k))) v = atol(line + strlen(k));
	fclose(f); return v;
}
static int rm_cb(const char *p, const struct stat *sb, int type, struct FTW *ftw) { return remove(p); }
int main(int argc, char **argv)
{
	struct store *in, *out; struct store_stats st;
	if (argc != 4 || (thin = atoi(argv[2])) < 1) {
		fprintf(stderr, "usage: %s DIR THIN REPS\n", argv[0]);
		return 2;
	}
	int reps = atoi(argv[3]);
	struct store_opts ro = { .dir = argv[1] };
	if (store__open(&ro, &in)) return 1;
	store__read(in, INT64_MIN, INT64_MAX, take, NULL);
	store__close(in);
	if (!nwin) {
		fprintf(stderr, "%s: no window read\n", argv[1]);
		return 1;
	}
	int64_t span = profile__meta(win[nwin - 1])->end_ns - profile__meta(win[0])->start_ns + 10000000000ll;
	char tmp[] = "/var/tmp/profd-memw.XXXXXX";
	if (!mkdtemp(tmp)) return 1;
	FILE *f = fopen("/proc/self/clear_refs", "w");
	if (!f || fputs("5", f) < 0 || fclose(f)) {
		fprintf(stderr, "clear_refs: cannot reset VmHWM\n");
		return 1;
	}
	long rss0 = field("VmRSS:");
	struct store_opts wo = { .dir = tmp, .writer = 1, .no_rollup = 1, .value_unit_ns = 1000,
				 .calls_by_function = 1, .runq_entry_frame = 1, .zstd_level = 9 };
	if (store__open(&wo, &out)) return 1;
	for (int r = 0; r < reps; r++)
		for (int i = 0; i < nwin; i++) {
			if (r) { profile__meta(win[i])->start_ns += span; profile__meta(win[i])->end_ns += span; }
			if (store__append(out, win[i])) fprintf(stderr, "append failed\n");
		}
	store__stats(out, &st);
	long hwm = field("VmHWM:");
	printf("%s thin %d: %d windows x %d, bytes %llu (%.0f per window); RSS before %ld kB, writer's peak +%ld kB\n",
	       argv[1], thin, nwin, reps, (unsigned long long)st.bytes_on_disk, (double)st.bytes_on_disk / (nwin * reps),
	       rss0, hwm - rss0);
	store__close(out);
	nftw(tmp, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}
