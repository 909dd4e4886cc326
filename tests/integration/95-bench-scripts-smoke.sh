#!/bin/bash
# The benchmark scripts that 90-bench-smoke does not run (make bench runs
# them in full), each in a short mode so that a change that breaks one shows
# here and not on the day someone needs its numbers: exit 0 and the figure
# its report is for. Bounds on the numbers are smoke bounds, not goals.
source "$(dirname "$0")/lib.sh"
export BUILD

# bench NAME LOG CMD...: runs CMD with its output in LOG; ok when it exits 0.
bench() {
	local name=$1 log=$2; shift 2
	local t0=$SECONDS
	if "$@" >"$log" 2>&1; then
		ok "$name ran ($((SECONDS - t0)) s)"
	else
		fail "$name exited $? ($((SECONDS - t0)) s)"
		tail -15 "$log" | sed 's/^/    /'
	fi
}
# bench_bg NAME LOG CMD...: starts CMD in the background; bench_wait reports it.
# For the scripts that start no profd (store_bench, views_bench): they run
# beside the ones that do, whose checks are for figures present, not bounds.
declare -A BG_PID BG_T0 BG_LOG
bench_bg() {
	local name=$1 log=$2; shift 2
	"$@" >"$log" 2>&1 &
	BG_PID[$name]=$! BG_T0[$name]=$SECONDS BG_LOG[$name]=$log
}
bench_wait() {
	local name=$1 rc=0
	wait "${BG_PID[$name]}" || rc=$?
	if [ "$rc" -eq 0 ]; then
		ok "$name ran ($((SECONDS - BG_T0[$name])) s, beside the others)"
	else
		fail "$name exited $rc ($((SECONDS - BG_T0[$name])) s)"
		tail -15 "${BG_LOG[$name]}" | sed 's/^/    /'
	fi
}
# num LOG REGEX: the first number after REGEX in LOG.
num() { grep -m1 -oE "$2[^0-9]*[0-9.]+" "$1" | grep -oE '[0-9.]+$'; }

bench_bg "store_bench 1 h" "$T/store.log" bash "$ROOT/tests/bench/store_bench.sh" -H 1
bench_bg "views_bench --quick" "$T/views.log" bash "$ROOT/tests/bench/views_bench.sh" --quick

bench "offcpu_cost --quick" "$T/offcpu.log" bash "$ROOT/tests/bench/offcpu_cost.sh" --quick
grep -E '^\|' "$T/offcpu.log" | sed 's/^/    /'
# The hook table's rows have three columns: condition, run time (min-max), switches.
ns=$(awk -F'|' 'NF == 5 && $2 == " offcpu " { split($3, a, " "); print a[1]; exit }' "$T/offcpu.log")
check "offcpu_cost: hook run time per switch for the default ($ns ns) between 20 ns and 50 us" \
	awk -v n="${ns:-0}" 'BEGIN { exit !(n >= 20 && n <= 50000) }'
cap=$(awk -F'|' 'NF == 4 && $2 == " offcpu " { split($3, a, " "); print a[1] }' "$T/offcpu.log")
check "offcpu_cost: stack captures per switch-out ($cap) between 0 and 1" \
	awk -v c="${cap:-x}" 'BEGIN { exit !(c ~ /^[0-9.]+$/ && c > 0 && c <= 1) }' 

bench "execload --quick" "$T/execload.log" env BENCH_OUT="$T/execload" bash "$ROOT/tests/bench/execload.sh" --quick
grep -E '^\|' "$T/execload.log" | sed 's/^/    /'
check "execload: exec rates (busy, quiet) and BPF time per sample of profd and bpftrace measured" \
	awk -F= '$1 !~ /cpu_pct$/ && $2 + 0 > 0 { n++ } END { exit !(n == 4) }' "$T/execload/execload.env"

bench "pipe_cost --quick" "$T/pipe.log" env BENCH_OUT="$T/pipe" bash "$ROOT/tests/bench/pipe_cost.sh" --quick
grep -E '^\|' "$T/pipe.log" | sed 's/^/    /'
check "pipe_cost: round trips timed with no profd, --no-offcpu and the defaults" \
	awk -F= '$1 ~ /_us$/ && $2 + 0 > 0 { n++ } END { exit !(n == 3) }' "$T/pipe/pipe_cost.env"

bench "unwind_bench 1 s, DWARF on qsort_nofp" "$T/unwind.log" env ONLY=dwarf:qsort_nofp bash "$ROOT/tests/bench/unwind_bench.sh" 1
grep -E 'ns/sample' "$T/unwind.log" | sed 's/^/    /'
check "unwind_bench: DWARF walks of the frame-pointer-less build timed" \
	awk '$1 == "dwarf" && $2 == "qsort_nofp" && $4 > 0 && $6 > 0 { f = 1 } END { exit !f }' "$T/unwind.log"

bench "unwind_latency 2 runs" "$T/latency.log" bash "$ROOT/tests/bench/unwind_latency.sh" 2
tail -3 "$T/latency.log" | sed 's/^/    /'
check "unwind_latency: both runs reached a complete walk" \
	test "$(grep -cE 'first complete walk +[0-9.]+ ms' "$T/latency.log")" -eq 2


bench "symbolize 20 processes, 1 s drains" "$T/sym.log" env DRAIN=1s SETTLE=2 RUN1=2 bash "$ROOT/tests/bench/symbolize.sh" 20
grep -E '^\|' "$T/sym.log" | head -8 | sed 's/^/    /'
check "symbolize: cold and warm drain times" test "$(grep -cE '^\| (cold|warm) .*\| [0-9]+ ms \|' "$T/sym.log")" -eq 2


if ls /root/.pyenv/versions/3.12.*/bin/python3.12 >/dev/null 2>&1; then
	bench "python_cost 2 s, 3.12" "$T/pycost.log" env BENCH_OUT="$T/pycost" bash "$ROOT/tests/bench/python_cost.sh" 2 1 5 3.12
	grep -E '^\|' "$T/pycost.log" | sed 's/^/    /'
	check "python_cost: Python and native times per sample" \
		awk -F'|' 'NF == 9 && $2 ~ /3[.]12/ && $5 + 0 > 0 && $7 + 0 > 0 { f = 1 } END { exit !f }' "$T/pycost.log"
else
	echo "note: no pyenv CPython 3.12: python_cost not run"
fi

bench "soak 12 s" "$T/soak.log" env SOAK_SECS=12 INTERVAL=3 BENCH_OUT="$T/soak" bash "$ROOT/tests/bench/soak.sh"
tail -8 "$T/soak.log" | sed 's/^/    /'
check "soak: samples recorded in its table" \
	awk 'NR > 1 && $7 > 0 { n++ } END { exit !(n >= 3) }' "$T/soak/soak.tsv"
check "soak: a verdict for RSS, fds and map entries" test "$(grep -cE '^- (RSS_kB|open_fds|BPF_hash_map_entries): ' "$T/soak.log")" -eq 3
bench_wait "store_bench 1 h"
grep -E '^\|' "$T/store.log" | head -8 | sed 's/^/    /'
check "store_bench: bytes on disk reported" grep -qiE 'bytes|MB|KB' "$T/store.log"
bench_wait "views_bench --quick"
grep -E '^\|' "$T/views.log" | head -8 | sed 's/^/    /'
check "views_bench: timings per format" grep -qiE '^\|.*(svg|pprof|folded).*[0-9]' "$T/views.log"
done_test
