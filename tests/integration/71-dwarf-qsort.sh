#!/bin/bash
# DWARF unwinding through libc (no frame pointers on this distribution):
# main -> loop -> qsort -> compare, where compare runs under libc's sort.
source "$(dirname "$0")/lib.sh"

start_profd
# What the walk names, not how soon a fresh profd has libc's table (70-dwarf-split
# and 76-dwarf-steps): at load 15-19 a first run's start-up samples stopped at
# the leaf for 12 % of its compare samples. A 1 s run puts the tables in first.
"$TP/qsort_nofp" 1 >/dev/null || fail "the warm-up qsort_nofp exited $?"
tables_in || echo "note: table builds still pending after 60 s"
# 4 s of CPU time (as long as the host takes to give it)
"$TP/qsort_nofp" 4 >/dev/null &
PID=$!
wait $PID
profctl dump --pid $PID --since 2m >"$T/folded" || { fail "profctl dump exited $?"; done_test; }
sort -t' ' -k2 -nr "$T/folded" | head -3 | cut -c1-300

# compare's samples; of them, those with main;loop above at least one libc frame above compare.
read -r n ok libc <<<"$(awk '
	/;compare( |;)/ { n += $NF
		if ($0 ~ /;main;loop;(qsort|msort|__libc|\[libc)[^ ]*;compare( |;)/) ok += $NF
	}
	/;qsort_r;/ { libc += $NF }
	END { print n + 0, ok + 0, libc + 0 }' "$T/folded")"
echo "compare samples: $n, with main;loop;<libc sort frames>: $ok, through qsort_r: $libc"
check "compare has samples (>= 200)" test "$n" -ge 200
pct=$(awk -v a="$ok" -v b="$n" 'BEGIN { printf "%.2f", b ? 100 * a / b : 0 }')
check "compare samples carrying main;loop above qsort's frames: $pct% >= 90%" awk -v c="$pct" 'BEGIN { exit !(c >= 90) }'
check "profd exits 0 on SIGTERM" stop_profd
done_test
