#!/bin/bash
# The kernel walker against libunwind on the same snapshots: in test mode
# (--unwind-snapshots PID:FILE) the BPF program sends, with each sample of
# PID, the registers, 16 KB of stack and its own frames, and profd appends
# them to FILE; tests/tools/unwind_check follows the file while PID runs,
# unwinds each copy again with libunwind (unw_init_remote over the copy and
# the ELF files) and writes both. Frames agree when both have the same pc at
# the same depth. profd itself does not link libunwind.
source "$(dirname "$0")/lib.sh"

# 8 s: profd attaches a second or two after the program starts, and the
# check asks for 300 walked snapshots (about 3 s at 99 Hz) with room to spare.
for prog in qsort_nofp phases_nofp; do
	"$TP/$prog" 8 >/dev/null &
	PID=$!
	"$BUILD/tests/tools/unwind_check" "$PID" "$T/snaps.$prog" "$T/check.$prog" \
		2>"$T/ucheck.$prog" &
	CK=$!
	on_exit "kill $CK"
	start_profd --unwind-snapshots "$PID:$T/snaps.$prog"
	wait $PID
	check "unwind_check reads every snapshot and exits 0 ($prog)" wait $CK
	cat "$T/ucheck.$prog"
	check "profd exits 0 on SIGTERM ($prog)" stop_profd
	rm -rf "$STATE"
	# Snapshots taken before the tables they needed were loaded (field 5 "fp":
	# a new process, a file still being built) hold the frame-pointer
	# fallback, not the DWARF walk: counted, reported, bounded.
	read -r snaps kf lf agree worst fp <<<"$(awk '$5 == "fp" { f++; next }
		{ m = $1 > $2 ? $1 : $2; a += $3; t += m; k += $1; l += $2; n++ }
		END { print n + 0, k + 0, l + 0, a + 0, t + 0, f + 0 }' "$T/check.$prog" 2>/dev/null)"
	echo "$prog: $snaps DWARF snapshots (+ $fp before tables), kernel $kf frames, libunwind $lf frames, agreeing $agree of $worst"
	check "$prog: at least 300 snapshots walked with tables" test "${snaps:-0}" -ge 300
	check "$prog: snapshots before tables loaded ($fp) under 10% of all" \
		awk -v f="${fp:-0}" -v n="${snaps:-0}" 'BEGIN { exit !(f < 0.1 * (f + n)) }'
	check "$prog: libunwind walks are deep (>= 6 frames on average)" \
		awk -v l="${lf:-0}" -v n="${snaps:-0}" 'BEGIN { exit !(n && l / n >= 6) }'
	pct=$(awk -v a="${agree:-0}" -v t="${worst:-0}" 'BEGIN { printf "%.3f", t ? 100 * a / t : 0 }')
	check "$prog: kernel walker and libunwind agree on $pct% of frames (>= 99%)" \
		awk -v p="$pct" 'BEGIN { exit !(p >= 99) }'
	awk '$3 < ($1 > $2 ? $1 : $2)' "$T/check.$prog" | head -3 | cut -c1-300
done
done_test
