#!/bin/bash
# BPF time per on-CPU sample of a CPython process (Python frames read and
# named in BPF) against a native process whose stack is as deep as the
# merged Python one (native + Python frames), DWARF walker on. profd's
# PROFD_COST_PID mode times record() for the samples of one process only,
# so other load on the host does not enter the figure. Runs interleave
# (Python, native, Python, ...); medians and ranges are written to
# $BENCH_OUT/python_cost.md. Root.
# Usage: tests/bench/python_cost.sh [SECONDS [RUNS [DEPTH [ONLY]]]]
# ONLY: measure the interpreters whose path contains it (a short run: 3.12).
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
BENCH_OUT=${BENCH_OUT:-$BUILD/bench}
SECS=${1:-6}
RUNS=${2:-3}
DEPTH=${3:-20}
ONLY=${4:-}
T=$(mktemp -d /tmp/profd-pycost.XXXXXX)
PD=
trap '[ -n "$PD" ] && kill $PD 2>/dev/null; rm -rf "$T"' EXIT
mkdir -p "$BENCH_OUT"

PYS=()
for v in 3.10 3.11 3.12 3.13; do
	for p in /root/.pyenv/versions/$v.*/bin/python$v; do [ -x "$p" ] && PYS+=("$p"); done
done
[ -x /usr/bin/python3.11 ] && PYS+=(/usr/bin/python3.11)
[ -n "$ONLY" ] && { sel=(); for p in "${PYS[@]}"; do [[ "$p" == *"$ONLY"* ]] && sel+=("$p"); done; PYS=("${sel[@]}"); }
[ ${#PYS[@]} -gt 0 ] || { echo "no CPython 3.10-3.13: nothing to measure" >&2; exit 1; }

status() { "$BUILD/profctl" --socket "$T/sock" status | awk -F'\t' -v k="$1" '$1 == k { print $2 }'; }

# measure CMD...: prints "ns_per_sample samples user_frames_per_sample python_walk_ns_per_sample"
# for CMD's process.
measure() {
	local pid ns0 n0 ns1 n1 py0 py1
	"$@" >/dev/null &
	pid=$!
	rm -rf "$T/state"
	PROFD_COST_PID=$pid "$BUILD/profd" --state-dir "$T/state" --socket "$T/sock" --no-offcpu \
		--unwind dwarf --flush-interval 1s >"$T/log" 2>&1 &
	PD=$!
	for _ in $(seq 100); do [ -S "$T/sock" ] && break; sleep 0.1; done
	sleep 2 # tables loaded, the first samples' name reads done
	ns0=$(status sample_cost_ns) n0=$(status sample_cost_samples) py0=$(status sample_cost_python_ns)
	sleep "$SECS"
	ns1=$(status sample_cost_ns) n1=$(status sample_cost_samples) py1=$(status sample_cost_python_ns)
	# A status that did not answer (profd busy on a huge file of another process) voids the run.
	[ -n "$ns0" ] && [ -n "$n0" ] && [ -n "$ns1" ] && [ -n "$n1" ] && [ -n "$py0" ] && [ -n "$py1" ] ||
		ns1=0 ns0=0 n1=0 n0=0 py1=0 py0=0
	"$BUILD/profctl" --state-dir "$T/state" --socket "$T/sock" dump --pid $pid --since 1m >"$T/folded"
	kill -TERM $PD; wait $PD 2>/dev/null; PD=
	kill $pid 2>/dev/null; wait $pid 2>/dev/null
	# User frames per sample: the folded stack less the process name and the kernel frames.
	awk -v ns=$((ns1 - ns0)) -v n=$((n1 - n0)) -v py=$((py1 - py0)) '{ v = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";"); u = 0
		for (i = 2; i <= k; i++) if (f[i] !~ /_\[k\]$/) u++
		fr += u * v; t += v } END { printf "%.0f %d %.1f %.0f\n", n ? ns / n : 0, n, t ? fr / t : 0, n ? py / n : 0 }' "$T/folded"
}

med() { sort -n | awk '{ a[NR] = $1 } END { printf "%.0f (%.0f-%.0f)", a[int((NR + 1) / 2)], a[1], a[NR] }'; }

{
	echo "BPF time per on-CPU sample (PROFD_COST_PID: record() timed in the program, this process's"
	echo "samples only), DWARF walker, $RUNS interleaved runs of ${SECS} s each: median (min-max)."
	echo "The native process nests as many frames as the Python one's merged user stack has"
	echo "(Python frames plus the native frames around them); \"Python walk\" is the part of the Python"
	echo "process's time spent finding and naming its Python frames. $(nproc) CPUs, $(uname -r),"
	echo "$(date -u +%Y-%m-%d); the machine was shared with other jobs."
	echo
	echo "| interpreter | Python depth | user frames/sample | Python ns/sample | of which Python walk | native ns/sample (same depth) | ratio |"
	echo "|---|---|---|---|---|---|---|"
} >"$T/md"

for py in "${PYS[@]}"; do
	: >"$T/py" ; : >"$T/nat" ; : >"$T/walk"
	frames=0
	for r in $(seq "$RUNS"); do
		read -r ns n fr pw <<<"$(measure "$py" tests/testprogs/python/deep.py "$DEPTH" $((SECS + 4)))"
		echo "$py run $r: $ns ns/sample over $n samples ($pw in the Python walk), $fr user frames" >&2
		[ "$n" -gt 0 ] && echo "$ns" >>"$T/py" && echo "$pw" >>"$T/walk"
		frames=${fr%.*}
		# deep's own frames: nest x N, spin, main and libc's three start frames.
		read -r ns n fr pw <<<"$(measure "$BUILD/testprogs/deep" $((frames - 5)) $((SECS + 4)))"
		echo "native deep $((frames - 5)) run $r: $ns ns/sample over $n samples, $fr user frames" >&2
		[ "$n" -gt 0 ] && echo "$ns" >>"$T/nat"
	done
	pm=$(sort -n "$T/py" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
	nm=$(sort -n "$T/nat" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
	printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$("$py" -c 'import sys; print(sys.version.split()[0])') ($py)" \
		"$DEPTH" "$frames" "$(med <"$T/py")" "$(med <"$T/walk")" "$(med <"$T/nat")" \
		"$(awk -v a="$pm" -v b="$nm" 'BEGIN { printf "%.2f", b ? a / b : 0 }')" >>"$T/md"
done
cp "$T/md" "$BENCH_OUT/python_cost.md"
cat "$BENCH_OUT/python_cost.md"
