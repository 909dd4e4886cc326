#!/bin/bash
# Absurd options: frequency 0 or 10^9, negative durations, sizes of 10^30
# bytes, unknown units, out-of-range counts. Each gets one line on stderr
# naming the option, exit 2, and profd does not start (no state dir made).
source "$(dirname "$0")/lib.sh"

# bad OPTIONS...: profd refuses them.
bad() {
	local dir=$T/s$CHECKS
	"$PROFD" --state-dir "$dir" --socket "$T/sock$CHECKS" "$@" >"$T/out" 2>"$T/err"
	local rc=$? lines
	lines=$(wc -l <"$T/err")
	if [ "$rc" -eq 2 ] && [ "$lines" -eq 1 ] && grep -q -- "${1%%=*}" "$T/err" && [ ! -e "$dir" ]; then
		ok "profd $* -> exit 2: $(cat "$T/err")"
	else
		fail "profd $* -> exit $rc, $lines lines, state dir $([ -e "$dir" ] && echo made || echo absent): $(head -2 "$T/err")"
	fi
}
# badctl ARGS...: profctl refuses them.
badctl() {
	"$PROFCTL_BIN" --state-dir "$T/none" --socket "$T/none.sock" "$@" >"$T/out" 2>"$T/err"
	local rc=$? lines
	lines=$(wc -l <"$T/err")
	if [ "$rc" -eq 2 ] && [ "$lines" -eq 1 ]; then
		ok "profctl $* -> exit 2: $(cat "$T/err")"
	else
		fail "profctl $* -> exit $rc, $lines lines: $(head -2 "$T/err")"
	fi
}

bad --frequency 0
bad --frequency 1000000000
bad --frequency -99
bad --frequency 99.5
bad --frequency 99Hz
bad --frequency ''
bad --frequency 18446744073709551716
bad --flush-interval -5s
bad --flush-interval -1
bad --flush-interval 0
bad --flush-interval 10parsecs
bad --flush-interval 99999999999999999999d
bad --drain-interval -1s
bad --retention -7d
bad --retention 3fortnights
bad --max-disk 1000000000000000000000000000000
bad --max-disk 1000000000000000000000000000000G
bad --max-disk -1G
bad --max-disk 5X
bad --max-disk 1e30
bad --max-disk 16E
bad --counts-entries 0
bad --counts-entries 1000000000000000000000000000000
bad --counts-entries -5
bad --stacks-entries 99999999999
bad --zstd-level 0
bad --zstd-level 20
bad --unwind ''
bad --log-level loud

badctl dump --since -5m
badctl dump --since 10x
badctl dump --since 99999999999999999999d
badctl dump --until 2026-13-45T99:00:00Z
badctl dump --pid -1
badctl dump --pid 99999999999999999999
badctl ls --since 3fortnights
badctl dump --format pdf
done_test
