#!/bin/bash
# The benchmark scripts in their short mode, so make bench keeps working:
# each one measures for a few seconds and checks its numbers loosely.
source "$(dirname "$0")/lib.sh"

export BENCH_OUT=$T/bench
for b in overhead selfcost size accuracy; do
	if bash "$ROOT/tests/bench/$b.sh" --quick >"$T/$b.log" 2>&1; then
		ok "bench $b --quick: $(grep -c '^ok:' "$T/$b.log") checks"
	else
		fail "bench $b --quick"
		sed 's/^/    /' "$T/$b.log" | tail -15
	fi
	grep -E '^(ok|FAIL):' "$T/$b.log" | sed 's/^/    /'
done
done_test
