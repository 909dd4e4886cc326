#!/bin/bash
# An unwind table nobody maps is kept for the next run of its file, and
# checked before reuse: the file at that (device, inode) may have changed.
# The same file rewritten in place (same inode, another program) gets a
# table of its own: its stacks keep their callers down to libc's start.
# The symbolizer, too, reads the file again: the exec event's size and
# mtime of the inode no longer match what it read, so the new program is
# named by its own functions, never the old one's.
source "$(dirname "$0")/lib.sh"

sv() { profctl status | awk -F'\t' -v k="$1" '$1 == k { print $2 }'; }
start_profd --unwind dwarf
cp "$TP/qsort_nofp" "$T/prog"
ino=$(stat -c %i "$T/prog")
"$T/prog" 1 >/dev/null
c0=$(sv unwind_file_checks) p0=$(sv unwind_file_checks_by_path)
"$T/prog" 1 >/dev/null
c1=$(sv unwind_file_checks) p1=$(sv unwind_file_checks_by_path)
# Host-wide counters (every exec on the host counts): printed, not checked.
echo "file checks $c0 -> $c1, by path $p0 -> $p1"

# Another program in the same inode: size and time differ, the table is built again.
cat "$TP/phases_nofp" >"$T/prog"
ino2=$(stat -c %i "$T/prog")
check "the file was rewritten in place (inode $ino -> $ino2)" test "$ino2" = "$ino"
"$T/prog" 4 >/dev/null &
PID=$!
wait $PID
c2=$(sv unwind_file_checks) p2=$(sv unwind_file_checks_by_path)
echo "file checks $c1 -> $c2, by path $p1 -> $p2"
profctl dump --pid $PID --since 2m >"$T/folded" || { fail "profctl dump exited $?"; done_test; }
sort -t' ' -k2 -nr "$T/folded" | head -3 | cut -c1-300
# Whole: libc's start, then main's caller chain (main, run, mid, phase: 4 frames of prog at least).
read -r n whole <<<"$(awk '{ n += $NF; i = index($0, ";__libc_start_call_main;")
	if (i) { k = split(substr($0, i + 24), f, ";"); p = 0
		for (j = 1; j <= k; j++) if (f[j] !~ /_\[k\]( [0-9]+)?$/) p++
		if (p >= 4) w += $NF } } END { print n + 0, w + 0 }' "$T/folded")"
pct=$(awk -v a="$whole" -v b="$n" 'BEGIN { printf "%.2f", b ? 100 * a / b : 0 }')
check "the rewritten program has samples ($n >= 100)" test "$n" -ge 100
check "its stacks reach libc's start through 4 callers: $pct% >= 90% (a stale table cuts them)" \
	awk -v c="$pct" 'BEGIN { exit !(c >= 90) }'
# Named by its own symbols: one of the three phases under mid.
read -r own <<<"$(awk '/;mid;phase_[abc](;| )/ { w += $NF } END { print w + 0 }' "$T/folded")"
read -r old <<<"$(awk '/;(compare|loop)(;| )/ { w += $NF } END { print w + 0 }' "$T/folded")"
pct=$(awk -v a="$own" -v b="$n" 'BEGIN { printf "%.2f", b ? 100 * a / b : 0 }')
check "named by the new program's functions (mid;phase_*): $pct% >= 90%" \
	awk -v c="$pct" 'BEGIN { exit !(c >= 90) }'
check "no sample named by the old program's functions (compare, loop): $old" test "$old" = 0
echo "symbol files read again after a change: $(sv symbol_files_changed)"
check "profd exits 0 on SIGTERM" stop_profd
done_test
