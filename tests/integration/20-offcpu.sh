#!/bin/bash
# Off-CPU, run-queue and wall-clock profiles from sched_switch on the real
# kernel: threads that sleep, wait on a pipe, wait on a join (a block that
# spans several drains), and four busy threads sharing one CPU.
source "$(dirname "$0")/lib.sh"

SECS=3
# Every wait is timed (--offcpu-min 0): on this VM a same-CPU pipe round trip
# takes about 2 us, so most of the ping-pong's waits are under the default
# 1 us minimum, which drops them by design (offcpu_below_minimum).
start_profd --offcpu-min 0

# per_thread TYPE PID: "<thread> <value>" per thread name, values summed.
per_thread() {
	profctl dump --pid "$2" --since "$(since_start)" --type "$1" --threads --no-flush |
		awk '{ n = split($1, a, ";"); s[a[2]] += $NF } END { for (k in s) print k, s[k] }'
}
# ratio GOT WANT: GOT / WANT, 4 decimals
ratio() { awk -v g="$1" -v w="$2" 'BEGIN { printf "%.4f", w ? g / w : 0 }'; }
between() { awk -v x="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(x >= lo && x <= hi) }'; }
# wall_us NAME FILE: the thread's own measurement, ns -> us
wall_us() { awk -v n="$1" '$1 == n { printf "%.0f", $2 / 1000 }' "$2"; }

"$TP/offcpu_threads" block $SECS >"$T/block.out" &
BPID=$!
wait $BPID || fail "offcpu_threads block exited $?"
"$TP/offcpu_threads" busy $((SECS + 1)) >"$T/busy.out" 2>"$T/busy.err" &
UPID=$!
wait $UPID || fail "offcpu_threads busy exited $?"
cat "$T/busy.err"

profctl flush >/dev/null || fail "profctl flush exited $?"
for p in $BPID $UPID; do
	for t in offcpu runq wall; do
		per_thread $t $p >"$T/$t.$p" || fail "dump --type $t for pid $p exited $?"
	done
	profctl dump --pid $p --since "$(since_start)" --type offcpu --threads --no-flush >"$T/offcpu-stacks.$p"
done

# Blocked time where each thread blocked, against the thread's wall time.
for pair in sleeper:block_in_nanosleep piper:block_in_pipe_read; do
	th=${pair%%:*} fn=${pair#*:}
	want=$(wall_us $th "$T/block.out")
	got=$(awk -v t=";$th;" -v f=";$fn;" 'index($0, t) && index($0, f) { s += $NF } END { print s + 0 }' \
		"$T/offcpu-stacks.$BPID")
	r=$(ratio "$got" "$want")
	check "$th: off-CPU in $fn ${got} us = $r x its wall time ${want} us (0.90..1.10)" between "$r" 0.90 1.10
done
grep -E ';(sleeper|piper);' "$T/offcpu-stacks.$BPID" | sort -t' ' -k2 -nr | head -2

# The main thread waits in pthread_join across several generation flips: the
# whole wait still arrives, and with its stack.
comm=offcpu_threads
want=$(wall_us main "$T/block.out")
got=$(awk -v t="^$comm;$comm;" '$0 ~ t && /futex/ { s += $NF } END { print s + 0 }' "$T/offcpu-stacks.$BPID")
r=$(ratio "$got" "$want")
check "main thread: off-CPU under a futex stack $got us = $r x wall $want us (0.90..1.10)" between "$r" 0.90 1.10

# Four busy threads on one CPU: each waits for it at least about 3/4 of the
# time (more when other load shares that CPU), and as long as the kernel's
# own run-queue account (schedstat run_delay) says.
for i in 0 1 2 3; do
	want=$(wall_us busy$i "$T/busy.out")
	kern=$(awk -v n=busy$i '$1 == n { printf "%.0f", $3 / 1000 }' "$T/busy.out")
	got=$(awk -v n=busy$i '$1 == n { print $2 }' "$T/runq.$UPID")
	r=$(ratio "${got:-0}" "$want")
	check "busy$i: run-queue wait ${got:-0} us = $r x wall $want us (>= 0.6375)" between "$r" 0.6375 1.0
	if [ "${kern:-0}" -gt 0 ]; then
		r=$(ratio "${got:-0}" "$kern")
		check "busy$i: run-queue wait = $r x the kernel's schedstat run_delay $kern us (0.85..1.15)" \
			between "$r" 0.85 1.15
	else
		fail "busy$i: no schedstat run_delay to compare with (CONFIG_SCHED_INFO?)"
	fi
done

# runq_frames PID: "<run-queue us> <us under a stack with a user frame>
# <us under the busy function>"
runq_frames() {
	profctl dump --pid "$1" --since "$(since_start)" --type runq --threads --no-flush | awk '{
		n = split($1, a, ";"); u = 0; b = 0
		for (i = 3; i <= n; i++) { if (a[i] !~ /_\[k\]$/) u = 1; if (a[i] == "busy") b = 1 }
		s += $NF; su += u * $NF; sb += b * $NF } END { print s + 0, su + 0, sb + 0 }'
}
# Run-queue waits keep kernel frames only by default (--runqueue-stack entry).
read -r rq rqu _ < <(runq_frames $UPID)
check "busy: run-queue waits ${rq} us with kernel frames only (${rqu} us under a user frame)" \
	test "$rq" -gt 0 -a "$rqu" -eq 0
# ... and of those its kernel entry only: one frame, never the scheduler.
read -r rqn rqmax rqsched < <(profctl dump --pid $UPID --since "$(since_start)" --type runq --threads \
	--no-flush | awk '{ n = split($1, a, ";"); if (n - 2 > m) m = n - 2; if (a[n] ~ /^__schedule/) s++; c++ }
	END { print c + 0, m + 0, s + 0 }')
check "busy: ${rqn} run-queue stacks by kernel entry: at most ${rqmax} frame, ${rqsched} end in __schedule" \
	test "$rqn" -gt 0 -a "$rqmax" -eq 1 -a "$rqsched" -eq 0

# Wall: on-CPU samples x period + blocked + waiting adds up to each thread's life.
for p in $BPID $UPID; do
	out=$T/block.out
	[ $p = $UPID ] && out=$T/busy.out
	while read -r th ns; do
		name=$th
		[ "$th" = main ] && name=$comm
		want=$(awk -v n="$ns" 'BEGIN { printf "%.0f", n / 1000 }')
		got=$(awk -v n="$name" '$1 == n { print $2 }' "$T/wall.$p")
		r=$(ratio "${got:-0}" "$want")
		check "wall --threads: $name ${got:-0} us = $r x elapsed $want us (0.90..1.10)" between "$r" 0.90 1.10
	done <"$out"
done

# A context-switch-heavy pair under the default stack reuse: every block is
# still timed, and the time lands on the pipe-read stack it was reused from.
"$TP/pingpong" 2 same >"$T/pp.out" &
PPID_=$!
wait $PPID_ || fail "pingpong exited $?"
elapsed=$(awk '$1 == "seconds" { printf "%.0f", $2 * 1e6 }' "$T/pp.out")
profctl dump --pid $PPID_ --since "$(since_start)" --type wall >"$T/pp.wall" || fail "dump wall for pingpong exited $?"
got=$(awk '{ s += $NF } END { print s + 0 }' "$T/pp.wall")
r=$(ratio "$got" "$((2 * elapsed))")
check "pingpong: wall of both threads $got us = $r x 2 x elapsed $elapsed us (0.90..1.10)" between "$r" 0.90 1.10
off=$(profctl dump --pid $PPID_ --since "$(since_start)" --type offcpu --no-flush | awk '{ s += $NF } END { print s + 0 }')
inpipe=$(profctl dump --pid $PPID_ --since "$(since_start)" --type offcpu --no-flush | awk '/pipe_read/ { s += $NF } END { print s + 0 }')
r=$(ratio "$inpipe" "$off")
check "pingpong: $r of off-CPU time $off us under a pipe_read stack (>= 0.95)" between "$r" 0.95 1.0
w=$(profctl status | awk '$1 == "offcpu_sampled_windows" { print $2 }')
check "pingpong: its CPU switched fast enough to sample by default, in ${w:-0} rate windows (> 0)" test "${w:-0}" -gt 0

# Threads that switch rarely stay exact on a CPU that samples: the sleeper
# and the piper blocked beside a ping-pong on one CPU keep their off-CPU
# time (sampled 1 in 8, 150-300 waits each spread it by 15-20 %; 1 in up to 16 more).
CPU=$(($(nproc) - 1))
taskset -c $CPU "$TP/pingpong" 4 same >"$T/pp2.out" &
PP2=$!
taskset -c $CPU "$TP/offcpu_threads" block $SECS >"$T/block2.out" &
B2=$!
wait $B2 || fail "offcpu_threads block beside pingpong exited $?"
wait $PP2 || fail "pingpong beside offcpu_threads exited $?"
profctl dump --pid $B2 --since "$(since_start)" --type offcpu --threads >"$T/offcpu-stacks.$B2"
for pair in sleeper:block_in_nanosleep piper:block_in_pipe_read; do
	th=${pair%%:*} fn=${pair#*:}
	want=$(wall_us $th "$T/block2.out")
	got=$(awk -v t=";$th;" -v f=";$fn;" 'index($0, t) && index($0, f) { s += $NF } END { print s + 0 }' \
		"$T/offcpu-stacks.$B2")
	r=$(ratio "$got" "$want")
	check "$th beside a sampled ping-pong: off-CPU in $fn ${got} us = $r x its wall ${want} us (0.95..1.05)" \
		between "$r" 0.95 1.05
done
elapsed=$(awk '$1 == "seconds" { printf "%.0f", $2 * 1e6 }' "$T/pp2.out")
got=$(profctl dump --pid $PP2 --since "$(since_start)" --type wall --no-flush | awk '{ s += $NF } END { print s + 0 }')
r=$(ratio "$got" "$((2 * elapsed))")
check "pingpong beside them: wall of both threads $got us = $r x 2 x elapsed $elapsed us (0.90..1.10)" \
	between "$r" 0.90 1.10

# Stack reuse must not merge two call paths that block at one pc and sp
# (path_a and path_b share wait_here, 40 waits of 200 us each in turn): each
# path keeps its share of the blocked time, however long the run is.
"$TP/offcpu_threads" alt 3 >"$T/alt.out" &
ALT=$!
wait $ALT || fail "offcpu_threads alt exited $?"
profctl dump --pid $ALT --since "$(since_start)" --type offcpu >"$T/alt.folded" || fail "dump offcpu for alt exited $?"
pa=$(awk '/;path_a;wait_here;/ { s += $NF } END { print s + 0 }' "$T/alt.folded")
pb=$(awk '/;path_b;wait_here;/ { s += $NF } END { print s + 0 }' "$T/alt.folded")
wa=$(awk '$1 == "path_a" { printf "%.0f", $2 / 1000 }' "$T/alt.out")
wb=$(awk '$1 == "path_b" { printf "%.0f", $2 / 1000 }' "$T/alt.out")
r=$(awk -v a="$pa" -v b="$pb" -v wa="$wa" -v wb="$wb" 'BEGIN { printf "%.4f", (b && wa) ? (a / b) / (wa / wb) : 0 }')
check "alt: path_a/path_b off-CPU $pa/$pb us against their time $wa/$wb us: $r (0.90..1.10)" between "$r" 0.90 1.10
r=$(ratio "$((pa + pb))" "$((wa + wb))")
check "alt: both paths' off-CPU $((pa + pb)) us = $r x the time inside them (0.80..1.05)" between "$r" 0.80 1.05

st=$(profctl status)
check "status reports off-CPU on" grep -qP '^offcpu\s+on$' <<<"$st"
check "status: no off-CPU task state lost" grep -qP '^lost_offcpu_no_task_state\s+0$' <<<"$st"
check "status: no off-CPU wait lost for want of its stacks" grep -qP '^lost_offcpu_not_captured\s+0$' <<<"$st"
check "profd exits 0 on SIGTERM" stop_profd

# In-kernel selection: a process named by --offcpu-pids and one started in a
# cgroup named by --offcpu-cgroups get off-CPU time; another one gets none
# (four busy threads sharing a CPU: their on-CPU samples still arrive).
rm -rf "$STATE"
CG2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
CG=profd-test-$$
mkdir "$CG2/$CG" || fail "cannot create cgroup $CG2/$CG"
on_exit "rmdir '$CG2/$CG'"
# The selected process is named at start, and starts blocking once profd
# runs: a loaded host may take seconds to load the BPF programs.
mkfifo "$T/go"
( read -r _ <"$T/go"; exec "$TP/offcpu_threads" block 4 >/dev/null ) &
SEL=$!
start_profd --offcpu-pids $SEL --offcpu-cgroups "/$CG"
echo go >"$T/go"
(echo $BASHPID >"$CG2/$CG/cgroup.procs" && exec "$TP/offcpu_threads" block 1 >/dev/null) &
INCG=$!
"$TP/offcpu_threads" busy 1 >/dev/null 2>&1 &
OTHER=$!
wait $INCG $OTHER $SEL
profctl flush >/dev/null
off() { profctl dump --pid "$1" --since "$(since_start)" --type "$2" --no-flush | awk '{ s += $NF } END { print s + 0 }'; }
check "--offcpu-pids: the selected process has off-CPU time ($(off $SEL offcpu) us)" test "$(off $SEL offcpu)" -gt 0
check "--offcpu-cgroups: the process in /$CG has off-CPU time ($(off $INCG offcpu) us)" test "$(off $INCG offcpu)" -gt 0
check "selection: an unselected process has no off-CPU or run-queue time ($(off $OTHER offcpu) / $(off $OTHER runq) us) but on-CPU samples ($(off $OTHER cpu))" \
	test "$(off $OTHER offcpu)" -eq 0 -a "$(off $OTHER runq)" -eq 0 -a "$(off $OTHER cpu)" -gt 0
check "profd exits 0 on SIGTERM" stop_profd

# --offcpu-max-rate: the ping-pong's CPU switches far more often than 1,000
# times a second, so its switch-outs are sampled (1 in up to 16) and weighted:
# the wall still adds up (loose bounds: a few long waits on a loaded CPU
# weigh up to 16 times; unweighted it would be a sixteenth).
rm -rf "$STATE"
start_profd --offcpu-min 0 --offcpu-max-rate 1000
"$TP/pingpong" 2 same >"$T/pps.out" &
PPS=$!
wait $PPS || fail "pingpong exited $?"
elapsed=$(awk '$1 == "seconds" { printf "%.0f", $2 * 1e6 }' "$T/pps.out")
got=$(profctl dump --pid $PPS --since "$(since_start)" --type wall | awk '{ s += $NF } END { print s + 0 }')
r=$(ratio "$got" "$((2 * elapsed))")
check "--offcpu-max-rate 1000: pingpong wall $got us = $r x 2 x elapsed $elapsed us (0.75..1.25)" between "$r" 0.75 1.25
w=$(profctl status | awk '$1 == "offcpu_sampled_windows" { print $2 }')
check "--offcpu-max-rate 1000: switch-outs sampled in ${w:-0} rate windows (> 0)" test "${w:-0}" -gt 0
check "profd exits 0 on SIGTERM" stop_profd

# --runqueue-stack user: run-queue waits carry the preempted user stack, so
# the busy threads' waits land under their busy function; the wall still adds up.
rm -rf "$STATE"
start_profd --offcpu-min 0 --runqueue-stack user
"$TP/offcpu_threads" busy 2 >"$T/busyu.out" 2>/dev/null &
UU=$!
wait $UU || fail "offcpu_threads busy exited $?"
profctl flush >/dev/null || fail "profctl flush exited $?"
read -r rq rqu rqb < <(runq_frames $UU)
r=$(ratio "$rqb" "$rq")
check "--runqueue-stack user: $r of run-queue time ${rq} us under the busy function (>= 0.90)" \
	between "$r" 0.90 1.0
per_thread wall $UU >"$T/wallu"
while read -r th ns _; do
	got=$(awk -v n="$th" '$1 == n { print $2 }' "$T/wallu")
	r=$(ratio "${got:-0}" "$(awk -v n="$ns" 'BEGIN { printf "%.0f", n / 1000 }')")
	check "--runqueue-stack user: wall of $th = $r x elapsed (0.90..1.10)" between "$r" 0.90 1.10
done < <(grep '^busy' "$T/busyu.out")
check "profd exits 0 on SIGTERM" stop_profd

# --no-offcpu: the hook is not attached and no off-CPU time is recorded.
rm -rf "$STATE"
start_profd --no-offcpu
"$TP/offcpu_threads" block 1 >/dev/null
st=$(profctl status)
check "--no-offcpu: status reports off-CPU off" grep -qP '^offcpu\s+off$' <<<"$st"
n=$(profctl dump --since "$(since_start)" --type wall | wc -l)
m=$(profctl dump --since "$(since_start)" --type offcpu --no-flush | wc -l)
check "--no-offcpu: no off-CPU stacks ($m), while on-CPU still works ($n wall lines)" \
	test "$m" -eq 0 -a "$n" -gt 0
check "profd exits 0 on SIGTERM" stop_profd
done_test
