#!/bin/bash
# profctl export's cost beside the data on a busy host: profd with its
# defaults (10 s windows) profiles benchwork on every CPU, and
# `profctl export --follow` pushes each window to the test receiver
# (tests/integration/export/receiver.py, which decodes and checks every
# request). After a warm-up, ROUNDS rounds of SECS seconds each measure the
# exporter's CPU time per second of wall time (user + system, /proc), its
# peak RSS (VmHWM) and the bytes it sent (request bodies, from --status),
# per hour and per CPU-hour of the profiled host.
# Usage: export_cost.sh [--quick]   (WARM=S SECS=S ROUNDS=N override)
source "$(dirname "$0")/bench-lib.sh"
need protoc
[ -f /usr/share/gocode/src/github.com/google/pprof/proto/profile.proto ] || {
	echo "golang-github-google-pprof-dev is needed (make deps-test)" >&2; exit 1; }

if [ "$QUICK" = 1 ]; then WARM=${WARM:-12} SECS=${SECS:-20} ROUNDS=${ROUNDS:-1}
else WARM=${WARM:-25} SECS=${SECS:-120} ROUNDS=${ROUNDS:-3}; fi
log "export_cost: ${WARM}s warm-up, $ROUNDS x ${SECS}s measured, benchwork x $NCPU"

X=$ROOT/tests/integration/export
PP=/usr/share/gocode/src/github.com/google/pprof/proto
mkdir -p "$W/gen"
protoc -I$PP -I"$X" --python_out="$W/gen" $PP/profile.proto "$X/push.proto" || exit 1
echo ok >"$W/mode"
bg /usr/bin/python3 "$X/receiver.py" --port-file "$W/port" --gen "$W/gen" --log "$W/recv.log" --mode-file "$W/mode"
for _ in $(seq 1 50); do [ -s "$W/port" ] && break; sleep 0.1; done
[ -s "$W/port" ] || { echo "the receiver did not start" >&2; exit 1; }

profd_start "$W/pd"
bg "$TP/benchwork" "$NCPU" 100000000 >/dev/null
bg "$PROFCTL_BIN" --state-dir "$W/pd/state" export --url "http://127.0.0.1:$(cat "$W/port")" --follow \
	--since 1s --cursor-file "$W/cursor"
EX=$BG
sleep "$WARM"
# profd's first window takes longer than the others: measure from the first acknowledgement.
for _ in $(seq 1 600); do [ -s "$W/cursor" ] && break; sleep 0.1; done
[ -s "$W/cursor" ] || { echo "nothing acknowledged after the warm-up" >&2; exit 1; }
sent() { "$PROFCTL_BIN" export --status --cursor-file "$W/cursor" | awk -v k="$1" '$1 == k { print $2 }'; }
: >"$W/rounds"
for r in $(seq 1 "$ROUNDS"); do
	t0=$(date +%s.%N) c0=$(proc_cpu_ms "$EX") b0=$(sent bytes_sent) w0=$(sent windows_sent)
	sleep "$SECS"
	t1=$(date +%s.%N) c1=$(proc_cpu_ms "$EX") b1=$(sent bytes_sent) w1=$(sent windows_sent)
	awk -v t0="$t0" -v t1="$t1" -v c0="$c0" -v c1="$c1" -v b0="$b0" -v b1="$b1" -v w0="$w0" -v w1="$w1" \
		-v n="$NCPU" 'BEGIN { s = t1 - t0
		printf "%.4f %.0f %.0f %d\n", (c1 - c0) / (s * 1000) * 100, (b1 - b0) / s * 3600,
			(b1 - b0) / (s * n / 3600), w1 - w0 }' >>"$W/rounds"
	log "round $r: $(tail -1 "$W/rounds") (core %, bytes/h, bytes/CPU-h, windows)"
done
kill -0 "$EX" || { echo "the exporter died" >&2; exit 1; }
hwm=$(proc_kb "$EX" VmHWM)
refused=$(grep -c '"invalid"' "$W/recv.log")
read -r cpu_m cpu_lo cpu_hi _ < <(awk '{ print $1 }' "$W/rounds" | stats)
read -r bph _ < <(awk '{ print $2 }' "$W/rounds" | stats)
read -r bpc bpc_lo bpc_hi _ < <(awk '{ print $3 }' "$W/rounds" | stats)
win=$(awk '{ s += $4 } END { print s }' "$W/rounds")

{
	echo "Machine: $(machine_line)."
	echo
	echo "profd with its defaults (99 Hz, 10 s windows) on benchwork x $NCPU (every CPU busy);"
	echo "\`profctl export --follow\` to the test receiver on the same host. $ROUNDS rounds of ${SECS} s"
	echo "after ${WARM} s: median (min-max)."
	echo
	echo "| measure | value | goal |"
	echo "|---|---|---|"
	echo "| exporter CPU, % of one core | $cpu_m ($cpu_lo-$cpu_hi) | <= 0.2: $(goal "$cpu_m" '<=' 0.2) |"
	echo "| exporter peak RSS (VmHWM) | $((hwm / 1024)) MB ($hwm kB) | <= 20 MB: $(goal "$hwm" '<=' 20480) |"
	echo "| bytes sent per hour | $(awk -v b="$bph" 'BEGIN { printf "%.1f MB", b / 1e6 }') | |"
	echo "| bytes sent per CPU-hour | $(awk -v b="$bpc" -v l="$bpc_lo" -v h="$bpc_hi" 'BEGIN { printf "%.1f MB (%.1f-%.1f)", b / 1e6, l / 1e6, h / 1e6 }') | |"
	echo "| windows pushed / refused | $win / $refused | refused 0 |"
} >"$BENCH_OUT/export_cost.md"
cat "$BENCH_OUT/export_cost.md"
printf 'cpu_pct=%s\nhwm_kb=%s\nbytes_per_cpu_hour=%s\nrefused=%s\n' "$cpu_m" "$hwm" "$bpc" "$refused" \
	>"$BENCH_OUT/export_cost.env"
if [ "$QUICK" = 1 ]; then
	check_q "windows pushed ($win > 0), none refused ($refused)" [ "$win" -gt 0 -a "$refused" = 0 ]
	check_q "exporter peak RSS $hwm kB <= 20 MB" [ "$hwm" -le 20480 ]
fi
bench_done
