#!/bin/bash
# A chain of images that exec on at once (`env env ... prog`, the shape of
# a shim's `#!/usr/bin/env bash`): the exec event of an image may find the
# next image there already (its timer fired inside the next execve) and
# come without a list of mappings. A read of /proc for it would find only
# the next image, whose own event follows within milliseconds with its
# list: the event without one waits for it, and is then dropped, not read
# (a read of /proc/PID/maps and a stat per file, 100-300 µs of profd's main
# thread each, on a host exec'ing scripts through shims). The chain's last
# image is still named from its own list.
# The counts are of this test's own processes (profd's debug log names the
# pid of each capture and read): profd watches the whole host.
source "$(dirname "$0")/lib.sh"

ENV=$(command -v env)
# own_share FOLDED COMM FRAME: "N T": of COMM's samples not in the exec,
# ld.so or exit (page faults through the hypervisor there, 5-15 % of a
# 30 ms process on this VM), T, and N of them pass through FRAME.
own_share() {
	awk -v c="$2" -v fr="$3" '{ split($0, f, ";") } f[1] == c {
		if (!index($0, fr) && ($0 ~ /__x64_sys_execve_\[k\]/ ||
		    $0 ~ /;(_dl_[A-Za-z_]+|\[ld-linux[^];]*\]|_exit|exit|__run_exit_handlers|_fini)(;| )/))
			next
		t += $NF; if (index($0, fr)) n += $NF
	} END { print n + 0, t + 0 }' "$1"
}

start_profd --log-level debug
check "profd settled: two drains and a window within 15 s" settled
# Twelve images of env each, then a 30 ms program: 13 execs per chain.
CHAINS=${CHAINS:-120}
for _ in $(seq "$CHAINS"); do
	run_own "$ENV" "$ENV" "$ENV" "$ENV" "$ENV" "$ENV" "$ENV" "$ENV" "$ENV" "$ENV" "$ENV" "$ENV" "$TP/sym_short" 30
done
caught_up || fail "profd did not answer a flush"
reads=$(own_count 'read /proc/[0-9]+/maps for symbols') fromproc=$(own_count 'capture of pid [0-9]+: from /proc')
listed=$(own_count 'capture of pid [0-9]+: listed') dropped=$(own_count 'exec event of pid [0-9]+ without a list: dropped')
echo "$CHAINS chains: captures listed $listed, from /proc $fromproc; /proc maps reads $reads; events without a list dropped $dropped"
# The first chain reads (env's and sym_short's paths are new to profd); a
# few more may end before the next event (a process that exits first).
check "images gone before their exec event cost no read of /proc: $reads reads for $CHAINS chains (<= 10%)" \
	awk -v r="$reads" -v c="$CHAINS" 'BEGIN { exit !(r <= 0.1 * c) }'
check "each chain's last image captured: $listed listed captures for $CHAINS chains (>= 90%)" \
	awk -v l="$listed" -v c="$CHAINS" 'BEGIN { exit !(l >= 0.9 * c) }'
profctl dump --since "$(since_start)" $(sed 's/^/--pid /' "$T/pids") >"$T/folded" || { fail "profctl dump exited $?"; done_test; }
read -r s_spin s_all < <(own_share "$T/folded" sym_short ";short_spin")
grep '^sym_short;' "$T/folded" | sort -t' ' -k2 -nr | head -5 | cut -c1-200
check "the chains' last image named: $s_spin of $s_all samples of sym_short's code through short_spin (>= 90%)" \
	share_ok "$s_spin" "$s_all" 40 0.9
check "profd exits 0 on SIGTERM" stop_profd
done_test
