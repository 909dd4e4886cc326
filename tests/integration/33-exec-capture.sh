#!/bin/bash
# A new process's mappings are captured once per exec, after ld.so has
# mapped the libraries: the exec event waits in the kernel (a BPF timer)
# until the new image sets its thread pointer, and lists its executable
# mappings, so /proc/PID/maps is read only for files not seen before.
# Before, profd read them at the exec (binary and ld.so only) and again
# 5 ms later: two wake-ups and two reads. A program that never sets a
# thread pointer (no libc) is captured when the wait runs out, and is
# named all the same; one that exits before (8 ms) is named from the
# mappings its exit event lists, once its file's path is known.
# The counts are of this test's own processes (profd's debug log names the
# pid of each capture and read): profd watches the whole host, and other
# programs starting meanwhile must not move them.
source "$(dirname "$0")/lib.sh"


# The checks wait for settled (lib.sh) first: at start profd reads the
# symbols of every program running on the host, for a second or more on a
# busy VM, and the exec events of that time wait in the ring buffer
# meanwhile: without the wait in the kernel, a 30 ms process is gone by
# then. That is a start-up cost; the checks below are of profd at work.

# own_share FOLDED COMM FRAME: "N T S": of COMM's samples, S were in the
# exec, in ld.so or in exit, and of the T others, N pass through FRAME.
# Those three are the same in every process, named from ld.so and libc
# whatever was captured of the program. On this VM page faults go through
# the hypervisor, and they take 5-15 % of a 30 ms process, more under
# load; a check on the program's own code should not move with that.
own_share() {
	awk -v c="$2" -v fr="$3" '{ split($0, f, ";") } f[1] == c {
		if (!index($0, fr) && ($0 ~ /__x64_sys_execve_\[k\]/ ||
		    $0 ~ /;(_dl_[A-Za-z_]+|\[ld-linux[^];]*\]|_exit|exit|__run_exit_handlers|_fini)(;| )/)) {
			s += $NF; next
		}
		t += $NF; if (index($0, fr)) n += $NF
	} END { print n + 0, t + 0, s + 0 }' "$1"
}
stall() { profctl status | awk '$1 == "drain_max_recent_us" { printf "longest recent drain %d ms", $2 / 1000 }'; }

# own_pids: --pid options for them (other programs of the same name may run on the host).
own_pids() { sed 's/^/--pid /' "$T/pids"; }

start_profd --log-level debug
check "profd settled: two drains and a window within 15 s" settled
wait_ms=$(profctl status | awk '$1 == "process_exec_wait_ms" { print $2 }')
check "exec events wait for ld.so (process_exec_wait_ms ${wait_ms:-missing} > 0)" test "${wait_ms:-0}" -gt 0
sv() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }
profctl status >"$T/s0"
for _ in $(seq 40); do run_own "$TP/sym_short" 30; done
for _ in $(seq 5); do run_own "$TP/spin_nolibc" 80; done
cp "$TP/spin_nolibc" "$T/quick_nolibc"
run_own "$T/quick_nolibc" 60 # lives past the wait: its path is read from /proc once
for _ in $(seq 50); do run_own "$T/quick_nolibc" 8; done
sleep 1.5 # a drain
profctl status >"$T/s1"
d() { echo $(($(sv "$T/s1" "$1") - $(sv "$T/s0" "$1"))); }
check "the host's exec count grew by at least ours ($(d process_execs) >= 96)" test "$(d process_execs)" -ge 96
execs=$(wc -l <"$T/pids") caps=$(own_count 'capture of pid [0-9]+:') own=$(own_count 'read /proc/[0-9]+/maps for unwind')
listed=$(own_count 'capture of pid [0-9]+: listed') reads=$(own_count 'read /proc/[0-9]+/maps for symbols')
echo "own processes $execs: captures $caps ($listed from the exec event's list), /proc maps reads $reads, by the DWARF tables alone $own; $(stall)"
check "every process captured: $caps captures of $execs processes" test "$caps" -ge "$execs"
check "one capture per exec: $((caps + own)) for $execs execs (<= 1.25 each)" \
	awk -v r="$((caps + own))" -v e="$execs" 'BEGIN { exit !(r <= 1.25 * e) }'
# The first run of each program reads /proc (its files' paths are new); the others need not.
check "mappings from the exec event: $listed of $execs captures listed (>= 80%), $reads reads of /proc/PID/maps (<= 20%)" \
	awk -v l="$listed" -v r="$((reads + own))" -v e="$execs" 'BEGIN { exit !(l >= 0.8 * e && r <= 0.2 * e) }'

profctl dump --since "$(since_start)" $(own_pids) >"$T/folded" || { fail "profctl dump exited $?"; done_test; }
read -r s_spin s_all s_start < <(own_share "$T/folded" sym_short ";short_spin")
read -r n_spin n_all < <(share "$T/folded" spin_nolibc ";start_c;nolibc_spin")
echo "sym_short: $s_spin of $s_all samples through short_spin, $s_start more in exec, ld.so and exit; spin_nolibc: $n_spin of $n_all through start_c;nolibc_spin"
grep '^spin_nolibc;' "$T/folded" | sort -t' ' -k2 -nr | head -5
check "30 ms dynamic processes named: $s_spin of $s_all samples of their code through short_spin (>= 90%)" \
	share_ok "$s_spin" "$s_all" 40 0.9
check "a program without libc named: $n_spin of $n_all samples through nolibc_spin (>= 85%)" \
	share_ok "$n_spin" "$n_all" 15 0.85
read -r q_spin q_all < <(share "$T/folded" quick_nolibc ";start_c;nolibc_spin")
echo "quick_nolibc: $q_spin of $q_all samples through start_c;nolibc_spin"
grep '^quick_nolibc;' "$T/folded" | sort -t' ' -k2 -nr | head -4
check "8 ms processes gone before their exec event named: $q_spin of $q_all samples through nolibc_spin (>= 80%)" \
	share_ok "$q_spin" "$q_all" 20 0.8
check "profd exits 0 on SIGTERM" stop_profd

# A kernel without BPF timers or the task_vma iterator: each exec wakes
# profd at once and is captured again 5 ms later, from /proc. A state
# directory of its own: the dump below sees only this profd's samples.
STATE=$T/state-nowait SOCK=$T/sock-nowait
: >"$T/pids"
PROFD_EXEC_NOWAIT=1 start_profd --log-level debug
check "without the wait: profd settled within 15 s" settled
profctl status >"$T/s0"
check "without the wait: process_exec_wait_ms $(sv "$T/s0" process_exec_wait_ms)" test "$(sv "$T/s0" process_exec_wait_ms)" = 0
for _ in $(seq 20); do run_own "$TP/sym_short" 30; done
sleep 1.5
execs=$(wc -l <"$T/pids") caps=$(own_count 'capture of pid [0-9]+:') listed=$(own_count 'capture of pid [0-9]+: listed')
echo "without the wait: own processes $execs, captures $caps, $listed from a list; $(stall)"
# At least once each (again only when ld.so had not mapped the libraries yet at the first).
check "without the wait: every exec captured from /proc ($caps captures for $execs execs, none listed)" \
	awk -v c="$caps" -v e="$execs" -v l="$listed" 'BEGIN { exit !(e >= 20 && c >= e && l == 0) }'
profctl dump --since "$(since_start)" $(own_pids) >"$T/folded" || fail "profctl dump exited $?"
read -r s_spin s_all s_start < <(own_share "$T/folded" sym_short ";short_spin")
echo "without the wait: $s_start samples in exec, ld.so and exit; not through short_spin, most samples first:"
grep '^sym_short;' "$T/folded" | grep -v ';short_spin' | sort -t' ' -k2 -nr | head -8 | cut -c1-300
check "without the wait, 30 ms processes named: $s_spin of $s_all samples of their code through short_spin (>= 90%)" \
	share_ok "$s_spin" "$s_all" 20 0.9
check "profd exits 0 on SIGTERM" stop_profd
done_test
