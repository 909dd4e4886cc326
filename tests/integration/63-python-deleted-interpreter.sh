#!/bin/bash
# profd keeps an interpreter file open for free hooks only while a process
# of it is known (under the unit's capabilities): a CPython run from a copy
# of Debian's python3.11 is hooked, and once it has exited and the copy is
# deleted, no descriptor of profd's pins the deleted file; a second copy
# (another inode) is hooked in its turn and let go the same way.
source "$(dirname "$0")/lib.sh"

[ -x /usr/bin/python3.11 ] || skip_test "no /usr/bin/python3.11 (Debian's CPython)"
st() { profctl status | awk -F'\t' -v k="$1" '$1 == k { print $2 + 0; f = 1 } END { if (!f) print -1 }'; }
# held NAME: profd's descriptors of the file $T/bin/NAME (deleted or not).
held() { find "/proc/$PROFD_PID/fd" -lname "$T/bin/$1*" 2>/dev/null | wc -l; }

start_profd --frequency 499 --no-offcpu --python-free-hook-after 1s --python-free-hook-max-rate 0
caught_up || fail "profd did not catch up within 12 flushes of 10 s"
mkdir "$T/bin"
for copy in python-a python-b; do
	cp /usr/bin/python3.11 "$T/bin/$copy"
	"$T/bin/$copy" -c '
import time
end = time.monotonic() + 4
while time.monotonic() < end:
    sum(i * i for i in range(1000))
' &
	pid=$!
	on_exit "kill $pid"
	n=0
	for _ in $(seq 60); do n=$(free_hook_links $pid); [ "$n" -ge 1 ] && break; sleep 0.1; done
	check "$copy: hooked while it runs ($n link with its pid)" [ "$n" -eq 1 ]
	check "$copy: profd holds the file while its process runs ($(held $copy) descriptor)" [ "$(held $copy)" -eq 1 ]
	wait $pid || fail "$copy exited $?"
	rm "$T/bin/$copy"
	h=1 t0=$(date +%s.%N)
	for _ in $(seq 100); do h=$(held $copy); [ "$h" -eq 0 ] && break; sleep 0.2; done
	check "$copy: deleted after its process exited, no descriptor of it left in profd ($h, $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s after the delete)" [ "$h" -eq 0 ]
done
check "status: $(st python_free_hook_files_closed) interpreter files closed (>= 2)" \
	[ "$(st python_free_hook_files_closed)" -ge 2 ]
check "no hook failures ($(st python_free_hook_failures))" [ "$(st python_free_hook_failures)" -eq 0 ]
check "profd exits 0 on SIGTERM" stop_profd
done_test
