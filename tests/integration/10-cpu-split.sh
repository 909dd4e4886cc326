#!/bin/bash
# Foundation: a program with a known 50/30/20 CPU split through main -> run ->
# phase -> leaf, profiled by profd on the real kernel with frame pointers.
source "$(dirname "$0")/lib.sh"

SECS=8
start_profd
"$TP/phases" $SECS >"$T/phases.out" &
PID=$!
wait $PID
# What the program ran is in the store once profd answers a flush after its
# exit; at load 30 one flush can outlast profctl's 10 s, and a dump whose own
# flush timed out lacks the last seconds.
caught_up || fail "profd did not answer a flush within 12 tries of 10 s"
profctl dump --no-flush --pid $PID --since "$(since_start)" >"$T/folded" || { fail "profctl dump exited $?"; done_test; }
head -5 "$T/folded"

total=$(awk '{ s += $NF } END { print s + 0 }' "$T/folded")
echo "samples for pid $PID: $total"
cpu_s=$(awk '{ s += $2 } END { printf "%.3f", s / 1e9 }' "$T/phases.out")
expect=$(awk -v c="$cpu_s" 'BEGIN { printf "%.0f", c * 99 }')
check "sample count $total within 15% of 99 x $cpu_s s = $expect" \
	within "$total" "$expect" "$(awk -v e="$expect" 'BEGIN { print e * 0.15 }')"

for ph in phase_a phase_b phase_c; do
	want=$(awk -v p=$ph '$1 == p { n = $2 } { s += $2 } END { printf "%.2f", 100 * n / s }' "$T/phases.out")
	got=$(awk -v p=";$ph;" 'index($0, p) { n += $NF } { s += $NF } END { printf "%.2f", s ? 100 * n / s : 0 }' "$T/folded")
	check "$ph share $got% within 5 points of measured $want%" within "$got" "$want" 5
done

# A phase calls leaf() and, after each call, thread_ns() (clock_gettime, a
# real system call for a thread clock: 2-6 % of the samples on a VM).
chain=$(awk '/;main;run;phase_[abc];(leaf|thread_ns)( |;)/ { n += $NF } { s += $NF } END { printf "%.2f", s ? 100 * n / s : 0 }' "$T/folded")
check "samples carrying main;run;phase;leaf or main;run;phase;thread_ns: $chain% >= 95%" awk -v c="$chain" 'BEGIN { exit !(c >= 95) }'
# The pid is bash's between fork and exec: a few samples may carry its name.
named=$(awk '/^phases;/ { n += $NF } { s += $NF } END { printf "%.2f", s ? 100 * n / s : 0 }' "$T/folded")
check "samples under the process name 'phases': $named% >= 99%" awk -v c="$named" 'BEGIN { exit !(c >= 99) }'
grep -v '^phases;' "$T/folded" | head -3

check "profd exits 0 on SIGTERM" stop_profd
done_test
