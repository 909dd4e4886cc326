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
check "profd exits 0 on SIGTERM" stop_profd
done_test
