#!/bin/bash
# Signals and instances: SIGHUP (and the `reload` socket command) apply a new
# frequency, flush interval and retention live without losing the open
# window, refuse a bad file and keep running, log what needs a restart;
# SIGTERM writes the open window and exits 0 within 5 s; a second profd on the
# same state dir or socket is refused, naming the holder.
source "$(dirname "$0")/lib.sh"

status_val() { profctl status | awk -v k="$1" '$1 == k { print $2 }'; }
# ctl REQUEST: one raw request on the control socket, the reply on stdout.
ctl() {
	python3 - "$SOCK" "$1" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(5)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
out = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    out += b
sys.stdout.write(out.decode())
PY
}
# samples PID: on-CPU samples stored for PID (no flush request).
samples() { profctl dump --no-flush --type cpu --pid "$1" --since 5m 2>/dev/null | awk '{ s += $NF } END { print s + 0 }'; }
# expect_rate PID HZ PHASES_OUT: samples of PID within 15% of HZ x its CPU seconds.
expect_rate() {
	local got cpu want
	got=$(samples "$1")
	cpu=$(awk '{ s += $2 } END { printf "%.3f", s / 1e9 }' "$3")
	want=$(awk -v c="$cpu" -v f="$2" 'BEGIN { printf "%.0f", c * f }')
	check "$4: $got samples within 15% of $2 Hz x $cpu s = $want" \
		within "$got" "$want" "$(awk -v e="$want" 'BEGIN { print e * 0.15 + 2 }')"
}

printf 'frequency = 99\nflush-interval = 1h\n' >"$T/c.conf"
"$PROFD" --config "$T/c.conf" --state-dir "$STATE" --socket "$SOCK" >"$T/profd.log" 2>&1 &
PROFD_PID=$!
for _ in $(seq 1 600); do [ -S "$SOCK" ] && break; sleep 0.1; done
[ -S "$SOCK" ] || { cat "$T/profd.log"; fail "profd did not start"; done_test; }

# --- a second instance is refused, and does not disturb the first ---
"$PROFD" --config /dev/null --state-dir "$STATE" --socket "$T/other.sock" >/dev/null 2>"$T/err2"
rc=$?
check "second profd on the same state dir exits 1 ($(cat "$T/err2"))" [ $rc -eq 1 ]
check "... with one line naming the holder pid $PROFD_PID" \
	bash -c "[ \$(wc -l <'$T/err2') -eq 1 ] && grep -q 'pid $PROFD_PID' '$T/err2'"
"$PROFD" --config /dev/null --state-dir "$T/state2" --socket "$SOCK" >/dev/null 2>"$T/err3"
rc=$?
check "second profd on the same socket exits 1 ($(cat "$T/err3"))" [ $rc -eq 1 ]
check "the first profd still answers on its socket" [ "$(status_val pid)" = "$PROFD_PID" ]

# --- SIGHUP: live changes, the open window kept ---
"$TP/phases" 3 >"$T/a.out" & A=$!; wait $A
check "nothing written yet (flush interval 1h)" [ "$(status_val windows_written)" = 0 ]
printf 'frequency = 199\nflush-interval = 2s\nretention = 1d\nzstd-level = 7\ncounts-entries = 4096\n' >"$T/c.conf"
kill -HUP $PROFD_PID
sleep 0.5
check "SIGHUP: frequency_hz now 199" [ "$(status_val frequency_hz)" = 199 ]
check "SIGHUP: flush-interval now 2s" [ "$(status_val config.flush-interval)" = 2s ]
check "SIGHUP: retention now 1d" [ "$(status_val config.retention)" = 1d ]
check "SIGHUP: zstd-level now 7" [ "$(status_val config.zstd-level)" = 7 ]
check "SIGHUP: counts-entries unchanged (16384) until a restart" [ "$(status_val config.counts-entries)" = 16384 ]
check "status names what needs a restart" [ "$(status_val config.restart_needed)" = counts-entries ]
check "the log says counts-entries needs a restart" grep -q "counts-entries .*needs a restart" "$T/profd.log"
check "the window open before SIGHUP was written, not dropped" [ "$(status_val windows_written)" -ge 1 ]
expect_rate $A 99 "$T/a.out" "window before SIGHUP"

"$TP/phases" 3 >"$T/b.out" & B=$!; wait $B
w0=$(status_val windows_written)
sleep 2.5
w1=$(status_val windows_written)
check "the new 2 s flush interval writes windows by itself ($w0 -> $w1)" [ "$w1" -gt "$w0" ]
expect_rate $B 199 "$T/b.out" "after SIGHUP"

# --- a bad file on reload: refused, nothing changes, profd keeps running ---
printf 'frequency = 49\nbogus = 1\n' >"$T/c.conf"
kill -HUP $PROFD_PID
sleep 0.5
check "bad reload: profd still running" kill -0 $PROFD_PID
check "bad reload: frequency stays 199" [ "$(status_val frequency_hz)" = 199 ]
check "bad reload logged with file:line: key" grep -q "reload refused.*c.conf:2: bogus: unknown key" "$T/profd.log"
reply=$(ctl reload)
check "reload command with a bad file answers error ($(echo "$reply" | head -1))" grep -q "^error.*c.conf:2: bogus" <<<"$reply"
profctl reload 2>"$T/reload.err"; rc=$?
check "profctl reload with a bad file: exit 1, one line naming file:line ($(cat "$T/reload.err"))" \
	bash -c '[ "$1" = 1 ] && [ "$(wc -l <"$2")" = 1 ] && grep -q "c.conf:2: bogus" "$2"' _ "$rc" "$T/reload.err"

# --- the reload command ---
printf 'frequency = 99\nflush-interval = 1h\n' >"$T/c.conf"
reply=$(ctl reload)
check "reload command answers ok" grep -q "^ok	reloaded" <<<"$reply"
check "profctl reload answers 'reloaded'" bash -c '[ "$(profctl_out=$("$1" --state-dir "$2" --socket "$3" reload) && echo "$profctl_out")" = reloaded ]' _ "$PROFCTL_BIN" "$STATE" "$SOCK"
check "reload command applied frequency 99" [ "$(status_val frequency_hz)" = 99 ]
check "reload command applied flush-interval 1h" [ "$(status_val config.flush-interval)" = 1h ]

# --- SIGTERM: the open window is written, exit 0 within 5 s ---
"$TP/phases" 2 >"$T/c.out" & C=$!; wait $C
t0=$(date +%s%N)
kill -TERM $PROFD_PID
wait $PROFD_PID
rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
PROFD_PID=
check "SIGTERM: exit 0 (got $rc)" [ $rc -eq 0 ]
check "SIGTERM: exited in $ms ms (< 5000)" [ $ms -lt 5000 ]
expect_rate $C 99 "$T/c.out" "window open at SIGTERM"
check "the pid file is gone after a clean stop" [ ! -e "$STATE/profd.pid" ]
done_test
