#!/bin/bash
# A process that execs again and again, a shell shim's chain (shim -> env
# -> script -> program), has a new image at a new load address each time,
# and the samples of all of them are drained after its last exec: each
# image's frames are named from that image's mappings, not only the last
# two images' (the images before an exec were kept per entry, and each
# exec started the entry afresh). So are those of a child each image
# forks at once (a script's command substitution): from the image it was
# forked from, not the one its parent has at the drain.
source "$(dirname "$0")/lib.sh"

start_profd
check "profd settled: two drains and a window within 15 s" settled
# Four images of 60 ms of CPU each, and a child of each (forked at once,
# like a shell's command substitution) as long: several samples each at 99 Hz.
for _ in $(seq 3); do "$TP/exec_chain" 60; done
# Images of 3 ms: the whole chain within one drain.
for _ in $(seq 40); do "$TP/exec_chain" 3; done
caught_up || fail "profd did not answer a flush"
profctl dump --since "$(since_start)" --comm exec_chain >"$T/folded" || { fail "profctl dump exited $?"; done_test; }
sort -t' ' -k2 -nr "$T/folded" | head -8 | cut -c1-200
read -r unk all < <(awk '{ t += $NF } /^exec_chain;\[unknown\]/ { n += $NF } END { print n + 0, t + 0 }' "$T/folded")
read -r spin _ < <(share "$T/folded" exec_chain ";spin")
echo "exec_chain: $all samples, $unk with an unnamed outermost frame, $spin through spin"
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
