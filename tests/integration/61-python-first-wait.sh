#!/bin/bash
# A Python thread that blocks as its process starts, before profd has looked
# at the process (a worker waiting for its first job, a prefork server's
# child in accept()): its one long wait is taken then, and must carry its
# Python function. profd is stopped while each process starts, as a busy
# daemon seconds behind its events would be, and samples at 1 Hz, so that no
# on-CPU sample can make the process known first. Both ways a process
# starts: an exec of an interpreter profd has seen before (also with the
# events ring full, its exec event lost), and a fork of a
# CPython process profd knows.
source "$(dirname "$0")/lib.sh"

python_interpreters

start_profd --frequency 1

# The thread sleeps at once, in wait_for_job; with "fork", the process forks
# first (on a line on stdin, once the parent is known) and the child sleeps.
cat >"$T/first.py" <<'PY'
import os, sys, threading, time

def wait_for_job():
    time.sleep(2.0)

if sys.argv[1] == "fork":
    print("ready", flush=True)
    sys.stdin.readline()
    pid = os.fork()
    if pid == 0:
        wait_for_job()
        os._exit(0)
    print(pid, flush=True)
    os.waitpid(pid, 0)
else:
    t = threading.Thread(target=wait_for_job)
    t.start()
    t.join()
PY

# Each interpreter once with profd looking, alive until profd has found it:
# what it learns of the file is what a host's profd knows of its
# interpreters long before. (A process gone before profd looks teaches it
# nothing.)
WARM=()
base=$(profctl status | awk '$1 == "python_processes" { print $2 }')
for l in $LABELS; do
	"${INTERP[$l]}" -c 'import threading, time; time.sleep(120)' & WARM+=($!)
done
n=0
for _ in $(seq 1 600); do
	n=$(profctl status | awk -v b="${base:-0}" '$1 == "python_processes" { print $2 - b }')
	[ "${n:-0}" -ge ${#WARM[@]} ] && break
	sleep 0.1
done
check "profd found $n CPython processes since the warm-up's ${#WARM[@]} started" [ "${n:-0}" -ge ${#WARM[@]} ]
kill "${WARM[@]}"
wait "${WARM[@]}" 2>/dev/null
caught_up || fail "profd did not catch up with the warm-up"

# What a missing wait leaves to explain it: the process's entries of every
# kind by thread (a wait counted as run-queue time, or under another
# thread), the sleep under any process, and the counters of every path on
# which a wait is dropped or a drain loses entries, and of the tables and
# Python state its names come from.
DIAG='^(lost|offcpu|bpf_prog_misses|stacks_dropped|drain_entries_lost|process_(python|forks|events_lost|tables_written)|python_(adopted|no_thread|bad_reads|not_code)|unwind_(pids|pid_loads|maps_inherited|exec_entries|hook_entries|load_requests|samples_before|stopped_bad))'
explain() {
	echo "-- pid $1, the largest entries of every kind, by thread:"
	profctl dump --pid "$1" --since "$(since_start)" --type wall --threads --no-flush 2>&1 |
		awk '{ print $NF, substr($0, 1, 300) }' | sort -nr | head -6
	echo "-- wait_for_job under any process:"
	profctl dump --since "$(since_start)" --type wall --threads --no-flush 2>&1 |
		awk '/wait_for_job/ { print $NF, substr($0, 1, 200) }' | sort -nr | head -12
	echo "-- $2, largest first:"
	awk '{ print $NF, substr($0, 1, 300) }' "$2" | sort -nr | head -3
}

declare -A EXEC=() FORK=() RING=()
for l in $LABELS; do
	kill -STOP "$PROFD_PID"
	"${INTERP[$l]}" "$T/first.py" exec & EXEC[$l]=$!
	sleep 0.5
	kill -CONT "$PROFD_PID"
	wait "${EXEC[$l]}" || fail "$l: first.py exec exited $?"

	coproc PY { "${INTERP[$l]}" "$T/first.py" fork; }
	read -r -t 30 line <&"${PY[0]}"
	# The parent is known once profd has answered a flush after its start.
	caught_up || fail "$l: profd did not catch up before the fork"
	kill -STOP "$PROFD_PID"
	echo go >&"${PY[1]}"
	read -r -t 30 child <&"${PY[0]}"
	FORK[$l]=$child
	sleep 0.5
	kill -CONT "$PROFD_PID"
	wait "$PY_PID" || fail "$l: first.py fork exited $?"

	# The events ring full as the process starts (the daemon stopped while
	# 400 short processes exec and exit): its exec event is lost, and the
	# kernel must know the process all the same.
	caught_up || fail "$l: profd did not catch up before the ring test"
	lost=$(profctl status | awk '$1 == "process_events_lost" { print $2 }')
	kill -STOP "$PROFD_PID"
	for _ in $(seq 1 400); do /bin/true; done
	"${INTERP[$l]}" "$T/first.py" exec & RING[$l]=$!
	sleep 0.5
	kill -CONT "$PROFD_PID"
	wait "${RING[$l]}" || fail "$l: first.py exec (ring full) exited $?"
	caught_up || fail "$l: profd did not catch up after the ring test"
	now=$(profctl status | awk '$1 == "process_events_lost" { print $2 }')
	check "$l ring: process events lost while profd was stopped ($((now - lost)))" [ "$((now - lost))" -gt 0 ]
done
caught_up || fail "profd did not catch up"

for l in $LABELS; do
	for how in exec fork ring; do
		case $how in
		exec) pid=${EXEC[$l]} ;;
		fork) pid=${FORK[$l]:-0} ;;
		ring) pid=${RING[$l]} ;;
		esac
		f=$T/$how.$l
		profctl dump --pid "$pid" --since "$(since_start)" --type offcpu --no-flush >"$f" 2>&1
		got=$(awk '/;wait_for_job [(]first[.]py[)];/ { s += $NF } END { print s + 0 }' "$f")
		check "$l $how: $got us of the 2 s sleep under wait_for_job (>= 1.9 s)" [ "$got" -ge 1900000 ]
		[ "$got" -ge 1900000 ] || explain "$pid" "$f"
	done
done
profctl status | grep -E '^process_python_made_known|^python_adopted'
[ "$FAILS" -eq 0 ] || profctl status | grep -E "$DIAG"
stop_profd || fail "profd exited non-zero"
done_test
