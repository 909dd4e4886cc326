#!/bin/bash
# Off-CPU time of a Python thread goes to the Python function that blocked,
# also when two functions block at the same native pc and sp: from 3.11 a
# Python call adds no native frame, so time.sleep in nap() and in
# long_wait(), called from one loop, leave the same native stack, and only
# the Python frames tell the two waits apart; the same for one function
# that sleeps, called from two (short_call, long_call). The short sleeps,
# one after another, are what makes a place's stacks trusted for longer.
source "$(dirname "$0")/lib.sh"
atleast() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }

python_interpreters

cat >"$T/naps.py" <<'PY'
import sys
import time


def nap():
    time.sleep(0.001)


def long_wait(s):
    time.sleep(s)


# One function that sleeps, called from two: only the caller differs.
def sleep_in(s):
    time.sleep(s)


def short_call():
    sleep_in(0.001)


def long_call(s):
    sleep_in(s)


def loop(secs):
    end = time.monotonic() + secs
    slept = [0.0, 0.0]
    while time.monotonic() < end:
        for _ in range(30):
            nap()
        t0 = time.monotonic()
        long_wait(0.05)
        slept[0] += time.monotonic() - t0
        for _ in range(30):
            short_call()
        t0 = time.monotonic()
        long_call(0.05)
        slept[1] += time.monotonic() - t0
    print("long_wait_us", int(slept[0] * 1e6))
    print("long_call_us", int(slept[1] * 1e6))


loop(float(sys.argv[1]))
PY

start_profd
declare -A PID=()
for l in $LABELS; do
	"${INTERP[$l]}" "$T/naps.py" 6 >"$T/naps.$l.out" & PID[$l]=$!
done
for l in $LABELS; do wait ${PID[$l]} || fail "$l: naps.py exited $?"; done
caught_up || fail "profd did not catch up within 12 flushes of 10 s"

for l in $LABELS; do
	f=$T/naps.$l
	profctl dump --pid "${PID[$l]}" --since "$(since_start)" --type offcpu --no-flush |
		sed -E 's/ ([0-9]+)$/\t\1/' >"$f"
	for fn in long_wait long_call; do
		want=$(awk -v k="${fn}_us" '$1 == k { print $2 }' "$T/naps.$l.out")
		got=$(awk -F'\t' -v p=";$fn [(]naps[.]py[)];" '$1 ~ p { s += $2 } END { print s + 0 }' "$f")
		minw=$(awk -v w="${want:-1e18}" 'BEGIN { print 0.8 * w }')
		maxw=$(awk -v w="${want:-0}" 'BEGIN { print 1.2 * w }')
		check "$l: off-CPU in $fn $got us of its ${want:-?} us asleep (>= 0.8 x)" atleast "$got" "$minw"
		check "$l: off-CPU in $fn $got us (<= 1.2 x: none of the short sleeps)" atleast "$maxw" "$got"
		atleast "$got" "$minw" || sort -t$'\t' -k2,2nr "$f" | head -4 | cut -c1-400
	done
done
done_test
