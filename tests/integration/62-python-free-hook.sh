#!/bin/bash
# The Python free hook, per process (under the unit's capabilities): a
# CPython process that has lived --python-free-hook-after (2 s, the
# default) and is sampled gets a uprobe in its own memory (the int3 at
# code_dealloc, which the process reads itself), its frees are all counted
# (two threads), a 1 s script of the same interpreter gets no link and no
# breakpoint, a child it forks is named right while its code objects churn
# and loses the parent's breakpoint, and the links are closed as the
# processes exit. Then, with --python-free-hook-max-rate 200, a process
# that frees faster is unhooked and its breakpoint goes.
source "$(dirname "$0")/lib.sh"

PY=$ROOT/tests/testprogs/python
python_interpreters
# The generation matters most before 3.12 (a cached code object is checked by content there).
l=$(echo $LABELS | tr ' ' '\n' | grep -m1 -E '^(py3[.]10|py3[.]11|debian3[.]11)$' || echo $LABELS | awk '{ print $1 }')
P=${INTERP[$l]}
echo "interpreter: $l ($P)"

st() { profctl status | awk -F'\t' -v k="$1" '$1 == k { print $2 + 0; f = 1 } END { if (!f) print -1 }'; }
atleast() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }
# wait_line FILE PATTERN: a line of FILE matches within 120 s.
wait_line() {
	for _ in $(seq 600); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.2; done
	return 1
}

start_profd --frequency 499 --no-offcpu --python-free-hook-max-rate 0
caught_up || fail "profd did not catch up within 12 flushes of 10 s"
mkdir "$T/d"
"$P" "$PY/freehook.py" "$T/d" >"$T/fh.out" 2>&1 &
FH=$!
on_exit "kill $FH"
for _ in $(seq 600); do [ -e "$T/d/hooked" ] && break; sleep 0.2; done
age=$(cat "$T/d/hooked" 2>/dev/null)
# profd's clock and /proc's ticks: 10 ms apart at most.
check "hooked at the age of ${age:-never} s (>= 2: --python-free-hook-after)" atleast "${age:-0}" 1.99
check "one link with its pid in profd ($(free_hook_links $FH))" [ "$(free_hook_links $FH)" -eq 1 ]

# A script of the same interpreter, shorter than the hook's age: no link, no breakpoint.
"$P" - >"$T/short.out" <<'EOF' &
import ctypes, time, types
end = time.monotonic() + 1.0
n = 0
while time.monotonic() < end:
    exec(compile("def s(x):\n    return x\n", "<short>", "exec"), {})
    n += 1
print("short", n, ctypes.string_at(ctypes.c_void_p.from_address(id(types.CodeType) + 48).value, 1) == b"\xcc")
EOF
SH=$!
nl=0
while kill -0 $SH 2>/dev/null; do nl=$((nl + $(free_hook_links $SH))); sleep 0.1; done
wait $SH || fail "the short script exited $?"
check "short script: no breakpoint at its code_dealloc ($(cat "$T/short.out"))" grep -q "False$" "$T/short.out"
check "short script: no link with its pid seen while it ran ($nl)" [ "$nl" -eq 0 ]

# The parent's own view, then its child's churn (the flag is not the child's).
touch "$T/d/go1"
wait_line "$T/fh.out" '^child ' || fail "no child forked: $(cat "$T/fh.out")"
check "hooked process: breakpoint at its code_dealloc" grep -q '^hooked True' "$T/fh.out"
CHILD=$(awk '$1 == "child" { print $2 }' "$T/fh.out")
wait_line "$T/fh.out" '^functions ' || fail "the child's churn did not end: $(cat "$T/fh.out")"
f0=$(st python_code_frees)
touch "$T/d/go2"
wait_line "$T/fh.out" '^made ' || fail "no count of code objects made: $(cat "$T/fh.out")"
f1=$(st python_code_frees)
made=$(awk '$1 == "made" { print $2 }' "$T/fh.out")
check "two threads: $((f1 - f0)) frees counted of $made code objects made (>=)" [ $((f1 - f0)) -ge "$made" ]
touch "$T/d/go3"
wait $FH || fail "freehook.py exited $?"
caught_up || fail "profd did not catch up after the processes"

# The child: f_N must be under run_mod{N % 3}, k_N under run_k{N % 3} (as 60-python's churn).
profctl dump --pid "$CHILD" --since "$((SECONDS + 60))s" --type cpu --no-flush | sed -E 's/ ([0-9]+)$/\t\1/' >"$T/child"
churn_check "$T/child" >"$T/child.check"
read -r good bad <"$T/child.check"
check "forked child churn: $good samples in generated functions (>= 20)" [ "$good" -ge 20 ]
check "forked child churn: $bad samples name a generated function under the wrong caller (0)" [ "$bad" -eq 0 ]
check "forked child: the parent's link made again to take its breakpoint out ($(st python_free_relinks) >= 1)" \
	[ "$(st python_free_relinks)" -ge 1 ]
check "generation: $(st python_code_gen_hits) frames named by it (>= 100)" [ "$(st python_code_gen_hits)" -ge 100 ]
check "exits: no link with its pid or its child's left ($(free_hook_links $FH), $(free_hook_links $CHILD))" \
	[ "$(free_hook_links $FH)" -eq 0 -a "$(free_hook_links $CHILD)" -eq 0 ]
check "no hook failures ($(st python_free_hook_failures))" [ "$(st python_free_hook_failures)" -eq 0 ]
profctl status | grep '^python_free\|^python_code' | tr '\t' ' ' | paste -sd' '
check "profd exits 0 on SIGTERM" stop_profd

# The rate bound: the 2 s of code objects at a few thousand a second or more, over 200.
start_profd --frequency 499 --no-offcpu --python-free-hook-max-rate 200
caught_up || fail "profd did not catch up within 12 flushes of 10 s"
rm -rf "$T/d" && mkdir "$T/d"
"$P" "$PY/freehook.py" "$T/d" >"$T/fh2.out" 2>&1 &
FH=$!
on_exit "kill $FH"
for _ in $(seq 600); do [ -e "$T/d/hooked" ] && break; sleep 0.2; done
[ -e "$T/d/hooked" ] || fail "no free hook within 120 s"
touch "$T/d/go1"
wait_line "$T/fh2.out" '^functions ' || fail "the child's churn did not end: $(cat "$T/fh2.out")"
touch "$T/d/go2"
wait_line "$T/fh2.out" '^made ' || fail "no count of code objects made: $(cat "$T/fh2.out")"
# Unhooked: the flag cleared, the link closed a second later.
for _ in $(seq 600); do [ "$(free_hook_links $FH)" -eq 0 ] && break; sleep 0.2; done
check "rate bound: the link with its pid closed ($(free_hook_links $FH) left; $(st python_free_unhooks) unhooked)" \
	[ "$(free_hook_links $FH)" -eq 0 -a "$(st python_free_unhooks)" -ge 1 ]
OTHERS=$(other_hook_holders $FH)
touch "$T/d/go3"
wait $FH || fail "freehook.py exited $?"
check "unhooked at the rate bound: breakpoint gone ($(grep hooked "$T/fh2.out" | paste -sd' ');${OTHERS:+ also hooked by} ${OTHERS:-no other process hooked it})" \
	[ "$(grep -c '^hooked' "$T/fh2.out")" -eq 2 -a "$(grep '^hooked' "$T/fh2.out" | tail -1)" = "hooked False" ]
check "profd exits 0 on SIGTERM" stop_profd
done_test
