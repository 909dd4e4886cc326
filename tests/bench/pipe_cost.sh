#!/bin/bash
# What off-CPU profiling costs a switch-heavy load: `perf bench sched pipe`
# pinned to one CPU (two processes ping-pong one word over pipes, every
# round trip two context switches on that CPU), timed with no profd, under
# profd --no-offcpu and under profd's defaults (plus the profd option sets
# in PIPE_EXTRA, ";"-separated). Conditions rotate round by round so drift
# on a shared machine hits all alike; medians and spread of µs per round
# trip, and the load average before and after. Beside the round trip (wall
# time, which on a shared machine is mostly other tasks' time on that CPU),
# the CPU time both processes used per round trip (perf stat task-clock):
# the switch hook runs in their time, other tasks do not.
# Beside them, profd's own CPU time per round trip and its threads' context
# switches (each a wake-up that may land on the pinned CPU), and in full
# mode one more run under the defaults with BPF run
# statistics on: the sched_switch hook's time per round trip and the stack
# captures per round trip, to set against the measured difference.
# In full mode one more condition per round, `--no-offcpu` beside an empty
# program on sched_switch (built here with clang and libbpf): what attaching
# anything to the switch costs, the floor under any hook. The rounds run
# with BPF run statistics off (they add two clock reads to every program
# run): kernel.bpf_stats_enabled is cleared for them and restored after, and
# the empty program's own run count shows whether another process holds the
# statistics on anyway.
# BASE_BUILD=DIR: one more condition per round, DIR's profd under its
# defaults (another build, e.g. main's, in the same seconds), and the
# statistics run alternates between the two builds, HOOK_ROUNDS (3) runs
# each: the hook's time per run of both, the steadier figure on a shared
# machine.
# Usage: pipe_cost.sh [--quick] [ROUNDS [LOOPS]]; --quick (inside make test):
# 1 round of 20000 round trips, no goal check.
source "$(dirname "$0")/bench-lib.sh"
[ $QUICK = 1 ] && shift
ROUNDS=${1:-7}
LOOPS=${2:-200000}
[ $QUICK = 1 ] && ROUNDS=1 LOOPS=20000
need perf
need taskset
CPU=$((NCPU - 1))

conds=(alone oncpu default)
declare -A args=([alone]=- [oncpu]=--no-offcpu [default]=)

# empty_build: the empty sched_switch program and a loader that attaches it until killed, into $W.
empty_build() {
	local inc
	inc=$(dirname "$PROFD_BUILT")
	[ -f "$inc/vmlinux.h" ] && command -v clang >/dev/null && command -v cc >/dev/null || return 1
	cat >"$W/empty.bpf.c" <<-'EOF'
	#include "vmlinux.h"
	#include <bpf/bpf_helpers.h>
	#include <bpf/bpf_tracing.h>
	char LICENSE[] SEC("license") = "GPL";
	SEC("tp_btf/sched_switch")
	int BPF_PROG(empty_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
	{
		return 0;
	}
	EOF
	cat >"$W/empty_load.c" <<-'EOF'
	#include <bpf/libbpf.h>
	#include <stdio.h>
	#include <unistd.h>
	int main(int argc, char **argv)
	{
		struct bpf_object *o = bpf_object__open_file(argv[1], NULL);
		struct bpf_program *p;

		if (!o || bpf_object__load(o))
			return 1;
		p = bpf_object__find_program_by_name(o, "empty_switch");
		if (!p || !bpf_program__attach(p))
			return 1;
		printf("%d\n", bpf_program__fd(p));
		fflush(stdout);
		pause();
		return 0;
	}
	EOF
	clang -O2 -g -target bpf -I"$inc" -c "$W/empty.bpf.c" -o "$W/empty.bpf.o" 2>"$W/empty.err" &&
		cc -O2 "$W/empty_load.c" -o "$W/empty_load" -lbpf 2>>"$W/empty.err"
}
PROFD_BUILT=$BUILD/profd
EMPTY=0
if [ $QUICK = 0 ]; then
	if empty_build; then
		EMPTY=1
		conds+=(empty)
		args[empty]=--no-offcpu
	else
		log "no empty sched_switch program (clang, libbpf or $BUILD/vmlinux.h missing):" \
			"$(cat "$W/empty.err" 2>/dev/null)"
	fi
fi
BASE_BUILD=${BASE_BUILD:-}
if [ -n "$BASE_BUILD" ] && [ $QUICK = 0 ]; then
	cp "$BASE_BUILD/profd" "$W/bin/profd_base" || exit 1
	conds+=(base)
	args[base]=
fi
HOOK_ROUNDS=${HOOK_ROUNDS:-3}
IFS=';' read -r -a extra <<<"${PIPE_EXTRA:-}"
for e in "${extra[@]}"; do
	[ -n "$e" ] || continue
	conds+=("$e")
	args[$e]=$e
done

# One round trip in µs (perf bench prints "N usecs/op"), then the CPU ns of both processes per round trip.
pipe() {
	local us
	us=$(taskset -c "$CPU" perf stat -x, -e task-clock -o "$W/stat" perf bench sched pipe -l "$LOOPS" 2>&1 |
		awk '$2 == "usecs/op" { print $1 }')
	[ -n "$us" ] && echo "$us $(awk -F, -v l="$LOOPS" '$3 == "task-clock" { printf "%.0f", $1 * 1e6 / l }' "$W/stat")"
}

f() { echo "$W/$(echo "$1" | tr -c 'A-Za-z0-9\n' _).us"; }
# profd_ticks: CPU time profd used so far, clock ticks (0 without profd).
profd_ticks() {
	[ -n "$PROFD_PID" ] && awk '{ print $14 + $15 }' "/proc/$PROFD_PID/stat" || echo 0
}
# profd_switches: context switches of all of profd's threads so far, each a wake-up or a preemption
# of profd that may land on the pinned CPU.
profd_switches() {
	[ -n "$PROFD_PID" ] && cat /proc/"$PROFD_PID"/task/*/status 2>/dev/null |
		awk '$1 ~ /voluntary_ctxt_switches:$/ { s += $2 } END { print s + 0 }' || echo 0
}
TICK_NS=$((1000000000 / $(getconf CLK_TCK)))
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
STATS0=$(cat /proc/sys/kernel/bpf_stats_enabled 2>/dev/null || echo 0)
if [ $QUICK = 0 ] && [ "$STATS0" != 0 ]; then
	trap 'echo "$STATS0" >/proc/sys/kernel/bpf_stats_enabled; bench_cleanup' EXIT
	echo 0 >/proc/sys/kernel/bpf_stats_enabled
fi
EMPTY_RUNS=0
log "pipe_cost: $ROUNDS rounds of $LOOPS round trips on CPU $CPU, conditions: ${conds[*]}"
for r in $(seq 1 "$ROUNDS"); do
	n=${#conds[@]}
	for i in $(seq 0 $((n - 1))); do
		c=${conds[$(((i + r) % n))]}
		PROFD_PID=
		if [ "${args[$c]}" != - ]; then
			rm -rf "$W/p"
			bin=$PROFD
			[ "$c" = base ] && bin=$W/bin/profd_base
			# shellcheck disable=SC2086
			PROFD=$bin profd_start "$W/p" --config /dev/null ${args[$c]}
		fi
		EPID= EID=
		if [ "$c" = empty ]; then
			bg "$W/empty_load" "$W/empty.bpf.o" >"$W/empty.fd"
			EPID=$BG
			for _ in $(seq 1 100); do [ -s "$W/empty.fd" ] && break; sleep 0.1; done
			EID=$(awk '$1 == "prog_id:" { print $2 }' "/proc/$EPID/fdinfo/$(cat "$W/empty.fd")" 2>/dev/null)
			[ -n "$EID" ] || { echo "the empty sched_switch program did not attach" >&2; exit 1; }
		fi
		sleep 1 # past start-up (tables of running processes); the same pause without profd
		t0=$(profd_ticks)
		x0=$(profd_switches)
		v=$(pipe)
		# taskset fails while the CPU is offline (a hotplug test on a shared machine): one more try.
		[ -n "$v" ] || { sleep 5; v=$(pipe); }
		[ -n "$v" ] || { echo "perf bench sched pipe printed no usecs/op twice" >&2; exit 1; }
		read -r us cpu <<<"$v"
		echo "$us" >>"$(f "$c")"
		echo "$cpu" >>"$(f "$c").cpu"
		[ -n "$PROFD_PID" ] && echo $(($(profd_ticks) - t0)) >>"$(f "$c").self"
		[ -n "$PROFD_PID" ] && echo $(($(profd_switches) - x0)) >>"$(f "$c").wake"
		[ -n "$PROFD_PID" ] && stop "$PROFD_PID"
		if [ -n "$EPID" ]; then
			# Statistics count runs only while on: any run counted means they were on in this round.
			runs=$(bpftool -j prog show id "$EID" 2>/dev/null | python3 -c '
import json, sys
print(json.load(sys.stdin).get("run_cnt", 0))' 2>/dev/null)
			EMPTY_RUNS=$((EMPTY_RUNS + ${runs:-0}))
			# Started in the background by a script, it ignores SIGINT (as bash sets it).
			stop "$EPID" TERM
		fi
	done
done

# hook_run: one more run under the defaults with BPF statistics on (they cost
# time themselves, so not in the rounds above): "hook-ns-per-call calls captures"
# over the run, every switch on the host included.
off_cpu_prog() {
	local fd id
	for fd in /proc/"$PROFD_PID"/fdinfo/*; do
		id=$(awk '$1 == "prog_id:" { print $2 }' "$fd" 2>/dev/null)
		[ -n "$id" ] || continue
		bpftool prog show id "$id" 2>/dev/null | grep -q ' name off_cpu ' && echo "$id" && return
	done
}
prog_stats() { bpftool -j prog show id "$1" | python3 -c '
import json, sys
p = json.load(sys.stdin); print(p.get("run_time_ns", 0), p.get("run_cnt", 0))'; }
captured() { pctl "$W/p" status | awk '$1 == "offcpu_stacks_captured" { print $2 }'; }
windows() { pctl "$W/p" status | awk '$1 == "offcpu_sampled_windows" { print $2 }'; }
# hook_run BIN: one run of BIN's profd under its defaults, statistics on;
# appends "ns-per-run runs captures windows ms" to $W/hook.BIN's name.
hook_run() {
	local prog t0 n0 t1 n1 c0 c1 w0 w1 s0 ms stats_was
	rm -rf "$W/p"
	PROFD=$1 profd_start "$W/p" --config /dev/null
	sleep 1
	prog=$(off_cpu_prog)
	if [ -n "$prog" ]; then
		stats_was=$(cat /proc/sys/kernel/bpf_stats_enabled)
		# (STATS0 comes back at exit.)
		echo 1 >/proc/sys/kernel/bpf_stats_enabled
		read -r t0 n0 < <(prog_stats "$prog")
		c0=$(captured)
		w0=$(windows)
		s0=$(date +%s%N)
		pipe >/dev/null
		read -r t1 n1 < <(prog_stats "$prog")
		c1=$(captured)
		w1=$(windows)
		ms=$((($(date +%s%N) - s0) / 1000000))
		echo "$stats_was" >/proc/sys/kernel/bpf_stats_enabled
		[ $((n1 - n0)) -gt 0 ] &&
			echo "$(((t1 - t0) / (n1 - n0))) $((n1 - n0)) $((c1 - c0)) $((w1 - w0)) $ms" >>"$W/hook.$(basename "$1")"
	fi
	stop "$PROFD_PID"
	PROFD_PID=
}
HOOK=
BHOOK=
if [ $QUICK = 0 ] && command -v bpftool >/dev/null; then
	nh=1
	[ -n "$BASE_BUILD" ] && nh=$HOOK_ROUNDS
	for r in $(seq 1 "$nh"); do
		if [ -n "$BASE_BUILD" ] && [ $((r % 2)) = 0 ]; then
			hook_run "$W/bin/profd_base"
			hook_run "$PROFD"
		else
			hook_run "$PROFD"
			[ -n "$BASE_BUILD" ] && hook_run "$W/bin/profd_base"
		fi
	done
	# Medians of each column over the runs.
	hook_med() { [ -s "$1" ] && for k in 1 2 3 4 5; do cut -d' ' -f$k "$1" | stats | cut -d' ' -f1; done | xargs; }
	HOOK=$(hook_med "$W/hook.profd")
	[ -n "$BASE_BUILD" ] && BHOOK=$(hook_med "$W/hook.profd_base")
fi
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

# paired COND BASE [SUFFIX]: per-round ratio COND / BASE - 1 in per cent (rounds pair runs seconds
# apart), "median min max n"; SUFFIX .cpu: of the CPU time.
paired() { paste "$(f "$1")${3:-}" "$(f "$2")${3:-}" | awk '{ printf "%.2f\n", 100 * ($1 / $2 - 1) }' | stats; }
{
	echo "$(machine_line); load average $LOAD0 before, $LOAD1 after (other work on the machine counts)."
	echo "\`taskset -c $CPU perf bench sched pipe -l $LOOPS\`, $ROUNDS interleaved rounds; median (min-max) of the"
	echo "round trip, and of the per-round difference against the run without profd and the run under \`--no-offcpu\`"
	echo "of the same round; then the same for the CPU time both processes used per round trip (perf stat"
	echo "task-clock: the hook runs in their time, other tasks on the CPU do not count)."
	if [ $QUICK = 0 ]; then
		echo "BPF run statistics during the rounds: kernel.bpf_stats_enabled was $STATS0 before," \
			"0 in the rounds;"
		[ $EMPTY = 1 ] && echo "the empty program counted $EMPTY_RUNS runs in them" \
			"(0: statistics off, as meant)."
	fi
	grep -qw pti /proc/cpuinfo && ! grep -qw pcid /proc/cpuinfo &&
		echo "Page-table isolation without PCID: every entry to the kernel and back flushes" \
			"the TLB, so each page a hook touches is a TLB miss at every switch."
	echo
	echo "| condition | µs per round trip | vs no profd, per round | vs \`--no-offcpu\`, per round | CPU ns per round trip | CPU vs no profd | CPU vs \`--no-offcpu\` | profd CPU ns per round trip | profd switches per 1000 round trips |"
	echo "|---|---|---|---|---|---|---|---|---|"
	for c in "${conds[@]}"; do
		read -r m lo hi _ < <(stats <"$(f "$c")")
		read -r cm clo chi _ < <(stats <"$(f "$c").cpu")
		name=$c; [ "$c" = alone ] && name="no profd"; [ "$c" = oncpu ] && name="\`--no-offcpu\`"
		[ "$c" = default ] && name="defaults (off-CPU on)"
		[ "$c" = empty ] && name="\`--no-offcpu\` + an empty sched_switch program"
		[ "$c" = base ] && name="$BASE_BUILD's profd, defaults"
		case $c in -*) name="\`$c\`" ;; esac
		read -r am alo ahi _ < <(paired "$c" alone)
		read -r om olo ohi _ < <(paired "$c" oncpu)
		read -r cam calo cahi _ < <(paired "$c" alone .cpu)
		read -r com colo cohi _ < <(paired "$c" oncpu .cpu)
		self=-
		[ -s "$(f "$c").self" ] && self=$(awk -v t=$TICK_NS -v l="$LOOPS" '{ print $1 * t / l }' \
			"$(f "$c").self" | stats | awk '{ printf "%.0f (%.0f-%.0f)", $1, $2, $3 }')
		wake=-
		[ -s "$(f "$c").wake" ] && wake=$(awk -v l="$LOOPS" '{ print $1 * 1000 / l }' "$(f "$c").wake" |
			stats | awk '{ printf "%.2f (%.2f-%.2f)", $1, $2, $3 }')
		awk -v n="$name" -v m="$m" -v lo="$lo" -v hi="$hi" -v am="$am" -v alo="$alo" -v ahi="$ahi" \
			-v om="$om" -v olo="$olo" -v ohi="$ohi" -v cm="$cm" -v clo="$clo" -v chi="$chi" \
			-v cam="$cam" -v calo="$calo" -v cahi="$cahi" -v com="$com" -v colo="$colo" -v cohi="$cohi" \
			-v self="$self" -v wake="$wake" 'BEGIN {
			printf "| %s | %.3f (%.3f-%.3f) | %+.1f %% (%+.1f..%+.1f) | %+.1f %% (%+.1f..%+.1f) |", \
				n, m, lo, hi, am, alo, ahi, om, olo, ohi
			printf " %.0f (%.0f-%.0f) | %+.1f %% (%+.1f..%+.1f) | %+.1f %% (%+.1f..%+.1f) | %s | %s |\n", \
				cm, clo, chi, cam, calo, cahi, com, colo, cohi, self, wake }'
	done
	if [ -n "$HOOK" ]; then
		read -r hns calls caps wins ms <<<"$HOOK"
		echo
		awk -v h="$hns" -v n="$calls" -v c="$caps" -v l="$LOOPS" -v w="$wins" -v ms="$ms" 'BEGIN {
			printf "Defaults, one more run with BPF statistics on: the sched_switch hook ran"
			printf " %.2f times per round trip", n / l
			printf " (every switch on the host), %d ns per run, so %.0f ns per round trip;", h, h * n / l
			printf " %.4f stack captures per round trip (host-wide counter);", c / l
			printf " %d per-CPU rate windows sampled (switch-outs of frequent switchers", w
			printf " recorded 1 in N) in the %.1f s of the run.\n", ms / 1000 }'
	fi
	if [ -n "$BHOOK" ]; then
		rng() { cut -d' ' -f1 "$1" | stats | awk '{ printf "%.0f (%.0f-%.0f, %d runs)", $1, $2, $3, $4 }'; }
		echo
		echo "The hook's ns per run, statistics on, the two builds' runs alternated: this build" \
			"$(rng "$W/hook.profd"), $BASE_BUILD's $(rng "$W/hook.profd_base");" \
			"$(echo "$HOOK" | awk '{ print $1 }') against $(echo "$BHOOK" | awk '{ print $1 }') ns by the medians" \
			"($(awk -v a="${HOOK%% *}" -v b="${BHOOK%% *}" 'BEGIN { printf "%+.1f %%", 100 * (a / b - 1) }'))."
	fi
} >"$BENCH_OUT/pipe_cost.md"
read -r def _ _ _ < <(stats <"$(f default)")
read -r base_alone _ _ _ < <(stats <"$(f alone)")
read -r base_on _ _ _ < <(stats <"$(f oncpu)")
read -r pa _ _ _ < <(paired default alone)
read -r po _ _ _ < <(paired default oncpu)
read -r cpo _ _ _ < <(paired default oncpu .cpu)
read -r cdef _ _ _ < <(stats <"$(f default).cpu")
read -r con _ _ _ < <(stats <"$(f oncpu).cpu")
{
	echo "alone_us=$base_alone"
	echo "oncpu_us=$base_on"
	echo "default_us=$def"
	echo "default_vs_alone_pct=$pa"
	echo "default_vs_oncpu_pct=$po"
	echo "oncpu_cpu_ns=$con"
	echo "default_cpu_ns=$cdef"
	echo "default_vs_oncpu_cpu_pct=$cpo"
	if [ -n "$BASE_BUILD" ]; then
		echo "base_vs_oncpu_pct=$(paired base oncpu | cut -d' ' -f1)"
		echo "default_vs_base_pct=$(paired default base | cut -d' ' -f1)"
		echo "default_vs_base_cpu_pct=$(paired default base .cpu | cut -d' ' -f1)"
		echo "hook_ns=${HOOK%% *}"
		echo "base_hook_ns=${BHOOK%% *}"
	fi
	if [ $EMPTY = 1 ]; then
		echo "empty_vs_oncpu_pct=$(paired empty oncpu | cut -d' ' -f1)"
		echo "empty_vs_oncpu_cpu_pct=$(paired empty oncpu .cpu | cut -d' ' -f1)"
	fi
} >"$BENCH_OUT/pipe_cost.env"
cat "$BENCH_OUT/pipe_cost.md"
if [ $QUICK = 0 ]; then
	echo "goal: the off-CPU hook on by default costs <= 5 % on this ping-pong: $po % against --no-offcpu (median per round), $(goal "$po" "<=" 5); against no profd $pa %; by CPU time $cpo %, $(goal "$cpo" "<=" 5)" | tee -a "$BENCH_OUT/pipe_cost.md"
fi
bench_done
