#!/bin/bash
# Storage benchmark (docs/BENCHMARKS.md, "Storage"): builds tests/bench/store_bench.c
# against build/libprofd.a and runs it: 24 h of 10 s windows, then list/read timings.
# Usage: tests/bench/store_bench.sh [store_bench options, e.g. -H 24 -c 2]
set -eu
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
make --no-print-directory "$BUILD/libprofd.a" >/dev/null
cc -O2 -g -Wall -Wextra -Werror -Wno-unused-parameter -std=gnu11 -D_GNU_SOURCE -Ilib \
	tests/bench/store_bench.c "$BUILD/libprofd.a" -lzstd -lz -lm -pthread -o "$BUILD/store_bench"
"$BUILD/store_bench" -x -c "${CPUS:-2}"
exec "$BUILD/store_bench" "$@"
