#!/bin/bash
# DWARF tables under a tight --unwind-memory: the rows live in the kernel
# only, so a table that found no room is built again from its file once
# room comes. Fifty copies of bash (fifty files of 20,668 rows each) fill
# 8 MB (1,048,576 rows); python3's table (64,575 rows) then finds no room (a
# table only displaces larger ones, and the copies displaced those): its
# stacks lose their callers. Once the copies exit their tables go first and
# python3's is built again: its stacks are whole again. So large a budget
# that the tables of whatever else this host runs (a browser's hundreds of
# thousands of rows) do not decide the outcome.
source "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3; [ -x "$PY" ] || PY=$(command -v python3)
[ -x "$PY" ] || skip_test "needs python3"
sv() { profctl status | awk -v k="$1" '$1 == k { print $2 }'; }
# whole PID: % of PID's samples in the last 2 s walked up to Py_BytesMain, and their number.
whole() { profctl dump --pid "$1" --since 2s 2>/dev/null | awk '{ s += $NF } /;Py_BytesMain;/ { n += $NF }
	END { printf "%.0f %d", s ? 100 * n / s : 0, s }'; }
# wait_whole PID SECONDS OP: until whole says (OP ge) 80 % or (OP lt) under 50 %, of at least 20 samples.
wait_whole() {
	local i
	for i in $(seq 1 "$2"); do
		read -r w n <<<"$(whole "$1")"
		if [ "$n" -ge 20 ]; then
			[ "$3" = ge ] && [ "$w" -ge 80 ] && return 0
			[ "$3" = lt ] && [ "$w" -lt 50 ] && return 0
		fi
		sleep 1
	done
	return 1
}

start_profd --unwind dwarf --unwind-memory 8M
mkfifo "$T/fifo"
copies=()
for i in $(seq 1 50); do
	cp /bin/bash "$T/bash$i"
	"$T/bash$i" -c 'read -r x' <>"$T/fifo" & copies+=($!)
done
on_exit "kill ${copies[*]}"
sleep 3
"$PY" -c 'while True: pass' & PYPID=$!
on_exit "kill $PYPID"
wait_whole $PYPID 10 lt
echo "python3 beside the bash copies: $w % of $n samples whole; $(sv unwind_table_over_budget) tables found no room"
check "python3 beside the copies: its table found no room ($w % of $n samples whole < 50 %)" test "$w" -lt 50
r0=$(sv unwind_table_rebuilds)
kill "${copies[@]}"
wait_whole $PYPID 20 ge
r=$(sv unwind_table_rebuilds)
check "python3's table built again once the copies exited (unwind_table_rebuilds $r0 -> $r)" test "$r" -gt "$r0"
check "python3 then: its stacks are whole ($w % of $n samples >= 80 %)" test "$w" -ge 80
profctl status | grep -E '^unwind_(table|pids|load)'
check "profd exits 0 on SIGTERM" stop_profd
done_test
