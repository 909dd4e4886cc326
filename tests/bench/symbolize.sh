#!/bin/bash
# Symbolization cost (issue 3): a cold and a warm drain on a host with 500
# processes (C, Python, Perl, Node.js; mostly idle, as on a
# server), and whether a drain stalls sampling (it must not: the kernel keeps
# counting into the other generation; losses show in the lost counters).
# Prints a markdown fragment for docs/BENCHMARKS.md "Symbolization".
# Usage: tests/bench/symbolize.sh [NPROCS]   (root)
source "$(dirname "$0")/bench-lib.sh"
N=${1:-500}
DRAIN=${DRAIN:-10s}
# SETTLE: seconds for the interpreters to start; RUN1: the run with 1 s drains.
SETTLE=${SETTLE:-10} RUN1=${RUN1:-8}

need python3; need perl; need node
# Each burns about 1 ms of CPU a second: 500 of them keep half a CPU busy.
py='import time
def py_burn():
    t = time.process_time()
    while time.process_time() - t < 0.001: pass
while True:
    py_burn(); time.sleep(1)'
pl='use Time::HiRes qw(sleep); sub pl_burn { my $x = 0; $x++ for 1 .. 10000; } while (1) { pl_burn(); sleep(1); }'
js='function jsBurn() { const t = process.cpuUsage().user; while (process.cpuUsage().user - t < 1000); } setInterval(jsBurn, 1000);'
log "starting $N processes"
for i in $(seq 1 "$N"); do
	case $((i % 10)) in
	0|1|2) bg "$TP/sym_duty" 1 1000 ;;
	3) bg "$TP/sym_duty" 1 1000 ;;
	4|5) bg python3 -c "$py" ;;
	6|7) bg perl -e "$pl" ;;
	8) if [ $((i % 50)) -eq 8 ]; then bg node -e "$js"; else bg "$TP/sym_duty" 1 1000; fi ;;
	9) bg "$TP/sym_duty" 1 1000 ;;
	esac
done
sleep "$SETTLE" # interpreters start
nprocs=$(ls /proc | grep -c '^[0-9]')
log "$nprocs processes on the host; starting profd (drain every $DRAIN)"
profd_start "$W/p" --drain-interval $DRAIN --flush-interval 60s
for _ in $(seq 1 200); do [ "$(status_val "$W/p" drains)" -ge 1 ] 2>/dev/null && break; sleep 0.1; done
cold_us=$(status_val "$W/p" drain_max_us) cold_cpu=$(( $(status_val "$W/p" cpu_user_ms) + $(status_val "$W/p" cpu_sys_ms) ))
cold_files=$(status_val "$W/p" symbol_files_cached) cold_pids=$(status_val "$W/p" symbol_pids_cached)
s0=$(status_val "$W/p" bpf_samples) t0=$(date +%s.%N)
for _ in $(seq 1 600); do [ "$(status_val "$W/p" drains)" -ge 3 ] && break; sleep 0.1; done
n=$(status_val "$W/p" drains) avg=$(status_val "$W/p" drain_avg_us) max=$(status_val "$W/p" drain_max_us)
s1=$(status_val "$W/p" bpf_samples) t1=$(date +%s.%N) warm_cpu=$(( $(status_val "$W/p" cpu_user_ms) + $(status_val "$W/p" cpu_sys_ms) ))
warm_cpu=$(( (warm_cpu - cold_cpu) / (n - 1) ))
warm_us=$(awk -v a="$avg" -v n="$n" -v c="$cold_us" 'BEGIN { printf "%.0f", (a * n - c) / (n - 1) }')
pctl "$W/p" status >"$W/status"
lost=$(awk '$1 ~ /^lost_|^samples_lost$/ { s += $2 } END { print s + 0 }' "$W/status")
rate=$(awk -v a="$s0" -v b="$s1" -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.0f", (b - a) / (t1 - t0) }')
rss=$(status_val "$W/p" rss_max_kb) files=$(status_val "$W/p" symbol_files_cached) pids=$(status_val "$W/p" symbol_pids_cached)
stop "$PROFD_PID"

# One-second drains (the default) while the same host runs: the longest is the cold one.
profd_start "$W/q"
sleep "$RUN1"
d1max=$(status_val "$W/q" drain_max_us) d1avg=$(status_val "$W/q" drain_avg_us)
stop "$PROFD_PID"

cat <<MD | tee "$BENCH_OUT/symbolize.md"
$(machine_line); $nprocs processes (${N} started: C, Python, Perl, Node.js, mostly idle).

| drain (every $DRAIN) | wall time | profd CPU | files cached | processes cached |
| --- | --- | --- | --- | --- |
| cold (first drain, empty caches) | $((cold_us / 1000)) ms | $cold_cpu ms (with start-up) | $cold_files | $cold_pids |
| warm (mean of drains 2-$n) | $((warm_us / 1000)) ms | $warm_cpu ms | $files | $pids |

- Sampling during drains: $rate samples/s on $NCPU CPUs at 99 Hz; $lost samples or stacks lost.
- Default 1 s drains on the same host: drain_avg_us $d1avg, drain_max_us $d1max (the cold first drain).
- profd peak RSS $((rss / 1024)) MiB.
MD
