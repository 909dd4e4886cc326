#!/bin/bash
# A program linked to a big library, run for the first time: clang on
# fresh copies of libclang-cpp (59 MB) and libLLVM (110 MB) (new inodes:
# no other clang on the host had them read). Their symbols are read on the
# symbolizer's worker thread, not in the event loop, where libLLVM's took
# 1.1-3.1 s of one turn at load 13-16 (nothing drained or served meanwhile);
# the frames sampled before a read is in are named when it is, before their
# window is written.
source "$(dirname "$0")/lib.sh"

LIBLLVM=$(ls /usr/lib/x86_64-linux-gnu/libLLVM-1[0-9].so.1 2>/dev/null | head -1)
LIBCLANG=$(readlink -f "$(ls /usr/lib/x86_64-linux-gnu/libclang-cpp.so.1[0-9] 2>/dev/null | head -1)")
command -v clang >/dev/null && [ -n "$LIBLLVM" ] && [ -f "$LIBCLANG" ] ||
	skip_test "needs clang linked to libLLVM and libclang-cpp"
ldd "$(readlink -f "$(command -v clang)")" | grep -q "$(basename "$LIBLLVM")" ||
	skip_test "clang is not linked to $(basename "$LIBLLVM")"

sv() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }

for f in $(seq 300); do
	echo "int f$f(int *a, int n) { int s = 0; for (int i = 0; i < n; i++) s += a[i] * $f ^ (s >> 3); return s; }"
done >"$T/big.c"
mkdir "$T/lib"
cp "$LIBLLVM" "$LIBCLANG" "$T/lib/"

start_profd
check "profd settled: two drains and a window within 15 s" settled
profctl status >"$T/s0"
LD_LIBRARY_PATH=$T/lib clang -O2 -c -o "$T/big.o" "$T/big.c" &
CP=$!
wait $CP
check "clang compiled" test -s "$T/big.o"
# The reads may outlast clang on a loaded host; its windows wait for them (10 s at most).
for _ in $(seq 600); do
	[ "$(profctl status | awk '$1 == "symbol_loads_waiting" { print $2 }')" = 0 ] && break
	sleep 0.1
done
profctl dump --pid "$CP" --since "$(since_start)" >"$T/folded" || fail "profctl dump exited $?"
profctl status >"$T/s1"
d() { echo $(($(sv "$T/s1" "$1") - $(sv "$T/s0" "$1"))); }
echo "reads on the worker $(d symbol_loads_async), the longest $(sv "$T/s1" symbol_load_async_max_ms) ms;" \
	"in the loop the longest $(sv "$T/s1" symbol_read_inline_max_ms) ms; loop turn max $(sv "$T/s1" loop_turn_max_ms) ms;" \
	"frames named later $(d frames_named_later), waiting at the dump $(sv "$T/s1" frames_later_waiting)," \
	"dropped $(d frames_later_dropped); flushes held $(d flushes_held)"

check "libLLVM's and libclang-cpp's symbols read on the worker ($(d symbol_loads_async) >= 2)" \
	test "$(d symbol_loads_async)" -ge 2
# Only files under 2 MiB are read in the loop: tens of ms on a loaded VM, where libLLVM's took seconds.
check "no read of a file's symbols held the loop a second ($(sv "$T/s1" symbol_read_inline_max_ms) ms)" \
	awk -v t="$(sv "$T/s1" symbol_read_inline_max_ms)" 'BEGIN { exit !(t != "" && t < 1000) }'
samples=$(awk '{ n += $NF } END { print n + 0 }' "$T/folded")
llvm=$(awk '/;(llvm|clang)::/ { n += $NF } END { print n + 0 }' "$T/folded")
check "clang sampled ($samples samples), its frames named from libLLVM and libclang-cpp ($llvm samples through llvm:: or clang::)" \
	test "$llvm" -gt 0
check "no frame written unnamed for want of its file's symbols (frames_later_dropped grew by $(d frames_later_dropped))" \
	test "$(d frames_later_dropped)" -eq 0
check "profd exits 0 on SIGTERM" stop_profd

# Drains 30 s apart: the flush's own drain is the first to meet clang's
# frames, so its window is held for their names. It is asked again on its
# own clock, not at the next drain tick: profctl waits 5 s for its answer.
# Fresh copies again (new inodes: symbols not read yet), and the flush
# asked while clang runs, before the worker can have read libLLVM's.
start_profd --drain-interval 30s --flush-interval 30s
mkdir "$T/lib2"
cp "$LIBLLVM" "$LIBCLANG" "$T/lib2/"
LD_LIBRARY_PATH=$T/lib2 clang -O2 -c -o "$T/big2.o" "$T/big.c" &
CP=$!
# Flushes every 0.3 s while clang runs: in about half of the runs one meets
# frames waiting (held, printed below); otherwise the reads were done first.
rc=0 ms=0 n=0
while kill -0 $CP 2>/dev/null && [ $n -lt 40 ]; do
	sleep 0.3
	t0=$(date +%s%N)
	profctl flush >>"$T/flush.out" 2>&1 || rc=$?
	t=$((($(date +%s%N) - t0) / 1000000)); [ $t -gt $ms ] && ms=$t
	n=$((n + 1))
done
wait $CP
profctl status >"$T/s2"
echo "$n flushes with drains 30 s apart: exit $rc, the slowest $ms ms; flushes held $(sv "$T/s2" flushes_held), expired $(sv "$T/s2" flushes_held_expired)"
check "flushes held for names are answered with drains 30 s apart ($n: exit $rc, the slowest $ms ms)" test "$rc" = 0
done_test
