#!/bin/bash
# A program new to profd (its files' paths not seen in any read of /proc
# yet) execs again and again, a shim's chain, and profd handles its first
# exec event late (stopped here, as a loaded host wakes it late): by then
# /proc shows the chain's next image. Each image is named from its own
# exec event's list of mappings, its paths learned from that read, and so
# is the child the first image forked; not from the image /proc shows.
#
# Stopped only until the first image exec'd on: on a host exec'ing a
# hundred programs a second a longer stop fills the event ring. Events
# lost meanwhile (process_events_lost) may be this chain's, and then its
# images cannot be named: the run cannot test what it claims (exit 77).
source "$(dirname "$0")/lib.sh"

lost() { profctl status 2>/dev/null | awk -F'\t' '$1 == "process_events_lost" { print $2 }'; }

start_profd
check "profd settled: two drains and a window within 15 s" settled
lost0=$(lost)
# Six chains of four images of 40 ms (and a child of each as long), each a
# copy new to profd: about 24 samples per image and child in all.
for i in $(seq 6); do
	mkdir "$T/c$i" && cp "$TP/exec_chain" "$T/c$i/late_chain"
	kill -STOP "$PROFD_PID"
	"$T/c$i/late_chain" 40 3 "$T/hold$i" &
	late=$!
	for _ in $(seq 6000); do
		read -r a0 _ level _ < <(tr '\0' ' ' <"/proc/$late/cmdline" 2>/dev/null)
		[ "$a0" = "$T/c$i/late_chain" ] && [ "$level" != 3 ] && break
		sleep 0.01
	done
	kill -CONT "$PROFD_PID"
	# The last image stays until profd caught up with the events.
	caught_up || fail "profd did not answer a flush after it was stopped"
	touch "$T/hold$i"
	wait "$late" || fail "late_chain exited $?"
done
lost1=$(lost)
if [ -z "$lost0" ] || [ -z "$lost1" ]; then
	fail "profctl status has no process_events_lost"
	done_test
fi
if [ "$lost1" -gt "$lost0" ]; then
	echo "$((lost1 - lost0)) process events lost while profd was stopped: this host execs faster than the ring holds"
	exit 77
fi
caught_up || fail "profd did not answer a flush"
profctl dump --since "$(since_start)" >"$T/all" || { fail "profctl dump exited $?"; done_test; }
grep '^late_chain;' "$T/all" >"$T/folded"
sort -t' ' -k2 -nr "$T/folded" | head -8 | cut -c1-200
read -r unk all < <(awk '{ split($0, f, ";"); t += $NF; if (f[2] == "[unknown]") n += $NF } END { print n + 0, t + 0 }' "$T/folded")
read -r spin _ < <(share "$T/folded" late_chain ";spin")
echo "late_chain: $all samples, $unk with an unnamed outermost frame, $spin through spin"
# What a late event loses is whole images (on 8f68895: 57 of 213 samples
# unnamed, chain_3 and forked_3 never named): the checks below, image by
# image. The share unnamed is printed, not bounded: the exec hook's walk
# of the mappings now and then lists none of the binary's (not fixed;
# docs/BENCHMARKS.md, "Symbolization"), and an image named from such a
# list has its frames unnamed, up to 10 of about 210 samples in a run.
check "late_chain sampled: $all samples (>= 40)" test "$all" -ge 40
# Each image and its child spin as long: each has about an eighth of the samples through spin.
for f in chain_3 forked_3 chain_2 chain_0; do
	read -r c _ < <(share "$T/folded" late_chain ";$f;spin")
	check "$f named: $c of $spin samples in spin through $f (>= 5%)" share_ok "$c" "$spin" 40 0.05
done
check "profd exits 0 on SIGTERM" stop_profd
done_test
