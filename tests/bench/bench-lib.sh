# Shared helpers for the benchmark scripts (sourced). Each script runs in a
# full mode (make bench) or a short mode (--quick, inside make test), writes a
# markdown fragment to $BENCH_OUT/<name>.md for docs/BENCHMARKS.md and a
# key=value file $BENCH_OUT/<name>.env for checks, and exits non-zero only when
# it could not measure or, in --quick mode, when a check on the numbers fails.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT=$PWD
BUILD=${BUILD:-build}
BUILD=$(cd "$BUILD" && pwd)
PROFD=$BUILD/profd
PROFCTL_BIN=$BUILD/profctl
TP=$BUILD/testprogs
BENCH_OUT=${BENCH_OUT:-$BUILD/bench}
mkdir -p "$BENCH_OUT"
QUICK=0
[ "${1:-}" = --quick ] && QUICK=1
NCPU=$(nproc)
W=$(mktemp -d /tmp/profd-bench.XXXXXX)
BG_PIDS=()
BFAILS=0
# Private copies: a rebuild in the shared tree must not swap binaries mid-run.
mkdir -p "$W/bin" && cp "$PROFD" "$PROFCTL_BIN" "$W/bin/" || { echo "build profd and profctl first (make)" >&2; exit 1; }
PROFD=$W/bin/profd PROFCTL_BIN=$W/bin/profctl

bench_cleanup() {
	local p
	stats_release
	for p in "${BG_PIDS[@]}"; do
		kill -INT "$p" 2>/dev/null; kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null
	done
	[ -n "${KEEP_WORKDIR:-}" ] || rm -rf "$W"
}
trap bench_cleanup EXIT

# stats_hold / stats_release: BPF run-time statistics on while this script
# holds a descriptor (tests/bench/stats_hold.py); kernel.bpf_stats_enabled is
# left alone, so overlapping runs neither turn them off for each other nor
# leave them on.
STATS_PID=
stats_hold() {
	[ -n "$STATS_PID" ] && return 0
	rm -f "$W/stats.on"
	python3 "$ROOT/tests/bench/stats_hold.py" "$W/stats.on" & STATS_PID=$!
	local i; for i in $(seq 1 100); do [ -s "$W/stats.on" ] && return 0; kill -0 "$STATS_PID" 2>/dev/null || break; sleep 0.05; done
	echo "BPF statistics could not be turned on" >&2; STATS_PID=; exit 1
}
stats_release() { [ -n "$STATS_PID" ] || return 0; kill "$STATS_PID" 2>/dev/null; wait "$STATS_PID" 2>/dev/null; STATS_PID=; }

log() { echo "[$(date +%T)] $*" >&2; }
need() { command -v "$1" >/dev/null || { echo "$1 is needed for this benchmark" >&2; exit 1; }; }

# bg CMD...: starts a background process that cleanup interrupts; sets BG.
bg() { "$@" & BG=$!; BG_PIDS+=("$BG"); }
# stop PID [SIGNAL]: stops a background process and waits for it.
# A profiler that has not exited 30 s after the signal is killed (a stop never hangs the run).
stop() { kill -"${2:-INT}" "$1" 2>/dev/null
	local i; for i in $(seq 1 300); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$1" 2>/dev/null && { echo "pid $1 ignored SIG${2:-INT} for 30 s: killed" >&2; kill -KILL "$1"; }
	wait "$1" 2>/dev/null; local rc=$?;
	BG_PIDS=("${BG_PIDS[@]/$1}"); return $rc; }

# profd_start DIR [profd options...]: profd with state and socket under DIR; sets PROFD_PID.
profd_start() {
	local dir=$1; shift
	mkdir -p "$dir"
	bg "$PROFD" --state-dir "$dir/state" --socket "$dir/sock" "$@" >"$dir/profd.log" 2>&1
	PROFD_PID=$BG
	# Up to 60 s: loading the BPF programs took over 10 s at load 20 on 2 CPUs.
	for _ in $(seq 1 600); do
		[ -S "$dir/sock" ] && return 0
		kill -0 "$PROFD_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "profd did not start: $(cat "$dir/profd.log")" >&2
	exit 1
}
pctl() { local dir=$1; shift; "$PROFCTL_BIN" --state-dir "$dir/state" --socket "$dir/sock" "$@"; }
# status_val DIR KEY: one counter from profctl status.
status_val() { pctl "$1" status | awk -v k="$2" '$1 == k { print $2 }'; }

# perf_start FILE [perf record options...]: system-wide perf record; sets PERF_PID.
# -N: perf's build-id cache hard-links every binary it saw, which changes their
# ctime, and profctl then leaves their build-ids out as possibly rebuilt.
perf_start() {
	local f=$1; shift
	bg perf record -q -N -F 99 -a -g -o "$f" "$@" >"$f.log" 2>&1
	PERF_PID=$BG
	sleep 1
	kill -0 "$PERF_PID" 2>/dev/null || { echo "perf record failed: $(cat "$f.log")" >&2; exit 1; }
}

# bpftrace_start LOG [PROGRAM]: the peer profiler from the issue (or PROGRAM); sets BT_PID once its probe is attached.
bpftrace_start() {
	local prog='profile:hz:99 { @[ustack, kstack, comm] = count(); }'
	bg bpftrace -e "${2:-$prog}" >"$1" 2>&1
	BT_PID=$BG
	for _ in $(seq 1 200); do
		grep -q Attaching "$1" && return 0
		kill -0 "$BT_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "bpftrace did not attach: $(head -3 "$1")" >&2
	exit 1
}

# proc_cpu_ms PID: user+system CPU time of a process so far.
proc_cpu_ms() {
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($12 + $13) * 1000 / hz }' "/proc/$1/stat"
}
# proc_run_ms PID|PID/task/TID: CPU time so far from the scheduler's
# nanosecond counts (schedstat, summed over the threads for a PID), where
# /proc/PID/stat counts 10 ms ticks: 0.05 % of a core over 20 s, a
# quarter of a quiet profd's figure. Threads that exited drop out of the
# sum: for a process whose threads live as long as it does (profd's).
proc_run_ms() {
	local f
	if [[ $1 == */task/* ]]; then f=/proc/$1/schedstat; else f=$(echo /proc/"$1"/task/*/schedstat); fi
	# shellcheck disable=SC2086
	cat $f 2>/dev/null | awk '{ t += $1 } END { if (NR) printf "%.3f\n", t / 1e6 }'
}
proc_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; } # proc_kb PID VmRSS|VmHWM

# stats, median, fmt_range
source "$(dirname "${BASH_SOURCE[0]}")/stats.sh"

# rows_col COND FIELD: "median min max n" of field FIELD of the lines of
# $W/rows whose first field is COND ("-" skipped).
rows_col() { awk -v c="$1" -v k="$2" '$1 == c && $k != "-" { print $k }' "$W/rows" | stats; }

# machine_line: the machine, kernel and date for the docs.
machine_line() {
	local model
	model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
	printf '%s, %s CPUs (%s), %s GB RAM; kernel %s; %s' "$(hostname)" "$NCPU" "${model:-unknown CPU}" \
		"$(awk '/MemTotal/ { printf "%.0f", $2 / 1048576 }' /proc/meminfo)" "$(uname -r)" \
		"$(date -u '+%Y-%m-%d %H:%M UTC')"
}

# check_q DESC CMD...: in --quick mode a failed check fails the script.
check_q() {
	local d=$1; shift
	if "$@"; then echo "ok: $d"; else echo "FAIL: $d"; BFAILS=$((BFAILS + 1)); fi
}
# cmp A OP B: floating point comparison for checks.
# A value that is not a number (empty, nan, "-": nothing was measured) makes
# fcmp return 2, so neither a check nor a goal passes on a missing figure.
fcmp() { awk -v a="$1" -v b="$3" -v op="$2" 'BEGIN {
	num = "^[-+]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?$"
	if (a !~ num || b !~ num) exit 2
	if (op == "<=") exit !(a <= b); if (op == "<") exit !(a < b)
	if (op == ">=") exit !(a >= b); if (op == ">") exit !(a > b); exit 2 }'; }
# goal VALUE OP LIMIT: "met", "not met", or "not measured" (no number).
goal() {
	fcmp "$1" "$2" "$3"
	case $? in 0) echo met ;; 1) echo "**not met**" ;; *) echo "**not measured**" ;; esac
}

bench_done() { [ "$BFAILS" -eq 0 ]; exit $?; }
# within A B TOL: |A - B| <= TOL
within() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t) }'; }
