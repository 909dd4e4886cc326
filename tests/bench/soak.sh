#!/bin/bash
# make soak: profd under mixed load for SOAK_SECS (default 30 minutes):
# benchwork, process churn (10 a second), many distinct stacks in bursts and
# a compile loop. Every INTERVAL seconds it records profd's RSS, open fds,
# entries in its BPF hash maps and symbol caches; at the end it checks that
# they stayed flat: the last quarter against the second quarter.
# Usage: soak.sh [SECONDS]   (SOAK_SECS, INTERVAL override)
source "$(dirname "$0")/bench-lib.sh"
need bpftool
need jq
SECS=${1:-${SOAK_SECS:-1800}}
INTERVAL=${INTERVAL:-$((SECS >= 600 ? 30 : 10))}
log "soak: ${SECS}s, a sample every ${INTERVAL}s"

profd_start "$W/pd"
PD=$PROFD_PID
bg "$TP/benchwork" 1 1000000000 >/dev/null
bg "$TP/churn" $((SECS * 10 + 100)) $((SECS / 2)) 5 10 >/dev/null
bg bash -c 'while :; do "$1"/manystacks 2 5 10; sleep 20; done' _ "$TP"
bg setsid bash -c 'while :; do for f in tests/testprogs/*.c; do cc -O2 -c "$f" -o "$1/x.o" 2>/dev/null; done; sleep 5; done' _ "$W"
LOADG=$BG

# Entries in profd's hash maps (map_type 1), found through the map fds it
# holds. One find, one awk and one jq for all of them: a readlink, grep and
# awk per descriptor (about 100) made a row take 10 s at load 12, and the
# run SECS / INTERVAL rows long.
map_entries() {
	local id
	for id in $(find /proc/"$PD"/fd -lname 'anon_inode:bpf-map' -printf "/proc/$PD/fdinfo/%f\n" 2>/dev/null |
		xargs -r awk 'FNR == 1 { t = "" } $1 == "map_type:" { t = $2 } $1 == "map_id:" && t == 1 { print $2 }' 2>/dev/null); do
		bpftool -j map dump id "$id" 2>/dev/null
	done | jq -s 'map(length) | add // 0' 2>/dev/null || echo 0
}
echo "t rss_kb fds map_entries files_cached pids_cached samples samples_lost" >"$BENCH_OUT/soak.tsv"
t0=$SECONDS
# SECS / INTERVAL rows, however long each takes: on a loaded machine a row
# (status, a dump of every map) took seconds, and a 16 s run had two.
for _ in $(seq 1 $((SECS / INTERVAL))); do
	sleep "$INTERVAL"
	kill -0 "$PD" 2>/dev/null || { echo "profd died during the soak: $(tail -3 "$W/pd/profd.log")" >&2; exit 1; }
	pctl "$W/pd" status >"$W/st"
	echo "$((SECONDS - t0)) $(proc_kb "$PD" VmRSS) $(ls /proc/"$PD"/fd | wc -l) $(map_entries)" \
		"$(awk '$1 == "symbol_files_cached" { f = $2 } $1 == "symbol_pids_cached" { p = $2 }
			$1 == "samples" { s = $2 } $1 == "samples_lost" { l = $2 } END { print f, p, s, l }' "$W/st")" >>"$BENCH_OUT/soak.tsv"
	tail -1 "$BENCH_OUT/soak.tsv" >&2
done
kill -TERM -- "-$LOADG" 2>/dev/null

# Flat: the mean of the last quarter against the mean of the second quarter.
flat() { # column tolerance_fraction slack
	awk -v c="$1" -v f="$2" -v s="$3" 'NR > 1 { v[++n] = $c } END {
		q = int(n / 4); if (q < 1) q = 1
		for (i = q + 1; i <= 2 * q; i++) a += v[i]; a /= q
		for (i = n - q + 1; i <= n; i++) b += v[i]; b /= q
		printf "%.0f -> %.0f", a, b; exit !(b <= a * (1 + f) + s) }' "$BENCH_OUT/soak.tsv"
}
{
	echo "Machine: $(machine_line). ${SECS} s soak, a sample every ${INTERVAL} s (the second quarter's mean against the last quarter's)."
	echo
	for m in "2 RSS_kB 0.10 4096" "3 open_fds 0 2" "4 BPF_hash_map_entries 0.5 2000" "5 symbol_files_cached 0.5 20" "6 symbol_pids_cached 0.5 50"; do
		set -- $m
		if r=$(flat "$1" "$3" "$4"); then echo "- $2: $r — flat"
		elif [ "$SECS" -lt 300 ]; then echo "- $2: $r — grew (a run under 5 minutes is a smoke run: start-up growth is not judged)"
		else echo "- $2: $r — **grew**"; BFAILS=$((BFAILS + 1)); fi
	done
	echo "- samples: $(awk 'END { print $7 }' "$BENCH_OUT/soak.tsv"), lost: $(awk 'END { print $8 }' "$BENCH_OUT/soak.tsv")"
} >"$BENCH_OUT/soak.md"
cat "$BENCH_OUT/soak.md"
bench_done
