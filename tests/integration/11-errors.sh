#!/bin/bash
# Bad options exit 2, an unreadable state dir and a missing privilege exit 1;
# each with one line on stderr, never a crash.
source "$(dirname "$0")/lib.sh"

# expect_err RC CMD...: exit code RC, exactly one line on stderr, no core dump.
expect_err() {
	local want=$1; shift
	"$@" >"$T/out" 2>"$T/err"
	local rc=$? lines
	lines=$(wc -l <"$T/err")
	if [ "$rc" -eq "$want" ] && [ "$lines" -eq 1 ]; then
		ok "$* -> exit $rc: $(cat "$T/err")"
	else
		fail "$* -> exit $rc (want $want), $lines stderr lines: $(head -3 "$T/err")"
	fi
}

expect_err 2 "$PROFD" --frequency 0
expect_err 2 "$PROFD" --frequency 1000000000
expect_err 2 "$PROFD" --flush-interval -5s
expect_err 2 "$PROFD" --max-disk 1000000000000000000000000000000
expect_err 2 "$PROFD" --retention 3fortnights
expect_err 2 "$PROFD" --bogus
expect_err 2 "$PROFD" --unwind magic
expect_err 2 "$PROFCTL_BIN" dump --since yesterday
expect_err 2 "$PROFCTL_BIN" dump --pid abc
expect_err 2 "$PROFCTL_BIN" dump --type idle
expect_err 2 "$PROFCTL_BIN" frobnicate

# An unreadable state dir, for a reader that is not root.
mkdir -p "$T/locked" && chmod 0700 "$T/locked"
chmod 0755 "$T"
expect_err 1 setpriv --reuid=nobody --regid=nogroup --clear-groups "$PROFCTL_BIN" --state-dir "$T/locked" --socket "$T/none.sock" ls
expect_err 1 "$PROFCTL_BIN" --state-dir "$T/does-not-exist" --socket "$T/none.sock" ls

# profd without privileges: perf_event_open/BPF refused, one line, exit 1.
mkdir -p "$T/nobody-state" && chown nobody "$T/nobody-state"
expect_err 1 setpriv --reuid=nobody --regid=nogroup --clear-groups "$PROFD" --state-dir "$T/nobody-state/s" --socket "$T/nobody-state/sock"

# profctl status and flush with no daemon: exit 1, one line.
expect_err 1 profctl status
expect_err 1 profctl flush

done_test
