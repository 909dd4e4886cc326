#!/bin/bash
# Children forked without exec are named from their parent's mappings: a
# child has exactly its parent's image at fork, and a 40 ms child is gone
# long before the drain that reads its samples, so /proc cannot tell.
# Two shapes: a long-lived parent (running before profd, never sampled:
# profd learns its mappings at its first fork) that forks a 40 ms child every
# 100 ms; and a prefork server that dlopen()s a library after profd
# captured it at exec, then forks 150 ms workers running code from the
# binary and from that library.
source "$(dirname "$0")/lib.sh"

# usr1_ready PID: PID has its SIGUSR1 handler (SigCgt bit 9), within 30 s.
usr1_ready() {
	local mask
	for _ in $(seq 300); do
		mask=$(sed -n 's/^SigCgt:[[:space:]]*//p' "/proc/$1/status" 2>/dev/null)
		[ -n "$mask" ] && [ $(((16#$mask >> 9) & 1)) -eq 1 ] && return 0
		sleep 0.1
	done
	return 1
}

"$TP/fork_children" fork 6 wait &
PARENT=$!
on_exit "kill $PARENT"
usr1_ready "$PARENT" || fail "the fork parent did not start"
start_profd
# 16 workers of 150 ms of CPU each: about 240 samples at 99 Hz however loaded the host.
"$TP/fork_children" prefork 16 "$TP/libsym_plugin.so" &
PREFORK=$!
on_exit "kill $PREFORK"
usr1_ready "$PREFORK" || fail "the prefork server did not start"
# The children come once profd is past its start-up (a read of every
# running program, seconds on a loaded host, while process events queue in
# a bounded ring buffer) and has taken the server's exec event: a fork
# event lost to a full buffer leaves a gone child nothing to be named from.
caught_up || fail "profd did not answer a flush within 12 tries of 10 s"
lost0=$(profctl status | awk '$1 == "process_events_lost" { print $2 }')
kill -USR1 "$PARENT" "$PREFORK"
wait "$PARENT" "$PREFORK"
caught_up || fail "profd did not answer a flush after the children"
profctl dump --since "$((SECONDS + 60))s" >"$T/folded" || { fail "profctl dump exited $?"; done_test; }

read -r n t < <(share "$T/folded" fk_child ";child_burn")
echo "fk_child: $n of $t samples through child_burn"
grep '^fk_child;' "$T/folded" | sort -t' ' -k2 -nr | head -4
check "40 ms forked children named: $n of $t samples through child_burn (>= 90%)" \
	share_ok "$n" "$t" 30 0.9

read -r n t < <(share "$T/folded" pf_worker ";worker_own" ";plugin_spin")
read -r own _ < <(share "$T/folded" pf_worker ";worker_own")
read -r lib _ < <(share "$T/folded" pf_worker ";plugin_spin")
echo "pf_worker: $n of $t samples through worker_own ($own) or plugin_spin ($lib)"
grep '^pf_worker;' "$T/folded" | sort -t' ' -k2 -nr | head -4
# The last workers are drained after the server has exited: its last read of its mappings names them.
check "prefork workers named: $n of $t samples through their functions (>= 95%)" \
	share_ok "$n" "$t" 30 0.95
check "prefork workers: the dlopen()ed library named ($lib of $t through plugin_spin, >= 30%)" \
	share_ok "$lib" "$t" 1 0.3
# The DWARF tables of a child of an exec'd parent come from the registry, not /proc.
inh=$(profctl status | awk '$1 == "unwind_maps_inherited" { print $2 }')
[ -n "$inh" ] || echo "no DWARF tables (frame pointers only): their check does not apply"
if [ -n "$inh" ]; then
	check "forked workers' unwind tables from their parent's snapshot ($inh, > 0)" test "$inh" -gt 0
fi
lost=$(profctl status | awk '$1 == "process_events_lost" { print $2 }')
echo "process events lost while the children ran: $((lost - lost0))"
check "profd exits 0 on SIGTERM" stop_profd
done_test
