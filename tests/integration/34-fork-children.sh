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

# share NAME PATTERN...: "n t" — samples of process NAME through any PATTERN, and all of them.
share() {
	local name=$1; shift
	awk -v c="$name" -v pats="$*" 'BEGIN { np = split(pats, p, " ") }
		{ split($0, f, ";") } f[1] == c {
			t += $NF
			for (i = 1; i <= np; i++) if (index($0, p[i])) { n += $NF; break }
		} END { print n + 0, t + 0 }' "$T/folded"
}

"$TP/fork_children" fork 6 wait &
PARENT=$!
on_exit "kill $PARENT"
sleep 0.5
start_profd
sleep 1
kill -USR1 "$PARENT"
"$TP/fork_children" prefork 8 "$TP/libsym_plugin.so" &
PREFORK=$!
on_exit "kill $PREFORK"
wait "$PARENT" "$PREFORK"
sleep 2.5 # the last children's samples drained and flushed
profctl dump --since 2m >"$T/folded" || { fail "profctl dump exited $?"; done_test; }

read -r n t < <(share fk_child ";child_burn")
echo "fk_child: $n of $t samples through child_burn"
grep '^fk_child;' "$T/folded" | sort -t' ' -k2 -nr | head -4
check "40 ms forked children named: $n of $t samples through child_burn (>= 90%)" \
	awk -v n="$n" -v t="$t" 'BEGIN { exit !(t >= 30 && n >= 0.9 * t) }'

read -r n t < <(share pf_worker ";worker_own" ";plugin_spin")
read -r own _ < <(share pf_worker ";worker_own")
read -r lib _ < <(share pf_worker ";plugin_spin")
echo "pf_worker: $n of $t samples through worker_own ($own) or plugin_spin ($lib)"
grep '^pf_worker;' "$T/folded" | sort -t' ' -k2 -nr | head -4
check "prefork workers named: $n of $t samples through their functions (>= 90%)" \
	awk -v n="$n" -v t="$t" 'BEGIN { exit !(t >= 30 && n >= 0.9 * t) }'
check "prefork workers: the dlopen()ed library named ($lib of $t through plugin_spin, >= 30%)" \
	awk -v n="$lib" -v t="$t" 'BEGIN { exit !(t > 0 && n >= 0.3 * t) }'
# The DWARF tables of a child of an exec'd parent come from the registry, not /proc.
inh=$(profctl status | awk '$1 == "unwind_maps_inherited" { print $2 }')
[ -n "$inh" ] || echo "no DWARF tables (frame pointers only): their check does not apply"
if [ -n "$inh" ]; then
	check "forked workers' unwind tables from their parent's snapshot ($inh, > 0)" test "$inh" -gt 0
fi
check "profd exits 0 on SIGTERM" stop_profd
done_test
