#!/bin/bash
# Time from exec to the first sample unwound with tables. A program is
# stopped just before its exec; profd starts in test mode for its pid
# (--unwind-snapshots: every sample of it is a snapshot with its time and
# the walker's frames, which tests/tools/unwind_check writes out); then it
# is let go. Reported per run: the first sample after exec, and the first
# whose walk is complete: every table it needed was loaded (snapshot flag
# "dwarf") and it reached main (>= 6 frames: main;loop above libc's qsort;
# frame pointers stop at compare or in qsort). Each run copies the
# program to a new file, so its table is built, not found; libc's is warm.
# --llvm: a process mapping libLLVM (949 k rows, ~0.4 s to build) starts
# with it, as when a compiler starts beside the program. --clang: a
# `clang -O2 -c` (libz3, libclang-cpp, libLLVM: 2.3 M rows, built and
# written into the kernel while the program starts) is exec'd CLANG_LEAD
# seconds (0.2) before the program is let go; the run also prints profd's
# unwind_turn_max_ms. BUILD=DIR picks the build (an absolute path to
# compare another tree's, in the same run).
# Root. Usage: tests/bench/unwind_latency.sh [--llvm|--clang] [RUNS]
set -u
cd "$(dirname "$0")/../.."
source tests/bench/stats.sh
BUILD=${BUILD:-build}
LLVM=0 CLANG=0
[ "${1:-}" = --llvm ] && { LLVM=1; shift; }
[ "${1:-}" = --clang ] && { CLANG=1; shift; }
RUNS=${1:-10}
LIBLLVM=$(ls /usr/lib/x86_64-linux-gnu/libLLVM-1[0-9].so.1 2>/dev/null | head -1)
T=$(mktemp -d /tmp/profd-ulat.XXXXXX)
PD= BG= CK=
trap 'kill $PD $BG $CK 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
# A translation unit clang -O2 takes a second or more over.
for f in $(seq 300); do
	echo "int f$f(int *a, int n) { int s = 0; for (int i = 0; i < n; i++) s += a[i] * $f ^ (s >> 3); return s; }"
done >"$T/big.c"

for i in $(seq "$RUNS"); do
	cp "$BUILD/testprogs/qsort_nofp" "$T/qsort_$i"
	python3 -c 'import os, signal, sys, time
os.kill(os.getpid(), signal.SIGSTOP)
print(time.monotonic_ns(), flush=True)
os.execv(sys.argv[1], sys.argv[1:])' "$T/qsort_$i" 0.3 >"$T/exec.$i" &
	P=$!
	until [ "$(cut -d' ' -f3 /proc/$P/stat 2>/dev/null)" = T ]; do sleep 0.01; done
	rm -rf "$T/s"
	"$BUILD/tests/tools/unwind_check" "$P" "$T/snaps.$i" "$T/check.$i" 2>>"$T/log.check" &
	CK=$!
	"$BUILD/profd" --state-dir "$T/s" --socket "$T/sock" --unwind-snapshots "$P:$T/snaps.$i" \
		--unwind dwarf ${PROFD_ARGS:-} >"$T/log" 2>&1 &
	PD=$!
	for _ in $(seq 600); do [ -S "$T/sock" ] && break; sleep 0.1; done
	# libc's and ld.so's tables in first, as on any running host.
	"$BUILD/testprogs/qsort_nofp" 0.2 >/dev/null
	sleep 0.5
	if [ $LLVM = 1 ]; then
		python3 -c 'import ctypes, sys, time
ctypes.CDLL(sys.argv[1])
end = time.time() + 1
while time.time() < end: pass' "$LIBLLVM" &
		BG=$!
	fi
	if [ $CLANG = 1 ]; then
		clang -O2 -c -o "$T/big.o" "$T/big.c" &
		BG=$!
		sleep "${CLANG_LEAD:-0.2}"
	fi
	kill -CONT $P
	wait $P
	wait $CK
	CK=
	[ -n "$BG" ] && wait $BG
	BG=
	"$BUILD/profctl" --state-dir "$T/s" --socket "$T/sock" status >"$T/status.$i"
	TURN=$(awk -F'\t' '$1 == "unwind_turn_max_ms" { print $2 }' "$T/status.$i")
	kill -TERM $PD
	wait $PD
	PD=
	awk -v t0="$(cat "$T/exec.$i")" -v run="$i" -v turn="${TURN:-?}" '
		{ t = $NF; if (t < t0) next; m = $1 > $2 ? $1 : $2 }
		first == "" || t < first { first = t }
		t > last { last = t }
		$5 == "dwarf" && $1 >= 6 && (full == "" || t < full) { full = t }
		# No complete walk in the whole run: counted as the run'"'"'s length.
		END { printf "run %2d  first sample %6.1f ms  first complete walk %6.1f ms  turn max %s ms%s\n", run,
			(first - t0) / 1e6, ((full == "" ? last : full) - t0) / 1e6, turn, full == "" ? " (none)" : "" }' "$T/check.$i"
done | tee "$T/runs"
n=$(wc -l <"$T/runs")
med() { stats | awk '{ printf "median %.1f ms, max %.1f ms", $1, $3 }'; }
echo "complete walk after exec: $(awk '{ print $10 }' "$T/runs" | med) (first sample: $(awk '{ print $5 }' "$T/runs" | med)) over $n runs"
