#!/bin/bash
# Control characters in names never reach a terminal or a log line raw: a
# process named ESC[2J BEL, a program whose file name holds a newline and
# "<0>", a state directory and a config file named the same way. No raw ESC, BEL, CR or
# newline inside a name in dump, top, diff, ls or status; profd's journal
# lines all carry its own priority (none forged as <0>). Escapes are \xHH.
source "$(dirname "$0")/lib.sh"

STATE=$T/$'st\n<0>ate'
CONF=$T/$'c\n<0>.conf'
: >"$CONF"
JOURNAL_STREAM=8:1234 start_profd --config "$CONF" --log-level debug --unwind dwarf
mkdir "$T/bin"
EVIL=$T/bin/$'evil\n<0>x'
cp "$TP/sym_spin" "$EVIL"
"$EVIL" 2 &
E=$!
(
	printf '\033[2J\007spin' >/proc/$BASHPID/comm
	end=$((SECONDS + 3))
	while [ $SECONDS -lt $end ]; do :; done
) &
S=$!
wait $E $S

profctl dump --since 2m >"$T/out.folded" || fail "dump exited $?"
profctl dump --since 2m --threads --no-flush >"$T/out.threads" || fail "dump --threads exited $?"
profctl top --since 2m --limit 0 --no-flush >"$T/out.top" || fail "top exited $?"
profctl diff --base-since 2m --base-until 1s --since 2m --no-flush >"$T/out.diff" || fail "diff exited $?"
profctl ls >"$T/out.ls" || fail "ls exited $?"
profctl status >"$T/out.status" || fail "status exited $?"
stop_profd || fail "profd exited non-zero"

grep -aE 'spin|evil' "$T/out.folded" | cut -c1-160 | head -4
check "dump names the ESC[2J BEL process, escaped" grep -qaF '\x1b[2J\x07spin;' "$T/out.folded"
check "dump names the newline <0> program, escaped" grep -qaF 'evil\x0a<0>x;' "$T/out.folded"
check "dump --threads: the thread names escaped too" grep -qaF '\x1b[2J\x07spin;\x1b[2J\x07spin;' "$T/out.threads"
for o in folded threads top diff ls status; do
	n=$(tr -cd '\033\007\r' <"$T/out.$o" | wc -c)
	check "$o: no raw ESC, BEL or CR ($n)" [ "$n" -eq 0 ]
done
for o in folded threads; do
	check "$o: every line is 'stack value' (no name split by a newline)" bash -c "! grep -qavE ' [0-9]+\$' '$T/out.$o'"
done
check "diff: every line is 'stack before after'" bash -c "! grep -qavE ' [0-9]+ [0-9]+\$' '$T/out.diff'"
check "status: every line is 'key<TAB>value'" bash -c "! grep -qav \$'\\t' '$T/out.status'"
check "status: the config file's name escaped" grep -qaF 'c\x0a<0>.conf' "$T/out.status"

grep -a 'sampling' "$T/profd.log" | cut -c1-200
check "log: the state directory escaped in the start line" grep -qaF 'st\x0a<0>ate' "$T/profd.log"
check "log: every line starts with profd's priority (none forged)" bash -c "! grep -qavE '^<[3-7]>' '$T/profd.log'"
n=$(tr -cd '\033\007\r' <"$T/profd.log" | wc -c)
check "log: no raw ESC, BEL or CR ($n)" [ "$n" -eq 0 ]
done_test
