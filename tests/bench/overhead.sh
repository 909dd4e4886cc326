#!/bin/bash
# Overhead: a fixed-work CPU job with one thread per CPU, timed alone, under
# profd (on- and off-CPU, then on-CPU only), under perf record -F 99 -a -g and
# under bpftrace profile:hz:99, and under the floor: a bpftrace probe at 99 Hz
# that only counts. Conditions are interleaved round by round (in
# a rotating order) so drift on the host hits all of them alike; the report
# gives medians, min-max and the slowdown against the alone runs.
# Usage: overhead.sh [--quick]   (ROUNDS=N and JOB_SECS=S override)
source "$(dirname "$0")/bench-lib.sh"
need perf
need bpftrace

if [ "$QUICK" = 1 ]; then
	ROUNDS=${ROUNDS:-1} JOB_SECS=${JOB_SECS:-1} WARMUP=${WARMUP:-1}
	CONDS=(alone profd perf bpftrace)
else
	ROUNDS=${ROUNDS:-7} JOB_SECS=${JOB_SECS:-5} WARMUP=${WARMUP:-3}
	CONDS=(alone profd profd-oncpu perf bpftrace floor)
fi

# Calibrate the fixed work to about JOB_SECS alone.
cal=$("$TP/benchwork" "$NCPU" 300 | awk '$1 == "wall_ns" { print $2 }')
WORK=$(awk -v c="$cal" -v s="$JOB_SECS" 'BEGIN { r = int(300 * s * 1e9 / c); print r < 10 ? 10 : r }')
log "overhead: $NCPU threads x $WORK rounds of work (~${JOB_SECS}s alone), $ROUNDS rounds of ${CONDS[*]}"

# run_job COND ROUND: one timed job under COND; appends
# "cond round wall_ns cpu_ns profiler_cpu_during_job_ns profiler_cpu_before_job_ns".
run_job() {
	local c=$1 r=$2 pid= out=$W/job.out
	case $c in
	alone) ;;
	profd) profd_start "$W/pd-$r" && pid=$PROFD_PID ;;
	profd-oncpu) profd_start "$W/pdo-$r" --no-offcpu && pid=$PROFD_PID ;;
	perf) perf_start "$W/perf-$r.data" && pid=$PERF_PID ;;
	bpftrace) bpftrace_start "$W/bt-$r.log" && pid=$BT_PID ;;
	# The least a 99 Hz sampler can cost here: the timer interrupt and an
	# empty count, no stacks; what the others pay above it is their own.
	floor) bpftrace_start "$W/bt-$r.log" 'profile:hz:99 { @ = count(); }' && pid=$BT_PID ;;
	esac
	# Let the profiler reach its steady state before the clock starts: profd
	# spends about 0.4 s of CPU loading and verifying its BPF programs and
	# its first drains within 2 s of start (reported apart: start-up CPU).
	[ -n "$pid" ] && sleep "$WARMUP"
	local c0=0 c1=0
	[ -n "$pid" ] && c0=$(proc_cpu_ms "$pid" | awk '{ printf "%.0f", $1 * 1e6 }')
	"$TP/benchwork" "$NCPU" "$WORK" >"$out" || { echo "benchwork failed" >&2; exit 1; }
	[ -n "$pid" ] && c1=$(proc_cpu_ms "$pid" | awk '{ printf "%.0f", $1 * 1e6 }')
	if [ -n "$pid" ]; then
		kill -0 "$pid" 2>/dev/null || { echo "$c died during the job" >&2; exit 1; }
		case $c in
		profd*) LAST_PROFD_DIR=$W/$([ "$c" = profd ] && echo pd || echo pdo)-$r
			BW_SAMPLES=$(pctl "$LAST_PROFD_DIR" dump --since 1m --comm benchwork | awk '{ s += $NF } END { print s + 0 }')
			echo "$c $r samples_of_job $BW_SAMPLES" >>"$W/samples" ;;
		esac
		# profd stops on TERM (its signalfd never sees a SIGINT that bash made background jobs ignore).
		case $c in profd*) stop "$pid" TERM ;; *) stop "$pid" INT ;; esac
		rm -rf "$W/perf-$r.data" "$W/pd-$r" "$W/pdo-$r"
	fi
	awk -v c="$c" -v r="$r" -v p0="$c0" -v p1="$c1" '$1 == "wall_ns" { w = $2 } $1 == "cpu_ns" { u = $2 }
		END { print c, r, w, u, p1 - p0, p0 }' "$out" >>"$W/times"
}

: >"$W/times"
: >"$W/samples"
n=${#CONDS[@]}
for r in $(seq 1 "$ROUNDS"); do
	for k in $(seq 0 $((n - 1))); do
		c=${CONDS[$(((k + r - 1) % n))]}
		run_job "$c" "$r"
		log "round $r $c: $(tail -1 "$W/times" | awk '{ printf "%.3f s", $3 / 1e9 }')"
	done
done

read -r A_MED A_MIN A_MAX _ < <(awk '$1 == "alone" { print $3 / 1e9 }' "$W/times" | stats)
{
	echo "Machine: $(machine_line)."
	echo
	echo "Fixed work: \`benchwork $NCPU $WORK\` (one thread per CPU, ~${JOB_SECS} s alone), $ROUNDS interleaved rounds;"
	echo "each profiler samples the whole host at 99 Hz and is ready (attached, its socket or output open) ${WARMUP} s before the job starts."
	echo "Profiler CPU: the profiler process's own user + system time (all its threads), during the job and from its start to the job's;"
	echo "BPF programs run in the sampled tasks and count in the job's CPU instead."
	echo "Slowdown: median wall time against the median alone; paired: median of each round's ratio to that round's alone run."
	echo
	echo "| condition | wall median (s) | min – max (s) | job CPU median (s) | slowdown | paired slowdown | profiler CPU during job (ms) | profiler CPU before job (ms) |"
	echo "|---|---|---|---|---|---|---|---|"
} >"$BENCH_OUT/overhead.md"
: >"$BENCH_OUT/overhead.env"
for c in "${CONDS[@]}"; do
	read -r med mn mx cnt < <(awk -v c="$c" '$1 == c { print $3 / 1e9 }' "$W/times" | stats)
	read -r cpu _ < <(awk -v c="$c" '$1 == c { print $4 / 1e9 }' "$W/times" | stats)
	slow=$(awk -v m="$med" -v a="$A_MED" 'BEGIN { printf "%.2f", 100 * (m / a - 1) }')
	paired=$(awk -v c="$c" '$1 == "alone" { a[$2] = $3 } $1 == c { v[$2] = $3 }
		END { for (r in v) if (r in a) printf "%.4f\n", 100 * (v[r] / a[r] - 1) }' "$W/times" | stats | awk '{ printf "%.2f", $1 }')
	read -r pjob _ < <(awk -v c="$c" '$1 == c { print $5 / 1e6 }' "$W/times" | stats)
	read -r pstart _ < <(awk -v c="$c" '$1 == c { print $6 / 1e6 }' "$W/times" | stats)
	printf '| %s | %.3f | %.3f – %.3f | %.3f | %+.2f %% | %+.2f %% | %.0f | %.0f |\n' "$c" "$med" "$mn" "$mx" "$cpu" "$slow" "$paired" "$pjob" "$pstart" >>"$BENCH_OUT/overhead.md"
	echo "${c//-/_}_median=$med ${c//-/_}_slowdown=$slow ${c//-/_}_paired=$paired" >>"$BENCH_OUT/overhead.env"
done
source <(tr ' ' '\n' <"$BENCH_OUT/overhead.env")
spread=$(awk -v a="$A_MIN" -v b="$A_MAX" -v m="$A_MED" 'BEGIN { printf "%.1f", 100 * (b - a) / m }')
samples=$(awk '$1 == "profd" { print $4 }' "$W/samples" | stats | awk '{ print $1 }')
expect=$(awk -v s="$A_MED" -v n="$NCPU" 'BEGIN { printf "%.0f", s * n * 99 }')
{
	echo
	echo "The alone runs spread over ${spread} % of their median (min to max); differences smaller than that are noise."
	echo "profd recorded a median of $samples samples of the job per run (99 Hz x $NCPU CPUs x ${A_MED} s = $expect expected)."
	for c in profd perf bpftrace; do
		awk -v c="$c" '$1 == "alone" { a[$2] = $3 } $1 == c { v[$2] = $3 }
			END { for (r in v) if (r in a) printf "%.4f\n", 100 * (v[r] / a[r] - 1) }' "$W/times" | stats |
			awk -v c="$c" '{ printf "Paired slowdowns of %s, round by round: median %+.2f %%, min %+.2f %%, max %+.2f %%.\n", c, $1, $2, $3 }'
	done
	if [ -n "${floor_paired:-}" ]; then
		echo "The floor (a 99 Hz bpftrace probe that only counts: the timer interrupt and a map update, no stacks) costs ${floor_paired} % paired;"
		echo "above it: profd $(awk -v a="$profd_paired" -v b="$floor_paired" 'BEGIN { printf "%+.2f", a - b }') points, perf $(awk -v a="$perf_paired" -v b="$floor_paired" 'BEGIN { printf "%+.2f", a - b }'), bpftrace $(awk -v a="$bpftrace_paired" -v b="$floor_paired" 'BEGIN { printf "%+.2f", a - b }')."
	fi
	echo
	echo "Goal: slowdown ≤ 1 % at 99 Hz — $(goal "$profd_paired" '<=' 1) (paired median ${profd_paired} %);"
	echo "no worse than perf — $(goal "$profd_paired" '<=' "$(awk -v p="$perf_paired" 'BEGIN { print p + 0.5 }')") (perf ${perf_paired} %, with 0.5 points of measurement tolerance)."
} >>"$BENCH_OUT/overhead.md"
echo "alone_spread_pct=$spread profd_job_samples=$samples" >>"$BENCH_OUT/overhead.env"
# The raw rounds, so that runs can be pooled: cond round wall_ns job_cpu_ns profiler_cpu_ns profiler_start_cpu_ns.
cp "$W/times" "$BENCH_OUT/overhead.times"
cat "$BENCH_OUT/overhead.md"

if [ "$QUICK" = 1 ]; then
	check_q "every condition timed" test "$(wc -l <"$W/times")" -eq "${#CONDS[@]}"
	check_q "profd slowdown ${profd_slowdown} % below 25 % (a smoke bound, not the goal)" fcmp "$profd_slowdown" '<' 25
	# From the job's CPU time in profd's rounds, not the wall time: on a
	# loaded host the job runs less than its wall time on every CPU.
	read -r pcpu _ < <(awk '$1 == "profd" { print $4 / 1e9 }' "$W/times" | stats)
	expect_cpu=$(awk -v c="$pcpu" 'BEGIN { printf "%.0f", c * 99 }')
	check_q "profd recorded the job: $samples samples, expected about $expect_cpu from its CPU time" \
		fcmp "$samples" '>=' "$(awk -v e="$expect_cpu" 'BEGIN { print e * 0.7 }')"
fi
bench_done
