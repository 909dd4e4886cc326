#!/bin/bash
# BPF time per on-CPU sample of a CPython process (Python frames read and
# named in BPF) against a native process whose stack is as deep as the
# merged Python one (native + Python frames), DWARF walker on. profd's
# PROFD_COST_PID mode times record() for the samples of one process only,
# so other load on the host does not enter the figure.
#
# One daemon runs at a time, each measure with a daemon of its own: two
# daemons side by side share caches, and the one started second read what
# the first had just brought in (up to 30 % cheaper). Each round measures
# Python and native back to back, in turns (Python first in odd rounds,
# native first in even ones), so neither side always comes second; a
# round's ratio compares two measures a few seconds apart. Medians and
# ranges over the rounds go to $BENCH_OUT/python_cost.md. Root.
# Usage: tests/bench/python_cost.sh [SECONDS [RUNS [DEPTH [ONLY]]]]
# ONLY: measure the interpreters whose path contains it (a short run: 3.12).
# BASE_BUILD=DIR: a second build's profd measures the same two processes
# in the same rounds, one daemon at a time as well; columns of its own.
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
BENCH_OUT=${BENCH_OUT:-$BUILD/bench}
SECS=${1:-6}
RUNS=${2:-5}
DEPTH=${3:-20}
ONLY=${4:-}
BASE_BUILD=${BASE_BUILD:-}
T=$(mktemp -d /tmp/profd-pycost.XXXXXX)
PD= PID=
trap '[ -n "$PD" ] && kill $PD 2>/dev/null; [ -n "$PID" ] && kill $PID 2>/dev/null; rm -rf "$T"' EXIT
mkdir -p "$BENCH_OUT"

PYS=()
for v in 3.10 3.11 3.12 3.13; do
	for p in /root/.pyenv/versions/$v.*/bin/python$v; do [ -x "$p" ] && PYS+=("$p"); done
done
[ -x /usr/bin/python3.11 ] && PYS+=(/usr/bin/python3.11)
[ -n "$ONLY" ] && { sel=(); for p in "${PYS[@]}"; do [[ "$p" == *"$ONLY"* ]] && sel+=("$p"); done; PYS=("${sel[@]}"); }
[ ${#PYS[@]} -gt 0 ] || { echo "no CPython 3.10-3.13: nothing to measure" >&2; exit 1; }

# snap BUILDDIR: "ns samples walk_ns" so far, from one status read (retried: at load 30 a
# daemon building a big unwind table let a read time out, and that voided the run).
snap() {
	local i
	rm -f "$T/status"
	for i in 1 2 3 4 5; do
		"$1/profctl" --socket "$T/sock" status >"$T/status" 2>/dev/null && break
		sleep 1
	done
	awk -F'\t' '$1 == "sample_cost_ns" { a = $2 } $1 == "sample_cost_samples" { b = $2 }
		$1 == "sample_cost_python_ns" { c = $2 } END { if (c != "") print a, b, c }' "$T/status" 2>/dev/null
}

# The measured process is started with a life far longer than the measurement and killed
# after it: at load 25-30 profd's start (BPF load, unwind tables) took most of a 10 s life.
# measure BUILDDIR ENV CMD...: prints "ns_per_sample samples user_frames_per_sample
# python_walk_ns_per_sample" for CMD's process under BUILDDIR's profd (ENV: NAME=VALUE
# for profd, or -); "0 0 0 0" when a status read did not answer.
measure() {
	local b=$1 env=$2 s0 s1 ns0 n0 py0 ns1 n1 py1
	shift 2
	"$@" >/dev/null &
	PID=$!
	rm -rf "$T/state" "$T/sock"
	local envs=()
	[ "$env" != - ] && envs=("$env")
	env "${envs[@]}" PROFD_COST_PID=$PID "$b/profd" --state-dir "$T/state" --socket "$T/sock" --no-offcpu \
		--unwind dwarf --flush-interval 1s >"$T/log" 2>&1 &
	PD=$!
	for _ in $(seq 100); do [ -S "$T/sock" ] && break; sleep 0.1; done
	sleep 3 # tables loaded, the first samples' names read
	s0=$(snap "$b")
	sleep "$SECS"
	s1=$(snap "$b")
	"$b/profctl" --state-dir "$T/state" --socket "$T/sock" dump --pid $PID --since 1m >"$T/folded"
	kill -TERM $PD; wait $PD 2>/dev/null; PD=
	kill $PID 2>/dev/null; wait $PID 2>/dev/null; PID=
	read -r ns0 n0 py0 <<<"$s0"
	read -r ns1 n1 py1 <<<"$s1"
	if [ -z "${py0:-}" ] || [ -z "${py1:-}" ] || [ "$((n1 - n0))" -le 0 ]; then echo "0 0 0 0"; return; fi
	# User frames per sample: the folded stack less the process name and the kernel frames.
	awk -v ns=$((ns1 - ns0)) -v n=$((n1 - n0)) -v py=$((py1 - py0)) '{ v = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";"); u = 0
		for (i = 2; i <= k; i++) if (f[i] !~ /_\[k\]$/) u++
		fr += u * v; t += v } END { printf "%.0f %d %.1f %.0f\n", ns / n, n, t ? fr / t : 0, py / n }' "$T/folded"
}

# med FILE: "median (min-max)" of the first column.
med() { sort -n "$1" | awk '{ a[NR] = $1 } END { if (!NR) { print "-"; exit } printf "%.0f (%.0f-%.0f)", a[int((NR + 1) / 2)], a[1], a[NR] }'; }
medf() { sort -n "$1" | awk '{ a[NR] = $1 } END { if (!NR) { print "-"; exit } printf "%.2f (%.2f-%.2f)", a[int((NR + 1) / 2)], a[1], a[NR] }'; }

{
	echo "BPF time per on-CPU sample (PROFD_COST_PID: record() timed in the program, this process's"
	echo "samples only), DWARF walker, $RUNS rounds of ${SECS} s per measure, one daemon at a time,"
	echo "Python and native in turns within a round: median (min-max) over the rounds; the ratio is"
	echo "each round's Python over the same round's native. The native process nests as many frames"
	echo "as the Python one's merged user stack has; \"walk\" is the part of the Python process's time"
	echo "spent finding and naming its Python frames. $(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%d),"
	echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at the start."
	[ -n "$BASE_BUILD" ] && echo "\"base\": $BASE_BUILD's profd, the same processes in the same rounds."
	echo
	h="| interpreter | Python depth | user frames | Python ns | walk ns | native ns | ratio |"
	d="|---|---|---|---|---|---|---|"
	[ -n "$BASE_BUILD" ] && h="$h base: Python ns | base: walk ns | base: native ns | base: ratio |" && d="$d---|---|---|---|"
	echo "$h"
	echo "$d"
} >"$T/md"

for py in "${PYS[@]}"; do
	for f in py walk nat ratio bpy bwalk bnat bratio; do : >"$T/$f"; done
	frames=0
	old=$("$py" -c 'import sys; print(int(sys.version_info < (3, 12)))')
	for r in $(seq "$RUNS"); do
		# What each round measures, in its order: Python first in odd rounds, and until
		# a Python measure has given the depth the native process needs.
		jobs="this:py this:nat"
		[ -n "$BASE_BUILD" ] && jobs="$jobs base:py base:nat"
		[ $((r % 2)) = 0 ] && [ "$frames" -gt 5 ] && jobs=$(echo $jobs | tr ' ' '\n' | tac | tr '\n' ' ')
		declare -A got=()
		for j in $jobs; do
			b=$BUILD
			[ "${j%%:*}" = base ] && b=$BASE_BUILD
			case ${j#*:} in
			py) out=$(measure "$b" - "$py" tests/testprogs/python/deep.py "$DEPTH" $((SECS + 60))) ;;
			nat)
				# deep's own frames: nest x N, spin, main and libc's three start frames.
				[ "$frames" -gt 5 ] || { echo "$py round $r: no Python depth yet, native left out" >&2; continue; }
				out=$(measure "$b" - "$BUILD/testprogs/deep" $((frames - 5)) $((SECS + 60)))
				;;
			esac
			read -r ns n fr pw <<<"$out"
			echo "$py round $r $j: $ns ns/sample over $n samples, walk $pw, $fr user frames" >&2
			[ "$n" -gt 0 ] || continue
			got[$j]="$ns $pw"
			[ "$j" = this:py ] && [ "$frames" -le 5 ] && frames=${fr%.*}
		done
		for side in this base; do
			p=${got[$side:py]:-} q=${got[$side:nat]:-}
			pre=; [ $side = base ] && pre=b
			[ -n "$p" ] && echo "${p% *}" >>"$T/${pre}py" && echo "${p#* }" >>"$T/${pre}walk"
			[ -n "$q" ] && echo "${q% *}" >>"$T/${pre}nat"
			[ -n "$p" ] && [ -n "$q" ] && awk -v a="${p% *}" -v b="${q% *}" 'BEGIN { printf "%.3f\n", a / b }' >>"$T/${pre}ratio"
		done
		unset got
	done
	row="| $("$py" -c 'import sys; print(sys.version.split()[0])') ($py) | $DEPTH | $frames | $(med "$T/py") | $(med "$T/walk") | $(med "$T/nat") | $(medf "$T/ratio") |"
	[ -n "$BASE_BUILD" ] && row="$row $(med "$T/bpy") | $(med "$T/bwalk") | $(med "$T/bnat") | $(medf "$T/bratio") |"
	echo "$row" >>"$T/md"
done
echo >>"$T/md"
echo "Load average $(cut -d' ' -f1-3 /proc/loadavg) at the end." >>"$T/md"
cp "$T/md" "$BENCH_OUT/python_cost.md"
cat "$BENCH_OUT/python_cost.md"
