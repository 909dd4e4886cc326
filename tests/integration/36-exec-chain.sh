#!/bin/bash
# A process that execs again and again, a shell shim's chain (shim -> env
# -> script -> program), has a new image at a new load address each time,
# and the samples of all of them are drained after its last exec: each
# image's frames are named from that image's mappings, not only the last
# two images' (the images before an exec were kept per entry, and each
# exec started the entry afresh). So are those of a child each image
# forks at once (a script's command substitution): from the image it was
# forked from, not the one its parent has at the drain, nor the one before
# (the fork event overtook its parent's exec event, which waits for ld.so).
# And when profd handles a new program's first exec event late, after the
# chain exec'd on: from that image's own list of mappings, not from the
# next image's that /proc shows by then.
source "$(dirname "$0")/lib.sh"

start_profd
check "profd settled: two drains and a window within 15 s" settled
# Four images of 60 ms of CPU each, and a child of each (forked at once,
# like a shell's command substitution) as long: several samples each at 99 Hz.
for _ in $(seq 3); do "$TP/exec_chain" 60; done
# Images of 3 ms (another name): the whole chain within one drain. Not
# checked: an image that execs before its exec event was due (the event
# waits for ld.so, and on a loaded host for the timer) is never captured.
cp "$TP/exec_chain" "$T/quick_chain"
for _ in $(seq 40); do "$T/quick_chain" 3; done
# A host that wakes profd late (stopped here): a program new to profd, so
# its exec event lists files profd has no path for, has exec'd on before
# the event is handled, and /proc shows its next image. Each image is
# named from its own list all the same. Stopped only that long: on a host
# exec'ing a hundred programs a second, a longer stop fills the event ring
# (process_events_lost). The last image stays until profd caught up. Three
# chains, each a copy new to profd: about 30 samples per image in all.
for i in 1 2 3; do
	mkdir "$T/late$i" && cp "$TP/exec_chain" "$T/late$i/late_chain"
	kill -STOP "$PROFD_PID"
	"$T/late$i/late_chain" 100 3 "$T/hold$i" &
	late=$!
	for _ in $(seq 6000); do
		read -r a0 _ level _ < <(tr '\0' ' ' <"/proc/$late/cmdline" 2>/dev/null)
		[ "$a0" = "$T/late$i/late_chain" ] && [ "$level" != 3 ] && break
		sleep 0.01
	done
	kill -CONT "$PROFD_PID"
	caught_up || fail "profd did not answer a flush after it was stopped"
	touch "$T/hold$i"
	wait "$late" || fail "late_chain exited $?"
done
caught_up || fail "profd did not answer a flush"
profctl dump --since "$(since_start)" >"$T/all" || { fail "profctl dump exited $?"; done_test; }
grep '^exec_chain;' "$T/all" >"$T/folded"
sort -t' ' -k2 -nr "$T/folded" | head -8 | cut -c1-200
unnamed() { awk -v c="$1;[unknown]" '{ split($0, f, ";") } f[1] == substr(c, 1, index(c, ";") - 1) {
	t += $NF; if (index($0, c) == 1) n += $NF } END { print n + 0, t + 0 }' "$2"; }
read -r unk all < <(unnamed exec_chain "$T/folded")
read -r qunk qall < <(unnamed quick_chain "$T/all")
read -r spin _ < <(share "$T/folded" exec_chain ";spin")
echo "exec_chain: $all samples, $unk with an unnamed outermost frame, $spin through spin; quick_chain: $qunk of $qall unnamed"
check "exec_chain's outermost frames named: $unk of $all samples unnamed (<= 5%)" \
	awk -v u="$unk" -v a="$all" 'BEGIN { exit !(a >= 40 && u <= 0.05 * a) }'
# Each image and its child spin as long: each has about an eighth of the samples through spin.
for l in 3 2 1 0; do
	read -r c _ < <(share "$T/folded" exec_chain ";chain_$l;spin")
	check "image $l named: $c of $spin samples in spin through chain_$l (>= 5%)" share_ok "$c" "$spin" 40 0.05
	read -r c _ < <(share "$T/folded" exec_chain ";forked_$l;spin")
	check "image $l's forked child named: $c of $spin samples in spin through forked_$l (>= 5%)" share_ok "$c" "$spin" 40 0.05
done
grep '^late_chain;' "$T/all" >"$T/late"
read -r lunk lall < <(unnamed late_chain "$T/late")
read -r lspin _ < <(share "$T/late" late_chain ";spin")
echo "late_chain: $lall samples, $lunk with an unnamed outermost frame, $lspin through spin"
check "late_chains' outermost frames named: $lunk of $lall samples unnamed (<= 5%)" \
	awk -v u="$lunk" -v a="$lall" 'BEGIN { exit !(a >= 40 && u <= 0.05 * a) }'
for f in chain_3 forked_3; do
	read -r c _ < <(share "$T/late" late_chain ";$f;spin")
	check "late_chains' first images named: $c of $lspin samples in spin through $f (>= 5%)" share_ok "$c" "$lspin" 40 0.05
done
check "profd exits 0 on SIGTERM" stop_profd
done_test
