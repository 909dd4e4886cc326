#!/bin/bash
# Configuration: a config file is honoured and shown by `profctl status`, flags
# win over it, a bad key or value is refused with file:line: key (exit 2), and
# the shipped systemd/profd.conf documents every key with the binary's default.
source "$(dirname "$0")/lib.sh"

# expect_err RC PATTERN CMD...: exit RC, exactly one stderr line matching PATTERN.
expect_err() {
	local want=$1 pat=$2; shift 2
	"$@" >"$T/out" 2>"$T/err"
	local rc=$? lines
	lines=$(wc -l <"$T/err")
	if [ "$rc" -eq "$want" ] && [ "$lines" -eq 1 ] && grep -qE -- "$pat" "$T/err"; then
		ok "exit $rc: $(cat "$T/err")"
	else
		fail "$* -> exit $rc (want $want), $lines lines (want 1 matching '$pat'): $(head -3 "$T/err")"
	fi
}
status_val() { awk -v k="$1" '$1 == k { print $2 }' "$T/status"; }

# --- a config file honoured, visible in status; flags win ---
cat >"$T/profd.conf" <<CONF
# test configuration
frequency = 49          # not the default 99
flush-interval = 1h
zstd-level = 5
max-files = 64
CONF
# start_profd passes --flush-interval 1s: that flag must beat the file's 1h.
start_profd --config "$T/profd.conf" --max-pids 300
profctl status >"$T/status" || fail "profctl status exited $?"
check "status: config is the file we gave" [ "$(status_val config)" = "$T/profd.conf" ]
check "status: frequency 49 from the file" [ "$(status_val config.frequency)" = 49 ]
check "status: frequency_hz 49 in effect" [ "$(status_val frequency_hz)" = 49 ]
check "status: zstd-level 5 from the file" [ "$(status_val config.zstd-level)" = 5 ]
check "status: max-files 64 from the file" [ "$(status_val config.max-files)" = 64 ]
check "status: flag --flush-interval 1s wins over the file's 1h" [ "$(status_val config.flush-interval)" = 1s ]
check "status: flag-only --max-pids 300 shown" [ "$(status_val config.max-pids)" = 300 ]
check "status: untouched key keeps its default (retention 7d)" [ "$(status_val config.retention)" = 7d ]

# The frequency is really used: samples ~ 49 x CPU seconds, not 99 x.
"$TP/phases" 4 >"$T/phases.out" &
PID=$!
wait $PID
profctl dump --type cpu --pid $PID --since 2m >"$T/folded" 2>/dev/null
got=$(awk '{ s += $NF } END { print s + 0 }' "$T/folded")
cpu_s=$(awk '{ s += $2 } END { printf "%.3f", s / 1e9 }' "$T/phases.out")
want=$(awk -v c="$cpu_s" 'BEGIN { printf "%.0f", c * 49 }')
check "samples $got within 15% of 49 Hz x $cpu_s s = $want" within "$got" "$want" "$(awk -v e="$want" 'BEGIN { print e * 0.15 }')"
check "profd exits 0 on SIGTERM" stop_profd

# --- bad keys and values: file, line and key; exit 2; nothing started ---
printf 'frequency = 49\n\n# a comment\nfrequncy = 10\n' >"$T/bad-key.conf"
expect_err 2 "bad-key\.conf:4: frequncy: unknown key" "$PROFD" --config "$T/bad-key.conf" --state-dir "$T/s2" --socket "$T/s2.sock"
printf '# retention below\nretention = 3fortnights\n' >"$T/bad-val.conf"
expect_err 2 "bad-val\.conf:2: retention: invalid value '3fortnights'" "$PROFD" --config "$T/bad-val.conf" --state-dir "$T/s2" --socket "$T/s2.sock"
printf 'frequency = 100000\n' >"$T/range.conf"
expect_err 2 "range\.conf:1: frequency: .*1 to 10000" "$PROFD" --config "$T/range.conf" --state-dir "$T/s2" --socket "$T/s2.sock"
printf 'frequency 49\n' >"$T/noeq.conf"
expect_err 2 "noeq\.conf:1: .*expected key = value" "$PROFD" --config "$T/noeq.conf" --state-dir "$T/s2" --socket "$T/s2.sock"
printf 'config = /etc/other.conf\n' >"$T/nested.conf"
expect_err 2 "nested\.conf:1: config: unknown key" "$PROFD" --config "$T/nested.conf" --state-dir "$T/s2" --socket "$T/s2.sock"
printf 'socket-group = no-such-group-profd\n' >"$T/group.conf"
expect_err 2 "group\.conf:1: socket-group: .*no group" "$PROFD" --config "$T/group.conf" --state-dir "$T/s2" --socket "$T/s2.sock"
expect_err 2 "cannot read .*missing\.conf" "$PROFD" --config "$T/missing.conf" --state-dir "$T/s2" --socket "$T/s2.sock"
expect_err 2 "for --zstd-level" "$PROFD" --config /dev/null --zstd-level 42
check "no state dir was created by refused starts" [ ! -e "$T/s2" ]

# --- every key is a flag, documented in --help and in the shipped profd.conf ---
"$PROFD" --print-config --config /dev/null >"$T/defaults.conf" || fail "--print-config exited $?"
"$PROFD" --help >"$T/help" || fail "--help exited $?"
keys=$(sed -n 's/^#\{0,1\}\([a-z-]*\) = .*/\1/p' "$T/defaults.conf")
nkeys=$(echo "$keys" | wc -w)
check "--print-config lists settings ($nkeys)" [ "$nkeys" -ge 10 ]
missing=
for k in $keys; do
	def=$(sed -n "s/^#$k = //p" "$T/defaults.conf")
	grep -qx -- "#$k = $def" systemd/profd.conf || missing="$missing $k(conf)"
	grep -q -- "--$k" "$T/help" || missing="$missing $k(help)"
	# each key also works as a flag with its default value (bools use --key=VALUE)
	if [ -n "$def" ]; then
		"$PROFD" --config /dev/null "--$k=$def" --print-config >/dev/null 2>&1 || missing="$missing $k(flag)"
	fi
done
check "every key documented in systemd/profd.conf (regenerate: profd --print-config --config /dev/null) and --help, and accepted as a flag:${missing:- all}" [ -z "$missing" ]
check "the shipped profd.conf parses and gives the defaults" \
	cmp -s <("$PROFD" --print-config --config systemd/profd.conf | tail -n +2) <(tail -n +2 "$T/defaults.conf")
done_test
