/*
 * A kept store's segments summarised by this writer, without rollups
 * (docs/BENCHMARKS.md, "Storage"):
 *
 *   cc -O2 -std=gnu11 -D_GNU_SOURCE -Ilib tests/bench/summarise.c build/libprofd.a \
 *      -lzstd -lz -lm -pthread -o build/summarise
 *   mkdir COPY && cp DIR/seg-*.pfd COPY/ && build/summarise COPY
 *
 * Then tests/bench/store_parts.py --summaries COPY tells their records apart.
 */
#include "store.h"

#include <stdint.h>
#include <stdio.h>
#include <time.h>

int main(int argc, char **argv)
{
	struct store *s;
	struct store_stats st = { 0 };

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	struct store_opts wo = { .dir = argv[1], .writer = 1, .no_rollup = 1, .value_unit_ns = 1000 };
	if (store__open(&wo, &s)) {
		fprintf(stderr, "%s: cannot open as the writer\n", argv[1]);
		return 1;
	}
	/*
	 * A step per call; stop after 50 calls without a new summary. Now is
	 * the wall clock: a day file is built once its day is over, so a
	 * store of an earlier day gets one too (its bytes are not summary_bytes).
	 */
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	for (int i = 0, idle = 0; i < 100000 && idle < 50; i++) {
		uint64_t before = st.summaries_built;
		store__compact(s, now);
		store__stats(s, &st);
		idle = st.summaries_built > before ? 0 : idle + 1;
	}
	store__stats(s, &st);
	printf("summaries built %llu, summary bytes %llu, bytes on disk %llu\n",
	       (unsigned long long)st.summaries_built, (unsigned long long)st.summary_bytes,
	       (unsigned long long)st.bytes_on_disk);
	store__close(s);
	return 0;
}
