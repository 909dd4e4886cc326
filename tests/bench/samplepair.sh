#!/bin/bash
# BPF time per on-CPU sample of several profd builds and bpftrace running AT
# THE SAME TIME on one fixed load, so that the host's drift (other jobs, the
# VM's neighbours: a sample's cost moved 2x within minutes on the idle VM)
# hits all of them alike. Per SECS interval and per profiler: bpf_stats
# run_time_ns / run_cnt of its sampling program only (on_cpu, bpftrace's
# profile probe). CYCLES restarts with the start order rotated (a daemon
# started later finds warm caches, and each sampler keeps its timer phase
# for its life: compare builds across cycles, not within one), MEAS
# intervals per cycle after WARM s. A build's cost against another moves by
# 5-30 % for a whole cycle, the start order among the things that differ:
# use an even CYCLES, which starts every pair in both orders alike.
# Load: benchwork on every CPU (frame pointers) plus LOOPS loops of gcc -c
# and `python3 -c pass` (through pyenv's shim when there is one).
# bpftrace samples at BT_HZ (97 by default, profd at 99): two samplers at
# one rate keep one phase to each other for a cycle, and the one that
# fires second finds the sampled task's pages warm (0.78-1.32x by cycle on
# the idle VM); at rates apart the phase sweeps within each interval
# (1.29-1.39x by cycle). BT_HZ=99 gives the fixed-phase figure.
# Usage: PROFDS="a=/path/profd b=/path/profd" [BT=1] [BT_HZ=99] [LOOPS=0] samplepair.sh
#   (a path may be a wrapper script that execs profd with options;
#   ALLPROGS=1 adds each profd's BPF ms per second over all its programs)
# Prints one line per interval: "name ns_per_sample samples" per profiler.
set -u
T=$(cd "$(dirname "$0")/../.." && pwd)/${BUILD:-build}/testprogs
CYCLES=${CYCLES:-3} MEAS=${MEAS:-4} SECS=${SECS:-10} WARM=${WARM:-10} LOOPS=${LOOPS:-3} BT=${BT:-0}
read -ra PS <<<"${PROFDS}"
W=$(mktemp -d /tmp/samplepair.XXXXXX)
PIDS=()
STATS_PID=
cleanup() {
	for p in "${PIDS[@]}"; do kill -INT "$p" 2>/dev/null; done; sleep 1
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	[ -n "$STATS_PID" ] && { kill "$STATS_PID" 2>/dev/null; wait "$STATS_PID" 2>/dev/null; }
	rm -rf "$W"
}
trap cleanup EXIT; trap "exit 1" TERM INT
PY=$(command -v python3); [ -x /root/.pyenv/shims/python3 ] && PY=/root/.pyenv/shims/python3
printf 'int f(int x) { return x * 3 + 1; }\nint main(void) { return f(2); }\n' >"$W/small.c"
"$T/benchwork" "$(nproc)" 100000000000 >/dev/null & PIDS+=($!)
for l in $(seq 1 "$LOOPS"); do
	bash -c "while :; do gcc -O1 -c '$W/small.c' -o '$W/small$l.o'; '$PY' -c pass; done" \
		>/dev/null 2>&1 &
	PIDS+=($!)
done
# prog_ids PID: the ids of the BPF programs the process holds.
prog_ids() { grep -hs '^prog_id:' /proc/"$1"/fdinfo/* | awk '{ print $2 }' | sort -u; }
# prog_of PID NAME-REGEX: the id of its program of that name (one bpftool call:
# one per program took minutes on a loaded host).
prog_of() { bpftool -j prog show 2>/dev/null | jq -r --arg re "^($2)$" \
	--argjson ids "[$(prog_ids "$1" | paste -sd,)]" \
	'.[] | select((.name // "" | test($re)) and (.id as $i | $ids | index($i))) | .id' | head -1; }
sum_ns() { local t=0 i r; for i in $1; do
	r=$(bpftool -j prog show id "$i" | jq -r '.run_time_ns // 0'); t=$((t + r)); done; echo $t; }
prog_ns() { bpftool -j prog show id "$1" | jq -r '"\(.run_time_ns // 0) \(.run_cnt // 0)"'; }
# Statistics on while this script holds a descriptor (stats_hold.py): the
# sysctl is left alone, so overlapping runs do not leave it set.
python3 "$(dirname "$0")/stats_hold.py" "$W/stats.on" & STATS_PID=$!
for _ in $(seq 1 100); do [ -s "$W/stats.on" ] && break; sleep 0.05; done
[ -s "$W/stats.on" ] || { echo "BPF statistics could not be turned on" >&2; exit 1; }
# END clears the map: printing it at exit held each cycle for minutes.
BT_HZ=${BT_HZ:-97}
BTPROG="profile:hz:$BT_HZ { @[ustack, kstack, comm] = count(); } END { clear(@); }"
names=(); for p in "${PS[@]}"; do names+=("${p%%=*}"); done
[ "$BT" = 1 ] && names+=(bpftrace)
echo "# $(date -u +%T) $(uptime | sed 's/.*load/load/') names: ${names[*]}"
for c in $(seq 1 "$CYCLES"); do
	declare -A PID=() PROG=()
	n=${#names[@]}
	for k in $(seq 0 $((n - 1))); do
		# Each pair in both orders alike over every two cycles: the rotation
		# moves every other cycle, and the second of two runs it backwards.
		i=$(((k + (c - 1) / 2) % n)); [ $((c % 2)) = 0 ] && i=$((n - 1 - i))
		nm=${names[$i]}
		if [ "$nm" = bpftrace ]; then
			bpftrace -e "$BTPROG" >"$W/bt.log" 2>&1 &
			PID[$nm]=$!
		else
			bin=; for p in "${PS[@]}"; do [ "${p%%=*}" = "$nm" ] && bin=${p#*=}; done
			mkdir -p "$W/$nm"; rm -rf "$W/$nm/state"
			"$bin" --state-dir "$W/$nm/state" --socket "$W/$nm/sock" --config /dev/null \
				>"$W/$nm/log" 2>&1 &
			PID[$nm]=$!
		fi
		PIDS+=(${PID[$nm]})
	done
	for nm in "${names[@]}"; do
		re=on_cpu; [ "$nm" = bpftrace ] && re="$BT_HZ|profile_hz_$BT_HZ"
		for _ in $(seq 1 120); do
			PROG[$nm]=$(prog_of "${PID[$nm]}" "$re"); [ -n "${PROG[$nm]}" ] && break; sleep 0.5
		done
	done
	sleep "$WARM"
	declare -A ALLP=()
	if [ "${ALLPROGS:-0}" = 1 ]; then
		for nm in "${names[@]}"; do ALLP[$nm]=$(prog_ids "${PID[$nm]}"); done
	fi
	for m in $(seq 1 "$MEAS"); do
		declare -A A=()
		declare -A AT=()
		for nm in "${names[@]}"; do
			A[$nm]=$(prog_ns "${PROG[$nm]}")
			[ -n "${ALLP[$nm]:-}" ] && AT[$nm]=$(sum_ns "${ALLP[$nm]}")
		done
		ts0=$(date +%s%N)
		sleep "$SECS"
		line="cycle $c meas $m $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
		for nm in "${names[@]}"; do
			read -r t0 n0 <<<"${A[$nm]}"; read -r t1 n1 <<<"$(prog_ns "${PROG[$nm]}")"
			line+=" $nm $(( (t1 - t0) / (n1 - n0 > 0 ? n1 - n0 : 1) )) $((n1 - n0))"
			[ -n "${AT[$nm]:-}" ] && line+=" allbpf_ms_per_s $(( ($(sum_ns "${ALLP[$nm]}") - AT[$nm]) \
				* 1000 / ($(date +%s%N) - ts0) ))"
		done
		echo "$line"
	done
	for nm in "${names[@]}"; do kill -INT "${PID[$nm]}"; done
	# bpftrace at times ignores one SIGINT on a loaded host (minutes in
	# epoll_wait): a second one after 10 s, then SIGKILL.
	for nm in "${names[@]}"; do
		for k in $(seq 1 40); do kill -0 "${PID[$nm]}" 2>/dev/null || break; sleep 0.5
			[ "$k" = 20 ] && kill -INT "${PID[$nm]}" 2>/dev/null; done
		kill -KILL "${PID[$nm]}" 2>/dev/null; wait "${PID[$nm]}" 2>/dev/null
	done
done
