#!/bin/bash
# The control socket: mode 0660 root-only by default, a configured group may
# use it; a client that connects and sends nothing, one that dribbles bytes,
# one that sends an oversized request or a flood of idle clients never delays
# `profctl flush` from another client for long, nor stops the drains.
source "$(dirname "$0")/lib.sh"

status_val() { profctl status | awk -v k="$1" '$1 == k { print $2 }'; }
ms_now() { echo $(( $(date +%s%N) / 1000000 )); }
# idle_clients N SECONDS [BYTES]: N connections that send BYTES (nothing by default)
# and never a newline, held open SECONDS; the daemon may close them first.
idle_clients() {
	python3 - "$SOCK" "$@" <<'PY' &
import socket, sys, time
path, n, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
data = sys.argv[4].encode() if len(sys.argv) > 4 else b""
conns = []
for _ in range(n):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    if data:
        s.sendall(data)
    conns.append(s)
time.sleep(secs)
PY
	IDLE_PID=$!
	sleep 0.3 # connected before the timed request
}

chmod 0755 "$T"
start_profd --flush-interval 1h
mode=$(stat -c '%a %U %G' "$SOCK")
check "socket is 0660 root:root ($mode)" [ "$mode" = "660 root root" ]
setpriv --reuid=nobody --regid=nogroup --clear-groups "$PROFCTL_BIN" --socket "$SOCK" --state-dir "$STATE" status >/dev/null 2>"$T/err"
rc=$?
check "nobody cannot use the root-only socket (exit $rc: $(cat "$T/err"))" [ $rc -eq 1 ]

# --- silent and slow clients vs. another client's flush ---
idle_clients 1 4
t0=$(ms_now); profctl flush >/dev/null; rc=$?; dt=$(( $(ms_now) - t0 ))
check "flush with a silent client connected: exit $rc in $dt ms (< 1000)" test $rc -eq 0 -a $dt -lt 1000
kill $IDLE_PID 2>/dev/null; wait $IDLE_PID 2>/dev/null

idle_clients 1 4 "sta"
t0=$(ms_now); profctl flush >/dev/null; rc=$?; dt=$(( $(ms_now) - t0 ))
check "flush with a half-sent request pending: exit $rc in $dt ms (< 1000)" test $rc -eq 0 -a $dt -lt 1000
kill $IDLE_PID 2>/dev/null; wait $IDLE_PID 2>/dev/null

idle_clients 1 2 "$(head -c 4000 /dev/zero | tr '\0' x)"
t0=$(ms_now); profctl flush >/dev/null; rc=$?; dt=$(( $(ms_now) - t0 ))
check "flush after an oversized request: exit $rc in $dt ms (< 1000)" test $rc -eq 0 -a $dt -lt 1000
wait $IDLE_PID 2>/dev/null

# More idle clients than the daemon serves at once: it sheds them within the
# client timeout, keeps draining, and answers again.
d0=$(status_val drains)
idle_clients 40 5
t0=$(ms_now)
for _ in $(seq 1 50); do profctl flush >/dev/null 2>&1 && break; sleep 0.1; done
rc=$?; dt=$(( $(ms_now) - t0 ))
check "flush answered within 4 s under 40 idle clients (exit $rc after $dt ms)" test $rc -eq 0 -a $dt -lt 4000
kill $IDLE_PID 2>/dev/null; wait $IDLE_PID 2>/dev/null
d1=$(status_val drains)
check "drains went on meanwhile ($d0 -> $d1)" [ "$d1" -gt "$d0" ]
check "profd still running" kill -0 "$PROFD_PID"
check "profd exits 0 on SIGTERM" stop_profd

# --- socket-group: members of the group may use it ---
start_profd --socket-group nogroup
mode=$(stat -c '%a %G' "$SOCK")
check "with socket-group nogroup the socket is 0660 group nogroup ($mode)" [ "$mode" = "660 nogroup" ]
out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups "$PROFCTL_BIN" --socket "$SOCK" --state-dir "$STATE" status 2>&1)
rc=$?
check "nobody (group nogroup) can ask for status (exit $rc)" grep -qE "^pid[[:space:]]+$PROFD_PID\$" <<<"$out"
check "profd exits 0 on SIGTERM" stop_profd
done_test
