# Shared helpers for integration tests (sourced). Each test runs as root on the
# real kernel, with its own state dir and socket, and cleans up on exit.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT=$PWD
BUILD=${BUILD:-build}
BUILD=$(cd "$BUILD" && pwd)
PROFD=$BUILD/profd
PROFCTL_BIN=$BUILD/profctl
TP=$BUILD/testprogs
T=$(mktemp -d /tmp/profd-test.XXXXXX)
STATE=$T/state
SOCK=$T/profd.sock
PROFD_PID=
FAILS=0
CHECKS=0
CLEANUP_CMDS=()

cleanup() {
	for c in "${CLEANUP_CMDS[@]}"; do eval "$c" >/dev/null 2>&1 || true; done
	if [ -n "$PROFD_PID" ] && kill -0 "$PROFD_PID" 2>/dev/null; then
		kill -TERM "$PROFD_PID" 2>/dev/null; wait "$PROFD_PID" 2>/dev/null
	fi
	rm -rf "$T"
}
trap cleanup EXIT

on_exit() { CLEANUP_CMDS+=("$1"); }

profctl() { "$PROFCTL_BIN" --state-dir "$STATE" --socket "$SOCK" "$@"; }

# The privileges of the unit `make install` writes (it substitutes @SBINDIR@
# only): profd runs as its User= and Group=, with exactly its
# CapabilityBoundingSet= (as ambient capabilities for a user other than
# root), so a unit change that breaks a feature fails the tests that use it.
# UNIT=FILE tests another unit; PROFD_AS=root runs with every capability.
UNIT=${UNIT:-$ROOT/systemd/profd.service}
unit_value() { sed -n "s/^$1=//p" "$UNIT" | tail -n 1; }
# unit_user: the unit's user, created as `make install` does when missing.
unit_user() {
	local user
	user=$(unit_value User)
	[ -n "$user" ] || user=root
	if ! getent passwd "$user" >/dev/null; then
		systemd-sysusers "$ROOT/systemd/profd.sysusers" >/dev/null 2>&1 ||
			useradd --system --user-group --no-create-home --shell /usr/sbin/nologin "$user"
	fi
	echo "$user"
}
# unit_setpriv: the setpriv command line that gives a process the unit's privileges.
unit_setpriv() {
	local caps c list= user group groups nnp=
	caps=$(unit_value CapabilityBoundingSet)
	user=$(unit_user)
	[ -n "$caps" ] || { echo "no CapabilityBoundingSet= in $UNIT" >&2; return 1; }
	# A capability this machine's bounding set lacks is not there under systemd either.
	local have=$((16#$(sed -n 's/^CapBnd:[[:space:]]*//p' /proc/self/status))) names
	mapfile -t names < <(setpriv --list-caps)
	for c in $caps; do
		c=${c#CAP_}
		c=${c,,}
		for i in "${!names[@]}"; do
			[ "${names[$i]}" = "$c" ] && [ $(((have >> i) & 1)) -eq 1 ] && list="$list,+$c"
		done
	done
	list=${list#,}
	[ "$(unit_value NoNewPrivileges)" = yes ] && nnp=--no-new-privs
	groups=$(unit_value SupplementaryGroups)
	if [ "$user" = root ]; then
		# Root's uid: what systemd leaves is the bounding set, inheritable and ambient empty.
		echo setpriv $nnp ${groups:+--groups=root,${groups// /,}} --inh-caps=-all --ambient-caps=-all --bounding-set=-all,$list --
	else
		group=$(unit_value Group)
		[ -n "$group" ] || group=$(id -gn "$user")
		groups=$group${groups:+,${groups// /,}}
		# setpriv drops the bounding set after the uid change: no_setuid_fixup keeps the capabilities across it.
		echo setpriv $nnp --securebits=+no_setuid_fixup --reuid="$user" --regid="$group" --groups="$groups" \
			--inh-caps=-all,$list --ambient-caps=-all,$list --bounding-set=-all,$list --
	fi
}

# unit_wrap: unit_setpriv's command line in WRAP and unit_user's user in
# WRAP_USER, worked out once per unit file as it is now: each start of profd
# paid for a dozen sed, getent and setpriv runs (0.9 s of a start at load
# 11), and 93-kill-restart starts 21. A unit that cannot be read fails.
declare -A WRAP_CACHE=()
unit_wrap() {
	local key line user
	key=$(stat -Lc '%n %i %s %.9Y' "$UNIT") || return 1
	if [ -z "${WRAP_CACHE[$key]:-}" ]; then
		line=$(unit_setpriv) && [ -n "$line" ] && user=$(unit_user) || return 1
		WRAP_CACHE[$key]="$user $line"
	fi
	read -r WRAP_USER line <<<"${WRAP_CACHE[$key]}"
	read -r -a WRAP <<<"$line"
}

# start_profd [profd options...]: starts profd with a 1 s flush interval, with
# the unit's privileges, and waits for its socket.
start_profd() {
	local wrap=() user
	if [ "${PROFD_AS:-unit}" = unit ]; then
		unit_wrap || { echo "cannot read the unit's privileges from $UNIT"; exit 1; }
		wrap=("${WRAP[@]}")
		# Like StateDirectory= and RuntimeDirectory= (systemd chowns them, contents too):
		# the unit's user owns where profd writes.
		user=$WRAP_USER
		if [ "$user" != root ]; then
			mkdir -p "$STATE" "$(dirname "$SOCK")"
			chown "$user:" "$T" "$(dirname "$SOCK")"
			chown -R "$user:" "$STATE"
		fi
	fi
	"${wrap[@]}" "$PROFD" --state-dir "$STATE" --socket "$SOCK" --flush-interval 1s "$@" >"$T/profd.log" 2>&1 &
	PROFD_PID=$!
	# Loading and verifying the BPF programs took over 10 s at load 20 on 2
	# CPUs; the unit allows 90 s (TimeoutStartSec=).
	for _ in $(seq 1 600); do
		if [ -S "$SOCK" ]; then
			# The default unwinder falls back to frame pointers when the
			# DWARF walker does not load (the verifier's instruction limit):
			# every test on the defaults would then measure the wrong one.
			if grep -q 'DWARF unwinding unavailable' "$T/profd.log"; then
				fail "profd fell back to frame pointers: $(grep -m1 'DWARF unwinding unavailable' "$T/profd.log")"
			fi
			# The same for the off-CPU hook (a verifier refusal, E2BIG or EACCES).
			if grep -qE 'off-CPU profiling unavailable \((Argument list too long|Permission denied|the kernel.s BPF verifier refused)' "$T/profd.log"; then
				fail "the off-CPU hook did not load: $(grep -m1 'off-CPU profiling unavailable' "$T/profd.log")"
			fi
			return 0
		fi
		kill -0 "$PROFD_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "profd did not start:"; cat "$T/profd.log"
	exit 1
}

# caught_up: profd answered a flush, so what it had to do before (its start-up
# read of every running program's symbols, a backlog of samples) is behind
# it. Seconds on a loaded host, where one flush can outlast profctl's 10 s.
caught_up() {
	for _ in $(seq 12); do profctl flush >/dev/null 2>&1 && return 0; done
	return 1
}

# tables_in: within 60 s, no unwind table build or row write is pending
# (a fresh profd writes a big library's table in steps, and samples taken
# before it is in stop at the leaf). For tests about what a walk names,
# after a warm-up run of the same files.
tables_in() {
	for _ in $(seq 240); do
		[ "$(profctl status | awk -F'\t' '$1 == "unwind_table_builds_pending" { print $2 }')" = 0 ] && return 0
		sleep 0.25
	done
	return 1
}

# settled: within 15 s, profd drained twice and wrote a window: its start-up
# read of every running program is behind it, and what comes next is work.
settled() {
	for _ in $(seq 150); do
		profctl status 2>/dev/null | awk '$1 == "drains" { d = $2 } $1 == "windows_written" { w = $2 }
			END { exit !(d >= 2 && w >= 1) }' && return 0
		sleep 0.1
	done
	return 1
}

# sampled: within 15 s, the BPF program has taken a sample outside the idle
# task (its counters are read live, not at a drain), so a flush now writes
# a window, and no fixed sleep has to make one likely.
sampled() {
	for _ in $(seq 300); do
		profctl status 2>/dev/null | awk '$1 == "bpf_samples" { s = $2 } $1 == "idle_samples" { i = $2 }
			END { exit !(s > i) }' && return 0
		sleep 0.05
	done
	return 1
}

# since_start: a --since span back to the test's start, and a minute before:
# a loaded host stretches a test over minutes (10-cpu-split's 8 s of CPU took
# 5.5 min at load 30), and a fixed 2m left its first samples out. Each test's
# profd writes a state dir of its own: nothing older is in it.
since_start() { echo "$((SECONDS + 60))s"; }

stop_profd() {
	[ -n "$PROFD_PID" ] || return 0
	kill -TERM "$PROFD_PID"
	wait "$PROFD_PID"
	local rc=$?
	PROFD_PID=
	return $rc
}

# run_own PROG ARGS...: runs it in the foreground, its pid appended to $T/pids
# (a test that counts what profd's debug log says of its own processes only).
run_own() { "$@" & echo $! >>"$T/pids"; wait $!; }
# own_count PATTERN: lines of $T/profd.log matching PATTERN whose pid (the
# digits of the match) is one of $T/pids: profd watches the whole host.
own_count() {
	awk -v pat="$1" 'NR == FNR { own[$1] = 1; next }
		match($0, pat) { s = substr($0, RSTART, RLENGTH); gsub(/[^0-9]/, "", s); if (s in own) n++ }
		END { print n + 0 }' "$T/pids" "$T/profd.log"
}
ok() { CHECKS=$((CHECKS + 1)); echo "ok: $*"; }
fail() { CHECKS=$((CHECKS + 1)); FAILS=$((FAILS + 1)); echo "FAIL: $*"; }
check() { # check DESCRIPTION CMD...
	local d=$1; shift
	if "$@"; then ok "$d"; else fail "$d"; fi
}
# within A B TOL: |A - B| <= TOL (floating point)
within() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t) }'; }
# share FOLDED NAME [PATTERN...]: "n t" — samples of process NAME in a folded
# profile through any PATTERN (a substring of the stack; none: every sample),
# and all of that process's samples.
share() {
	local folded=$1 name=$2; shift 2
	awk -v c="$name" -v pats="$*" 'BEGIN { np = split(pats, p, " ") }
		{ split($0, f, ";") } f[1] == c {
			t += $NF
			if (!np) n += $NF
			for (i = 1; i <= np; i++) if (index($0, p[i])) { n += $NF; break }
		} END { print n + 0, t + 0 }' "$folded"
}
# share_ok N T MIN FRACTION: at least MIN samples in all, and N of them at least FRACTION of T.
share_ok() {
	awk -v n="$1" -v t="$2" -v m="$3" -v s="$4" 'BEGIN { exit !(t >= m && n >= s * t) }'
}

done_test() {
	echo "$CHECKS checks, $FAILS failed"
	[ "$FAILS" -eq 0 ]
	exit $?
}

# skip_test REASON: this machine cannot run the test (exit 77: run.sh reports SKIP, not PASS).
skip_test() {
	echo "skipped: $*"
	exit 77
}

# python_interpreters: INTERP[label] for every CPython 3.10-3.13 here (the
# pyenv builds, libpython shared, and Debian's, libpython linked in) and
# LABELS, sorted; an absent one is said, and none at all skips the test.
declare -A INTERP=()
LABELS=
python_interpreters() {
	local v p
	for v in 3.10 3.11 3.12 3.13; do
		for p in /root/.pyenv/versions/$v.*/bin/python$v; do
			[ -x "$p" ] && INTERP[py$v]=$p
		done
		[ -n "${INTERP[py$v]:-}" ] || echo "note: no pyenv CPython $v here: not tested"
	done
	if [ -x /usr/bin/python3.11 ]; then
		INTERP[debian3.11]=/usr/bin/python3.11
	else
		echo "note: no /usr/bin/python3.11: Debian's CPython not tested"
	fi
	[ ${#INTERP[@]} -gt 0 ] || skip_test "no CPython 3.10-3.13 on this machine"
	LABELS=$(printf '%s\n' "${!INTERP[@]}" | sort)
}

# free_hook_links PID: how many of profd's uprobe_multi links filter on PID
# (its Python free hook of that process).
free_hook_links() {
	local f n=0
	for f in $(find "/proc/$PROFD_PID/fd" -lname 'anon_inode:bpf_link' 2>/dev/null); do
		link_on_pid "$PROFD_PID" "${f##*/}" "$1" && n=$((n + 1))
	done
	echo $n
}
# link_on_pid HOLDER FD PID: whether HOLDER's descriptor FD is a uprobe_multi
# link that filters on PID.
link_on_pid() {
	awk -v p="$3" '$1 == "link_type:" && $2 == "uprobe_multi" { u = 1 } $1 == "pid:" && $2 == p { q = 1 }
		END { exit !(u && q) }' "/proc/$1/fdinfo/$2" 2>/dev/null
}

# other_hook_holders PID: processes other than this test's profd that hold a
# uprobe_multi link filtering on PID ("comm(pid)" each), e.g. another profd
# on the host, whose own hook keeps the breakpoint in that process.
other_hook_holders() {
	local f h
	for f in $(find /proc/[0-9]*/fd -lname 'anon_inode:bpf_link' 2>/dev/null); do
		h=${f#/proc/}; h=${h%%/*}
		[ "$h" = "$PROFD_PID" ] && continue
		link_on_pid "$h" "${f##*/}" "$1" && echo "$(cat "/proc/$h/comm" 2>/dev/null)($h)"
	done | sort -u | paste -sd' '
}

# churn_check FOLDED: "good bad" samples of churn.py's generated functions.
# f_N must be right under run_mod{N % 3}, k_N under run_k{N % 3}: a name
# from a freed and reused code object would sit under another caller.
# Misnamed stacks go to stderr.
churn_check() {
	awk -F'\t' '{ n = split($1, fr, ";"); prev = "";
		for (i = 1; i <= n; i++) {
			if (fr[i] !~ / [(][^;]*[)]$/ || fr[i] ~ /_\[k\]$/) continue
			if (match(fr[i], /^[fk]_[0-9]+ [(]churn_gen[.]py[)]$/)) {
				k = substr(fr[i], 3) + 0
				caller = (substr(fr[i], 1, 1) == "f" ? "run_mod" : "run_k") (k % 3) " (churn.py)"
				if (prev == caller) good += $2; else { bad += $2; print "misnamed: " $1 > "/dev/stderr" }
			}
			prev = fr[i]
		} } END { print good + 0, bad + 0 }' "$1"
}
