#!/bin/bash
# Accuracy: profd and perf record -F 99 -a -g profile the same workload at
# the same time (benchwork on every CPU, a python3 loop and a perl loop);
# both profiles are folded (perf's by perf script and our own awk), reduced
# to per-function shares of the workload's samples, self (leaf) and total
# (anywhere on the stack), and compared. Two independent samplers differ by
# sampling noise alone when both are right: the report gives that noise
# (sigma of the difference) beside each difference.
# Two profd instances run beside perf: one walks user stacks by frame
# pointers like perf -g (the comparison of self and total shares), one with
# the default --unwind auto (DWARF where frame pointers are missing), whose
# deeper stacks are compared on self shares only.
# Usage: accuracy.sh [--quick]   (SECS=N overrides the duration)
source "$(dirname "$0")/bench-lib.sh"
need perf

SECS=${SECS:-$([ "$QUICK" = 1 ] && echo 8 || echo 60)}
PY=$(python3 -c 'import sys; print(sys.executable)')
log "accuracy: ${SECS}s of benchwork x $NCPU, $PY and perl under profd and perf at once"

profd_start "$W/pdauto" --flush-interval 10s
PD_AUTO=$PROFD_PID
profd_start "$W/pd" --flush-interval 10s --unwind fp
perf_start "$W/perf.data"
"$TP/benchwork" "$NCPU" 100000000 >/dev/null & P1=$!
"$PY" -c '
import time
def py_inner(n): return sum(i * i for i in range(n))
def py_outer():
    while True: py_inner(2000)
py_outer()' & P2=$!
perl -e 'sub pl_work { my $x = 0; $x += $_ * $_ for 1..2000; $x } while (1) { pl_work() }' & P3=$!
sleep "$SECS"
# perf stops and profd flushes while the workload still runs: a process that
# has exited cannot be symbolized, and that is not what this compares.
stop "$PERF_PID" INT
CPU_MS=$(( $(proc_cpu_ms $P1 | cut -d. -f1) + $(proc_cpu_ms $P2 | cut -d. -f1) + $(proc_cpu_ms $P3 | cut -d. -f1) ))
pctl "$W/pd" flush >/dev/null
pctl "$W/pdauto" flush >/dev/null
kill $P1 $P2 $P3; wait $P1 $P2 $P3 2>/dev/null
pctl "$W/pd" dump --no-flush --since 1h --pid $P1 --pid $P2 --pid $P3 >"$W/profd.folded" ||
	{ echo "profctl dump failed" >&2; exit 1; }
pctl "$W/pdauto" dump --no-flush --since 1h --pid $P1 --pid $P2 --pid $P3 >"$W/auto.folded" ||
	{ echo "profctl dump failed" >&2; exit 1; }
stop "$PROFD_PID" TERM
stop "$PD_AUTO" TERM

# perf script: a "comm pid/tid" header, then "ip symbol (dso)" lines leaf
# first, then a blank line. Kernel frames get profd's _[k] suffix.
perf script -i "$W/perf.data" -F comm,pid,tid,ip,sym,dso --pid "$P1,$P2,$P3" 2>/dev/null | awk '
	function emit(   s, i) {
		if (comm == "") return
		s = comm
		for (i = n; i >= 1; i--) s = s ";" f[i]
		cnt[s]++; comm = ""; n = 0
	}
	/^[^ \t]/ { emit(); comm = $0; sub(/ +[0-9]+\/[0-9]+ *$/, "", comm); n = 0; next }
	/^[ \t]+[0-9a-f]+ / {
		line = $0; sub(/^[ \t]+[0-9a-f]+ /, "", line)
		dso = line; sub(/^.* \(/, "", dso); sub(/\)$/, "", dso)
		sym = line; sub(/ \([^()]*\)$/, "", sym); sub(/\+0x[0-9a-f]+$/, "", sym)
		if (sym == "[unknown]" || sym == "") sym = "[unknown]"
		else if (dso ~ /kernel\.kallsyms|^\[/ && dso != "[vdso]") sym = sym "_[k]"
		f[++n] = sym; next
	}
	/^[ \t]*$/ { emit() }
	END { emit(); for (s in cnt) print s, cnt[s] }' >"$W/perf.folded"

# Kernel symbols that share an address (__x64_sys_getppid, __do_sys_getppid)
# are one function: each becomes the first name kallsyms lists at its address.
awk '{ if (!($1 in c)) c[$1] = $3; print $3, c[$1] }' /proc/kallsyms >"$W/kalias"
# shares FOLDED: "function self_pct total_pct" over all lines; unsymbolized
# frames ([unknown], [module+0xOFF]) are one function, "[unknown]". profd
# names the Python functions an eval frame runs ("qualname (file.py)"); perf
# sees only the interpreter's _PyEval_EvalFrameDefault in their place, so
# they compare as that. Python's callers are read from the interpreter, not
# walked, and libpython has no frame pointers for perf -g to walk: the python
# process's stacks count in self shares only.
# Both name a PLT stub "callee@plt" and compare it as any function.
shares() {
	awk 'FILENAME != "-" && FNR == NR { alias[$1 "_[k]"] = $2 "_[k]"; next } {
		v = $NF; line = $0; sub(/ [0-9]+$/, "", line)
		k = split(line, f, ";"); tot += v
		for (i = 2; i <= k; i++) {
			name = f[i]; if (name ~ /^\[.*\]$/) name = "[unknown]"
			else if (name ~ / \([^()]*\)$/) name = "_PyEval_EvalFrameDefault"
			else if (name in alias) name = alias[name]
			f[i] = name
		}
		delete seen
		for (i = 2; i <= k; i++) if (!(f[i] in seen) && f[1] !~ /^python/) { seen[f[i]] = 1; t[f[i]] += v }
		if (k >= 2) s[f[k]] += v; else s["[no stack]"] += v
	} END {
		for (x in t) printf "%s %.4f %.4f\n", x, 100 * s[x] / tot, 100 * t[x] / tot
		for (x in s) if (!(x in t)) printf "%s %.4f 0\n", x, 100 * s[x] / tot
		printf "TOTAL %d %d\n", tot, tot
	}' "$W/kalias" "$1"
}
shares "$W/profd.folded" | sort >"$W/profd.shares"
shares "$W/perf.folded" | sort >"$W/perf.shares"
shares "$W/auto.folded" | sort >"$W/auto.shares"
N3=$(awk '$1 == "TOTAL" { print $2 }' "$W/auto.shares")
# Default unwinding: self shares only.
join -a1 -a2 -e 0 -o 0,1.2,2.2 <(grep -v '^TOTAL ' "$W/auto.shares") <(grep -v '^TOTAL ' "$W/perf.shares") |
	awk -v n1="$N3" -v n2="$(awk '$1 == "TOTAL" { print $2 }' "$W/perf.shares")" '{
		p = ($2 + $3) / 200; sd = 100 * sqrt(p * (1 - p) * (1 / n1 + 1 / n2)); d = $2 - $3
		printf "%s %.2f %.2f %.2f %.2f\n", $1, $2, $3, d, sd }' >"$W/cmp_auto"
read -r MA_F MA_A MA_B MA_D MA_SD < <(awk '{ d = $4 < 0 ? -$4 : $4; print d, $0 }' "$W/cmp_auto" | sort -gr | head -1 | cut -d' ' -f2-)
N1=$(awk '$1 == "TOTAL" { print $2 }' "$W/profd.shares")
N2=$(awk '$1 == "TOTAL" { print $2 }' "$W/perf.shares")
[ "${N1:-0}" -gt 0 ] && [ "${N2:-0}" -gt 0 ] || { echo "no samples: profd $N1, perf $N2" >&2; exit 1; }

# Per function: both shares, the difference and the sigma of the
# difference of two independent binomial shares.
join -a1 -a2 -e 0 -o 0,1.2,1.3,2.2,2.3 <(grep -v '^TOTAL ' "$W/profd.shares") <(grep -v '^TOTAL ' "$W/perf.shares") |
awk -v n1="$N1" -v n2="$N2" '{
	for (j = 0; j < 2; j++) {
		a = $(2 + 2 * 0 + j); b = $(4 + j); p = (a + b) / 200
		sd = 100 * sqrt(p * (1 - p) * (1 / n1 + 1 / n2)); d = a - b
		printf "%s %s %.2f %.2f %.2f %.2f\n", $1, j ? "total" : "self", a, b, d, sd
	}
}' >"$W/cmp"
# Largest absolute difference, self and total, with its function.
read -r MS_F _ MS_A MS_B MS_D MS_SD < <(awk '$2 == "self" { d = $5 < 0 ? -$5 : $5; print d, $0 }' "$W/cmp" | sort -gr | head -1 | cut -d' ' -f2-)
read -r MT_F _ MT_A MT_B MT_D MT_SD < <(awk '$2 == "total" { d = $5 < 0 ? -$5 : $5; print d, $0 }' "$W/cmp" | sort -gr | head -1 | cut -d' ' -f2-)
abs() { awk -v x="$1" 'BEGIN { printf "%.2f", x < 0 ? -x : x }'; }
MAXD=$(awk -v a="$(abs "$MS_D")" -v b="$(abs "$MT_D")" 'BEGIN { print (a > b ? a : b) }')
# Differences beyond 4 sigma + 0.5 points are not sampling noise.
OUTLIERS=$(awk '{ d = $5 < 0 ? -$5 : $5 } d > 4 * $6 + 0.5 { print $1 " " $2 " " $5 " (sigma " $6 ")" }' "$W/cmp")

{
	echo "Machine: $(machine_line)."
	echo
	echo "Workload: \`benchwork $NCPU\`, a python3 loop and a perl loop for ${SECS} s, profiled at the same time by"
	echo "\`perf record -F 99 -a -g\`, by \`profd --unwind fp\` (frame pointers, like perf -g; the table) and by"
	echo "\`profd\` with its default unwinding; perf's samples folded with \`perf script\` and awk."
	echo "Shares are of the workload's samples: profd (fp) $N1, perf $N2, profd (default) $N3. Self: the function is the leaf;"
	echo "total: the function is anywhere on the stack. σ: the standard deviation of the difference of two"
	echo "independent samplers that are both right."
	echo
	echo "| function | profd self % | perf self % | profd total % | perf total % | largest diff | σ |"
	echo "|---|---|---|---|---|---|---|"
	# Functions with at least 2 % total or self on either side.
	awk '{ k = $1; if ($2 == "self") { ps[k] = $3; fs[k] = $4; ds[k] = $5; ss[k] = $6 }
		else { pt[k] = $3; ft[k] = $4; dt[k] = $5; st[k] = $6 } }
		END { for (k in pt) if (pt[k] >= 2 || ft[k] >= 2 || ps[k] >= 2 || fs[k] >= 2) {
			a = ds[k] < 0 ? -ds[k] : ds[k]; b = dt[k] < 0 ? -dt[k] : dt[k]
			printf "%s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f\n", k, ps[k], fs[k], pt[k], ft[k], (a > b ? a : b), (a > b ? ss[k] : st[k]) } }' "$W/cmp" |
		sort -t'|' -k5 -gr | sed 's/^/| /; s/$/ |/' | sed 's/_\[k\]/_\\[k\\]/g'
	echo
	echo "Largest self difference: $MS_F $MS_D points (σ $MS_SD); largest total difference: $MT_F $MT_D points (σ $MT_SD)."
	echo
	echo "profd with default unwinding (DWARF where there are no frame pointers: python3 and perl here) has"
	echo "deeper stacks than perf -g, so only self shares compare: largest difference $MA_F $MA_D points (σ $MA_SD)."
	echo
	echo "Goal: function shares within 2 points of perf — $(goal "$MAXD" '<=' 2) (largest ${MAXD} points)."
	if [ -n "$OUTLIERS" ]; then
		echo "Beyond sampling noise (> 4σ + 0.5): $(echo "$OUTLIERS" | paste -sd';' | sed 's/;/; /g')."
	else
		echo "No difference is beyond sampling noise (4σ + 0.5 points)."
	fi
} >"$BENCH_OUT/accuracy.md"
echo "workload_cpu_ms=$CPU_MS auto_self_max=$MA_D profd_samples=$N1 perf_samples=$N2 max_diff=$MAXD self_max=$MS_D total_max=$MT_D" >"$BENCH_OUT/accuracy.env"
cat "$BENCH_OUT/accuracy.md"

if [ "$QUICK" = 1 ]; then
	expect=$(awk -v c="$CPU_MS" 'BEGIN { printf "%.0f", c / 1000 * 99 }')
	check_q "profd sampled the workload: $N1 samples, $expect expected from its CPU time (±15 %)" \
		within "$N1" "$expect" "$(awk -v e="$expect" 'BEGIN { print e * 0.15 + 10 }')"
	check_q "perf sampled the workload: $N2 samples" fcmp "$N2" '>=' "$(awk -v e="$expect" 'BEGIN { print e * 0.5 }')"
	check_q "default-unwinding profd: self shares within sampling noise of perf ($MA_F $MA_D, σ $MA_SD)" \
		fcmp "$(abs "$MA_D")" '<=' "$(awk -v s="$MA_SD" 'BEGIN { print 4 * s + 0.5 }')"
	check_q "bw_unit seen by both" grep -q '^bw_unit self' "$W/cmp"
	check_q "no function share differs beyond sampling noise${OUTLIERS:+: $OUTLIERS}" test -z "$OUTLIERS"
fi
bench_done
