#!/bin/bash
# Start-up errors: each is one line on stderr saying what failed and what to
# do, exit 1, and leaves no socket behind: a read-only state dir, no kernel
# BTF, perf_event_open or bpf refused, a symlinked state dir (seccomp, as a locked-down container
# would), a kernel without BPF, and no privileges at all.
source "$(dirname "$0")/lib.sh"

# expect_fail PATTERN CMD...: exit 1, exactly one stderr line matching PATTERN, no socket left.
expect_fail() {
	local pat=$1; shift
	rm -f "$SOCK"
	"$@" >"$T/out" 2>"$T/err"
	local rc=$? lines
	lines=$(wc -l <"$T/err")
	if [ $rc -eq 1 ] && [ "$lines" -eq 1 ] && grep -qE -- "$pat" "$T/err" && [ ! -e "$SOCK" ]; then
		ok "exit 1: $(cat "$T/err")"
	else
		fail "$* -> exit $rc (want 1), $lines stderr lines (want 1 matching '$pat'), socket left: $([ -e "$SOCK" ] && echo yes || echo no): $(head -3 "$T/err")"
	fi
}
P=("$PROFD" --config /dev/null --socket "$SOCK")

mkdir -p "$T/ro"
mount -t tmpfs -o ro,size=1m tmpfs "$T/ro" || { fail "cannot mount a read-only tmpfs"; done_test; }
on_exit "umount '$T/ro'"
expect_fail "state directory .*/ro is not writable: Read-only file system" "${P[@]}" --state-dir "$T/ro"
expect_fail "state directory .*/ro/sub is not writable: Read-only file system" "${P[@]}" --state-dir "$T/ro/sub"

# A symlinked state dir pointing at a root-owned directory elsewhere: refused,
# nothing written there, its mode unchanged (run with the unit's privileges).
mkdir -m 0755 "$T/elsewhere" && echo keep >"$T/elsewhere/data"
ln -s "$T/elsewhere" "$T/link"
before=$(stat -c '%a %U' "$T/elsewhere"; ls -A "$T/elsewhere")
read -r -a wrap <<<"$(unit_setpriv)"
expect_fail "state directory .*/link is a symbolic link; refusing it" "${wrap[@]}" "${P[@]}" --state-dir "$T/link"
after=$(stat -c '%a %U' "$T/elsewhere"; ls -A "$T/elsewhere")
check "the directory the link points at is untouched (mode, owner, files: $(echo $after))" [ "$before" = "$after" ]

# No BTF: hide /sys/kernel/btf in a private mount namespace.
expect_fail "no kernel BTF at /sys/kernel/btf/vmlinux.*CONFIG_DEBUG_INFO_BTF" \
	unshare -m bash -c 'mount -t tmpfs tmpfs /sys/kernel/btf && exec "$@"' - "${P[@]}" --state-dir "$STATE"

expect_fail "perf_event_open not permitted.*CAP_PERFMON" \
	"$TP/deny_syscall" perf_event_open 13 "${P[@]}" --state-dir "$STATE"
expect_fail "BPF programs not permitted.*CAP_BPF" \
	"$TP/deny_syscall" bpf 1 "${P[@]}" --state-dir "$STATE"
# A kernel built without BPF answers ENOSYS.
expect_fail "cannot load BPF programs \(Function not implemented\)" \
	"$TP/deny_syscall" bpf 38 "${P[@]}" --state-dir "$STATE"

# No privileges at all.
chmod 0755 "$T"
mkdir -p "$T/nobody" && chown nobody "$T/nobody"
SOCK=$T/nobody/sock expect_fail "not permitted" \
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$PROFD" --config /dev/null --state-dir "$T/nobody/state" --socket "$T/nobody/sock"

# After all that, a normal start still works on the same state dir (no stale lock).
start_profd --config /dev/null
check "profd starts after the failed attempts" kill -0 "$PROFD_PID"
check "profd exits 0 on SIGTERM" stop_profd
done_test
