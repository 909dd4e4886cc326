#!/bin/bash
# Query cost on a stored synthetic day and week (docs/BENCHMARKS.md, "Storage"):
# profctl dump/top/diff with and without filters, wall and user time and
# peak RSS, medians (min-max) of RUNS interleaved runs.
# Usage: store_queries.sh [DAY_DIR]   (without it: store_bench -H 24 -c 4 -k
# builds one, which takes minutes). RUNS=3 by default. BEFORE=PROFCTL: each
# row is run by that binary too, just before this build's, in the same
# seconds, and the table has both.
set -eu
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
RUNS=${RUNS:-3}
W=$(mktemp -d /var/tmp/profd-queries.XXXXXX)
trap 'rm -rf "$W"' EXIT
make --no-print-directory "$BUILD/profctl" "$BUILD/libprofd.a" >/dev/null
cc -O2 -Wall -std=gnu11 -D_GNU_SOURCE -Ilib tests/bench/store_bench.c "$BUILD/libprofd.a" \
	-lzstd -lz -lm -pthread -o "$W/store_bench"
DAY=${1:-}
if [ -z "$DAY" ]; then
	DAY=$W/day
	"$W/store_bench" -H 24 -c 4 -k -d "$DAY" >"$W/build.log"
fi
# The week: the day seven times, a day apart; its writer summarises what the copy lacks and builds the days.
python3 tests/bench/store_shift.py "$DAY" "$W/week" 7
cat >"$W/days.c" <<'C'
#include "store.h"
#include <stdio.h>
#include <time.h>
int main(int argc, char **argv)
{
	struct store_opts o = { .dir = argv[1], .writer = 1, .no_rollup = 1 };
	struct store_stats st;
	struct store *w;
	struct timespec now;
	int idle = 0;

	clock_gettime(CLOCK_REALTIME, &now);
	if (store__open(&o, &w))
		return 1;
	while (idle < 50) {
		uint64_t b;
		store__stats(w, &st);
		/* A summary of an hour of 10 s windows takes hundreds of steps: records decoded is progress too. */
		b = st.days_built + st.summaries_built + st.records_decoded;
		if (store__compact(w, (int64_t)now.tv_sec * 1000000000ll))
			return 1;
		store__stats(w, &st);
		/* A record on the store's thread: called again a millisecond later, as a loop would. */
		if (st.encoding)
			nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
		idle = st.days_built + st.summaries_built + st.records_decoded == b && !st.encoding ? idle + 1 : 0;
	}
	printf("week: %llu day files, %.1f MB on disk\n", (unsigned long long)st.days, st.bytes_on_disk / 1e6);
	/* Without them the week rows would time a store unlike what profd keeps. */
	if (!st.days) {
		fprintf(stderr, "week: no day file was built\n");
		return 1;
	}
	store__close(w);
	return 0;
}
C
cc -O2 -std=gnu11 -D_GNU_SOURCE -Ilib "$W/days.c" "$BUILD/libprofd.a" -lzstd -lz -lm -o "$W/days"
"$W/days" "$W/week"
# A private copy: a rebuild in the tree must not swap the binary between runs.
cp "$BUILD/profctl" "$W/profctl"
[ -z "${BEFORE:-}" ] || cp "$BEFORE" "$W/profctl.before"
# One run: binary, store, then profctl arguments. Prints wall s, user s, RSS KB.
one() { local pc=$1 d=$2; shift 2
	/usr/bin/time -f '%e %U %M' "$pc" --state-dir "$d" "$@" --no-flush >/dev/null 2>"$W/err" || true
	tail -1 "$W/err"; }
# The store's own last 10 minutes and hour (it may have been written a while ago);
# 10 minutes 10 s earlier start on a chain's last record, so the reader first
# decodes the tables of the chain's 29 records before it (a --since 10m at any
# moment starts somewhere in a chain).
END=$(ls "$DAY" | sed -n 's/^seg-[0-9]\{19\}-\([0-9]\{19\}\)\.pfd$/\1/p' | sort | tail -1)
END=$((10#$END / 1000000000))
ts() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
rows=(
	"day|dump --since 25h"
	"day|dump --since $(ts $((END - 600))) --until $(ts "$END")"
	"day|dump --since $(ts $((END - 610))) --until $(ts $((END - 10)))"
	"day|dump --since $(ts $((END - 3600))) --until $(ts "$END")"
	"day|top --since 25h"
	"day|diff --base-since 25h --base-until 12h --since 12h"
	"day|dump --since 25h --comm cc1*"
	"day|dump --since 25h --cgroup /system.slice/postgres.service"
	"day|dump --since 25h --type offcpu"
	"day|dump --since 25h --pid 1"
	"week|dump --since 7d"
	"week|dump --since 8d"
	"week|top --since 7d"
	"week|dump --since 7d --comm cc1*"
	"week|dump --since 7d --type offcpu"
	"week|dump --since 7d --pid 1"
)
: >"$W/res"
for r in $(seq 1 "$RUNS"); do
	for i in "${!rows[@]}"; do
		IFS='|' read -r which args <<<"${rows[$i]}"
		d=$DAY; [ "$which" = week ] && d=$W/week
		# shellcheck disable=SC2086
		[ -z "${BEFORE:-}" ] || echo "$i b $(one "$W/profctl.before" "$d" $args)" >>"$W/res"
		# shellcheck disable=SC2086
		echo "$i a $(one "$W/profctl" "$d" $args)" >>"$W/res"
	done
done
if [ -n "${BEFORE:-}" ]; then
	echo "| store | command | before: wall s | user s | RSS MB | after: wall s | user s | RSS MB |"
	echo "|---|---|---|---|---|---|---|---|"
else
	echo "| store | command | wall s | user s | RSS MB |"
	echo "|---|---|---|---|---|"
fi
for i in "${!rows[@]}"; do
	IFS='|' read -r which args <<<"${rows[$i]}"
	awk -v i="$i" -v w="$which" -v a="$args" '
		function med(v, n,   k, j, t) { for (k = 1; k <= n; k++) for (j = k + 1; j <= n; j++) if (v[j] < v[k]) { t = v[k]; v[k] = v[j]; v[j] = t }
			return sprintf("%.2f (%.2f-%.2f)", v[int((n + 1) / 2)], v[1], v[n]) }
		$1 == i && $2 == "b" { nb++; bw[nb] = $3; bu[nb] = $4; br[nb] = $5 / 1024 }
		$1 == i && $2 == "a" { na++; aw[na] = $3; au[na] = $4; ar[na] = $5 / 1024 }
		END { printf "| %s | `%s` | ", w, a
			if (nb) printf "%s | %s | %s | ", med(bw, nb), med(bu, nb), med(br, nb)
			printf "%s | %s | %s |\n", med(aw, na), med(au, na), med(ar, na) }' "$W/res"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
