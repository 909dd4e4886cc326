#!/bin/bash
# --since/--until on a synthetic store with windows at known times (written
# by build/tests/test_views --write-store): 1, 10 and 100 samples in
# [T0, T0+10s), [T0+10s, T0+20s), [T0+40s, T0+50s), T0 = 2026-01-01T00:00:00Z.
# Window boundaries, gaps, ranges before the first window and in the future,
# empty and reversed ranges, every timestamp syntax; top, ls and diff on it.
source "$(dirname "$0")/lib.sh"

"$BUILD/tests/test_views" --write-store "$STATE" || { fail "writing the synthetic store"; done_test; }
at() { date -u -d "@$((1767225600 + $1))" +%Y-%m-%dT%H:%M:%SZ; }
local_at() { date -d "@$((1767225600 + $1))" '+%Y-%m-%d %H:%M:%S'; }

# total SINCE UNTIL: the samples dump reads for [SINCE, UNTIL)
total() { profctl dump --no-flush --since "$1" --until "$2" 2>"$T/err" | awk '{ s += $NF } END { print s + 0 }'; }
expect_total() { # DESCRIPTION SINCE UNTIL WANT
	local got; got=$(total "$2" "$3")
	if [ "$got" = "$4" ]; then ok "$1: $got samples"; else fail "$1: $got samples, want $4 ($(cat "$T/err"))"; fi
}
expect_total "all windows" "$(at 0)" "$(at 3600)" 111
expect_total "until = a window's start excludes it" "$(at 0)" "$(at 10)" 1
expect_total "since = a window's end excludes it" "$(at 10)" "$(at 20)" 10
expect_total "a range inside one window reads it" "$(at 12)" "$(at 13)" 10
expect_total "a range across a boundary reads both" "$(at 9)" "$(at 11)" 11
expect_total "one nanosecond before the end still reads it" "$(at 19)" "$(at 20)" 10
expect_total "RFC 3339 with an offset" "2026-01-01T01:00:40+01:00" "2026-01-01T01:00:50+01:00" 100
expect_total "local time 'YYYY-MM-DD HH:MM:SS'" "$(local_at 10)" "$(local_at 50)" 110
TZ=UTC0 expect_total "local time with TZ=UTC, minutes only" "2026-01-01 00:00" "2026-01-01 00:01" 111

# expect_err RC PATTERN CMD...: exit code, one stderr line matching PATTERN, nothing on stdout.
expect_err() {
	local rc want=$1 pat=$2; shift 2
	"$@" >"$T/out" 2>"$T/err"; rc=$?
	if [ "$rc" -eq "$want" ] && [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q -- "$pat" "$T/err" && [ ! -s "$T/out" ]; then
		ok "exit $rc: $(cat "$T/err")"
	else
		fail "$* -> exit $rc (want $want, /$pat/): $(head -3 "$T/err")"
	fi
}
span="stored windows span $(local_at 0) to $(local_at 50)"
expect_err 1 "$span" profctl dump --no-flush --since "$(at 20)" --until "$(at 40)"
expect_err 1 "$span" profctl dump --no-flush --since "$(at -3600)" --until "$(at 0)"
expect_err 1 "$span" profctl dump --no-flush --since 2099-01-01T00:00:00Z --until 2099-01-02T00:00:00Z
expect_err 1 "$span" profctl dump --no-flush --since "$(at 0)" --until "$(at 60)" --comm nosuchprocess
expect_err 1 "$span" profctl top --no-flush --since "$(at 20)" --until "$(at 40)"
expect_err 2 "in the future" profctl dump --no-flush --since 2099-01-01T00:00:00Z
expect_err 2 "must be later" profctl dump --no-flush --since "$(at 10)" --until "$(at 10)"
expect_err 2 "must be later" profctl dump --no-flush --since "$(at 20)" --until "$(at 10)"
expect_err 2 "invalid --until" profctl dump --no-flush --until 2026-13-01T00:00:00Z
expect_err 2 "missing --base-since" profctl diff --no-flush --since "$(at 0)"
expect_err 2 "unknown --format" profctl dump --no-flush --format png
expect_err 1 "in the base window" profctl diff --no-flush --base-since "$(at 20)" --base-until "$(at 40)" --since "$(at 0)" --until "$(at 60)"
# An empty store says so, naming no range.
mkdir -p "$T/empty" && chmod 700 "$T/empty"
expect_err 1 "nothing is stored yet" "$PROFCTL_BIN" --state-dir "$T/empty" --socket "$SOCK" dump --no-flush

# ls: windows overlapping the range, on a pipe one tab-separated row each.
n=$(profctl ls --since "$(at 5)" --until "$(at 15)" | tail -n +2 | wc -l)
check "ls lists the 2 windows overlapping [T0+5s, T0+15s): $n" [ "$n" -eq 2 ]
check "ls on a pipe: tab-separated, samples column" \
	[ "$(profctl ls | awk -F'\t' 'NR > 1 { s += $3 } END { print s }')" = 111 ]

# top: self and total shares of the synthetic stacks main;w1|w2|w3.
profctl top --no-flush --since "$(at 0)" --until "$(at 60)" >"$T/top"
cat "$T/top"
check "top: w3 first with 100 self samples, 90.09%" \
	awk -F'\t' 'NR == 2 && $1 == 100 && $2 == "90.09%" && $5 == "w3" { ok = 1 } END { exit !ok }' "$T/top"
check "top: main has no self and 100% total" \
	awk -F'\t' '$5 == "main" && $1 == 0 && $3 == 111 && $4 == "100.00%" { ok = 1 } END { exit !ok }' "$T/top"
check "top --limit 1 prints one row" [ "$(profctl top --no-flush --since "$(at 0)" --until "$(at 60)" --limit 1 | wc -l)" -eq 2 ]
check "top --sort total puts main first" \
	[ "$(profctl top --no-flush --since "$(at 0)" --until "$(at 60)" --sort total | awk -F'\t' 'NR == 2 { print $5 }')" = main ]
# On a terminal the columns are padded and aligned instead.
script -qec "$PROFCTL_BIN --state-dir $STATE top --no-flush --since $(at 0) --until $(at 60)" /dev/null | tr -d '\r' >"$T/tty"
check "top on a terminal: aligned columns, no tabs" \
	awk '/\t/ { bad = 1 } NR > 1 && NF == 5 { w[length($0) - length($5)]++ } END { exit bad || length(w) != 1 }' "$T/tty"

# diff: before = w1 + w2 (11 samples), after = w3 (100): before scaled to 100.
profctl diff --no-flush --base-since "$(at 0)" --base-until "$(at 20)" --since "$(at 40)" --until "$(at 50)" >"$T/diff"
cat "$T/diff"
check "diff: both columns total 100" awk '{ b += $(NF-1); a += $NF } END { exit !(b == 100 && a == 100) }' "$T/diff"
check "diff: main;w2 scaled 10 -> 91, main;w1 1 -> 9, main;w3 0 -> 100" \
	awk '$1 == "app;main;w2" && $2 == 91 && $3 == 0 { n++ } $1 == "app;main;w1" && $2 == 9 && $3 == 0 { n++ }
	     $1 == "app;main;w3" && $2 == 0 && $3 == 100 { n++ } END { exit n != 3 }' "$T/diff"
profctl diff --no-flush --base-since "$(at 0)" --base-until "$(at 20)" --since "$(at 40)" --until "$(at 50)" -o "$T/diff.svg"
check "diff -o x.svg writes a differential SVG" grep -q "var DIFF = 1" "$T/diff.svg"

done_test
