#!/bin/bash
# profd's own cost at steady state on a busy host: benchwork on every CPU
# plus 10 short-lived processes a second (churn, 20 ms of CPU each). After a
# warm-up, measures profd's CPU time per second of wall time (user + system,
# from /proc), the run time of its BPF programs (BPF statistics held by stats_hold.py,
# on only while measuring), its peak RSS (VmHWM) and what status says was lost.
# --procs N adds N long-lived processes started before profd (python3, perl,
# bash, and node where installed: 1 in 50), each burning about 1 ms of CPU and
# sleeping a second, as on a server with many idle daemons: profd then builds
# the DWARF tables and reads the mappings of all of them at start (VmHWM) and
# keeps them (VmRSS). The memory parts of `profctl status` are printed too.
# Usage: selfcost.sh [--quick] [--procs N]   (WARM=S and SECS=S override)
source "$(dirname "$0")/bench-lib.sh"

NPROCS=0
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
	--procs) NPROCS=${2:?--procs needs a number}; shift ;;
	*) echo "usage: selfcost.sh [--quick] [--procs N]" >&2; exit 2 ;;
	esac
	shift
done
[[ $NPROCS =~ ^[0-9]+$ ]] || { echo "--procs: not a number: $NPROCS" >&2; exit 2; }

if [ "$QUICK" = 1 ]; then WARM=${WARM:-3} SECS=${SECS:-6}; else WARM=${WARM:-15} SECS=${SECS:-60}; fi
log "selfcost: ${WARM}s warm-up, ${SECS}s measured, benchwork x $NCPU + 10 processes/s + $NPROCS long-lived"

# The distribution's interpreters, not version-manager shims (a pyenv shim is a
# bash script that execs pyenv: three execs per start and another binary).
PY=/usr/bin/python3; [ -x "$PY" ] || PY=$(command -v python3)
NODE=$(command -v node || true)
py='import time
def py_burn():
    t = time.process_time()
    while time.process_time() - t < 0.001: pass
while True:
    py_burn(); time.sleep(1)'
pl='use Time::HiRes qw(sleep); sub pl_burn { my $x = 0; $x++ for 1 .. 10000; } while (1) { pl_burn(); sleep(1); }'
# read -t on a pipe nobody writes: bash sleeps without exec'ing sleep(1) every second.
sh='exec 3<> <(:); sh_burn() { local i x=0; for ((i = 0; i < 300; i++)); do x=$((x + i)); done; }
while :; do sh_burn; read -t 1 -u 3; done'
js='function jsBurn() { const t = process.cpuUsage().user; while (process.cpuUsage().user - t < 1000); } setInterval(jsBurn, 1000);'
if [ "$NPROCS" -gt 0 ]; then
	for i in $(seq 1 "$NPROCS"); do
		if [ -n "$NODE" ] && [ $((i % 50)) -eq 0 ]; then bg "$NODE" -e "$js"
		else case $((i % 3)) in
			0) bg "$PY" -c "$py" ;;
			1) bg perl -e "$pl" ;;
			2) bg bash -c "$sh" ;;
		esac; fi
	done
	sleep 5 # the interpreters start
	log "$NPROCS long-lived processes started; $(ls /proc | grep -c '^[0-9]') on the host"
fi

profd_start "$W/pd"
PD=$PROFD_PID
bg "$TP/benchwork" "$NCPU" 100000000 >/dev/null; BW=$BG
bg "$TP/churn" $(((WARM + SECS + 5) * 10)) 0 20 10 >"$W/churn.out"; CH=$BG
sleep "$WARM"

# BPF program run time: only while measuring.
stats_hold
# Summed over the programs profd holds, from the fdinfo of its bpf-prog fds.
bpf_ns() {
	local f t=0 v
	for f in /proc/"$PD"/fd/*; do
		[ "$(readlink "$f")" = "anon_inode:bpf-prog" ] || continue
		v=$(awk '$1 == "run_time_ns:" { print $2 }' "/proc/$PD/fdinfo/${f##*/}")
		t=$((t + ${v:-0}))
	done
	echo "$t"
}
t0=$(date +%s.%N); c0=$(proc_cpu_ms "$PD"); b0=$(bpf_ns)
peak_rss=0
for _ in $(seq 1 "$SECS"); do
	sleep 1
	r=$(proc_kb "$PD" VmRSS); [ "$r" -gt "$peak_rss" ] && peak_rss=$r
done
t1=$(date +%s.%N); c1=$(proc_cpu_ms "$PD"); b1=$(bpf_ns)
stats_release
hwm=$(proc_kb "$PD" VmHWM)
LOADAVG=$(cut -d' ' -f1-3 /proc/loadavg)
pctl "$W/pd" status >"$W/status"
kill "$BW" "$CH" 2>/dev/null
sv() { awk -v k="$1" '$1 == k { print $2 }' "$W/status"; }

wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
cpu_pct=$(awk -v c="$((${c1%.*} - ${c0%.*}))" -v w="$wall" 'BEGIN { printf "%.3f", c / 10 / w }')
bpf_pct=$(awk -v b="$((b1 - b0))" -v w="$wall" 'BEGIN { printf "%.3f", b / 1e7 / w }')
hwm_mb=$(awk -v k="$hwm" 'BEGIN { printf "%.1f", k / 1024 }')
steady_mb=$(awk -v k="$peak_rss" 'BEGIN { printf "%.1f", k / 1024 }')
samples=$(sv samples) lost=$(sv samples_lost) slost=$(sv stacks_lost) unres=$(sv stacks_unresolved)
{
	echo "Machine: $(machine_line)."
	echo
	echo "Load: \`benchwork $NCPU\` (every CPU busy) and \`churn\` starting 10 processes a second (fork + exec,"
	echo "20 ms of CPU each)$([ "$NPROCS" -gt 0 ] && echo ", $NPROCS long-lived processes (python3, perl, bash$([ -n "$NODE" ] && echo ", node 1 in 50"), 1 ms of CPU a second each)"); profd with default options; ${WARM} s warm-up, then ${SECS} s measured; load average $LOADAVG."
	echo
	echo "| measure | value |"
	echo "|---|---|"
	echo "| profd CPU (user + system) | ${cpu_pct} % of one core |"
	echo "| profd BPF programs (run in the sampled tasks) | ${bpf_pct} % of one core |"
	echo "| peak RSS while measuring (VmRSS, 1 s samples) | ${steady_mb} MB |"
	echo "| peak RSS since start (VmHWM) | ${hwm_mb} MB |"
	echo "| kernel map memory | $(awk -v b="$(sv kernel_map_bytes)" 'BEGIN { printf "%.1f", b / 1048576 }') MB |"
	echo "| samples (whole run) | $samples |"
	echo "| samples lost / stacks lost / stacks unresolved | $lost / $slost / $unres |"
	echo "| drain time, average / max | $(sv drain_avg_us) µs / $(sv drain_max_us) µs |"
	echo
	echo "Goals: profd CPU under 0.5 % of one core — $(goal "$cpu_pct" '<' 0.5); RSS under 64 MB — $(goal "$hwm_mb" '<' 64)."
} >"$BENCH_OUT/selfcost.md"
echo "cpu_pct=$cpu_pct bpf_pct=$bpf_pct hwm_mb=$hwm_mb peak_mb=$steady_mb samples=$samples lost=$lost stacks_lost=$slost procs=$NPROCS loadavg=${LOADAVG// /,}" >"$BENCH_OUT/selfcost.env"
cat "$BENCH_OUT/selfcost.md"
# Memory by part, for finding the next-largest one.
grep -E '^(rss_kb|heap_used_bytes|heap_free_bytes|symbol_cache_bytes|symbol_pids_bytes|window_bytes|unwind_table_bytes|unwind_table_files|unwind_pids|symbol_files_cached|symbol_pids_cached|process_execs)\b' "$W/status" | tr '\t' '=' | tr '\n' ' ' >&2; echo >&2

if [ "$QUICK" = 1 ]; then
	check_q "profd CPU ${cpu_pct} % of a core below 10 % (a smoke bound, not the goal)" fcmp "$cpu_pct" '<' 10
	check_q "profd peak RSS ${hwm_mb} MB below 128 MB" fcmp "$hwm_mb" '<' 128
	check_q "no samples lost ($lost)" test "$lost" -eq 0
	check_q "samples recorded ($samples)" test "$samples" -gt 0
fi
bench_done
