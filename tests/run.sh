#!/bin/bash
# Runs the test tiers and ends with "N passed, N failed"; exits 1 when any failed.
# Unit tests: build/tests/test_* (no root). Integration: tests/integration/NN-*.sh
# (root, real kernel), each sourcing tests/integration/lib.sh.
set -u
cd "$(dirname "$0")/.."
export BUILD=${BUILD:-build}
tier=${1:-all}
only=${TESTS:-}
passed=0 failed=0 skipped=0 failed_names=()

# The tests call python3 about 40 times for small jobs (JSON, sockets,
# ctypes). Through pyenv's shim (bash scripts that pick the version) a call
# took 0.52 s of CPU and 2.7 s at load 10; the interpreter it picks, called
# directly, 0.09 s and 0.47 s. So the tests find that same interpreter first
# in PATH, resolved once here. Tests that mean the shim name its path.
if py=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) && [ -x "$py" ]; then
	mkdir -p "$BUILD/test-bin" && ln -sfn "$py" "$BUILD/test-bin/python3" &&
		export PATH="$(cd "$BUILD/test-bin" && pwd):$PATH"
fi

# report NAME RC SECS LOG: one line per test, and the counts.
report() {
	local name=$1 rc=$2 secs=$3 log=$4
	if [ "$rc" -eq 0 ]; then
		passed=$((passed + 1)); printf 'PASS %-50s %3ds\n' "$name" "$secs"
	elif [ "$rc" -eq 77 ]; then
		# exit 77 (automake's convention): the machine cannot run this test; never counted as passed.
		skipped=$((skipped + 1)); printf 'SKIP %-50s %3ds: %s\n' "$name" "$secs" "$(tail -n 1 "$log")"
	else
		failed=$((failed + 1)); failed_names+=("$name")
		printf 'FAIL %-50s %3ds (log: %s)\n' "$name" "$secs" "$log"
		tail -n 25 "$log" | sed 's/^/    /'
	fi
}

run_one() {
	local name=$1; shift
	local log=$BUILD/test-logs/$(basename "$name").log t0=$SECONDS
	mkdir -p "$BUILD/test-logs"
	"$@" >"$log" 2>&1
	report "$name" $? $((SECONDS - t0)) "$log"
}

# Unit tests check no timing: they run UNIT_JOBS at a time (one per CPU,
# at most 4), reported in name order once all are done.
if [ "$tier" = all ] || [ "$tier" = unit ]; then
	jobs_max=${UNIT_JOBS:-$(nproc 2>/dev/null || echo 1)}
	[ "$jobs_max" -ge 1 ] 2>/dev/null || jobs_max=1
	[ "$jobs_max" -gt 4 ] && jobs_max=4
	mkdir -p "$BUILD/test-logs"
	units=()
	for t in "$BUILD"/tests/test_*; do
		[ -x "$t" ] || continue
		[ -n "$only" ] && [[ "$t" != *$only* ]] && continue
		units+=("$t")
		log=$BUILD/test-logs/$(basename "$t").log
		rm -f "$log.rc"
		while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n; done
		( t0=$SECONDS; "$t" >"$log" 2>&1; echo "$? $((SECONDS - t0))" >"$log.rc" ) &
	done
	wait
	for t in "${units[@]}"; do
		log=$BUILD/test-logs/$(basename "$t").log
		read -r rc secs <"$log.rc" 2>/dev/null || { rc=1 secs=0; }
		rm -f "$log.rc"
		report "unit/$(basename "$t")" "$rc" "$secs" "$log"
	done
fi

# Short fuzz runs (tests/fuzz/run.sh; `make fuzz` runs them long).
if [ "$tier" = all ] || [ "$tier" = unit ]; then
	if [ -x tests/fuzz/run.sh ] && { [ -z "$only" ] || [[ fuzz == *$only* ]]; }; then
		run_one "fuzz/short" tests/fuzz/run.sh
	fi
fi

if [ "$tier" = all ] || [ "$tier" = integration ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "integration tests need root (perf_event_open, BPF); run 'sudo make test'" >&2
		failed=$((failed + 1)); failed_names+=("integration (not root)")
	else
		for t in tests/integration/[0-9]*.sh; do
			[ -f "$t" ] || continue
			[ -n "$only" ] && [[ "$t" != *$only* ]] && continue
			run_one "integration/$(basename "$t" .sh)" timeout -k 10 600 bash "$t"
		done
	fi
fi

echo
[ ${#failed_names[@]} -gt 0 ] && printf 'failed: %s\n' "${failed_names[@]}"
echo "$passed passed, $failed failed$([ "$skipped" -gt 0 ] && echo ", $skipped skipped")"
[ "$failed" -eq 0 ]
