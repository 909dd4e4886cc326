#!/bin/bash
# DWARF unwinding through a signal frame: a SIGPROF handler interrupts
# main -> loop and burns CPU; burn's samples must reach main through the
# handler and the kernel's rt_sigreturn frame (-fomit-frame-pointer build).
source "$(dirname "$0")/lib.sh"

start_profd --unwind dwarf
"$TP/signal_nofp" 5 >/dev/null &
PID=$!
wait $PID
profctl dump --pid $PID --since 2m >"$T/folded" || { fail "profctl dump exited $?"; done_test; }
sort -t' ' -k2 -nr "$T/folded" | head -3 | cut -c1-250
# Every burn sample counts: one whose walk stopped early (no tables yet) fails the share.
read -r n ok <<<"$(awk '/;burn( |;)/ { n += $NF; if (/;main;loop;[^;]+;handler;burn( |;)/) ok += $NF }
	END { print n + 0, ok + 0 }' "$T/folded")"
echo "burn samples: $n, through main;loop;<signal frame>;handler: $ok"
check "burn has samples (>= 100)" test "$n" -ge 100
pct=$(awk -v a="$ok" -v b="$n" 'BEGIN { printf "%.2f", b ? 100 * a / b : 0 }')
check "burn samples reaching main;loop across the signal frame: $pct% >= 90%" awk -v c="$pct" 'BEGIN { exit !(c >= 90) }'
check "profd exits 0 on SIGTERM" stop_profd
done_test
