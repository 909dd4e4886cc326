#!/bin/bash
# Size on disk: profd (default options: 10 s windows, zstd level 9, run-queue entries by kernel entry) beside
# perf record -F 99 -a -g, plain and with -z, all three recording the same
# mixed busy load at the same time: cc compiling in a loop, short Python runs
# in a loop started through pyenv's shell shim where there is one (as on a
# CI runner: bash, pyenv and python execs for each run), a perl loop and a
# benchwork thread. Reported as bytes per hour.
# Usage: size.sh [--quick]   (SECS=S overrides; LOAD=steady drops the compile
# loop: a server-like load of long-lived processes; KEEP_STATE=DIR copies
# profd's state directory there for tests/bench/store_bench -a; PROFD_OPTS adds
# profd options, e.g. --no-offcpu where the off-CPU program cannot load)
source "$(dirname "$0")/bench-lib.sh"
need perf
need cc

SECS=${SECS:-$([ "$QUICK" = 1 ] && echo 10 || echo 180)}
PY=$(python3 -c 'import sys; print(sys.executable)')
[ -x /root/.pyenv/shims/python3 ] && PY=/root/.pyenv/shims/python3
log "size: ${SECS}s of mixed load under profd, perf record -g and perf record -g -z"

profd_start "$W/pd" ${PROFD_OPTS:-}
PD=$PROFD_PID
perf_start "$W/plain.data"; PP=$PERF_PID
perf_start "$W/z.data" -z; PZ=$PERF_PID
# The load: everything in its own process group, stopped together.
mkdir -p "$W/cc"
LOAD_KIND=${LOAD:-mixed}
if [ "$LOAD_KIND" = steady ]; then
	bg setsid sleep infinity
else
	bg setsid bash -c 'while :; do for f in "$1"/tests/testprogs/*.c lib/*.c; do
	cc -O2 -g -Ilib -Ibpf -I"$2" -D_GNU_SOURCE -c "$f" -o "$3/x.o" 2>/dev/null; done; done' _ "$ROOT" "$BUILD" "$W/cc"
fi
LOAD=($BG)
# Steady: one long-lived interpreter; mixed: a short run after another.
PY_RUNS=$([ "$LOAD_KIND" = steady ] && echo 'while True' || echo 'for _ in range(200)')
bg setsid bash -c 'while :; do "$1" -c "
def py_work(n): return sum(i * i for i in range(n))
$2: py_work(5000)"; done' _ "$PY" "$PY_RUNS"; LOAD+=($BG)
bg perl -e 'sub pl_work { my %h; $h{$_} = $_ * 2 for 1..5000; scalar keys %h } while (1) { pl_work() }'; LOAD+=($BG)
bg "$TP/benchwork" 1 100000000 >/dev/null; LOAD+=($BG)
sleep "$SECS"
stop "$PP" INT
stop "$PZ" INT
pctl "$W/pd" flush >/dev/null
samples=$(status_val "$W/pd" samples)
stop "$PD" TERM
[ -n "${KEEP_STATE:-}" ] && { rm -rf "$KEEP_STATE"; cp -a "$W/pd/state" "$KEEP_STATE"; }
kill -TERM -- "-${LOAD[0]}" 2>/dev/null
kill -TERM -- "-${LOAD[1]}" 2>/dev/null
for p in "${LOAD[@]}"; do stop "$p" TERM; done

bytes() { find "$1" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }
B_PD=$(bytes "$W/pd/state")
B_PP=$(bytes "$W/plain.data")
B_PZ=$(bytes "$W/z.data")
per_hour() { awk -v b="$1" -v s="$SECS" 'BEGIN { printf "%.1f", b * 3600 / s / 1048576 }'; }
per_sample() { awk -v b="$1" -v n="$samples" 'BEGIN { printf "%.1f", n ? b / n : 0 }'; }
H_PD=$(per_hour "$B_PD") H_PP=$(per_hour "$B_PP") H_PZ=$(per_hour "$B_PZ")
{
	echo "Machine: $(machine_line)."
	echo
	if [ "$LOAD_KIND" = steady ]; then
		echo "Steady load for ${SECS} s, recorded by all three at once: one Python loop ($PY), a perl loop and one benchwork"
		echo "thread (no compile loop); profd with default options (10 s windows, zstd level 9, run-queue entries by kernel entry);"
	else
		echo "Load for ${SECS} s, recorded by all three at once: cc compiling profd's sources in a loop, short Python runs"
		echo "in a loop through $PY,"
		echo "a perl loop and one benchwork thread; profd with default options (10 s windows, zstd level 9, run-queue entries by kernel entry);"
	fi
	echo "perf record -F 99 -a -g (plain and -z). profd kept $samples on-CPU samples (off-CPU time as well)."
	echo
	echo "| recorder | bytes in ${SECS} s | per hour | bytes per profd sample | vs profd |"
	echo "|---|---|---|---|---|"
	for r in "profd:$B_PD:$H_PD" "perf.data:$B_PP:$H_PP" "perf.data -z:$B_PZ:$H_PZ"; do
		IFS=: read -r name b h <<<"$r"
		printf '| %s | %s | %s MB | %s | %s× |\n' "$name" "$b" "$h" "$(per_sample "$b")" \
			"$(awk -v a="$b" -v p="$B_PD" 'BEGIN { printf "%.1f", p ? a / p : 0 }')"
	done
	echo
	echo "Extrapolated to a day: profd $(awk -v h="$H_PD" 'BEGIN { printf "%.0f", h * 24 }') MB, perf.data -z $(awk -v h="$H_PZ" 'BEGIN { printf "%.0f", h * 24 }') MB."
} >"$BENCH_OUT/size.md"
echo "profd_mb_h=$H_PD perf_mb_h=$H_PP perfz_mb_h=$H_PZ samples=$samples" >"$BENCH_OUT/size.env"
cat "$BENCH_OUT/size.md"

if [ "$QUICK" = 1 ]; then
	check_q "profd wrote windows ($B_PD bytes, $samples samples)" test "$B_PD" -gt 0 -a "${samples:-0}" -gt 0
	check_q "profd's windows read back: profctl ls lists them" \
		test "$("$PROFCTL_BIN" --state-dir "$W/pd/state" --socket "$W/none" ls | tail -n +2 | wc -l)" -ge 1
	check_q "profd stores less than perf.data -z ($B_PD < $B_PZ bytes)" test "$B_PD" -lt "$B_PZ"
fi
bench_done
