#!/bin/bash
# BPF time per on-CPU sample of a CPython process (Python frames read and
# named in BPF) against a native process whose stack is as deep as the
# merged Python one (native + Python frames), DWARF walker on, both timed
# by ONE daemon in the same seconds: profd's PROFD_COST_PID=PY,NATIVE mode
# times record() for the samples of each of the two processes apart, so
# neither other load on the host nor its drift (a sample's cost moved 4x
# within minutes on this VM) enters one side and not the other.
#
# Each round starts both processes and a daemon of its own, and takes one
# ratio: Python ns over native ns of that round. PIN=same (default) pins
# both processes to one CPU, CPU 0 in odd rounds and CPU 1 in even ones:
# each sample of one then meets the same CPU (its other jobs, the
# hypervisor's steal, what the caches hold) as the other's, which on a
# shared host is what decides a sample's cost (on this VM, with a process
# on each CPU, the per-round ratio moved 1.4-3.6x with the CPUs' loads).
# PIN=alt pins them to CPUs of their own, swapped every round; PIN=free
# lets the scheduler place them.
# The native depth follows the Python process's merged user stack, read
# once per interpreter from a daemon of its own before the rounds, then
# from each round's Python samples for the next round.
# Medians and ranges over the rounds go to $BENCH_OUT/python_cost.md.
# Root.
# Usage: tests/bench/python_cost.sh [SECONDS [RUNS [DEPTH [ONLY]]]]
# RUNS: rounds per interpreter (default 6: an even count puts as many on each CPU).
# ONLY: measure the interpreters whose path contains it (a short run: 3.12).
# FREQ: samples per second per CPU (default 99, profd's own default).
# PROFD_ARGS: more options for this build's profd (not BASE_BUILD's), e.g.
# --no-python-free-hook; BASE_ARGS: for BASE_BUILD's profd.
# A build with the per-process free hook (python_free_hooks_made in its
# status) hooks the Python process, which started before the daemon, at its
# first drain with samples (the process has lived the hook's 2 s by then):
# each round waits for python_free_hooks >= 1 (10 s at most) before it
# measures, and the round's line says the hooks and the frames named by
# the free generation.
# BASE_BUILD=DIR: a second build's profd times the same two processes in
# each round, right after (or before: in turns) this build's daemon.
set -u
cd "$(dirname "$0")/../.."
source tests/bench/stats.sh
BUILD=${BUILD:-build}
BENCH_OUT=${BENCH_OUT:-$BUILD/bench}
SECS=${1:-6}
RUNS=${2:-6}
DEPTH=${3:-20}
ONLY=${4:-}
BASE_BUILD=${BASE_BUILD:-}
PIN=${PIN:-same}
FREQ=${FREQ:-99}
T=$(mktemp -d /tmp/profd-pycost.XXXXXX)
PD= PYP= NATP=
cleanup() {
	local p
	for p in $PD $PYP $NATP; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' TERM INT
mkdir -p "$BENCH_OUT"
case $PIN in same | alt | free) ;; *) echo "PIN is same, alt or free" >&2; exit 2 ;; esac
[ "$PIN" != free ] && [ "$(nproc)" -lt 2 ] && { echo "PIN=$PIN needs 2 CPUs" >&2; exit 2; }

PYS=()
for v in 3.10 3.11 3.12 3.13; do
	for p in /root/.pyenv/versions/$v.*/bin/python$v; do [ -x "$p" ] && PYS+=("$p"); done
done
[ -x /usr/bin/python3.11 ] && PYS+=(/usr/bin/python3.11)
[ -n "$ONLY" ] && { sel=(); for p in "${PYS[@]}"; do [[ "$p" == *"$ONLY"* ]] && sel+=("$p"); done; PYS=("${sel[@]}"); }
[ ${#PYS[@]} -gt 0 ] || { echo "no CPython 3.10-3.13: nothing to measure" >&2; exit 1; }

# snap BUILDDIR: "py_ns py_samples walk_ns nat_ns nat_samples py_unwind_ns nat_unwind_ns" so far, from one status
# read (retried: at load 30 a daemon building a big unwind table let a read time out).
snap() {
	local i
	rm -f "$T/status"
	for i in 1 2 3 4 5; do
		"$1/profctl" --socket "$T/sock" status >"$T/status" 2>/dev/null && break
		sleep 1
	done
	awk -F'\t' '{ v[$1] = $2 } END { if ("sample_cost_python_ns" in v)
		print v["sample_cost_ns"] + 0, v["sample_cost_samples"] + 0, v["sample_cost_python_ns"] + 0,
			v["sample_cost_ns_2"] + 0, v["sample_cost_samples_2"] + 0,
			v["sample_cost_unwind_ns"] + 0, v["sample_cost_unwind_ns_2"] + 0 }' "$T/status" 2>/dev/null
}

# frames FOLDED: user frames per sample, weighted: the folded stack less the process
# name and the kernel frames.
frames() {
	awk '{ v = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";"); u = 0
		for (i = 2; i <= k; i++) if (f[i] !~ /_\[k\]$/) u++
		fr += u * v; t += v } END { printf "%.1f\n", t ? fr / t : 0 }' "$1"
}

# daemon BUILDDIR PIDS: starts BUILDDIR's profd timing PIDS (PROFD_COST_PID) and waits
# for its socket and its first samples' names.
daemon() {
	local extra=${BASE_ARGS:-}
	[ "$1" = "$BUILD" ] && extra=${PROFD_ARGS:-}
	rm -rf "$T/state" "$T/sock"
	# shellcheck disable=SC2086 # PROFD_ARGS: options, split
	PROFD_COST_PID=$2 "$1/profd" --state-dir "$T/state" --socket "$T/sock" --no-offcpu \
		--unwind dwarf --flush-interval 1s --frequency "$FREQ" $extra >"$T/log" 2>&1 &
	PD=$!
	for _ in $(seq 100); do [ -S "$T/sock" ] && break; sleep 0.1; done
	sleep 3 # tables loaded, the first samples' names read
	if "$1/profctl" --socket "$T/sock" status 2>/dev/null | grep -q '^python_free_hooks_made'; then
		case " $extra " in *" --no-python-free-hook "*) return ;; esac
		for _ in $(seq 20); do
			"$1/profctl" --socket "$T/sock" status 2>/dev/null | grep -qx $'python_free_hooks\t[1-9][0-9]*' && break
			sleep 0.5
		done
	fi
}
# hooks: "H hooks, G gen hits" from the last snap's status.
hooks() {
	awk -F'\t' '{ v[$1] = $2 } END { printf "%s hooks, %s gen hits", ("python_free_hooks" in v) ? v["python_free_hooks"] : "?",
		("python_code_gen_hits" in v) ? v["python_code_gen_hits"] : "?" }' "$T/status" 2>/dev/null
}
stop_daemon() { kill -TERM "$PD"; wait "$PD" 2>/dev/null; PD=; }

# measure BUILDDIR: prints "py_ns/sample py_samples walk_ns/sample nat_ns/sample
# nat_samples py_frames nat_frames py_unwind_ns/sample nat_unwind_ns/sample" for the
# running $PYP and $NATP under BUILDDIR's profd (the unwind: the native stack walk's
# part; 0 from a build without its timer); zeros when a status read did not answer.
measure() {
	local b=$1 s0 s1 ns0 n0 w0 m0 k0 u0 v0 ns1 n1 w1 m1 k1 u1 v1 pf nf
	daemon "$b" "$PYP,$NATP"
	s0=$(snap "$b")
	sleep "$SECS"
	s1=$(snap "$b")
	hooks >"$T/hooks"
	"$b/profctl" --state-dir "$T/state" --socket "$T/sock" dump --pid "$PYP" --since "${SECS}s" >"$T/pyf"
	"$b/profctl" --state-dir "$T/state" --socket "$T/sock" dump --pid "$NATP" --since "${SECS}s" >"$T/natf"
	stop_daemon
	read -r ns0 n0 w0 m0 k0 u0 v0 <<<"$s0"
	read -r ns1 n1 w1 m1 k1 u1 v1 <<<"$s1"
	if [ -z "${k0:-}" ] || [ -z "${k1:-}" ] || [ "$((n1 - n0))" -le 0 ] || [ "$((k1 - k0))" -le 0 ]; then
		echo "0 0 0 0 0 0 0 0 0"
		return
	fi
	pf=$(frames "$T/pyf")
	nf=$(frames "$T/natf")
	awk -v a=$((ns1 - ns0)) -v n=$((n1 - n0)) -v w=$((w1 - w0)) -v m=$((m1 - m0)) -v k=$((k1 - k0)) \
		-v u=$((u1 - u0)) -v v=$((v1 - v0)) -v pf="$pf" -v nf="$nf" \
		'BEGIN { printf "%.0f %d %.0f %.0f %d %s %s %.0f %.0f\n", a / n, n, w / n, m / k, k, pf, nf, u / n, v / k }'
}

# start_procs PY NATIVE_DEPTH ROUND: the two processes, pinned per PIN (PIN=same: both on
# CPU 0 in odd rounds, on CPU 1 in even ones; PIN=alt: Python there, native on the other),
# with lives far longer than the measure.
start_procs() {
	local pc=() nc=()
	case $PIN in
	same) pc=(taskset -c $((($3 + 1) % 2))) nc=("${pc[@]}") ;;
	alt) pc=(taskset -c $((($3 + 1) % 2))) nc=(taskset -c $(($3 % 2))) ;;
	esac
	"${pc[@]}" "$1" tests/testprogs/python/deep.py "$DEPTH" $((4 * SECS + 120)) >/dev/null &
	PYP=$!
	if [ "$2" -gt 0 ]; then
		"${nc[@]}" "$BUILD/testprogs/deep" "$2" $((4 * SECS + 120)) >/dev/null &
		NATP=$!
	fi
}
stop_procs() {
	local p
	for p in $PYP $NATP; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	PYP= NATP=
}

# medd FILE DIGITS: "median (min-max)" of the first column.
medd() { fmt_range $(awk '{ print $1 }' "$1" | stats) "$2"; }
med() { medd "$1" 0; }
medf() { medd "$1" 2; }
list() { tr '\n' ' ' <"$1" | sed 's/ $//'; }

{
	echo "BPF time per on-CPU sample at $FREQ Hz (PROFD_COST_PID=PY,NATIVE: record() timed in the program for"
	echo "each of the two processes apart), DWARF walker; one daemon times the Python process and"
	echo "the native one in the same ${SECS} s, a daemon and two new processes per round, $RUNS rounds"
	case $PIN in
	same) how="both processes on one CPU, the other CPU every round" ;;
	alt) how="each process on a CPU of its own, swapped every round" ;;
	free) how="the scheduler places both" ;;
	esac
	echo "(PIN=$PIN: $how). Median (min-max) over the rounds; the ratio is"
	echo "each round's Python ns over the same round's native ns. The native process nests as many"
	echo "frames as the Python one's merged user stack has; \"walk\" is the part of the Python"
	echo "process's time spent finding and naming its Python frames. $(nproc) CPUs, $(uname -r),"
	echo "$(date -u '+%Y-%m-%d %H:%M') UTC, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start."
	[ -n "$BASE_BUILD" ] && echo "\"base\": $BASE_BUILD's profd, the same processes in the same rounds, in turns."
	echo
	h="| interpreter | Python depth | user frames | Python ns | walk ns | native ns | ratio |"
	d="|---|---|---|---|---|---|---|"
	[ -n "$BASE_BUILD" ] && h="$h base: Python ns | base: walk ns | base: native ns | base: ratio |" && d="$d---|---|---|---|"
	echo "$h"
	echo "$d"
} >"$T/md"
{
	echo
	echo "The Python sample's parts, per round then median (min-max): the walk, the rest (native"
	echo "frames, kernel stack, the counts; \"native part\") and the native process's sample; of"
	echo "each, the native stack walk (\"unwind\": the umaps lookup, the row searches, the reads);"
	echo "samples per round of each process; the load average over the interpreter's rounds."
	echo
	echo "| interpreter | walk ns | native part ns | native process ns | native part / native | unwind ns: Python / native | unwind ratio | samples Python / native | native frames | load |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
} >"$T/parts"
echo >"$T/rounds"
echo "Per-round ratios, in order:" >>"$T/rounds"
echo >>"$T/rounds"

for py in "${PYS[@]}"; do
	for f in py walk nat ratio part pratio pu nu uratio npy nnat nfr pfr bpy bwalk bnat bratio; do : >"$T/$f"; done
	ver=$("$py" -c 'import sys; print(sys.version.split()[0])')
	load0=$(cut -d' ' -f1 /proc/loadavg)
	# The Python process's merged user stack, for the native process's depth: deep's own
	# frames are nest x N, spin, main and libc's three start frames.
	# The last seconds only, until the stack holds the Python frames: the first samples came
	# before the tables (at load 25 that took over 6 s), with shorter stacks.
	start_procs "$py" 0 1
	daemon "$BUILD" "$PYP"
	for _ in $(seq 15); do
		sleep 2
		"$BUILD/profctl" --state-dir "$T/state" --socket "$T/sock" dump --pid "$PYP" --since 2s >"$T/pyf"
		fr=$(frames "$T/pyf")
		[ "${fr%.*}" -gt "$DEPTH" ] && break
	done
	stop_daemon
	stop_procs
	ufr=${fr%.*}
	if [ "$ufr" -le 5 ]; then
		echo "$py: no Python stack seen ($fr user frames): left out" >&2
		continue
	fi
	for r in $(seq "$RUNS"); do
		start_procs "$py" $((ufr - 5)) "$r"
		builds="$BUILD"
		if [ -n "$BASE_BUILD" ]; then
			builds="$BUILD $BASE_BUILD"
			[ $((r % 2)) = 0 ] && builds="$BASE_BUILD $BUILD"
		fi
		for b in $builds; do
			measure "$b" >"$T/m"
			read -r pns pn pw nns nn pf nf pu nu <"$T/m"
			echo "$ver round $r $b: Python $pns ns/sample ($pn samples, walk $pw, unwind $pu," \
				"$pf user frames), native $nns ns/sample ($nn samples, unwind $nu, $nf user frames)," \
				"$(cat "$T/hooks"), load $(cut -d' ' -f1 /proc/loadavg)" >&2
			[ "$pn" -gt 0 ] && [ "$nn" -gt 0 ] || continue
			# The next round's native depth follows what this one's Python stack was.
			[ "$b" = "$BUILD" ] && ufr=$(printf '%.0f' "$pf")
			# Stacks 2 frames apart or more: not the same depth, not counted.
			if awk -v a="$pf" -v b="$nf" 'BEGIN { exit !(a - b >= 2 || b - a >= 2) }'; then
				echo "$ver round $r $b: $pf against $nf user frames, left out" >&2
				continue
			fi
			pre=
			[ "$b" != "$BUILD" ] && pre=b
			echo "$pns" >>"$T/${pre}py"
			echo "$pw" >>"$T/${pre}walk"
			echo "$nns" >>"$T/${pre}nat"
			awk -v a="$pns" -v b="$nns" 'BEGIN { printf "%.3f\n", a / b }' >>"$T/${pre}ratio"
			if [ -z "$pre" ]; then
				echo $((pns - pw)) >>"$T/part"
				echo "$pu" >>"$T/pu"
				echo "$nu" >>"$T/nu"
				awk -v a="$pu" -v b="$nu" 'BEGIN { printf "%.3f\n", b ? a / b : 0 }' >>"$T/uratio"
				awk -v a=$((pns - pw)) -v b="$nns" 'BEGIN { printf "%.3f\n", a / b }' >>"$T/pratio"
				echo "$pn" >>"$T/npy"
				echo "$nn" >>"$T/nnat"
				echo "$nf" >>"$T/nfr"
				echo "$pf" >>"$T/pfr"
			fi
		done
		stop_procs
	done
	load1=$(cut -d' ' -f1 /proc/loadavg)
	row="| $ver ($py) | $DEPTH | $(medf "$T/pfr") | $(med "$T/py") | $(med "$T/walk") | $(med "$T/nat") | $(medf "$T/ratio") |"
	[ -n "$BASE_BUILD" ] && row="$row $(med "$T/bpy") | $(med "$T/bwalk") | $(med "$T/bnat") | $(medf "$T/bratio") |"
	echo "$row" >>"$T/md"
	echo "| $ver | $(med "$T/walk") | $(med "$T/part") | $(med "$T/nat") | $(medf "$T/pratio") |" \
		"$(med "$T/pu") / $(med "$T/nu") | $(medf "$T/uratio") |" \
		"$(med "$T/npy") / $(med "$T/nnat") | $(medf "$T/nfr") | $load0 - $load1 |" >>"$T/parts"
	echo "- $ver: $(list "$T/ratio")$([ -n "$BASE_BUILD" ] && echo "; base: $(list "$T/bratio")")" >>"$T/rounds"
done
cat "$T/parts" "$T/rounds" >>"$T/md"
echo >>"$T/md"
echo "Load average $(cut -d' ' -f1-3 /proc/loadavg) at the end." >>"$T/md"
cp "$T/md" "$BENCH_OUT/python_cost.md"
cat "$BENCH_OUT/python_cost.md"
