#!/bin/bash
# profctl views (docs/BENCHMARKS.md, "Views"): how long an on-call engineer
# waits for an hour of profile in each format, and how the SVG flame graph
# behaves in headless Chromium as distinct stacks grow.
# A synthetic store (build/tests/test_views --write-bench-store): 360 windows
# of 10 s, 300 new stacks each (~95,000 distinct folded lines in the hour;
# four processes, three threads, user, JIT and kernel frames).
# Rounds interleave the commands so that load from other work on the host
# spreads over all of them. Writes $BENCH_OUT/views.md.
# Usage: tests/bench/views_bench.sh [--quick] [ROUNDS]
source "$(dirname "$0")/bench-lib.sh"
ROUNDS=5
[ $# -gt 0 ] && [ "$1" != --quick ] && ROUNDS=$1
[ "$QUICK" = 1 ] && ROUNDS=1
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "usage: views_bench.sh [--quick] [ROUNDS]" >&2; exit 2; }
need node
need /usr/bin/time
ST=$W/state
"$BUILD/tests/test_views" --write-bench-store "$ST" 360 300 || { echo "cannot write the synthetic store" >&2; exit 1; }
T0=2026-01-01T00:00:00Z
at() { date -u -d "@$((1767225600 + $1))" +%Y-%m-%dT%H:%M:%SZ; }
P=("$PROFCTL_BIN" --state-dir "$ST" --socket "$W/no.sock")
R=(--no-flush --since "$T0" --until "$(at 3600)")

# run NAME CMD...: one timed run; appends "seconds KB" to $W/NAME.
run() {
	local name=$1; shift
	/usr/bin/time -f '%e %M' -o "$W/t" "$@" >/dev/null 2>"$W/err" || { echo "$name failed: $(head -2 "$W/err")" >&2; exit 1; }
	cat "$W/t" >>"$W/$name"
}
# Browser sizes: windows read (x 300 stacks).
SIZES=(4 40 360)
for r in $(seq 1 "$ROUNDS"); do
	log "round $r/$ROUNDS"
	run folded "${P[@]}" dump "${R[@]}" --format folded -o "$W/o.folded"
	run pprof "${P[@]}" dump "${R[@]}" --format pprof -o "$W/o.pb.gz"
	run speedscope "${P[@]}" dump "${R[@]}" --format speedscope -o "$W/o.json"
	run svg "${P[@]}" dump "${R[@]}" --format svg -o "$W/o.svg"
	run top "${P[@]}" top "${R[@]}" --limit 25
	run diff "${P[@]}" diff --no-flush --base-since "$T0" --base-until "$(at 1800)" --since "$(at 1800)" --until "$(at 3600)" -o "$W/o.diff.svg"
	for n in "${SIZES[@]}"; do
		[ "$r" = 1 ] && { "${P[@]}" dump --no-flush --since "$T0" --until "$(at $((n * 10)))" -o "$W/g$n.svg" &&
			"${P[@]}" dump --no-flush --since "$T0" --until "$(at $((n * 10)))" >"$W/g$n.folded" || exit 1; }
		node tests/browser/flamegraph.mjs "$W/g$n.svg" '^fn_1$' "$W/g$n.png" >"$W/b.json" || { echo "browser run failed" >&2; exit 1; }
		python3 -c 'import json, sys; o = json.load(open(sys.argv[1])); print(o["loadMs"], o["searchMs"], o["zoomMs"], o["pct"], o["frames"])' "$W/b.json" >>"$W/b$n"
	done
done

col() { awk -v c="$1" '{ print $c }' "$2" | stats; }
fmt() { awk '{ printf "%s (%s-%s)", $1, $2, $3 }'; }
{
	echo "Measured with \`tests/bench/views_bench.sh $ROUNDS\` ($ROUNDS interleaved rounds) on $(machine_line)."
	echo "Synthetic store: 360 windows of 10 s, 300 new stacks per window; one hour is $(wc -l <"$W/o.folded") distinct folded lines,"
	echo "$(awk '{ s += $NF } END { print s }' "$W/o.folded") samples. profctl reads it with --no-flush (no daemon). Medians (min-max)."
	echo
	echo "| command (one hour) | wall s | peak RSS MB | output |"
	echo "|---|---|---|---|"
	for c in folded pprof speedscope svg top diff; do
		case $c in
		folded) o=$W/o.folded ;; pprof) o=$W/o.pb.gz ;; speedscope) o=$W/o.json ;;
		svg) o=$W/o.svg ;; diff) o=$W/o.diff.svg ;; top) o= ;;
		esac
		label="dump --format $c"
		[ "$c" = top ] && label="top --limit 25"
		[ "$c" = diff ] && label="diff --format svg (30 min vs 30 min)"
		printf '| %s | %s | %s | %s |\n' "$label" "$(col 1 "$W/$c" | fmt)" \
			"$(awk '{ print $2 / 1024 }' "$W/$c" | stats | awk '{ printf "%.0f", $1 }')" \
			"${o:+$(du -k "$o" | awk '{ printf "%.1f MB", $1 / 1024 }')}"
	done
	echo
	echo "The SVG in headless Chromium (tests/browser/flamegraph.mjs, 1200x900): load = navigation until the"
	echo "page has drawn; search = answering the Search prompt with /^fn_1\$/ until the page answers again;"
	echo "zoom = a click on a frame until redrawn. Matched share checked against folded every round."
	echo
	echo "| distinct stacks | SVG size | frames drawn | load ms | search ms | zoom ms | matched vs folded |"
	echo "|---|---|---|---|---|---|---|"
	for n in "${SIZES[@]}"; do
		want=$(awk '{ v = $NF; $NF = ""; sub(/ $/, ""); k = split($0, f, ";"); for (i = 2; i <= k; i++) if (f[i] == "fn_1") { s += v; break }; t += v } END { printf "%.4f", 100 * s / t }' "$W/g$n.folded")
		got=$(col 4 "$W/b$n" | awk '{ printf "%.4f", $1 }')
		printf '| %s | %s | %s | %s | %s | %s | %s%% vs %s%% |\n' "$(wc -l <"$W/g$n.folded")" \
			"$(du -k "$W/g$n.svg" | awk '{ printf "%.1f MB", $1 / 1024 }')" "$(col 5 "$W/b$n" | awk '{ print $1 }')" \
			"$(col 1 "$W/b$n" | awk '{ printf "%.0f (%.0f-%.0f)", $1, $2, $3 }')" \
			"$(col 2 "$W/b$n" | awk '{ printf "%.0f (%.0f-%.0f)", $1, $2, $3 }')" \
			"$(col 3 "$W/b$n" | awk '{ printf "%.0f (%.0f-%.0f)", $1, $2, $3 }')" "$got" "$want"
		echo "$n $got $want" >>"$W/shares"
	done
} >"$BENCH_OUT/views.md"
cat "$BENCH_OUT/views.md"
while read -r n got want; do
	check_q "browser search share over $n windows ($got%) = folded ($want%)" within "$got" "$want" 0.01
done <"$W/shares"
bench_done
