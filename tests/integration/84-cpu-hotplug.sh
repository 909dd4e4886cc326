#!/bin/bash
# CPU hotplug: a CPU that goes offline and comes back is sampled again (the
# kernel detaches per-CPU perf events on offline; profd re-opens them).
# Needs a second CPU whose online file is writable; skipped (not passed) otherwise.
source "$(dirname "$0")/lib.sh"

CPU=1
ONLINE=/sys/devices/system/cpu/cpu$CPU/online
[ -w "$ONLINE" ] && [ "$(cat "$ONLINE")" = 1 ] || skip_test "cpu$CPU cannot be taken offline here ($ONLINE)"
on_exit "echo 1 > $ONLINE"

status_val() { profctl status | awk -v k="$1" '$1 == k { print $2 }'; }
# pinned_rate DESC: runs phases on CPU for 2 s; checks its samples against 99 Hz x its CPU time.
pinned_rate() {
	taskset -c $CPU "$TP/phases" 2 >"$T/phases.out" &
	local pid=$! got cpu want
	wait $pid
	got=$(profctl dump --type cpu --pid $pid --since 2m 2>/dev/null | awk '{ s += $NF } END { print s + 0 }')
	cpu=$(awk '{ s += $2 } END { printf "%.3f", s / 1e9 }' "$T/phases.out")
	want=$(awk -v c="$cpu" 'BEGIN { printf "%.0f", c * 99 }')
	check "$1: $got samples on cpu$CPU within 15% of 99 Hz x $cpu s = $want (> 100)" \
		bash -c "[ $want -gt 100 ] && awk -v a=$got -v b=$want 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= b * 0.15 + 2) }'"
}

start_profd
n0=$(status_val cpus)
pinned_rate "before offline"

echo 0 >"$ONLINE"
sleep 1.5
n1=$(status_val cpus)
check "cpus drops while cpu$CPU is offline ($n0 -> $n1)" [ "$n1" -eq $((n0 - 1)) ]
echo 1 >"$ONLINE"
sleep 1.5
n2=$(status_val cpus)
check "cpus back to $n0 after online ($n2)" [ "$n2" -eq "$n0" ]
check "the log says the CPU is sampled again" grep -q "came back online" "$T/profd.log"
pinned_rate "after online"

# Faster than a drain interval: off and on again between two checks.
echo 0 >"$ONLINE"; echo 1 >"$ONLINE"
sleep 2.5 # two drain ticks: one notes the stopped clock, one re-opens
pinned_rate "after a quick offline/online"
check "profd exits 0 on SIGTERM" stop_profd
done_test
