/*
 * The flush's encoding alone: every window of a kept store (profd's
 * state dir) encoded in chains of 30, as the writer does, REPEAT times;
 * prints the CPU per window and a checksum of the bytes (equal for two
 * builds that encode alike). Links against a build's libprofd.a, so two
 * builds compare on the same windows:
 *   cc -O2 -D_GNU_SOURCE -Ilib tests/bench/codec_bench.c build/libprofd.a -lzstd -llzma -lz -lm -o cb
 *   ./cb STATE_DIR [REPEAT]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "codec.h"
#include "profile.h"
#include "store.h"

#define MAX_WIN 4096

struct wins {
	struct profile *p[MAX_WIN];
	size_t n;
};

static int keep(const struct store_window_info *w, const struct profile *p, void *arg)
{
	struct wins *ws = arg;
	struct profile *c;

	if (ws->n >= MAX_WIN || profile__new(&c))
		return 0;
	if (profile__merge(c, p, NULL, NULL)) {
		profile__free(c);
		return 0;
	}
	profile__meta(c)->start_ns = profile__meta_const(p)->start_ns;
	profile__meta(c)->end_ns = profile__meta_const(p)->end_ns;
	ws->p[ws->n++] = c;
	return 0;
}

static double cpu_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static struct wins ws;
	struct store_opts o = { 0 };
	struct store *s;
	struct codec *c;
	uint64_t sum = 1469598103934665603ULL, bytes = 0;
	int repeat = argc > 2 ? atoi(argv[2]) : 20;
	double t0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s STATE_DIR [REPEAT]\n", argv[0]);
		return 2;
	}
	o.dir = argv[1];
	if (store__open(&o, &s) || codec__new(&c)) {
		fprintf(stderr, "cannot open %s\n", argv[1]);
		return 1;
	}
	store__read(s, INT64_MIN, INT64_MAX, keep, &ws);
	t0 = cpu_s();
	for (int r = 0; r < repeat; r++)
		for (size_t i = 0; i < ws.n; i++) {
			const uint8_t *buf;
			size_t len;

			if (codec__encode_chain(c, ws.p[i], i % 30 ? 1 : 0, &buf, &len))
				return 1;
			if (r)
				continue;
			bytes += len;
			for (size_t k = 0; k < len; k++)
				sum = (sum ^ buf[k]) * 1099511628211ULL;
		}
	printf("%zu windows, %llu bytes, checksum %016llx, %.1f us CPU per window encoded (%d passes)\n", ws.n,
	       (unsigned long long)bytes, (unsigned long long)sum, (cpu_s() - t0) / repeat / (ws.n ? ws.n : 1) * 1e6,
	       repeat);
	return 0;
}
