#!/bin/bash
# The control socket: mode 0660 root-only by default, a configured group may
# use it; a client that connects and sends nothing, one that dribbles bytes,
# one that sends an oversized request or a flood of idle clients never delays
# `profctl flush` from another client for long, nor stops the drains. A
# flood of flushes writes a window a second; members of socket-group may ask
# for status, not flush or reload; a user hogging connections keeps no root
# request out and is told "busy".
source "$(dirname "$0")/lib.sh"

status_val() { profctl status | awk -v k="$1" '$1 == k { print $2 }'; }
ms_now() { echo $(( $(date +%s%N) / 1000000 )); }
# idle_clients N SECONDS [BYTES]: N connections that send BYTES (nothing by default)
# and never a newline, held open SECONDS; the daemon may close them first.
# Returns once they are connected.
idle_clients() {
	rm -f "$T/idle.up"
	python3 - "$SOCK" "$T/idle.up" "$@" <<'PY' &
import socket, sys, time
path, up, n, secs = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
data = sys.argv[5].encode() if len(sys.argv) > 5 else b""
conns = []
for _ in range(n):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    if data:
        s.sendall(data)
    conns.append(s)
open(up, "w").close()
time.sleep(secs)
PY
	IDLE_PID=$!
	for _ in $(seq 300); do [ -e "$T/idle.up" ] && return 0; sleep 0.05; done
	echo "idle clients did not connect"
}
# timed_flush: a flush over a second after the last one (sooner, it would wait
# for the next: they coalesce); RC its exit, DT its wall time in ms.
timed_flush() {
	local t0
	t0=$(ms_now); profctl flush >/dev/null; RC=$?; DT=$(( $(ms_now) - t0 ))
}
# A server that waited on a client would answer another's flush only once it
# gave up on it (its 2 s timeout) or the client left: seconds more than the
# same flush alone. On a loaded machine a flush alone takes seconds too, so
# each is compared with one alone just before, under the same load.
base_flush() { sleep 1.1; timed_flush; BASE=$DT; sleep 1.1; }

chmod 0755 "$T"
start_profd --flush-interval 1h
mode=$(stat -c '%a %U %G' "$SOCK")
owner=$(unit_user)
check "socket is 0660, profd's user and group ($mode)" [ "$mode" = "660 $owner $(id -gn "$owner")" ]
setpriv --reuid=nobody --regid=nogroup --clear-groups "$PROFCTL_BIN" --socket "$SOCK" --state-dir "$STATE" status >/dev/null 2>"$T/err"
rc=$?
check "nobody cannot use the socket (exit $rc: $(cat "$T/err"))" [ $rc -eq 1 ]

# --- silent and slow clients vs. another client's flush ---
# The first flush writes what profd read at start (seconds on a busy VM): not timed.
check "profd answers a flush after its start-up" caught_up
base_flush
idle_clients 1 4
timed_flush
check "flush with a silent client connected: exit $RC in $DT ms (alone $BASE ms; < 1000 more)" \
	test $RC -eq 0 -a $DT -lt $((BASE + 1000))
kill $IDLE_PID 2>/dev/null; wait $IDLE_PID 2>/dev/null

base_flush
idle_clients 1 4 "sta"
timed_flush
check "flush with a half-sent request pending: exit $RC in $DT ms (alone $BASE ms; < 1000 more)" \
	test $RC -eq 0 -a $DT -lt $((BASE + 1000))
kill $IDLE_PID 2>/dev/null; wait $IDLE_PID 2>/dev/null

base_flush
idle_clients 1 2 "$(head -c 4000 /dev/zero | tr '\0' x)"
timed_flush
check "flush after an oversized request: exit $RC in $DT ms (alone $BASE ms; < 1000 more)" \
	test $RC -eq 0 -a $DT -lt $((BASE + 1000))
wait $IDLE_PID 2>/dev/null

# More idle clients than the daemon serves at once: it sheds them within the
# client timeout, keeps draining, and answers again.
# Shed at their 2 s timeout, not when they leave (5 s).
base_flush
d0=$(status_val drains)
idle_clients 40 5
t0=$(ms_now)
rc=1
for _ in $(seq 1 50); do profctl flush >/dev/null 2>&1 && { rc=0; break; }; sleep 0.1; done
dt=$(( $(ms_now) - t0 ))
check "flush answered under 40 idle clients (exit $rc after $dt ms; alone $BASE ms; < 4000 more)" \
	test $rc -eq 0 -a $dt -lt $((BASE + 4000))
kill $IDLE_PID 2>/dev/null; wait $IDLE_PID 2>/dev/null
d1=$(status_val drains)
check "drains went on meanwhile ($d0 -> $d1)" [ "$d1" -gt "$d0" ]
check "profd still running" kill -0 "$PROFD_PID"
check "profd exits 0 on SIGTERM" stop_profd

# --- a flood of flush requests: one window a second, every caller answered ---
start_profd --flush-interval 1h
w0=$(status_val windows_written)
python3 - "$SOCK" >"$T/flood" <<'PY'
import socket, sys, threading, time
path, replies, lock = sys.argv[1], [], threading.Lock()
def one():
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(8)
    r = b""
    try:
        s.connect(path)
    except OSError as e:
        r = str(e).encode()
    try:
        # A busy profd replies and closes before reading: the send may fail, the reply waits.
        s.sendall(b"flush\n")
    except OSError:
        pass
    try:
        while True:
            b = s.recv(4096)
            if not b:
                break
            r += b
    except OSError:
        pass # closed with the request unread: what came first is the reply
    r = r.decode(errors="replace")
    with lock:
        replies.append("ok" if r.startswith("ok\t") else "busy" if r.startswith("error\tbusy") else "other")
threads, t0 = [], time.monotonic()
for i in range(300):
    while time.monotonic() < t0 + i * 4 / 300:
        time.sleep(0.001)
    t = threading.Thread(target=one)
    t.start()
    threads.append(t)
for t in threads:
    t.join()
print(f"{time.monotonic() - t0:.1f}", " ".join(f"{k}={replies.count(k)}" for k in sorted(set(replies))))
PY
w1=$(status_val windows_written)
read -r secs counts <"$T/flood"
echo "flood: 300 requests answered in $secs s: $counts; windows $w0 -> $w1"
ok_n=$(grep -o 'ok=[0-9]*' <<<"$counts" | cut -d= -f2)
check "flood: every request answered ok or busy ($counts)" bash -c "! grep -q other= <<<'$counts'"
busy_n=$(grep -o 'busy=[0-9]*' <<<"$counts" | cut -d= -f2)
check "flood: the busy replies are counted in status" [ "$(status_val socket_busy)" = "${busy_n:-0}" ]
check "flood: requests flushed all along ($ok_n of 300 >= 30)" test "${ok_n:-0}" -ge 30
check "flood: $((w1 - w0)) windows written for 300 requests in $secs s (<= 1 a second + 2)" \
	awk -v w=$((w1 - w0)) -v s="$secs" 'BEGIN { exit !(w >= 1 && w <= int(s) + 2) }'
check "profd exits 0 on SIGTERM" stop_profd

# --- socket-group: members of the group may look, only root may act ---
# The unit documents a drop-in adding the group to SupplementaryGroups=.
{ cat "$UNIT"; echo SupplementaryGroups=nogroup; } >"$T/group.service"
UNIT=$T/group.service start_profd --socket-group nogroup
# Timed requests below: not while profd reads the symbols of every program running.
check "profd answers a flush after its start-up" caught_up
mode=$(stat -c '%a %G' "$SOCK")
check "with socket-group nogroup the socket is 0660 group nogroup ($mode)" [ "$mode" = "660 nogroup" ]
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$PROFCTL_BIN" --socket "$SOCK" --state-dir "$STATE" "$@"; }
out=$(as_nobody status 2>&1)
rc=$?
check "nobody (group nogroup) can ask for status (exit $rc: $(head -c 300 <<<"$out"))" grep -qE "^pid[[:space:]]+$PROFD_PID\$" <<<"$out"
for req in flush reload; do
	out=$(as_nobody $req 2>&1)
	rc=$?
	check "nobody may not $req: exit $rc, $out" [ $rc -eq 1 ]
	check "... and is told why" grep -q "^profctl: profd could not $req: permission denied: $req is for root" <<<"$out"
done
check "status counts the refused requests" [ "$(status_val socket_requests_refused)" = 2 ]

# A user holding every connection it may (20 tried, held 1.5 s, less than
# the 2 s a silent client is kept): root's status still answers, and that
# user's own status is told "busy", not "not running".
setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 - "$SOCK" >"$T/held" <<'PY' &
import socket, sys, time
conns, busy = [], 0
for _ in range(20):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    conns.append(s)
time.sleep(0.3) # accepted or refused by now
for s in conns:
    s.setblocking(False)
    try:
        busy += s.recv(4096).startswith(b"error\tbusy")
    except BlockingIOError:
        pass
print(busy, flush=True)
time.sleep(1.2)
PY
HELD=$!
for _ in $(seq 50); do [ -s "$T/held" ] && break; sleep 0.05; done
out=$(as_nobody status 2>&1)
rc=$?
t0=$(ms_now); profctl status 2>&1 | grep -q "^pid[[:space:]]" ; rrc=$?; dt=$(( $(ms_now) - t0 ))
wait $HELD
check "held: 12 of the user's 20 connections told busy ($(cat "$T/held"))" [ "$(cat "$T/held")" = 12 ]
check "held: the user's own status fails (exit $rc)" [ $rc -eq 1 ]
check "... saying busy, not 'not running': $out" grep -q '^profctl: profd is busy: too many connections' <<<"$out"
check "held: root's status answered in $dt ms" [ $rrc -eq 0 ]

# A hog that reconnects whenever profd closes one of its connections, as
# fast as it can, does not keep root out either, nor stop the drains.
setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 - "$SOCK" >"$T/hog" <<'PY' &
import selectors, socket, sys, time
path, sel, busy, end = sys.argv[1], selectors.DefaultSelector(), 0, time.monotonic() + 6
def conn():
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(path)
    except OSError:
        s.close()
        return
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ)
for _ in range(64):
    conn()
while time.monotonic() < end:
    for key, _ in sel.select(0.05):
        try:
            b = key.fileobj.recv(4096)
        except OSError:
            b = b""
        busy += b.startswith(b"error\tbusy")
        sel.unregister(key.fileobj)
        key.fileobj.close()
        conn()
    while len(sel.get_map()) < 64 and time.monotonic() < end:
        conn()
print(busy)
PY
HOG=$!
sleep 1
worst=0 fails=0 d0=$(status_val drains)
for _ in $(seq 1 8); do
	t0=$(ms_now)
	profctl status 2>"$T/err" | grep -q "^pid[[:space:]]" || fails=$((fails + 1))
	dt=$(( $(ms_now) - t0 )); [ $dt -gt $worst ] && worst=$dt
	sleep 0.3
done
d1=$(status_val drains)
wait $HOG
check "root's status answered 8 of 8 times while nobody reconnects as fast as it can: $fails failed (slowest $worst ms)" \
	test $fails -eq 0
check "the hog was told busy ($(cat "$T/hog") times)" test "$(cat "$T/hog")" -gt 0
check "drains went on under the hog ($d0 -> $d1)" [ "$d1" -gt "$d0" ]
check "profd still running" kill -0 "$PROFD_PID"
check "profd exits 0 on SIGTERM" stop_profd
done_test
