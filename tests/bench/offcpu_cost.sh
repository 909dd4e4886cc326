#!/bin/bash
# Cost of off-CPU profiling: a pipe ping-pong (two threads, one byte, every
# round trip blocks and wakes each thread once) timed under profd without the
# sched_switch hook (--no-offcpu), with it capturing stacks at every switch
# (--offcpu-stack-interval 0), with the default stack reuse (1ms), the
# same with a switch-rate limit (offcpu-rate20k: --offcpu-max-rate 20000;
# the pinned ping-pong is over it, so its CPU samples its switch-outs),
# recording
# 1 in 10 switch-outs (--offcpu-sample 10) and with an in-kernel selection
# that leaves the ping-pong out (--offcpu-pids 1: what unselected threads
# pay), plus no profd at all. Conditions rotate round by round so drift hits
# all alike.
# Then, with kernel.bpf_stats_enabled, the hook's run time per context switch
# of a selected ping-pong.
# Usage: offcpu_cost.sh [--quick] [ROUNDS [SECONDS]]; prints a markdown
# fragment. --quick (inside make test): one round of 1 s, only --no-offcpu
# and the default, captures counted over 2 s.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source tests/bench/stats.sh
BUILD=${BUILD:-build}
PROFD=$BUILD/profd
PP=$BUILD/testprogs/pingpong
QUICK=0
[ "${1:-}" = --quick ] && { QUICK=1; shift; }
ROUNDS=${1:-5}
SECS=${2:-2}
CAP_SECS=4
# STEADY: seconds from a profd start to steady state (0.5 in --quick: its
# checks are bounds on the order of magnitude, not figures for the docs).
STEADY=1
[ $QUICK = 1 ] && ROUNDS=1 SECS=1 CAP_SECS=2 STEADY=0.5
W=$(mktemp -d /tmp/profd-offcpu-bench.XXXXXX)
PID=
STATS_WAS=$(cat /proc/sys/kernel/bpf_stats_enabled)

cleanup() {
	[ -n "$PID" ] && kill -INT "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
	echo "$STATS_WAS" >/proc/sys/kernel/bpf_stats_enabled
	[ -n "${KEEP:-}" ] || rm -rf "$W"
}
trap cleanup EXIT
[ -x "$PP" ] && [ -x "$PROFD" ] || { echo "build first: make all tests-build" >&2; exit 1; }

# off_cpu_id PID: the id of that profd's sched_switch program, from its fds
# (other profd instances may start and stop meanwhile). One grep over the
# fdinfo files and one bpftool: an awk per descriptor (about 100) and a
# bpftool per program took 5 s a call at load 13.
off_cpu_id() {
	local ids
	ids=$(bpftool -j prog show 2>/dev/null | jq -r '.[] | select(.name == "off_cpu") | .id')
	grep -Hs '^prog_id:' /proc/"$1"/fdinfo/* | awk -v ids="$ids" '
		BEGIN { n = split(ids, a, "\n"); for (i = 1; i <= n; i++) w[a[i]] = 1 }
		$2 in w { print $2 }'
}

# start COND: profd for COND (none for "alone"); sets PID and, for off-CPU
# conditions, PROG (the id of this instance's hook: other profd may run).
start() {
	local args=
	PID= PROG=
	case $1 in
	alone) return 0 ;;
	oncpu) args=--no-offcpu ;;
	offcpu-full) args="--offcpu-stack-interval 0" ;;
	offcpu) args= ;;
	offcpu-rate20k) args="--offcpu-max-rate 20000" ;;
	offcpu-sample10) args="--offcpu-sample 10" ;;
	offcpu-unselected) args="--offcpu-pids 1" ;;
	esac
	[ -n "${2:-}" ] && args+=" --offcpu-pids $2"
	rm -rf "$W/s"
	# shellcheck disable=SC2086
	"$PROFD" --state-dir "$W/s" --socket "$W/sock" --config /dev/null $args >"$W/log" 2>&1 &
	PID=$!
	for _ in $(seq 1 600); do [ -S "$W/sock" ] && break; sleep 0.1; done
	[ -S "$W/sock" ] || { echo "profd did not start: $(cat "$W/log")" >&2; exit 1; }
	[ "$1" = oncpu ] || PROG=$(off_cpu_id "$PID" | head -1)
	sleep "$STEADY" # steady state
}
stop() { [ -n "$PID" ] && kill -INT "$PID" && wait "$PID"; PID=; rm -f "$W/sock"; }
# "${STOPPED[@]}" CMD... &: CMD with its pid in $! at once, stopped until SIGCONT (exec keeps the pid).
STOPPED=(bash -c 'kill -STOP $$; exec "$@"' -)
pp() { "$PP" "$SECS" "$1" | awk '$1 == "ns_per_round_trip" { print $2 }'; }
prog_stats() { bpftool -j prog show id "$1" | jq -r '"\(.run_time_ns // 0) \(.run_cnt // 0)"'; }

CONDS=(alone oncpu offcpu-full offcpu offcpu-rate20k offcpu-sample10 offcpu-unselected)
[ $QUICK = 1 ] && CONDS=(oncpu offcpu)
: >"$W/rt"
: >"$W/hook"
n=${#CONDS[@]}
echo 0 >/proc/sys/kernel/bpf_stats_enabled
for r in $(seq 1 "$ROUNDS"); do
	for k in $(seq 0 $((n - 1))); do
		c=${CONDS[$(((k + r - 1) % n))]}
		start "$c"
		for m in same free; do
			echo "$c $m $(pp $m)" >>"$W/rt"
		done
		stop
		# Hook run time per call, in a separate run: the statistics cost time
		# themselves. The ping-pong starts first and profd selects it
		# (--offcpu-pids) unless the condition is about unselected threads, so
		# the other threads on a busy host cost the ~150 ns of an unselected
		# switch instead of their stack captures, and the average is the
		# ping-pong's (the selection check, ~20 ns, is included: conservative).
		if [ "$c" != alone ] && [ "$c" != oncpu ]; then
			# Stopped until profd is up: its start took over 10 s at load 20, longer than the run.
			"${STOPPED[@]}" "$PP" $((SECS + 3)) same >/dev/null &
			PPP=$!
			SEL=$PPP
			[ "$c" = offcpu-unselected ] && SEL=
			start "$c" $SEL
			kill -CONT $PPP
			sleep 1
			echo 1 >/proc/sys/kernel/bpf_stats_enabled
			a=($(prog_stats "$PROG"))
			sleep "$SECS"
			b=($(prog_stats "$PROG"))
			echo 0 >/proc/sys/kernel/bpf_stats_enabled
			stop
			kill $PPP 2>/dev/null
			wait $PPP
			if [ $((b[1] - a[1])) -gt 0 ]; then
				echo "$c $(((b[0] - a[0]) / (b[1] - a[1]))) $((b[1] - a[1]))" >>"$W/hook"
			else
				echo "round $r $c: no hook runs counted (program $PROG)" >&2
			fi
		fi
		echo "round $r $c: $(grep "^$c " "$W/rt" | tail -2 | awk '{ printf "%s %.0f ns  ", $2, $3 }')" >&2
	done
done

med() { median; }
range() { sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.0f-%.0f", lo, hi }'; }

echo "Machine: $(nproc) CPUs, $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo), kernel $(uname -r), $(date -u +%Y-%m-%d)"
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); $ROUNDS rounds x ${SECS}s per run, conditions rotated"
echo
echo "| condition | ping-pong same CPU, ns/round trip: median (min-max) | vs --no-offcpu | ping-pong free, ns/round trip | vs --no-offcpu |"
echo "|---|---|---|---|---|"
base_same=$(awk '$1 == "oncpu" && $2 == "same" { print $3 }' "$W/rt" | med)
base_free=$(awk '$1 == "oncpu" && $2 == "free" { print $3 }' "$W/rt" | med)
for c in "${CONDS[@]}"; do
	line="| $c "
	for m in same free; do
		v=$(awk -v c=$c -v m=$m '$1 == c && $2 == m { print $3 }' "$W/rt")
		md=$(med <<<"$v") rg=$(range <<<"$v")
		b=$base_same; [ $m = free ] && b=$base_free
		line+="| $(printf '%.0f' "$md") ($rg) | $(awk -v x="$md" -v b="$b" 'BEGIN { printf "%+.1f %%", 100 * (x - b) / b }') "
	done
	echo "$line|"
done
echo
echo "| condition | hook run time per context switch, ns: median (min-max) | switches per run |"
echo "|---|---|---|"
for c in offcpu-full offcpu offcpu-rate20k offcpu-sample10 offcpu-unselected; do
	grep -q "^$c " "$W/hook" || continue
	v=$(awk -v c=$c '$1 == c { print $2 }' "$W/hook")
	cnt=$(awk -v c=$c '$1 == c { print $3 }' "$W/hook" | med)
	echo "| $c | $(med <<<"$v") ($(range <<<"$v")) | $cnt |"
done

# Stack captures per switch-out of threads that block every 10-20 ms in the
# same places (offcpu_threads block: a sleeper, a pipe reader and its
# feeder), the process selected alone: with a fixed reuse interval shorter
# than their waits every switch-out would walk both stacks.
OT=$BUILD/testprogs/offcpu_threads
ctxt() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/ { s += $2 } END { print s + 0 }'; }
captured() { "$BUILD/profctl" --socket "$W/sock" status | awk '$1 == "offcpu_stacks_captured" { print $2 }'; }
: >"$W/cap"
for r in $(seq 1 "$ROUNDS"); do
	for c in offcpu-full offcpu; do
		[ $QUICK = 1 ] && [ $c = offcpu-full ] && continue
		"${STOPPED[@]}" "$OT" block $((CAP_SECS + 4)) >/dev/null &
		APP=$!
		start "$c" $APP
		kill -CONT $APP
		sleep 1 # past the first captures
		c0=$(captured) s0=$(ctxt $APP)
		sleep $CAP_SECS
		c1=$(captured) s1=$(ctxt $APP)
		stop
		kill $APP 2>/dev/null
		wait $APP 2>/dev/null
		echo "$c $((c1 - c0)) $((s1 - s0))" >>"$W/cap"
	done
done
echo
echo "| condition | offcpu_threads block (waits of 10-20 ms): stack captures / switch-outs, median (min-max) |"
echo "|---|---|"
for c in offcpu-full offcpu; do
	grep -q "^$c " "$W/cap" || continue
	v=$(awk -v c=$c '$1 == c && $3 > 0 { printf "%.3f\n", $2 / $3 }' "$W/cap")
	echo "| $c | $(med <<<"$v") ($(sort -n <<<"$v" | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s-%s", lo, hi }')) |"
done
