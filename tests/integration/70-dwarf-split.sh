#!/bin/bash
# DWARF unwinding: a program built with -fomit-frame-pointer (main -> run ->
# mid -> phase -> leaf, 50/30/20) keeps its callers under the kernel walker;
# frame pointers lose them (checked too, so this test can tell the two apart).
source "$(dirname "$0")/lib.sh"

SECS=8
start_profd --unwind dwarf
"$TP/phases_nofp" $SECS >"$T/phases.out" &
PID=$!
wait $PID
# What the program ran is in the store once profd answers a flush after its
# exit; at load 30 one flush can outlast profctl's 10 s, and a dump whose own
# flush timed out lacks the last seconds.
caught_up || fail "profd did not answer a flush within 12 tries of 10 s"
profctl dump --no-flush --pid $PID --since "$(since_start)" >"$T/folded" || { fail "profctl dump exited $?"; done_test; }
profctl status >"$T/status"
sort -t' ' -k2 -nr "$T/folded" | head -5

total=$(awk '{ s += $NF } END { print s + 0 }' "$T/folded")
cpu_s=$(awk '{ s += $2 } END { printf "%.3f", s / 1e9 }' "$T/phases.out")
expect=$(awk -v c="$cpu_s" 'BEGIN { printf "%.0f", c * 99 }')
check "sample count $total within 15% of 99 x $cpu_s s = $expect" \
	within "$total" "$expect" "$(awk -v e="$expect" 'BEGIN { print e * 0.15 }')"

for ph in phase_a phase_b phase_c; do
	want=$(awk -v p=$ph '$1 == p { n = $2 } { s += $2 } END { printf "%.2f", 100 * n / s }' "$T/phases.out")
	got=$(awk -v p=";$ph;" 'index($0, p) { n += $NF } { s += $NF } END { printf "%.2f", s ? 100 * n / s : 0 }' "$T/folded")
	check "$ph share $got% within 5 points of measured $want%" within "$got" "$want" 5
done

main=$(awk '/;main;run;mid;phase_[abc](;| )/ { n += $NF } { s += $NF } END { printf "%.2f", s ? 100 * n / s : 0 }' "$T/folded")
check "samples carrying main;run;mid;phase: $main% >= 95%" awk -v c="$main" 'BEGIN { exit !(c >= 95) }'
check "status reports DWARF unwinding with tables loaded" \
	awk -F'\t' '$1 == "unwind" && $2 == "dwarf" { u = 1 } $1 == "unwind_table_files" && $2 > 0 { f = 1 }
		$1 == "unwind_table_bytes" && $2 > 0 { b = 1 } END { exit !(u && f && b) }' "$T/status"
grep -E '^unwind' "$T/status"
check "status: map_files open, no file refused for privilege" \
	awk -F'\t' '$1 == "unwind_map_files" && $2 == "ok" { m = 1 } $1 == "unwind_table_files_denied" && $2 == 0 { d = 1 }
		END { exit !(m && d) }' "$T/status"
check "profd exits 0 on SIGTERM" stop_profd
check "no privilege warning in profd's log" bash -c "! grep -q 'DWARF unwinding is off' '$T/profd.log'"

# A unit without CAP_CHECKPOINT_RESTORE: DWARF is off, and profd says so.
grep -q '^CapabilityBoundingSet=.*CAP_CHECKPOINT_RESTORE' "$UNIT" || fail "the unit grants CAP_CHECKPOINT_RESTORE"
sed '/^CapabilityBoundingSet=/s/ *CAP_CHECKPOINT_RESTORE//' "$UNIT" >"$T/nocr.service"
rm -rf "$STATE"
UNIT=$T/nocr.service start_profd --unwind dwarf
"$TP/phases_nofp" 1 >/dev/null
profctl status >"$T/status.nocr"
check "without CAP_CHECKPOINT_RESTORE: status says map_files denied and counts refused files" \
	awk -F'\t' '$1 == "unwind_map_files" && $2 == "denied" { m = 1 } $1 == "unwind_table_files_denied" && $2 > 0 { d = 1 }
		END { exit !(m && d) }' "$T/status.nocr"
check "without CAP_CHECKPOINT_RESTORE: profd warns that DWARF unwinding is off" \
	grep -q 'warning: DWARF unwinding is off: .*CAP_CHECKPOINT_RESTORE' "$T/profd.log"
grep -E 'unwind_map_files|unwind_table_files_denied' "$T/status.nocr"
grep 'DWARF unwinding is off' "$T/profd.log"
check "profd exits 0 on SIGTERM" stop_profd

# The same program under frame pointers: its callers are lost.
rm -rf "$STATE"
start_profd --unwind fp
"$TP/phases_nofp" 3 >/dev/null &
PID=$!
wait $PID
profctl dump --pid $PID --since "$(since_start)" >"$T/folded.fp"
fp=$(awk '/;main;run;mid;phase_[abc](;| )/ { n += $NF } { s += $NF } END { printf "%.2f", s ? 100 * n / s : 0 }' "$T/folded.fp")
check "under --unwind fp only $fp% carry main;run;mid;phase (< 50%): the DWARF result is not free" \
	awk -v c="$fp" 'BEGIN { exit !(c < 50) }'
check "profd exits 0 on SIGTERM" stop_profd
done_test
