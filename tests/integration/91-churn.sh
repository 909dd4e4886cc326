#!/bin/bash
# Churn: 1,000 short processes (fork + exec) and 200 short threads during a
# run beside a steady load. profd keeps up: the churned CPU time shows up as
# samples, every sample the BPF program saw is kept or counted as lost, the
# symbol caches stay bounded and profd's memory returns to its steady level.
source "$(dirname "$0")/lib.sh"

start_profd
"$TP/benchwork" 1 100000000 >/dev/null & BW=$!
on_exit "kill $BW"
sleep 4
rss0=$(awk '$1 == "VmRSS:" { print $2 }' /proc/$PROFD_PID/status)

"$TP/churn" 1000 200 5 >"$T/churn.out" & CH=$!
peak=$rss0
while kill -0 $CH 2>/dev/null; do
	r=$(awk '$1 == "VmRSS:" { print $2 }' /proc/$PROFD_PID/status)
	[ "$r" -gt "$peak" ] && peak=$r
	sleep 0.5
done
wait $CH
cat "$T/churn.out"
check "churn ran 1000 processes and 200 threads" \
	test "$(awk '$1 == "procs" { p = $2 } $1 == "threads" { t = $2 } END { print p "/" t }' "$T/churn.out")" = 1000/200
# Back to the steady load for a few drains and flushes.
sleep 6
rss1=$(awk '$1 == "VmRSS:" { print $2 }' /proc/$PROFD_PID/status)
echo "profd RSS: steady $rss0 kB, peak during churn $peak kB, after $rss1 kB"
check "RSS after churn ($rss1 kB) within 25 % or 8 MB of the steady level ($rss0 kB)" \
	awk -v a="$rss1" -v b="$rss0" 'BEGIN { exit !(a <= b * 1.25 || a <= b + 8192) }'
# The resource ceiling (issue 8): under churn profd stays below 64 MB with its default sizes.
check "peak RSS during churn ($peak kB) below 64 MB" test "$peak" -lt 65536

profctl flush >/dev/null
cpu_ms=$(awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($12 + $13) * 1000 / hz }' /proc/$PROFD_PID/stat)
profctl status >"$T/status"
sv() { awk -v k="$1" '$1 == k { print $2 }' "$T/status"; }
grep -E '^(samples|samples_lost|stacks_lost|bpf_samples|idle_samples|stacks_unresolved|symbol_pids_cached|rss_max_kb)\b' "$T/status"

# Churned CPU time -> samples: children (their own comm) and the threads.
exp=$(awk '$1 == "child_cpu_ns" || $1 == "thread_cpu_ns" { s += $2 } END { printf "%.0f", s / 1e9 * 99 }' "$T/churn.out")
profctl dump --no-flush --since 10m --comm churn >"$T/churn.folded"
got=$(awk '{ s += $NF } END { print s + 0 }' "$T/churn.folded")
check "samples of the churned processes and threads: $got, expected $exp from their CPU time (±25 %)" \
	within "$got" "$exp" "$(awk -v e="$exp" 'BEGIN { print e * 0.25 + 10 }')"
sym=$(awk '{ n += $NF } /churn_(child|thread)_spin/ { s += $NF } END { printf "%.0f", n ? 100 * s / n : 0 }' "$T/churn.folded")
echo "info: $sym % of churn samples carry churn_child_spin or churn_thread_spin (symbolized)"

# Every sample the program saw is kept, lost (counted) or idle; what is left
# is profd's own samples (not recorded) and the ones since the last drain.
unacc=$(( $(sv bpf_samples) - $(sv samples) - $(sv samples_lost) - $(sv idle_samples) ))
tol=$(awk -v c="$cpu_ms" -v n="$(nproc)" 'BEGIN { printf "%.0f", c / 1000 * 99 * 1.5 + n * 99 * 1.5 + 20 }')
check "samples neither kept nor counted as lost: $unacc <= $tol (profd's own CPU ${cpu_ms} ms and the last second)" \
	test "$unacc" -le "$tol" -a "$unacc" -ge 0
check "pid cache bounded: $(sv symbol_pids_cached) <= 1024" test "$(sv symbol_pids_cached)" -le 1024
# Memory by part (profctl status): the symbol cache stays within its byte bound (--symbol-cache, 24M).
grep -E '^(rss_kb|symbol_cache_bytes|symbol_pids_bytes|window_bytes|heap_used_bytes|heap_free_bytes|unwind_table_bytes)\b' "$T/status"
check "symbol cache bounded: $(sv symbol_cache_bytes) <= 24 MiB" test "$(sv symbol_cache_bytes)" -le $((24 << 20))
check "profd exits 0 on SIGTERM" stop_profd
done_test
