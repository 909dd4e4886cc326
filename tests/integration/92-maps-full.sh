#!/bin/bash
# Maps full: tiny kernel maps (--counts-entries 64 --stacks-entries 64) and
# 4,096 distinct stacks on 4 threads. Losses are counted and shown in status
# and in the stored windows; everything else keeps working: the kept samples
# are stored and read, and a normal load afterwards is profiled. Off-CPU is
# off so that the counters speak of on-CPU samples only.
source "$(dirname "$0")/lib.sh"

start_profd --counts-entries 64 --stacks-entries 64 --no-offcpu
"$TP/manystacks" 4 6 12
profctl flush >/dev/null
profctl status >"$T/status"
sv() { awk -v k="$1" '$1 == k { print $2 }' "$T/status"; }
grep -E '^(samples|samples_lost|stacks_lost|bpf_samples|lost_\w+|idle_samples)\b' "$T/status"

check "counts map full is counted ($(sv lost_counts_map_full))" test "$(sv lost_counts_map_full)" -gt 0
check "stacks map full is counted ($(sv stacks_dropped_map_full))" test "$(sv stacks_dropped_map_full)" -gt 0
check "samples_lost ($(sv samples_lost)) includes the counts-map losses" \
	test "$(sv samples_lost)" -ge "$(sv lost_counts_map_full)"
check "stacks_lost ($(sv stacks_lost)) includes the stacks-map losses" \
	test "$(sv stacks_lost)" -ge "$(sv stacks_dropped_map_full)"
cpu_ms=$(awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($12 + $13) * 1000 / hz }' /proc/$PROFD_PID/stat)
unacc=$(( $(sv bpf_samples) - $(sv samples) - $(sv samples_lost) - $(sv idle_samples) ))
tol=$(awk -v c="$cpu_ms" -v n="$(nproc)" 'BEGIN { printf "%.0f", c / 1000 * 99 * 1.5 + n * 99 * 1.5 + 20 }')
check "every sample kept or counted: $unacc unaccounted <= $tol" test "$unacc" -le "$tol" -a "$unacc" -ge 0

profctl dump --no-flush --since 10m --comm manystacks >"$T/ms.folded"
kept=$(awk '{ s += $NF } END { print s + 0 }' "$T/ms.folded")
check "the kept samples of manystacks are stored and read back ($kept)" test "$kept" -gt 0
lost_ls=$(profctl ls | awk -F'\t' 'NR > 1 { s += $4 } END { print s + 0 }')
check "stored windows carry the losses: profctl ls LOST sums to $lost_ls" test "$lost_ls" -gt 0
echo "info: status samples_lost $(sv samples_lost), stacks_lost $(sv stacks_lost); profctl ls LOST $lost_ls"

# Nothing else breaks: a normal load afterwards is profiled with whole
# stacks (on a busy host the 64 entries still fill, so not every sample).
"$TP/phases" 3 >/dev/null & P=$!
wait $P
profctl dump --since 1m --pid $P >"$T/after.folded"
n=$(awk '/;main;run;phase_[abc];leaf/ { s += $NF } END { print s + 0 }' "$T/after.folded")
check "after the overload, phases is profiled through main;run;phase;leaf ($n samples)" test "$n" -gt 10
check "profd exits 0 on SIGTERM" stop_profd
done_test
