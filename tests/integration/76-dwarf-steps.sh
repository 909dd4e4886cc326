#!/bin/bash
# Large unwind tables go into the kernel in bounded steps (65,536 rows
# each, a few a turn) and are walked once written: a clang -O2 -c maps
# libz3, libclang-cpp and libLLVM (2.3 million rows, 400 k to 1 M each).
# Its samples carry their callers far deeper under the DWARF walker than
# under frame pointers (checked too, so the test can tell the two apart),
# which they would not if a table written in steps were cut or shifted.
source "$(dirname "$0")/lib.sh"

command -v clang >/dev/null || skip_test "clang is not installed"
# A translation unit clang -O2 takes some seconds of CPU over: the tables'
# builds and writes (a second or more under load) are a small part of it.
for f in $(seq 900); do
	echo "int f$f(int *a, int n) { int s = 0; for (int i = 0; i < n; i++) s += a[i] * $f ^ (s >> 3); return s; }"
done >"$T/big.c"

# Samples of the folded profile with at least 10 frames, and all: "deep all".
deep() {
	awk '{ c = $NF; $NF = ""; n = gsub(/;/, ";"); s += c; if (n >= 10) d += c } END { print d + 0, s + 0 }' "$1"
}

# Room for all three (the default 16 MB holds 2 M rows): this is about steps, not the budget.
start_profd --unwind dwarf --unwind-memory 64M
clang -O2 -c -o "$T/big.o" "$T/big.c" &
PID=$!
wait $PID || fail "clang exited $?"
caught_up || fail "profd did not answer a flush within 12 tries of 10 s"
profctl dump --no-flush --pid $PID --since "$(since_start)" >"$T/folded" || { fail "profctl dump exited $?"; done_test; }
profctl status >"$T/status"
grep -E '^unwind_(table_rows|table_files|rows_steps|turn)' "$T/status"
sv() { awk -F'\t' -v k="$1" '$1 == k { print $2 }' "$T/status"; }
rows=$(sv unwind_table_rows) steps=$(sv unwind_rows_steps)
check "a table larger than a step was written: $rows rows in the kernel (> 400000)" test "${rows:-0}" -gt 400000
check "no step wrote more than 65536 rows: $steps steps for $rows rows" \
	awk -v r="$rows" -v s="$steps" 'BEGIN { exit !(s >= r / 65536) }'
read -r d n < <(deep "$T/folded")
check "clang's samples under DWARF with 10 frames or more: $d of $n (>= 30%, >= 100 samples)" \
	share_ok "$d" "$n" 100 0.3
check "profd exits 0 on SIGTERM" stop_profd

# The same compile under frame pointers: its callers are lost.
rm -rf "$STATE"
start_profd --unwind fp
clang -O2 -c -o "$T/big.o" "$T/big.c" &
PID=$!
wait $PID
caught_up || fail "profd did not answer a flush within 12 tries of 10 s"
profctl dump --no-flush --pid $PID --since "$(since_start)" >"$T/folded.fp" || fail "profctl dump exited $?"
read -r d_fp n_fp < <(deep "$T/folded.fp")
check "under --unwind fp only $d_fp of $n_fp samples have 10 frames (< 10%): the DWARF result is not free" \
	awk -v d="$d_fp" -v n="$n_fp" 'BEGIN { exit !(n >= 100 && d < 0.1 * n) }'
check "profd exits 0 on SIGTERM" stop_profd
done_test
