#!/bin/bash
# Paths a process controls name nothing for anyone else. profd runs with the
# shipped unit's bounding set (no CAP_SYS_ADMIN, no CAP_CHECKPOINT_RESTORE),
# so map_files is closed to it and it opens mapped files by path inside each
# process's root. As an unprivileged user, one process maps libhot.so, then
# binds a fake ELF naming POISONED_BY_NOBODY over that path in a user and
# mount namespace of its own; another binds a file that is not ELF at all.
# A root process using the real libhot.so afterwards is named hot_spin, the
# fake's name appears nowhere, and the library is not marked bad. Then a
# FIFO and a character device planted at /tmp/perf-PID.map of two JIT
# processes are refused without being opened: a writer blocked on the FIFO
# is never released, and profd keeps answering.
source "$(dirname "$0")/lib.sh"

command -v setpriv >/dev/null || skip_test "no setpriv"
command -v cc >/dev/null || skip_test "no cc"
id nobody >/dev/null 2>&1 || skip_test "no user nobody"
chmod 711 "$T"
P=$T/pub
mkdir -p "$P"
cat >"$P/hot.c" <<'EOF'
volatile unsigned long hot_sink;
void hot_spin(void) { for (int i = 0; i < 200000; i++) hot_sink += (unsigned long)i; }
EOF
cc -shared -fPIC -O1 -fno-omit-frame-pointer -o "$P/libhot.so" "$P/hot.c"
# The same code under the telltale name: same layout, so every address the real library has, the fake names.
cc -shared -fPIC -O1 -fno-omit-frame-pointer -Dhot_spin=POISONED_BY_NOBODY -o "$P/fake.so" "$P/hot.c"
echo "not an ELF file" >"$P/notelf"
cp "$TP/decoy" "$TP/sym_jit" "$P/"
chmod 755 "$P" "$P"/*
# An array, not a function: a function in the background is a subshell, and $! its pid.
ASUSER=(setpriv --reuid nobody --regid nogroup --clear-groups)
sv() { awk -v k="$1" '$1 == k { print $2 }' "$T/status"; }
# The unit without CAP_CHECKPOINT_RESTORE: map_files is closed, so files are
# opened by their path inside the process's root, the path a decoy can bind over.
grep -q '^CapabilityBoundingSet=.*CAP_CHECKPOINT_RESTORE' "$UNIT" || { fail "the unit grants no CAP_CHECKPOINT_RESTORE to take away"; done_test; }
sed '/^CapabilityBoundingSet=/s/ *CAP_CHECKPOINT_RESTORE//' "$UNIT" >"$T/no-map-files.service"
UNIT=$T/no-map-files.service start_profd

"${ASUSER[@]}" "$P/decoy" "$P/libhot.so" "$P/fake.so" hot_spin 5 >"$T/d1.out" 2>&1 & d1=$!
"${ASUSER[@]}" "$P/decoy" "$P/libhot.so" "$P/notelf" hot_spin 5 >"$T/d2.out" 2>&1 & d2=$!
on_exit "kill $d1 $d2"
for _ in $(seq 50); do
	grep -q ready "$T/d1.out" && grep -q ready "$T/d2.out" && break
	kill -0 $d1 2>/dev/null || break
	sleep 0.1
done
if ! grep -q ready "$T/d1.out"; then
	cat "$T/d1.out"
	grep -q 'unshare\|mount' "$T/d1.out" && skip_test "unprivileged user namespaces are not available"
	fail "decoy did not start"
	done_test
fi
# The decoys run first: whatever profd caches for libhot.so, it caches from them.
sleep 3
"$P/decoy" "$P/libhot.so" - hot_spin 2 >/dev/null & host=$!
wait $host
wait $d1 $d2 2>/dev/null
profctl flush >/dev/null
profctl status >"$T/status"
profctl dump --no-flush --since 1m >"$T/all.folded"
profctl dump --no-flush --since 1m --pid $host >"$T/host.folded"
grep -E '^symbol_(files_|nonregular|bad_files|perfmaps)' "$T/status"
n=$(awk '/;hot_spin( |;)/ { s += $NF } END { print s + 0 }' "$T/host.folded")
check "the root process using the real library is named hot_spin ($n samples)" test "$n" -gt 20
check "POISONED_BY_NOBODY names no frame of anyone" bash -c "! grep -q POISONED_BY_NOBODY '$T/all.folded'"
for p in $d1 $d2; do
	n=$(profctl dump --no-flush --since 1m --pid $p | awk '{ s += $NF } END { print s + 0 }')
	check "decoy $p was sampled ($n samples)" test "$n" -gt 0
done
check "both decoys were refused as not the file mapped (symbol_files_mismatched $(sv symbol_files_mismatched) >= 2)" \
	test "$(sv symbol_files_mismatched)" -ge 2
check "the non-ELF decoy did not mark libhot.so bad" bash -c "! grep -q 'cannot read symbols from.*libhot' '$T/profd.log'"

# Perf maps: a FIFO and a character device planted where two JIT processes' maps belong.
"${ASUSER[@]}" "$P/sym_jit" 3 wait >/dev/null & j1=$!
"${ASUSER[@]}" "$P/sym_jit" 3 wait >/dev/null & j2=$!
on_exit "kill $j1 $j2; rm -f /tmp/perf-$j1.map /tmp/perf-$j2.map"
mkfifo -m 644 "/tmp/perf-$j1.map"
chown nobody "/tmp/perf-$j1.map"
# Blocks until someone opens the FIFO for reading: profd must never be that someone.
(exec 3>"/tmp/perf-$j1.map"; echo opened >"$T/fifo_opened") & writer=$!
on_exit "kill $writer"
mknod -m 644 "/tmp/perf-$j2.map" c 1 3
chown nobody "/tmp/perf-$j2.map"
rejected0=$(sv symbol_perfmaps_rejected)
wait $j1 $j2 2>/dev/null
sleep 1
check "profd answers (not stuck on a FIFO)" timeout 5 "$PROFCTL_BIN" --state-dir "$STATE" --socket "$SOCK" status >"$T/status"
check "the planted perf maps are refused and counted ($rejected0 -> $(sv symbol_perfmaps_rejected))" \
	test "$(sv symbol_perfmaps_rejected)" -ge $((rejected0 + 2))
check "non-regular files are counted ($(sv symbol_nonregular_refused) >= 2)" test "$(sv symbol_nonregular_refused)" -ge 2
# Any other profiler on the host (another profd) may open it, and release the writer, itself.
others=$(pgrep -x profd | grep -vx "$PROFD_PID" | wc -l)
if [ "$others" -eq 0 ]; then
	check "the FIFO was never opened for reading" test ! -e "$T/fifo_opened"
else
	echo "info: $others other profd processes run on this host: whether the FIFO was opened is not checked"
fi
profctl dump --no-flush --since 1m --pid $j1 --pid $j2 >"$T/jit.folded"
n=$(awk '{ s += $NF } END { print s + 0 }' "$T/jit.folded")
check "the JIT processes were sampled ($n samples)" test "$n" -gt 20
check "profd exits 0 on SIGTERM" stop_profd
done_test
