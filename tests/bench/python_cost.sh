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
# BASE_BUILD=DIR: a second build's profd times the same processes at the
# same time (its own maps and perf events), so the two builds see the same
# load; its figures go in columns of their own.
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
BENCH_OUT=${BENCH_OUT:-$BUILD/bench}
SECS=${1:-6}
RUNS=${2:-3}
DEPTH=${3:-20}
ONLY=${4:-}
BASE_BUILD=${BASE_BUILD:-}
T=$(mktemp -d /tmp/profd-pycost.XXXXXX)
PD= BPD=
trap '[ -n "$PD" ] && kill $PD 2>/dev/null; [ -n "$BPD" ] && kill $BPD 2>/dev/null; rm -rf "$T"' EXIT
mkdir -p "$BENCH_OUT"

PYS=()
for v in 3.10 3.11 3.12 3.13; do
	for p in /root/.pyenv/versions/$v.*/bin/python$v; do [ -x "$p" ] && PYS+=("$p"); done
done
[ -x /usr/bin/python3.11 ] && PYS+=(/usr/bin/python3.11)
[ -n "$ONLY" ] && { sel=(); for p in "${PYS[@]}"; do [[ "$p" == *"$ONLY"* ]] && sel+=("$p"); done; PYS=("${sel[@]}"); }
[ ${#PYS[@]} -gt 0 ] || { echo "no CPython 3.10-3.13: nothing to measure" >&2; exit 1; }

status() { "$1/profctl" --socket "$T/sock$2" status | awk -F'\t' -v k="$3" '$1 == k { print $2 }'; }

# costs DIR N: "ns samples walk_ns" of profd N (DIR's) since the snapshot in $T/snapN,
# which it replaces; nothing the first time.
costs() {
	local ns n py ns0 n0 py0
	ns=$(status "$1" "$2" sample_cost_ns) n=$(status "$1" "$2" sample_cost_samples) py=$(status "$1" "$2" sample_cost_python_ns)
	# A status that did not answer (profd busy on a huge file of another process) voids the run.
	if [ -z "$ns" ] || [ -z "$n" ] || [ -z "$py" ]; then rm -f "$T/snap$2"; echo "0 0 0"; return; fi
	if [ -s "$T/snap$2" ]; then
		read -r ns0 n0 py0 <"$T/snap$2"
		awk -v ns=$((ns - ns0)) -v n=$((n - n0)) -v py=$((py - py0)) 'BEGIN { printf "%.0f %d %.0f\n", n ? ns / n : 0, n, n ? py / n : 0 }'
	fi
	echo "$ns $n $py" >"$T/snap$2"
}

# The measured process is started with a life far longer than the measurement and killed
# after it: at load 25-30 profd's start (BPF load, unwind tables) took most of a 10 s life,
# and the process was gone before the second status read (runs of 0 samples).
# measure CMD...: prints "ns_per_sample samples user_frames_per_sample python_walk_ns_per_sample"
# for CMD's process, then with BASE_BUILD the base build's "ns samples walk".
measure() {
	local pid a b=
	"$@" >/dev/null &
	pid=$!
	rm -rf "$T/state" "$T/bstate"
	PROFD_COST_PID=$pid "$BUILD/profd" --state-dir "$T/state" --socket "$T/sock" --no-offcpu \
		--unwind dwarf --flush-interval 1s >"$T/log" 2>&1 &
	PD=$!
	[ -n "$BASE_BUILD" ] && { PROFD_COST_PID=$pid "$BASE_BUILD/profd" --state-dir "$T/bstate" --socket "$T/sockb" \
		--no-offcpu --unwind dwarf --flush-interval 1s >"$T/blog" 2>&1 & BPD=$!; }
	for _ in $(seq 100); do [ -S "$T/sock" ] && { [ -z "$BASE_BUILD" ] || [ -S "$T/sockb" ]; } && break; sleep 0.1; done
	sleep 2 # tables loaded, the first samples' name reads done
	rm -f "$T/snap" "$T/snapb"
	costs "$BUILD" "" >/dev/null
	[ -n "$BASE_BUILD" ] && costs "$BASE_BUILD" b >/dev/null
	sleep "$SECS"
	a=$(costs "$BUILD" "")
	[ -n "$BASE_BUILD" ] && b=$(costs "$BASE_BUILD" b)
	"$BUILD/profctl" --state-dir "$T/state" --socket "$T/sock" dump --pid $pid --since 1m >"$T/folded"
	kill -TERM $PD; wait $PD 2>/dev/null; PD=
	[ -n "$BPD" ] && { kill -TERM $BPD; wait $BPD 2>/dev/null; BPD=; }
	kill $pid 2>/dev/null; wait $pid 2>/dev/null
	# User frames per sample: the folded stack less the process name and the kernel frames.
	read -r ns n py <<<"${a:-0 0 0}"
	awk -v ns="$ns" -v n="$n" -v py="$py" -v b="$b" '{ v = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";"); u = 0
		for (i = 2; i <= k; i++) if (f[i] !~ /_\[k\]$/) u++
		fr += u * v; t += v } END { printf "%s %d %.1f %s%s\n", ns, n, t ? fr / t : 0, py, b == "" ? "" : " " b }' "$T/folded"
}

med() { sort -n | awk '{ a[NR] = $1 } END { printf "%.0f (%.0f-%.0f)", a[int((NR + 1) / 2)], a[1], a[NR] }'; }

{
	echo "BPF time per on-CPU sample (PROFD_COST_PID: record() timed in the program, this process's"
	echo "samples only), DWARF walker, $RUNS interleaved runs of ${SECS} s each: median (min-max)."
	echo "The native process nests as many frames as the Python one's merged user stack has"
	echo "(Python frames plus the native frames around them); \"Python walk\" is the part of the Python"
	echo "process's time spent finding and naming its Python frames. $(nproc) CPUs, $(uname -r),"
	echo "$(date -u +%Y-%m-%d), load average $(cut -d' ' -f1-3 /proc/loadavg) at the start."
	[ -n "$BASE_BUILD" ] && echo "\"base\": $BASE_BUILD's profd, timing the same processes at the same time."
	echo
	if [ -n "$BASE_BUILD" ]; then
		echo "| interpreter | Python depth | user frames/sample | Python ns/sample | of which Python walk | native ns/sample (same depth) | ratio | base: Python ns | base: walk | base: native ns | base: ratio |"
		echo "|---|---|---|---|---|---|---|---|---|---|---|"
	else
		echo "| interpreter | Python depth | user frames/sample | Python ns/sample | of which Python walk | native ns/sample (same depth) | ratio |"
		echo "|---|---|---|---|---|---|---|"
	fi
} >"$T/md"

median() { sort -n "$1" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$(median "$1")" -v b="$(median "$2")" 'BEGIN { printf "%.2f", b ? a / b : 0 }'; }

for py in "${PYS[@]}"; do
	for f in py nat walk bpy bnat bwalk; do : >"$T/$f"; done
	frames=0
	for r in $(seq "$RUNS"); do
		read -r ns n fr pw bns bn bpw <<<"$(measure "$py" tests/testprogs/python/deep.py "$DEPTH" $((SECS + 60)))"
		echo "$py run $r: $ns ns/sample over $n samples ($pw in the Python walk), $fr user frames${bn:+; base $bns ($bpw) over $bn}" >&2
		[ "$n" -gt 0 ] && echo "$ns" >>"$T/py" && echo "$pw" >>"$T/walk"
		[ "${bn:-0}" -gt 0 ] && echo "$bns" >>"$T/bpy" && echo "$bpw" >>"$T/bwalk"
		frames=${fr%.*}
		# deep's own frames: nest x N, spin, main and libc's three start frames.
		read -r ns n fr pw bns bn bpw <<<"$(measure "$BUILD/testprogs/deep" $((frames - 5)) $((SECS + 60)))"
		echo "native deep $((frames - 5)) run $r: $ns ns/sample over $n samples, $fr user frames${bn:+; base $bns over $bn}" >&2
		[ "$n" -gt 0 ] && echo "$ns" >>"$T/nat"
		[ "${bn:-0}" -gt 0 ] && echo "$bns" >>"$T/bnat"
	done
	row="| $("$py" -c 'import sys; print(sys.version.split()[0])') ($py) | $DEPTH | $frames | $(med <"$T/py") | $(med <"$T/walk") | $(med <"$T/nat") | $(ratio "$T/py" "$T/nat") |"
	[ -n "$BASE_BUILD" ] && row="$row $(med <"$T/bpy") | $(med <"$T/bwalk") | $(med <"$T/bnat") | $(ratio "$T/bpy" "$T/bnat") |"
	echo "$row" >>"$T/md"
done
cp "$T/md" "$BENCH_OUT/python_cost.md"
cat "$BENCH_OUT/python_cost.md"
