#!/bin/bash
# systemd's side of profd without systemd as PID 1: a notify socket that
# records what profd sends (EXTEND_TIMEOUT_USEC before READY=1, STATUS=,
# WATCHDOG=1 at half of WATCHDOG_USEC, STOPPING=1 last), no pings for a
# WATCHDOG_PID that is not profd, and journald-style log lines.
source "$(dirname "$0")/lib.sh"

# listen SECONDS: records datagrams on $T/notify.sock into $T/notify.log, one
# per line, until STOPPING=1 or SECONDS (a bound: profd may take seconds to
# start on a loaded host).
listen() {
	rm -f "$T/notify.sock" "$T/notify.log"
	python3 - "$T/notify.sock" "$T/notify.log" "$1" <<'PY' &
import socket, sys, time
import os
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
os.umask(0) # writable by all, as systemd's: profd sends as its own user
s.bind(sys.argv[1])
end = time.time() + float(sys.argv[3])
with open(sys.argv[2], "w") as f:
    while time.time() < end:
        s.settimeout(max(0.01, end - time.time()))
        try:
            m = s.recv(4096)
        except socket.timeout:
            break
        f.write("%.3f %s\n" % (time.time(), m.decode().replace("\n", "\\n")))
        f.flush()
        if m.startswith(b"STOPPING=1"):
            break
PY
	LISTEN_PID=$!
	for _ in $(seq 1 50); do [ -S "$T/notify.sock" ] && return; sleep 0.05; done
}

listen 120
NOTIFY_SOCKET=$T/notify.sock WATCHDOG_USEC=4000000 JOURNAL_STREAM=8:1234 start_profd
sleep 6
stop_profd; rc=$?
wait $LISTEN_PID
cat "$T/notify.log" | cut -c1-120
msgs=$(cut -d' ' -f2- "$T/notify.log")
first_ready=$(grep -n '^READY=1$' <<<"$msgs" | head -1 | cut -d: -f1)
first_extend=$(grep -n '^EXTEND_TIMEOUT_USEC=[0-9]*$' <<<"$msgs" | head -1 | cut -d: -f1)
check "profd exits 0 (got $rc)" [ "$rc" -eq 0 ]
check "READY=1 sent once" [ "$(grep -c '^READY=1$' <<<"$msgs")" -eq 1 ]
check "EXTEND_TIMEOUT_USEC sent before READY=1" test -n "$first_extend" -a -n "$first_ready" -a "${first_extend:-0}" -lt "${first_ready:-0}"
check "STATUS= names the rate and the disk use" grep -qE '^STATUS=sampling [0-9]+ CPUs at 99 Hz .*samples/s.*MiB on disk' <<<"$msgs"
check "STOPPING=1 is the last message" [ "$(tail -n 1 <<<"$msgs")" = "STOPPING=1" ]
# One ping at start, then at half of 4 s over ~6 s of running: about 4. A
# stalled loop sends fewer (and systemd would kill it), a spinning one more.
pings=$(grep -c '^WATCHDOG=1$' <<<"$msgs")
check "WATCHDOG=1 pings every ~2 s: $pings in ~6 s (3..5)" test "$pings" -ge 3 -a "$pings" -le 5
gaps=$(awk '$2 == "WATCHDOG=1" { if (t) { g = $1 - t; if (g > m) m = g } t = $1 } END { printf "%.3f", m }' "$T/notify.log")
check "longest gap between pings $gaps s < WATCHDOG_USEC (4 s)" awk -v g="$gaps" 'BEGIN { exit !(g > 0 && g < 4) }'
# Journald: "<N>message", no timestamp.
check "journal log lines start with a syslog priority" grep -qE '^<6>sampling [0-9]+ CPUs' "$T/profd.log"
check "no line without a priority prefix" bash -c "! grep -qvE '^<[0-7]>' '$T/profd.log'"

# A WATCHDOG_PID that is some other process: not our watchdog, no pings.
listen 120
NOTIFY_SOCKET=$T/notify.sock WATCHDOG_USEC=500000 WATCHDOG_PID=1 start_profd
sleep 2
stop_profd
wait $LISTEN_PID
check "no pings when WATCHDOG_PID is another process" bash -c "! grep -q '^[0-9.]* WATCHDOG=1' '$T/notify.log'"
check "... but READY=1 still sent" grep -q ' READY=1$' "$T/notify.log"

# Without NOTIFY_SOCKET nothing breaks (plain foreground run), and log lines carry a time.
start_profd
check "plain run: log lines start with a time of day" grep -qE '^[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3} profd: sampling' "$T/profd.log"
check "profd exits 0 on SIGTERM" stop_profd
done_test
