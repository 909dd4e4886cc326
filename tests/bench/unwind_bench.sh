#!/bin/bash
# BPF run time per sample of the on-CPU program: frame pointers vs the DWARF
# walker (bpf_enable_stats), on a frame-pointer build and on -fomit-frame-pointer
# builds. Root. Usage: tests/bench/unwind_bench.sh [SECONDS]
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
SECS=${1:-8}
ONLY=${ONLY:-} # "MODE:PROG ...": only those runs (the smoke test's short mode)
T=$(mktemp -d /tmp/profd-ubench.XXXXXX)
trap 'kill $STATS_PID 2>/dev/null; rm -rf "$T"' EXIT

# Run-time statistics for as long as this process holds the fd (BPF_ENABLE_STATS).
python3 - <<'PY' &
import ctypes, os, signal, struct, time
libc = ctypes.CDLL(None, use_errno=True)
attr = ctypes.create_string_buffer(struct.pack("I", 0), 64)  # BPF_STATS_RUN_TIME
fd = libc.syscall(321, 32, attr, 64)  # SYS_bpf, BPF_ENABLE_STATS
if fd < 0:
    raise SystemExit("BPF_ENABLE_STATS failed: %s" % os.strerror(ctypes.get_errno()))
signal.pause()
PY
STATS_PID=$!
sleep 0.5

# bpftool 7.1 prints one object, not a list, when one program has the name: list them all.
ids() { bpftool -j prog show 2>/dev/null | python3 -c 'import json,sys; print(" ".join(str(p["id"]) for p in json.load(sys.stdin) if p.get("name") == "on_cpu"))'; }
stats() { bpftool -j prog show id "$1" | python3 -c 'import json,sys; p=json.load(sys.stdin); print(p.get("run_time_ns",0), p.get("run_cnt",0))'; }

run() { # run MODE PROG...
	local mode=$1; shift
	[ -n "$ONLY" ] && [[ " $ONLY " != *" $mode:$1 "* ]] && return 0
	local before id pd rt0 n0 rt1 n1
	before=" $(ids) "
	rm -rf "$T/s"
	"$BUILD/profd" --state-dir "$T/s" --socket "$T/sock" --unwind "$mode" --no-offcpu >"$T/log" 2>&1 &
	pd=$!
	for _ in $(seq 600); do [ -S "$T/sock" ] && break; sleep 0.1; done
	for i in $(ids); do [[ "$before" == *" $i "* ]] || id=$i; done
	# Warm-up: the first samples of a process wait for its tables.
	for p in "$@"; do "$BUILD/testprogs/$p" 1 >/dev/null & done; wait_progs=1
	sleep 1.5
	read -r rt0 n0 <<<"$(stats "$id")"
	for p in "$@"; do "$BUILD/testprogs/$p" "$SECS" >/dev/null & done
	sleep "$SECS"
	read -r rt1 n1 <<<"$(stats "$id")"
	wait_for=$(jobs -p | grep -v "^$pd$" | grep -v "^$STATS_PID$"); [ -n "$wait_for" ] && wait $wait_for 2>/dev/null
	kill -TERM $pd; wait $pd 2>/dev/null
	awk -v m="$mode" -v p="$*" -v rt=$((rt1 - rt0)) -v n=$((n1 - n0)) \
		'BEGIN { printf "%-6s %-28s %6d samples %8.0f ns/sample\n", m, p, n, n ? rt / n : 0 }'
}

run fp phases phases
run dwarf phases phases
run dwarf phases_nofp phases_nofp
run dwarf qsort_nofp qsort_nofp
run fp qsort_nofp qsort_nofp
