#!/bin/bash
# Two profds in the same seconds on execload.sh's load: this build's
# ($BUILD/profd, "new") and another (PROFD_B, "base"), each with its own
# state directory and socket and --config /dev/null. A host's speed moves
# by more than a cut of 10 % from one hour (even one minute) to the next,
# so a build is judged against the other on the same execs at the same
# time: per pair, each daemon's CPU (schedstat, all threads, and the main
# thread alone) over SECS seconds from START seconds after the second
# start, the execs of those seconds (sched_process_exec by perf stat -a),
# and the status counters' drain and flush CPU. The start order
# alternates pair by pair (the first daemon's BPF programs run first at a
# hook). Load: benchwork on every CPU and LOOPS loops of `gcc -O1 -c` and
# pyenv's `python3 -c pass`.
# Prints one row per pair and the median and range of new/base CPU per
# exec (whole process and main thread), and how many pairs read below 1.
# Usage: PROFD_B=/path/to/profd execpair.sh   (PAIRS=8 START=60 SECS=60 LOOPS=3)
source "$(dirname "$0")/bench-lib.sh"
need perf
need gcc

PROFD_B=${PROFD_B:?PROFD_B=path of the profd to compare with}
PAIRS=${PAIRS:-8} START=${START:-60} SECS=${SECS:-60} LOOPS=${LOOPS:-3}
cp "$PROFD_B" "$W/bin/profd-b" || exit 1
PY=$(command -v python3)
[ -x /root/.pyenv/shims/python3 ] && PY=/root/.pyenv/shims/python3
log "execpair: $PAIRS pairs, ${SECS}s from ${START}s after start; benchwork x $NCPU; gcc -c and $PY -c pass in $LOOPS loops"

printf 'int f(int x) { return x * 3 + 1; }\nint main(void) { return f(2); }\n' >"$W/small.c"
bg "$TP/benchwork" "$NCPU" 100000000000 >/dev/null
for l in $(seq 1 "$LOOPS"); do
	bg bash -c "while :; do gcc -O1 -c '$W/small.c' -o '$W/small$l.o'; '$PY' -c pass; done" >/dev/null 2>&1
done
sleep 2

# parts DIR: the main thread's drain and flush CPU ms from the daemon's status.
parts() { pctl "$1" status | awk '$1 == "drain_cpu_ms" { d = $2 } $1 == "flush_cpu_ms" { f = $2 } END { print d + 0, f + 0 }'; }
ROWS=$W/pairs
: >"$ROWS"
log "rows: pair, start order, execs/s, new and base µs per exec (process; main thread; drains; flushes), new/base (process, main thread), load average"
for i in $(seq 1 "$PAIRS"); do
	if [ $((i % 2)) = 1 ]; then order="new base"; else order="base new"; fi
	for who in $order; do
		if [ "$who" = new ]; then profd_start "$W/new" --config /dev/null; PN=$PROFD_PID
		else PROFD=$W/bin/profd-b profd_start "$W/base" --config /dev/null; PB=$PROFD_PID; fi
	done
	sleep "$START"
	la0=$(cut -d' ' -f1 /proc/loadavg)
	cn0=$(proc_run_ms "$PN") cb0=$(proc_run_ms "$PB")
	mn0=$(proc_run_ms "$PN/task/$PN") mb0=$(proc_run_ms "$PB/task/$PB")
	pn0=($(parts "$W/new")) pb0=($(parts "$W/base"))
	t0=$(date +%s.%N)
	execs=$(perf stat -a -x, -e sched:sched_process_exec sleep "$SECS" 2>&1 | awk -F, '/sched_process_exec/ { print $1 }')
	t1=$(date +%s.%N)
	cn1=$(proc_run_ms "$PN") cb1=$(proc_run_ms "$PB")
	mn1=$(proc_run_ms "$PN/task/$PN") mb1=$(proc_run_ms "$PB/task/$PB")
	pn1=($(parts "$W/new")) pb1=($(parts "$W/base"))
	la1=$(cut -d' ' -f1 /proc/loadavg)
	stop "$PN" INT; stop "$PB" INT
	rm -rf "$W/new" "$W/base"
	row=$(awk -v i="$i" -v o="${order// /-}" -v e="${execs:-0}" -v t0="$t0" -v t1="$t1" \
		-v cn="$(awk -v a="$cn0" -v b="$cn1" 'BEGIN { print b - a }')" -v cb="$(awk -v a="$cb0" -v b="$cb1" 'BEGIN { print b - a }')" \
		-v mn="$(awk -v a="$mn0" -v b="$mn1" 'BEGIN { print b - a }')" -v mb="$(awk -v a="$mb0" -v b="$mb1" 'BEGIN { print b - a }')" \
		-v dn=$((pn1[0] - pn0[0])) -v fn=$((pn1[1] - pn0[1])) -v db=$((pb1[0] - pb0[0])) -v fb=$((pb1[1] - pb0[1])) \
		-v la="$la0-$la1" 'BEGIN {
		if (e <= 0 || cb <= 0 || mb <= 0) { printf "%d %s - - - - - - - - - - - %s\n", i, o, la; exit }
		printf "%d %s %.1f %.1f %.1f %.1f %.1f %.1f %.1f %.1f %.1f %.3f %.3f %s\n", i, o, e / (t1 - t0),
			cn * 1000 / e, mn * 1000 / e, dn * 1000 / e, fn * 1000 / e,
			cb * 1000 / e, mb * 1000 / e, db * 1000 / e, fb * 1000 / e, cn / cb, mn / mb, la }')
	echo "$row" >>"$ROWS"
	log "pair $i: $row"
done

col() { awk -v k="$1" '$k != "-" { print $k }' "$ROWS" | stats; }
below() { awk -v k="$1" '$k != "-" { n++; if ($k < 1) b++ } END { printf "%d of %d", b, n }' "$ROWS"; }
{
	echo "Machine: $(machine_line); load average at the end $(cut -d' ' -f1-3 /proc/loadavg)."
	echo "$PAIRS pairs, CPU over ${SECS} s from ${START} s after the second start, start order alternating; benchwork on $NCPU CPUs plus gcc -c and \`$PY -c pass\` in $LOOPS loops. µs of CPU per exec (process; main thread; of it drains; flushes)."
	echo
	echo "| pair | start order | execs/s | new: process | main | drains | flushes | base: process | main | drains | flushes | new/base, process | main thread | load |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
	awk '{ printf "| %s |", $1; for (k = 2; k <= NF; k++) printf " %s |", $k; printf "\n" }' "$ROWS"
	echo
	echo "new/base CPU per exec, process: $(fmt_range $(col 12) 3), below 1 in $(below 12); main thread: $(fmt_range $(col 13) 3), below 1 in $(below 13)"
	echo "µs per exec, process: new $(fmt_range $(col 4) 1), base $(fmt_range $(col 8) 1); execs/s $(fmt_range $(col 3) 1)"
} >"$BENCH_OUT/execpair.md"
cat "$BENCH_OUT/execpair.md"
bench_done
