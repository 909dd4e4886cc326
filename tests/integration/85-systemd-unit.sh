#!/bin/bash
# The systemd unit: `systemd-analyze verify` passes, the offline security
# exposure is below 3.0, the hardening keeps what symbolization needs, and
# `make install` puts the unit (with its path substituted), its user's
# sysusers.d file, profd.conf and the man pages where they belong; profd
# runs as its own user with ambient capabilities.
source "$(dirname "$0")/lib.sh"
command -v systemd-analyze >/dev/null || skip_test "systemd-analyze not installed"

U=systemd/profd.service
make --no-print-directory install DESTDIR="$T/root" PREFIX=/usr >"$T/install.log" 2>&1 || { cat "$T/install.log"; fail "make install failed"; }
unit=$T/root/usr/lib/systemd/system/profd.service
check "make install: unit installed" [ -f "$unit" ]
check "make install: @SBINDIR@ substituted" grep -q "^ExecStart=/usr/sbin/profd " "$unit"
check "make install: the unit's user in sysusers.d" \
	grep -qE "^u $(sed -n 's/^User=//p' $U) " "$T/root/usr/lib/sysusers.d/profd.conf"
check "make install: /etc/profd/profd.conf installed" cmp -s systemd/profd.conf "$T/root/etc/profd/profd.conf"
check "make install: profd.8 and profctl.8 installed" \
	test -f "$T/root/usr/share/man/man8/profd.8" -a -f "$T/root/usr/share/man/man8/profctl.8"
for m in "$T"/root/usr/share/man/man8/*.8; do
	out=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l "$m" 2>&1 >/dev/null)
	check "man page $(basename "$m") renders without warnings${out:+: $out}" [ -z "$out" ]
done

# profd.8 documents every setting profd knows.
man_text=$(MANWIDTH=200 man -l docs/man/profd.8 2>/dev/null)
missing=
for k in $("$PROFD" --print-config --config /dev/null | sed -n 's/^#\{0,1\}\([a-z-]*\) = .*/\1/p'); do
	grep -q -- "--$k" <<<"$man_text" || missing="$missing $k"
done
check "profd.8 documents every setting:${missing:- all}" [ -z "$missing" ]

# verify needs ExecStart to exist: point it at the build.
sed "s|@SBINDIR@|$BUILD|g" $U >"$T/profd.service"
out=$(systemd-analyze verify --man=no "$T/profd.service" 2>&1)
rc=$?
check "systemd-analyze verify: exit $rc, no complaints${out:+: $out}" test $rc -eq 0 -a -z "$out"
systemd-analyze security --offline=yes "$T/profd.service" >"$T/security" 2>&1
score=$(sed -n 's/.*Overall exposure level for profd.service: \([0-9.]*\).*/\1/p' "$T/security")
echo "exposure: $score"
check "systemd-analyze security: exposure ${score:-?} < 3.0" awk -v s="${score:-99}" 'BEGIN { exit !(s < 3.0) }'

# Settings that break profd must not creep in.
for bad in ProtectKernelTunables=yes ProtectKernelLogs=yes ProtectProc=invisible ProcSubset=pid; do
	check "unit does not set $bad (breaks kallsyms or /proc/PID of others)" bash -c "! grep -q '^$bad' $U"
done
for need in Type=notify WatchdogSec= StateDirectory=profd RuntimeDirectory=profd ExecReload= MemoryMax= CPUQuota= Nice=; do
	check "unit sets $need" grep -q "^$need" $U
done
caps=$(sed -n 's/^CapabilityBoundingSet=//p' $U)
for c in CAP_BPF CAP_PERFMON CAP_SYS_PTRACE CAP_DAC_READ_SEARCH CAP_SYSLOG CAP_CHECKPOINT_RESTORE; do
	check "capability $c granted" grep -qw "$c" <<<"$caps"
done
check "no CAP_SYS_ADMIN" bash -c "! grep -qw CAP_SYS_ADMIN <<<'$caps'"
user=$(sed -n 's/^User=//p' $U)
check "profd runs as its own user, not root (User=$user)" test -n "$user" -a "$user" != root
check "its capabilities are ambient, the same as the bounding set" \
	[ "$(sed -n 's/^AmbientCapabilities=//p' $U)" = "$caps" ]
filter=$(grep '^SystemCallFilter=' $U | tr '\n' ' ')
check "system call filter allows bpf and perf_event_open" bash -c "grep -q '@system-service bpf perf_event_open' <<<'$filter'"
done_test
