#!/bin/bash
# What off-CPU profiling costs a switch-heavy load: `perf bench sched pipe`
# pinned to one CPU (two processes ping-pong one word over pipes, every
# round trip two context switches on that CPU), timed with no profd, under
# profd --no-offcpu and under profd's defaults (plus the profd option sets
# in PIPE_EXTRA, ";"-separated). Conditions rotate round by round so drift
# on a shared machine hits all alike; medians and spread of µs per round
# trip, and the load average before and after.
# Usage: pipe_cost.sh [--quick] [ROUNDS [LOOPS]]; --quick (inside make test):
# 1 round of 20000 round trips, no goal check.
source "$(dirname "$0")/bench-lib.sh"
[ $QUICK = 1 ] && shift
ROUNDS=${1:-7}
LOOPS=${2:-200000}
[ $QUICK = 1 ] && ROUNDS=1 LOOPS=20000
need perf
need taskset
CPU=$((NCPU - 1))

conds=(alone oncpu default)
declare -A args=([alone]=- [oncpu]=--no-offcpu [default]=)
IFS=';' read -r -a extra <<<"${PIPE_EXTRA:-}"
for e in "${extra[@]}"; do
	[ -n "$e" ] || continue
	conds+=("$e")
	args[$e]=$e
done

# One round trip in µs (perf bench prints "N usecs/op").
pipe() { taskset -c "$CPU" perf bench sched pipe -l "$LOOPS" 2>&1 | awk '$2 == "usecs/op" { print $1 }'; }

LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
log "pipe_cost: $ROUNDS rounds of $LOOPS round trips on CPU $CPU, conditions: ${conds[*]}"
for r in $(seq 1 "$ROUNDS"); do
	n=${#conds[@]}
	for i in $(seq 0 $((n - 1))); do
		c=${conds[$(((i + r) % n))]}
		PROFD_PID=
		if [ "${args[$c]}" != - ]; then
			rm -rf "$W/p"
			# shellcheck disable=SC2086
			profd_start "$W/p" --config /dev/null ${args[$c]}
		fi
		sleep 1 # past start-up (tables of running processes); the same pause without profd
		v=$(pipe)
		[ -n "$v" ] || { echo "perf bench sched pipe printed no usecs/op" >&2; exit 1; }
		echo "$v" >>"$W/$(echo "$c" | tr -c 'A-Za-z0-9\n' _).us"
		[ -n "$PROFD_PID" ] && stop "$PROFD_PID"
	done
done
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

f() { echo "$W/$(echo "$1" | tr -c 'A-Za-z0-9\n' _).us"; }
read -r base_on _ _ _ < <(stats <"$(f oncpu)")
read -r base_alone _ _ _ < <(stats <"$(f alone)")
{
	echo "$(machine_line); load average $LOAD0 before, $LOAD1 after (other work on the machine counts)."
	echo "\`taskset -c $CPU perf bench sched pipe -l $LOOPS\`, $ROUNDS interleaved rounds; median (min-max)."
	echo
	echo "| condition | µs per round trip | vs no profd | vs \`--no-offcpu\` |"
	echo "|---|---|---|---|"
	for c in "${conds[@]}"; do
		read -r m lo hi _ < <(stats <"$(f "$c")")
		name=$c; [ "$c" = alone ] && name="no profd"; [ "$c" = oncpu ] && name="\`--no-offcpu\`"
		[ "$c" = default ] && name="defaults (off-CPU on)"
		case $c in -*) name="\`$c\`" ;; esac
		awk -v n="$name" -v m="$m" -v lo="$lo" -v hi="$hi" -v a="$base_alone" -v o="$base_on" 'BEGIN {
			printf "| %s | %.3f (%.3f-%.3f) | %+.1f %% | %+.1f %% |\n", n, m, lo, hi, 100 * (m / a - 1), 100 * (m / o - 1) }'
	done
} >"$BENCH_OUT/pipe_cost.md"
read -r def _ _ _ < <(stats <"$(f default)")
{
	echo "alone_us=$base_alone"
	echo "oncpu_us=$base_on"
	echo "default_us=$def"
	echo "default_vs_alone_pct=$(awk -v d="$def" -v a="$base_alone" 'BEGIN { printf "%.1f", 100 * (d / a - 1) }')"
} >"$BENCH_OUT/pipe_cost.env"
cat "$BENCH_OUT/pipe_cost.md"
if [ $QUICK = 0 ]; then
	pct=$(awk -F= '$1 == "default_vs_alone_pct" { print $2 }' "$BENCH_OUT/pipe_cost.env")
	# A baseline that spreads more than the goal cannot tell a 5 % cost from none.
	spread=$(stats <"$(f alone)" | awk '{ printf "%.0f", 100 * ($3 - $2) / $1 }')
	if [ "$spread" -gt 10 ]; then
		echo "goal: off-CPU on by default costs <= 5 %: not resolved, the runs without profd spread by $spread % of their median" | tee -a "$BENCH_OUT/pipe_cost.md"
	else
		echo "goal: off-CPU on by default costs <= 5 % on this ping-pong: $pct % against no profd, $(goal "$pct" "<=" 5)" | tee -a "$BENCH_OUT/pipe_cost.md"
	fi
fi
bench_done
