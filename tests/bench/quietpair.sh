#!/bin/bash
# Several profd builds side by side on a quiet host (a `sleep 0.1` loop, no
# exec loops, nothing else started), so that they see the same seconds of
# whatever else runs: per build and round, its CPU (user + system, all
# threads) and its main thread's from WARM to WARM + SECS after its start
# and again LATE seconds after that, its VmHWM and VmRSS at the end, and
# from status its Python free hooks made and unwind row-write steps. Rounds
# start the daemons afresh (a daemon's start-up, its first look at every
# process and file, sets its peak RSS). Medians and ranges over the rounds.
# Usage: PROFDS="a=/path/profd b=/path/profd" quietpair.sh
#   (ROUNDS=3 WARM=15 SECS=20 LATE=40 override; a path may be a wrapper
#   script that execs profd with options)
source "$(dirname "$0")/bench-lib.sh"

ROUNDS=${ROUNDS:-3} WARM=${WARM:-15} SECS=${SECS:-20} LATE=${LATE:-40}
read -ra PS <<<"${PROFDS:-this=$PROFD}"
log "quietpair: ${#PS[@]} builds side by side, $ROUNDS rounds; CPU at ${WARM}-$((WARM + SECS)) s and $((WARM + SECS + LATE))-$((WARM + 2 * SECS + LATE)) s"

bg bash -c 'while :; do sleep 0.1; done'
: >"$W/rows"
for r in $(seq 1 "$ROUNDS"); do
	declare -A PID=()
	for p in "${PS[@]}"; do
		n=${p%%=*}
		rm -rf "$W/$n"
		PROFD=${p#*=} profd_start "$W/$n" --config /dev/null
		PID[$n]=$PROFD_PID
	done
	t_start=$(date +%s.%N)
	sleep_until() { sleep "$(awk -v a="$t_start" -v s="$1" -v n="$(date +%s.%N)" 'BEGIN { d = a + s - n; print (d > 0 ? d : 0) }')"; }
	# take TAG: total and main-thread CPU ms of each build, and the time.
	take() { local n; for n in "${!PID[@]}"; do
		echo "$n $(proc_cpu_ms "${PID[$n]}") $(proc_cpu_ms "${PID[$n]}/task/${PID[$n]}") $(date +%s.%N)" >>"$W/t.$1"; done; }
	rm -f "$W"/t.*
	sleep_until "$WARM"; take a
	sleep_until "$((WARM + SECS))"; take b
	sleep_until "$((WARM + SECS + LATE))"; take c
	sleep_until "$((WARM + 2 * SECS + LATE))"; take d
	for n in "${!PID[@]}"; do
		pctl "$W/$n" status >"$W/$n/status"
		hwm=$(proc_kb "${PID[$n]}" VmHWM) rss=$(proc_kb "${PID[$n]}" VmRSS)
		stop "${PID[$n]}" INT
		row=$(join <(sort "$W/t.a") <(sort "$W/t.b") | join - <(sort "$W/t.c") | join - <(sort "$W/t.d") |
			awk -v n="$n" -v h="$hwm" -v s="$rss" -v hk="$(awk '$1 == "python_free_hooks_made" { print $2 }' "$W/$n/status")" \
			    -v st="$(awk '$1 == "unwind_rows_steps" { print $2 }' "$W/$n/status")" '$1 == n {
				printf "%s %.3f %.3f %.3f %.3f %.1f %.1f %s %s\n", n,
					($5 - $2) / 10 / ($7 - $4), ($6 - $3) / 10 / ($7 - $4),
					($11 - $8) / 10 / ($13 - $10), ($12 - $9) / 10 / ($13 - $10),
					h / 1024, s / 1024, hk == "" ? "-" : hk, st == "" ? "-" : st }')
		echo "$row" >>"$W/rows"
		log "round $r: $row (build, CPU % and main thread % early, the same late, VmHWM MB, VmRSS MB, free hooks made, row steps)"
	done
	unset PID
done

{
	echo "Machine: $(machine_line); load average at the end $(cut -d' ' -f1-3 /proc/loadavg)."
	echo "$ROUNDS rounds, builds side by side on a \`sleep 0.1\` loop; CPU at ${WARM}-$((WARM + SECS)) s (early) and $((WARM + SECS + LATE))-$((WARM + 2 * SECS + LATE)) s (late) after start. Median (min-max)."
	echo
	echo "| build | CPU early, % | main thread early, % | CPU late, % | main thread late, % | VmHWM, MB | VmRSS, MB | free hooks made | row steps |"
	echo "|---|---|---|---|---|---|---|---|---|"
	for p in "${PS[@]}"; do
		n=${p%%=*}
		echo "| $n | $(fmt_range $(rows_col "$n" 2) 3) | $(fmt_range $(rows_col "$n" 3) 3) | $(fmt_range $(rows_col "$n" 4) 3) | $(fmt_range $(rows_col "$n" 5) 3) |" \
			"$(fmt_range $(rows_col "$n" 6) 1) | $(fmt_range $(rows_col "$n" 7) 1) | $(fmt_range $(rows_col "$n" 8) 0) | $(fmt_range $(rows_col "$n" 9) 0) |"
	done
} >"$BENCH_OUT/quietpair.md"
cat "$BENCH_OUT/quietpair.md"
bench_done
