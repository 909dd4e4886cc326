#!/bin/bash
# What a Python process pays at start-up while profd runs: CPU time (user +
# system) of short interpreter runs with no profiler, with this build's
# profd and, with BASE_BUILD=DIR, another build's, in turns round by round
# (the VM drifts between minutes). PROFD_ARGS: more options for this
# build's profd, BASE_ARGS for BASE_BUILD's. A free hook (the code cache's
# free generation, bpf/pyfree.bpf.c) makes each code object freed in a
# hooked process trap into the kernel, and start-up frees many (a class
# body's code, each module's): by default a process is hooked only once it
# has lived 2 s and is sampled, so these runs should never be; a base
# build's --python-free-hook hooked the whole interpreter file.
# COMPANION=1: a long-lived process of the same interpreter runs through
# each round (a fifth of a CPU) and gets its own hook first: the runs
# must not pay for it.
# One daemon at a time; each starts, sees one run of the interpreter (a
# file-wide hook goes in then), and is stopped after the round.
# Root.
# Usage: tests/bench/python_start.sh [RUNS [ROUNDS [ONLY]]]
# RUNS: interpreter runs per measurement (default 40); ROUNDS: default 5;
# ONLY: the interpreters whose path contains it.
# SCRIPT: what each run does (default: import asyncio, json, email.parser).
source "$(dirname "$0")/bench-lib.sh"
RUNS=${1:-40}
ROUNDS=${2:-5}
ONLY=${3:-}
SCRIPT=${SCRIPT:-import asyncio, json, email.parser}
BASE_BUILD=${BASE_BUILD:-}
[ "$QUICK" = 1 ] && { RUNS=5; ROUNDS=1; }
if [ -n "$BASE_BUILD" ]; then
	cp "$BASE_BUILD/profd" "$W/bin/profd_base" || exit 1
fi

pys=()
for p in /root/.pyenv/versions/3.1[0-3].*/bin/python3.1[0-3] /usr/bin/python3.11; do
	[ -x "$p" ] || continue
	[ -n "$ONLY" ] && [[ $p != *"$ONLY"* ]] && continue
	pys+=("$p")
done
[ ${#pys[@]} -gt 0 ] || { echo "no CPython 3.10-3.13 found" >&2; exit 1; }

# cpu_ms PY: user + system ms of RUNS runs of SCRIPT, one after the other
# (bash's times: the children's line).
cpu_ms() {
	bash -c 'for _ in $(seq "$1"); do "$2" -c "$3" >/dev/null; done; times' _ "$RUNS" "$1" "$SCRIPT" |
		awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, a, "m"); s += a[1] * 60 + a[2] } printf "%.0f", s * 1000 }'
}

conds="none profd"
[ -n "$BASE_BUILD" ] && conds="none base profd"
declare -A R FREES
log "python start-up: ${#pys[@]} interpreters, $RUNS runs x $ROUNDS rounds, conditions: $conds"
for py in "${pys[@]}"; do
	for r in $(seq "$ROUNDS"); do
		set -- $conds
		# rotate the order each round
		for _ in $(seq $(((r - 1) % $#))); do set -- "${@:2}" "$1"; done
		for c in "$@"; do
			d=$W/d-$c
			rm -rf "$d"
			case $c in
			none) ;;
			base) PROFD=$W/bin/profd_base profd_start "$d" ${BASE_ARGS:-} ;;
			profd) PROFD=$W/bin/profd profd_start "$d" ${PROFD_ARGS:-} ;;
			esac
			CP=
			if [ "${COMPANION:-0}" = 1 ]; then
				"$py" -c 'import time
while True:
    t = time.monotonic() + 0.01
    while time.monotonic() < t: pass
    time.sleep(0.04)' &
				CP=$!
			fi
			if [ "$c" != none ]; then
				"$py" -c "$SCRIPT" >/dev/null; sleep 2 # the interpreter seen: its hook in
				# The companion's own hook in (a build that hooks per process).
				if [ -n "$CP" ] && [ "$(status_val "$d" python_free_hooks_made)" != "" ]; then
					for _ in $(seq 20); do
						[ "$(status_val "$d" python_free_hooks)" -ge 1 ] 2>/dev/null && break
						sleep 0.5
					done
				fi
			fi
			ms=$(cpu_ms "$py")
			R[$py,$c]+="$ms "
			if [ "$c" = profd ]; then
				FREES[$py]=$(status_val "$d" python_code_frees)
				HOOKS=$(status_val "$d" python_free_hooks)
			fi
			[ "$c" = profd ] && CHOOKS=$(status_val "$d" python_free_hooks)
			[ -n "$CP" ] && { kill "$CP"; wait "$CP" 2>/dev/null; }
			[ "$c" != none ] && stop "$PROFD_PID"
			log "$py $c round $r: $ms ms CPU for $RUNS runs"
		done
	done
done

med() { tr ' ' '\n' | grep . | median; }
# per MS: ms per run; rng: the rounds' range, ms per run.
per() { awk -v m="$1" -v r="$RUNS" 'BEGIN { printf "%.1f", m / r }'; }
rng() { tr ' ' '\n' | grep . | sort -n | awk -v r="$RUNS" 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.1f-%.1f", lo / r, hi / r }'; }
{
	machine_line
	echo
	echo "Each run: \`python -c '$SCRIPT'\`; CPU ms (user + system) per run, median (range) of $ROUNDS rounds of $RUNS runs, conditions in turns."
	echo
	if [ -n "$BASE_BUILD" ]; then
		echo "| interpreter | no profiler | base profd | this profd | this / none | code objects freed (this profd's count, last round) |"
		echo "|---|---|---|---|---|---|"
	else
		echo "| interpreter | no profiler | this profd | this / none | code objects freed (this profd's count, last round) |"
		echo "|---|---|---|---|---|"
	fi
	for py in "${pys[@]}"; do
		n=$(echo "${R[$py,none]}" | med) p=$(echo "${R[$py,profd]}" | med)
		row="| $py | $(per "$n") ($(echo "${R[$py,none]}" | rng))"
		[ -n "$BASE_BUILD" ] && row+=" | $(per "$(echo "${R[$py,base]}" | med)") ($(echo "${R[$py,base]}" | rng))"
		row+=" | $(per "$p") ($(echo "${R[$py,profd]}" | rng)) | $(awk -v a="$p" -v b="$n" 'BEGIN { printf "%.3f", b ? a / b : 0 }') | ${FREES[$py]:-?} |"
		echo "$row"
	done
	echo
	echo "python_free_hooks at the end: ${HOOKS:-?}$([ "${COMPANION:-0}" = 1 ] && echo " (with the companion: ${CHOOKS:-?} live as the last round ended)")."
} | tee "$BENCH_OUT/python_start.md"
bench_done
