#!/bin/bash
# Where an on-CPU sample's BPF time goes: builds a copy of this tree with
# sampletimers.patch (bpf_ktime_get_ns around each part of a sample, sums
# and counts per CPU in .bss; a measuring tool, never in bpf/), runs it on
# samplepair.sh's load beside bpftrace, and prints per interval each
# part's ns per occurrence, occurrences per sample and ns per sample,
# with bpf_stats' ns per sample of both. Timers and their stores are
# inside each part (about 50 ns a pair).
# Usage: [LOOPS=3] [N=3] [SECS=15] [BT=1] [DOUBLE_READ=1] tests/bench/sampletimers.sh
#   DOUBLE_READ=1 builds a second copy whose every walker read is made
#   twice, run in the same seconds: the walk's difference over the reads
#   is what one bpf_probe_read_user costs there.
set -u
R=$(cd "$(dirname "$0")/../.." && pwd)
LOOPS=${LOOPS:-3} N=${N:-3} SECS=${SECS:-15} BT=${BT:-1}
W=$(mktemp -d /tmp/sampletimers.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -INT "$p" 2>/dev/null; done; sleep 1
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; rm -rf "$W"; }
trap cleanup EXIT; trap "exit 1" TERM INT
build() { # build DIR [CFLAGS]
	mkdir -p "$1" && git -C "$R" archive HEAD | tar -x -C "$1" &&
		patch -s -d "$1" -p1 <"$R/tests/bench/sampletimers.patch" &&
		sed -i "s/^BPF_CFLAGS := -O2/BPF_CFLAGS := ${2:-} -O2/" "$1/Makefile" &&
		make -s -C "$1" -j2 all >"$1.log" 2>&1 || { echo "build of $1 failed: $1.log" >&2; exit 1; }
}
build "$W/t"; [ "${DOUBLE_READ:-0}" = 1 ] && build "$W/t2" -DTM_DOUBLE_READ
PY=$(command -v python3); [ -x /root/.pyenv/shims/python3 ] && PY=/root/.pyenv/shims/python3
printf 'int f(int x) { return x * 3 + 1; }\nint main(void) { return f(2); }\n' >"$W/small.c"
"$R/${BUILD:-build}/testprogs/benchwork" "$(nproc)" 100000000000 >/dev/null & PIDS+=($!)
for l in $(seq 1 "$LOOPS"); do
	bash -c "while :; do gcc -O1 -c '$W/small.c' -o '$W/small$l.o'; '$PY' -c pass; done" >/dev/null 2>&1 & PIDS+=($!)
done
python3 "$R/tests/bench/stats_hold.py" "$W/stats.on" & PIDS+=($!)
declare -A P=() PP=()
names=(timers); [ "${DOUBLE_READ:-0}" = 1 ] && names+=(double_read)
for nm in "${names[@]}"; do
	d=$W/t; [ "$nm" = double_read ] && d=$W/t2
	"$d/build/profd" --state-dir "$W/$nm.state" --socket "$W/$nm.sock" --config /dev/null >"$W/$nm.log" 2>&1 &
	P[$nm]=$!; PIDS+=($!)
done
if [ "$BT" = 1 ]; then
	bpftrace -e 'profile:hz:97 { @[ustack, kstack, comm] = count(); } END { clear(@); }' >/dev/null 2>&1 &
	P[bpftrace]=$!; PIDS+=($!); names+=(bpftrace)
fi
prog_of() { for i in $(grep -hs '^prog_id:' /proc/"$1"/fdinfo/* | awk '{print $2}' | sort -u); do
	bpftool -j prog show id "$i" | jq -r --arg re "$2" 'select(.name | test($re)) | .id'; done | head -1; }
for nm in "${names[@]}"; do
	re='^on_cpu$'; [ "$nm" = bpftrace ] && re='profile|97'
	for _ in $(seq 1 60); do PP[$nm]=$(prog_of "${P[$nm]}" "$re"); [ -n "${PP[$nm]}" ] && break; sleep 1; done
done
sleep 15
pns() { bpftool -j prog show id "$1" | jq -r '"\(.run_time_ns // 0) \(.run_cnt // 0)"'; }
# tm PID: the per-CPU sums of the timer copy's .bss, summed over CPUs, as one JSON line.
tm() { python3 - "$1" <<'PYEOF'
import glob, json, subprocess, sys
ids = set()
for f in glob.glob(f"/proc/{sys.argv[1]}/fdinfo/*"):
    try:
        ids |= {int(l.split()[1]) for l in open(f) if l.startswith("map_id:")}
    except OSError:
        pass
def find(o):
    if isinstance(o, dict):
        return o["tm"] if "tm" in o else next((r for r in map(find, o.values()) if r is not None), None)
    if isinstance(o, list):
        return next((r for r in map(find, o) if r is not None), None)
for i in sorted(ids):
    info = json.loads(subprocess.run(["bpftool", "-j", "map", "show", "id", str(i)], capture_output=True, text=True).stdout or "{}")
    if info.get("name", "").endswith(".bss"):
        t = find(json.loads(subprocess.run(["bpftool", "-j", "map", "dump", "id", str(i)], capture_output=True, text=True).stdout))
        if t is not None:
            print(json.dumps([sum(int(c[k]) for c in t) for k in range(48)]))
            break
PYEOF
}
report() { python3 - "$1" "$2" <<'PYEOF'
import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
names = ("total labels kstack kintern pycheck pywalk umaps walk frames uintern uhash count reads rcmiss "
         "mapsearch ustack umaps_lookup newstack frames_dw notables khash umaps_hit frames_notables uw_row").split()
ns = [b[k] - a[k] for k in range(24)]; n = [b[24 + k] - a[24 + k] for k in range(24)]
S = n[0] or 1
print(f"  samples {S}")
for k, nm in enumerate(names):
    if ns[k]:
        print(f"  {nm}: {ns[k] / max(n[k], 1):.0f} ns x{n[k] / S:.3f} a sample = {ns[k] / S:.0f} ns a sample")
    elif n[k]:
        print(f"  {nm}: x{n[k] / S:.3f} a sample")
PYEOF
}
for i in $(seq 1 "$N"); do
	declare -A A=() B=() T0=() T1=()
	for nm in "${names[@]}"; do [ "$nm" != bpftrace ] && A[$nm]=$(tm "${P[$nm]}"); T0[$nm]=$(pns "${PP[$nm]}"); done
	sleep "$SECS"
	for nm in "${names[@]}"; do [ "$nm" != bpftrace ] && B[$nm]=$(tm "${P[$nm]}"); T1[$nm]=$(pns "${PP[$nm]}"); done
	line="$(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg) bpf_stats ns/sample:"
	for nm in "${names[@]}"; do read -r t0 n0 <<<"${T0[$nm]}"; read -r t1 n1 <<<"${T1[$nm]}"
		line+=" $nm $(( (t1 - t0) / (n1 - n0 > 0 ? n1 - n0 : 1) ))"; done
	echo "$line"
	for nm in "${names[@]}"; do [ "$nm" != bpftrace ] && { echo " $nm:"; report "${A[$nm]}" "${B[$nm]}"; }; done
done
exit 0
