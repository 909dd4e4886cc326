#!/bin/bash
# The loop's longest turn when a program linked to a big library runs for
# the first time: a fresh profd per run, then one `clang -O2 -c` on fresh
# copies of libclang-cpp (59 MB) and libLLVM (110 MB) (LD_LIBRARY_PATH: new
# inodes, so that no other clang on the host had them read already), whose
# symbols profd reads when it meets them.
# Meanwhile a client asks for `status` every 20 ms: an answer waits for the
# turn in progress, so its latency is the stall as a user of the socket sees
# it, on any build. Reported per run and build: the slowest status answer,
# the longest drain of the run (drain_max_recent_us) and, on builds that
# have them, the loop's turns over 50 ms during the run and the worker's
# longest read (else "-"), and the share
# of clang's samples (by value) with a frame in libLLVM or libclang-cpp that stays
# unnamed ([libLLVM-14.so.1+0x...]) in `profctl dump`.
# BUILD=DIR the build (default build); BASE=DIR a second build started at
# the same moment (same load) for an A/B. PROFD_ARGS: more profd options.
# Root. Usage: tests/bench/first_read.sh [RUNS]
set -u
cd "$(dirname "$0")/../.."
source tests/bench/stats.sh
BUILD=${BUILD:-build}
BASE=${BASE:-}
RUNS=${1:-5}
T=$(mktemp -d /tmp/profd-fread.XXXXXX)
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
for f in $(seq 300); do
	echo "int f$f(int *a, int n) { int s = 0; for (int i = 0; i < n; i++) s += a[i] * $f ^ (s >> 3); return s; }"
done >"$T/big.c"
cat >"$T/poll.py" <<'PY'
import os, socket, sys, time
path, stop, out = sys.argv[1:4]
lat = []
while not os.path.exists(stop):
    t0 = time.monotonic()
    try:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(30)
        s.connect(path)
        s.sendall(b"status\n")
        while s.recv(65536):
            pass
        s.close()
        lat.append((time.monotonic() - t0) * 1000)
    except OSError:
        pass
    time.sleep(0.02)
lat.sort()
with open(out, "w") as f:
    f.write("%.1f %d %d\n" % (lat[-1] if lat else -1, len(lat), sum(1 for x in lat if x > 100)))
PY
builds=("$BUILD")
[ -n "$BASE" ] && builds+=("$BASE")
printf "%-20s %3s %13s %13s %9s %12s %11s %s\n" build run status_max_ms drain_max_ms "turns>50ms" worker_read_ms unnamed_pct load
for i in $(seq "$RUNS"); do
	PIDS=()
	for k in "${!builds[@]}"; do
		b=${builds[$k]}
		rm -rf "$T/s$k"
		"$b/profd" --state-dir "$T/s$k" --socket "$T/sock$k" --flush-interval 10s ${PROFD_ARGS:-} \
			>"$T/log$k.$i" 2>&1 &
		PIDS+=($!)
		echo "# run $i: $b/profd is pid $!" >&2
	done
	for k in "${!builds[@]}"; do
		for _ in $(seq 600); do [ -S "$T/sock$k" ] && break; sleep 0.1; done
	done
	sleep 2
	rm -f "$T/stop"
	for k in "${!builds[@]}"; do
		"${builds[$k]}/profctl" --state-dir "$T/s$k" --socket "$T/sock$k" status >"$T/pre$k.$i"
	done
	for k in "${!builds[@]}"; do
		python3 "$T/poll.py" "$T/sock$k" "$T/stop" "$T/poll$k.$i" &
		PIDS+=($!)
	done
	load=$(cut -d' ' -f1 /proc/loadavg)
	rm -rf "$T/lib"
	mkdir "$T/lib"
	cp /usr/lib/x86_64-linux-gnu/libLLVM-1[0-9].so.1 "$(readlink -f /usr/lib/x86_64-linux-gnu/libclang-cpp.so.1[0-9])" "$T/lib/"
	sync "$T/lib"
	mono() { python3 -c 'import time; print(time.monotonic_ns())'; }
	c0=$(mono)
	LD_LIBRARY_PATH=$T/lib clang -O2 -c -o "$T/big.o" "$T/big.c" &
	CP=$!
	wait $CP
	echo "# run $i: clang ran from $c0 to $(mono) ns (CLOCK_MONOTONIC)" >&2
	sleep 2
	touch "$T/stop"
	for k in "${!builds[@]}"; do
		b=${builds[$k]}
		while [ ! -s "$T/poll$k.$i" ]; do sleep 0.1; done
		"$b/profctl" --state-dir "$T/s$k" --socket "$T/sock$k" status >"$T/status$k.$i"
		"$b/profctl" --state-dir "$T/s$k" --socket "$T/sock$k" dump --pid $CP >"$T/folded$k.$i"
		sv() { awk -F'\t' -v k="$2" '$1 == k { print $2 }' "$1"; }
		over=$(sv "$T/status$k.$i" loop_turns_over_50ms)
		[ -n "$over" ] && over=$((over - $(sv "$T/pre$k.$i" loop_turns_over_50ms)))
		drain=$(( $(sv "$T/status$k.$i" drain_max_recent_us) / 1000 ))
		wread=$(sv "$T/status$k.$i" symbol_load_async_max_ms)
		unnamed=$(awk '{ n += $NF; if ($0 ~ /\[lib(LLVM|clang-cpp)[^]]*\+0x/) u += $NF }
			END { printf "%.1f", n ? 100 * u / n : -1 }' "$T/folded$k.$i")
		printf "%-20s %3d %13s %13s %9s %12s %11s %s\n" "$b" "$i" "$(cut -d' ' -f1 "$T/poll$k.$i")" \
			"$drain" "${over:--}" "${wread:--}" "$unnamed" "$load"
	done
	kill -TERM "${PIDS[@]:0:${#builds[@]}}" 2>/dev/null
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
done | tee "$T/runs"
for b in "${builds[@]}"; do
	echo "$b: status answer max $(awk -v b="$b" '$1 == b { print $3 }' "$T/runs" | stats | awk '{ printf "median %.0f ms (%.0f-%.0f, n=%d)", $1, $2, $3, $4 }')," \
		"unnamed share $(awk -v b="$b" '$1 == b { print $7 }' "$T/runs" | stats | awk '{ printf "median %.1f %% (%.1f-%.1f)", $1, $2, $3 }')"
done
