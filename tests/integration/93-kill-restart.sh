#!/bin/bash
# kill -9 and restart in a loop under load: each round starts profd, flushes
# a window, notes what profctl ls lists, and kills profd at a random moment
# (perhaps mid-write). Every window listed before a kill must still be listed
# and readable afterwards; restarts succeed (no stale lock, torn tails cut).
source "$(dirname "$0")/lib.sh"

ROUNDS=20
"$TP/benchwork" 2 100000000 >/dev/null & BW=$!
on_exit "kill $BW"
: >"$T/seen"
for r in $(seq 1 $ROUNDS); do
	start_profd
	# A window to flush (an empty one is not written): the first sample,
	# not a fixed 0.5 s, 10 s of the test's 58 on an idle VM.
	sampled || fail "round $r: no sample within 15 s of the start"
	n0=$(profctl ls | tail -n +2 | wc -l)
	check "round $r: flush answered" profctl flush
	# Segments are renamed when sealed: compare windows without the file name.
	profctl ls | tail -n +2 | cut -f1-5 >"$T/now"
	check "round $r: the flush wrote a window ($n0 listed before, $(wc -l <"$T/now") after)" \
		test "$(wc -l <"$T/now")" -gt "$n0"
	cat "$T/now" >>"$T/seen"
	# Kill at a random moment, often in the middle of writing a window: a
	# second flush is under way when the kill lands 0-49 ms later.
	sleep "0.$((RANDOM % 5))"
	profctl flush >/dev/null 2>&1 &
	sleep "0.0$((RANDOM % 50 / 10))$((RANDOM % 10))"
	kill -9 "$PROFD_PID"
	wait "$PROFD_PID" 2>/dev/null
	PROFD_PID=
	# The dead profd's socket file stays; start_profd waits for a new one.
	rm -f "$SOCK"
done
sort -u "$T/seen" -o "$T/seen"
echo "$(wc -l <"$T/seen") windows listed before the kills"

start_profd
profctl ls | tail -n +2 | cut -f1-5 | sort -u >"$T/after"
missing=$(comm -23 "$T/seen" "$T/after" | wc -l)
check "every window flushed before a kill is still listed ($missing of $(wc -l <"$T/seen") missing)" \
	test "$missing" -eq 0 -a "$(wc -l <"$T/seen")" -ge $ROUNDS
comm -23 "$T/seen" "$T/after" | head -3
want=$(awk -F'\t' '{ s += $3 } END { print s + 0 }' "$T/seen")
profctl dump --no-flush --since 1h >"$T/all.folded" 2>"$T/dump.err"
rc=$?
got=$(awk '{ s += $NF } END { print s + 0 }' "$T/all.folded")
check "profctl dump reads them all: exit $rc, $got samples >= $want listed" test "$rc" -eq 0 -a "$got" -ge "$want"
check "dump warns about nothing it cannot read: $(head -1 "$T/dump.err")" test ! -s "$T/dump.err"
bw=$(awk '/^benchwork;/ { s += $NF } END { print s + 0 }' "$T/all.folded")
check "the load is in the stored windows ($bw benchwork samples)" test "$bw" -gt 0
check "profd after the kills is healthy: status answers" eval 'profctl status >/dev/null'
check "profd exits 0 on SIGTERM" stop_profd
done_test
