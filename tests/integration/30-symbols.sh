#!/bin/bash
# Issue 3: frames named from every kind of file a production host runs, in
# one profd run: a C++ template method, a function in a dlopen()ed library,
# a stripped binary named by its build-id debug file, a binary deleted after
# it started, a binary only visible in a private mount namespace, and kernel
# frames. The deleted and namespaced binaries start before profd, so they
# are captured at first sight in a drain, not at exec.
source "$(dirname "$0")/lib.sh"

SECS=1.2
# cnt COMM PATHS: COMM's samples whose stack has one of PATHS (literal, "|" between them)
cnt() {
	awk -v c="$1" -v pats="$2" 'BEGIN { np = split(pats, p, "|") }
		{ split($0, f, ";"); hit = np == 0; for (i = 1; i <= np && !hit; i++) hit = index($0, ";" p[i]) }
		f[1] == c && hit { n += $NF } END { print n + 0 }' "$T/folded"
}
# named_share COMM PATHS: share of COMM's samples through one of PATHS, and at least 20 samples
named_share() {
	local total named
	total=$(cnt "$1" "") named=$(cnt "$1" "$2")
	echo "$1: $named of $total samples through $2"
	[ "$total" -ge 20 ] && awk -v n="$named" -v t="$total" 'BEGIN { exit !(n >= 0.9 * t) }' && return 0
	echo "$1: not through $2, most samples first:"
	grep "^$1;" "$T/folded" | grep -vF "$(tr '|' '\n' <<<"$2" | sed 's/^/;/')" |
		sort -t' ' -k2 -nr | head -8 | cut -c1-300
	return 1
}

# A binary deleted after it started: the path in maps names nothing any more.
cp "$TP/sym_spin" "$T/sym_deleted"
mkfifo "$T/go.del" "$T/go.ns"
"$T/sym_deleted" $SECS "$T/go.del" &
DEL_PID=$!
# A binary on a tmpfs mounted only in the process's own mount namespace.
mkdir "$T/ns"
unshare -m --propagation private sh -c "mount -t tmpfs tmpfs '$T/ns' && cp '$TP/sym_spin' '$T/ns/sym_nsonly' && exec '$T/ns/sym_nsonly' $SECS '$T/go.ns'" &
NS_PID=$!
on_exit "kill $DEL_PID $NS_PID"
for _ in $(seq 100); do
	[ "$(cat /proc/$NS_PID/comm 2>/dev/null)" = sym_nsonly ] && [ "$(cat /proc/$DEL_PID/comm 2>/dev/null)" = sym_deleted ] && break
	sleep 0.05
done
rm "$T/sym_deleted"
check "sym_deleted runs from a deleted file" grep -q "sym_deleted (deleted)" "/proc/$DEL_PID/maps"
check "sym_nsonly's binary is invisible outside its namespace" test ! -e "$T/ns/sym_nsonly" -a -e "/proc/$NS_PID/exe"

# The stripped binary's debug file, where distributions install them (by build-id).
BID=$(readelf -n "$TP/sym_stripped" 2>/dev/null | awk '/Build ID/ { print $3 }')
DBG=/usr/lib/debug/.build-id/${BID:0:2}/${BID:2}.debug
if [ -n "$BID" ] && [ ! -e "$DBG" ]; then
	mkdir -p "$(dirname "$DBG")"
	cp "$TP/sym_stripped.debug" "$DBG"
	on_exit "rm -f '$DBG'; rmdir -p '$(dirname "$DBG")'"
fi
check "sym_stripped has no symbol table" sh -c "! readelf -S '$TP/sym_stripped' | grep -q '\.symtab'"
check "sym_stripped's debug file is installed at $DBG" test -s "$DBG"

start_profd
echo go >"$T/go.del"
echo go >"$T/go.ns"
pids="$DEL_PID $NS_PID"
"$TP/sym_cxx" $SECS & pids+=" $!"
"$TP/sym_dlopen" "$TP/libsym_plugin.so" $SECS & pids+=" $!"
"$TP/sym_stripped" $SECS & pids+=" $!"
wait $pids
# A count of blocks, not a second of wall time: 0.5-0.7 s of CPU however
# loaded the host (at load 30, 0.7 s of dd's CPU took 22 s of wall time; the
# check below needs 20 samples).
dd if=/dev/zero of=/dev/null bs=64k count=300000 status=none
# What the program ran is in the store once profd answers a flush after its
# exit; at load 30 one flush can outlast profctl's 10 s, and a dump whose own
# flush timed out lacks the last seconds.
caught_up || fail "profd did not answer a flush within 12 tries of 10 s"
profctl dump --no-flush --since "$(since_start)" >"$T/folded" || { fail "profctl dump exited $?"; done_test; }

# sym_spin's own frames: the leaf, or the CPU-clock read between leaves (a system call, where
# a task preempted on its way back to user space is sampled when it runs again: up to 12 %
# of the samples under load). sym_cxx reads the clock the same way.
check "C++ template method wlspace::Matrix<double>::multiply(int) named" named_share sym_cxx \
	"wlspace::Matrix<double>::multiply(int)|main;cpu_ns()|main;clock_gettime"
check "function of a dlopen()ed library named" named_share sym_dlopen "plugin_spin"
SPIN="spin_here;spin_leaf|spin_here;cpu_ns"
check "stripped binary named from its build-id debug file" named_share sym_stripped "$SPIN"
check "binary deleted after it started named" named_share sym_deleted "$SPIN"
check "binary only in a private mount namespace named" named_share sym_nsonly "$SPIN"
grep -E '^sym_(stripped|deleted|nsonly);' "$T/folded" | grep -v spin_here | head -3

# Kernel frames: every one dd shows is a kallsyms function, and its syscalls enter through the syscall entry.
awk '{ sub(/ [0-9]+$/, ""); n = split($0, f, ";") } f[1] == "dd" { for (i = 2; i <= n; i++) if (f[i] ~ /_\[k\]$/) { sub(/_\[k\]$/, "", f[i]); print f[i] } }' \
	"$T/folded" | sort -u >"$T/kframes"
awk '{ print $3 }' /proc/kallsyms | sort -u >"$T/kallsyms"
nk=$(wc -l <"$T/kframes")
unknown=$(comm -23 "$T/kframes" "$T/kallsyms" | tr '\n' ' ')
echo "dd: $nk distinct kernel frames; not in kallsyms: ${unknown:-none}"
check "dd's kernel frames ($nk distinct) are all kallsyms names" test "$nk" -ge 3 -a -z "$unknown"
ksys=$(awk '{ split($0, f, ";") } f[1] == "dd" && /_\[k\]/ { t += $NF; if (/;entry_SYSCALL_64[a-z_]*_\[k\]/) n += $NF } END { printf "%d %d", n, t }' "$T/folded")
echo "dd samples in the kernel through the syscall entry: $ksys"
check "dd's kernel stacks root at the syscall entry (>= 90%)" awk -v s="$ksys" 'BEGIN { split(s, a, " "); exit !(a[2] >= 20 && a[1] >= 0.9 * a[2]) }'

check "profd exits 0 on SIGTERM" stop_profd
grep -i warn "$T/profd.log" | head -5
done_test
