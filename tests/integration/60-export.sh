#!/bin/bash
# profctl export against a test receiver that decodes every request with the
# real schemas (protoc: pprof's profile.proto from Debian, push.proto written
# to Pyroscope's field numbers) and checks what Pyroscope checks. One profd
# run: a 50/30/20 workload pushed once and compared with profctl dump; then
# --follow through a receiver that is down at start, a 429 storm, a stall,
# a kill -9 mid-push; TLS with a private CA; headers; wrong URLs; bad options.
source "$(dirname "$0")/lib.sh"
command -v protoc >/dev/null || skip_test "protoc not installed (make deps-test)"
/usr/bin/python3 -c 'import google.protobuf' 2>/dev/null || skip_test "python3-protobuf not installed (make deps-test)"
PPROF_PROTO=/usr/share/gocode/src/github.com/google/pprof/proto/profile.proto
[ -f $PPROF_PROTO ] || skip_test "golang-github-google-pprof-dev not installed (make deps-test)"
X=tests/integration/export
mkdir -p "$T/gen"
protoc -I"$(dirname $PPROF_PROTO)" -I$X --python_out="$T/gen" $PPROF_PROTO $X/push.proto || { fail "protoc failed"; done_test; }

# receiver NAME [receiver options]: starts one; its port in $T/NAME.port, its log $T/NAME.log.
receiver() {
	local n=$1; shift
	rm -f "$T/$n.port"
	[ -e "$T/$n.mode" ] || echo ok >"$T/$n.mode"
	/usr/bin/python3 $X/receiver.py --port-file "$T/$n.port" --gen "$T/gen" --log "$T/$n.log" \
		--mode-file "$T/$n.mode" "$@" 2>>"$T/$n.err" &
	eval "RECV_$n=$!"
	on_exit "kill $!"
	for _ in $(seq 1 50); do [ -s "$T/$n.port" ] && return 0; sleep 0.1; done
	echo "receiver $n did not start:"; cat "$T/$n.err"; exit 1
}
an() { /usr/bin/python3 $X/analyze.py "$@"; }
field() { awk -v k="$1" '$1 == k { print $2 }'; }
status_of() { profctl export --status --cursor-file "$1" | field "$2"; }

check "profd does not link libcurl" bash -c "! ldd '$PROFD' | grep -q libcurl"
# Loaded by export alone: every other command starts without its libraries.
check "profctl does not link libcurl either" bash -c "! ldd '$PROFCTL_BIN' | grep -q libcurl"

# profd shares its store with a group (state-group); the exporter runs as
# nobody in that group, with no capabilities, as profd-export.service does.
G=profdx$$
groupadd --system $G || { fail "groupadd $G"; done_test; }
on_exit "groupdel $G"
GID=$(getent group $G | cut -d: -f3)
chmod 0711 "$T"
mkdir "$T/exp" && chown 65534 "$T/exp"
# An array, not a function: $! must be the exporter itself (setpriv execs it).
NOBODY=(setpriv --reuid=65534 --regid=65534 --groups="$GID" --inh-caps=-all --bounding-set=-all --no-new-privs)

# ---- end to end: the pushed profiles are profctl dump's ----
# The unit's drop-in for state-group: profd's user joins the group it gives the store to.
{ cat "$UNIT"; echo "SupplementaryGroups=$G"; } >"$T/group.service"
UNIT=$T/group.service start_profd --state-group $G
"$TP/phases" 6 >"$T/phases.out" &
PID=$!
wait $PID
profctl flush >/dev/null
UNTIL=$(date -u +%Y-%m-%dT%H:%M:%SZ)
sleep 1
receiver e2e
P=$(cat "$T/e2e.port")
printf 'token-123\n' >"$T/bearer"
profctl export --url "http://127.0.0.1:$P/" --since 2m --until "$UNTIL" --tenant team-a \
	--bearer-token-file "$T/bearer" --header 'X-Extra: yes' --label env=test --label region=eu \
	2>"$T/e2e.out"
rc=$?
cat "$T/e2e.out"
check "one-shot export exits 0 (rc $rc)" [ $rc -eq 0 ]
check "nothing refused by the receiver" bash -c "! grep -q '\"invalid\"' '$T/e2e.log'"
profctl dump --no-flush --pid $PID --since 2m --until "$UNTIL" >"$T/dump.folded"
want=$(awk '{ s += $NF } END { print s + 0 }' "$T/dump.folded")
an pid "$T/e2e.log" $PID >"$T/e2e.pid"
cat "$T/e2e.pid"
got=$(field total <"$T/e2e.pid")
check "samples of pid $PID pushed ($got) within 2% of profctl dump ($want)" \
	within "$got" "$want" "$(awk -v w="$want" 'BEGIN { print w * 0.02 + 0.5 }')"
check "pid $PID has samples ($got > 300)" [ "${got:-0}" -gt 300 ]
# The shares the receiver sees are profctl dump's (how well profd samples the
# workload is 10-cpu-split's question; the measured split is shown beside).
for ph in phase_a phase_b phase_c; do
	w=$(awk -v p=$ph '$1 == p { n = $2 } { s += $2 } END { printf "%.2f", 100 * n / s }' "$T/phases.out")
	d=$(awk -v p=";$ph;" 'index($0 ";", p) { n += $NF } { s += $NF } END { printf "%.2f", s ? 100 * n / s : 0 }' "$T/dump.folded")
	g=$(field $ph <"$T/e2e.pid")
	check "$ph share $g% within 0.5 points of profctl dump's $d% (the workload measured $w%)" within "$g" "$d" 0.5
done
# The pid is bash's between fork and exec: a few samples may carry its name.
check "service_name of the workload is its process name (no unit here): $(field services <"$T/e2e.pid")" \
	[ "$(field top_service <"$T/e2e.pid")" = phases ]
check "samples of pid $PID under service_name phases: $(field top_service_pct <"$T/e2e.pid")% >= 99%" \
	awk -v p="$(field top_service_pct <"$T/e2e.pid")" 'BEGIN { exit !(p >= 99) }'
check "pprof sample labels pid, tid, thread_name, comm: $(field sample_labels <"$T/e2e.pid")" \
	bash -c "tr , '\n' <<<'$(field sample_labels <"$T/e2e.pid")' | grep -cxE 'pid|tid|thread_name|comm' | grep -qx 4"
check "profile types pushed: $(field types <"$T/e2e.pid")" [ "$(field types <"$T/e2e.pid")" = off_cpu,process_cpu,wall ]
an windows "$T/e2e.log" 0 >"$T/e2e.win"
nls=$(profctl ls --since 2m --until "$UNTIL" | tail -n +2 | wc -l)
check "one request per stored window: $(field windows <"$T/e2e.win") windows pushed, $nls listed, none twice" \
	[ "$(field windows <"$T/e2e.win")" = "$nls" -a "$(field twice <"$T/e2e.win")" = 0 ]
check "time and duration are the windows': each ends within 100 ms of the next one's start ($(field gaps <"$T/e2e.win") gaps; durations $(field durations_ms <"$T/e2e.win") ms)" \
	[ "$(field gaps <"$T/e2e.win")" = 0 ]
an headers "$T/e2e.log" >"$T/e2e.hdr"
for h in "content-type: application/proto" "connect-protocol-version: 1" "x-scope-orgid: team-a" \
	"authorization: Bearer token-123" "x-extra: yes"; do
	check "header sent: $h" grep -qixF "$h" "$T/e2e.hdr"
done
check "user labels on every series" bash -c "grep '\"status\": 200' '$T/e2e.log' | python3 -c '
import json, sys
ok = all(s[\"labels\"].get(\"env\") == \"test\" and s[\"labels\"].get(\"region\") == \"eu\" and s[\"labels\"].get(\"host\")
         for l in sys.stdin for s in json.loads(l)[\"series\"])
sys.exit(0 if ok else 1)'"
check "the token is not echoed in the output" bash -c "! grep -q token-123 '$T/e2e.out'"

# ---- the store as a group member sees it ----
check "state dir 0750, group $G: $(stat -c %a:%G "$STATE")" [ "$(stat -c %a:%G "$STATE")" = 750:$G ]
check "segments 0640, group $G" bash -c "for f in '$STATE'/seg-*; do [ \"\$(stat -c %a:%G \"\$f\")\" = 640:$G ] || exit 1; done"
check "nobody without the group cannot read the store" bash -c "! setpriv --reuid=65534 --regid=65534 --clear-groups '$PROFCTL_BIN' --state-dir '$STATE' ls >/dev/null 2>&1"
check "nobody in the group can" "${NOBODY[@]}" "$PROFCTL_BIN" --state-dir "$STATE" ls

# ---- --follow through faults, as nobody ----
CUR=$T/exp/cursor
FP=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
SINCE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
sleep 1
"${NOBODY[@]}" "$PROFCTL_BIN" --state-dir "$STATE" export --url "http://127.0.0.1:$FP" --follow --since "$SINCE" \
	--cursor-file "$CUR" --timeout 2s --max-backoff 2s --rate 20 2>"$T/follow.err" &
EXP=$!
on_exit "kill -9 $EXP"
sleep 3 # the receiver is down
check "receiver down: transport errors counted ($(status_of "$CUR" transport_errors))" \
	[ "$(status_of "$CUR" transport_errors)" -gt 0 ]
check "receiver down: the exporter keeps running" kill -0 $EXP
receiver follow --port "$FP"
caught_up() { # caught_up SECS: the cursor is within 3 s of now within SECS
	for _ in $(seq 1 $(($1 * 5))); do
		c=$(status_of "$CUR" cursor_ns)
		[ -n "$c" ] && [ "$c" -gt $(( $(date +%s%N) - 3000000000 )) ] && return 0
		sleep 0.2
	done
	return 1
}
check "receiver up: the backlog is caught up" caught_up 20
echo 429 >"$T/follow.mode"
sleep 3
echo ok >"$T/follow.mode"
check "429 storm: counted ($(status_of "$CUR" http_429)), then caught up" bash -c "[ $(status_of "$CUR" http_429) -gt 0 ]"
caught_up 15 || fail "not caught up after the 429 storm"
t_before=$(status_of "$CUR" transport_errors)
echo stall >"$T/follow.mode"
sleep 6
stalls=$(grep -c '"stalled": true' "$T/follow.log")
echo ok >"$T/follow.mode"
t_after=$(status_of "$CUR" transport_errors)
check "stall: timeouts counted ($t_before -> $t_after)" [ "$t_after" -gt "$t_before" ]
check "stall: at most one request in flight per --timeout ($stalls requests held in 6 s)" [ "$stalls" -le 4 ]
rss=$(awk '/VmHWM/ { print $2 }' /proc/$EXP/status)
check "exporter peak RSS ${rss} kB <= 20 MB" [ "${rss:-99999}" -le 20480 ]
caught_up 15 || fail "not caught up after the stall"
# kill -9 while a request is in flight, then start again from the cursor.
echo slow >"$T/follow.mode"
n0=$(grep -c '"slow": true' "$T/follow.log")
for _ in $(seq 1 40); do [ "$(grep -c '"slow": true' "$T/follow.log")" -gt "$n0" ] && break; sleep 0.1; done
kill -9 $EXP
wait $EXP 2>/dev/null
c_kill=$(status_of "$CUR" cursor_ns)
echo "killed with $(( $(grep -c '"slow": true' "$T/follow.log") - n0 )) request(s) in flight"
echo ok >"$T/follow.mode"
"${NOBODY[@]}" "$PROFCTL_BIN" --state-dir "$STATE" export --url "http://127.0.0.1:$FP" --follow --cursor-file "$CUR" \
	--timeout 2s --max-backoff 2s --rate 20 2>>"$T/follow.err" &
EXP=$!
on_exit "kill -9 $EXP"
moved() { for _ in $(seq 1 75); do [ "$(status_of "$CUR" cursor_ns)" -gt "$c_kill" ] && return 0; sleep 0.2; done; return 1; }
check "restarted after kill -9: the cursor moves on" moved
check "restarted after kill -9: caught up" caught_up 15
kill -TERM $EXP
wait $EXP
rc=$?
check "exporter exits 0 on SIGTERM (rc $rc)" [ $rc -eq 0 ]
cat "$T/follow.err"
profctl export --status --cursor-file "$CUR"
# What the follow run delivered against a clean one-shot push of the same range.
c=$(status_of "$CUR" cursor_ns)
END=$(date -u -d @$((c / 1000000000)) +%Y-%m-%dT%H:%M:%SZ)
receiver truth
profctl export --url "http://127.0.0.1:$(cat "$T/truth.port")" --since "$SINCE" --until "$END" 2>/dev/null
an windows "$T/truth.log" 0 >"$T/truth.win"
an windows "$T/follow.log" 0 >"$T/follow.win"
/usr/bin/python3 - "$T/truth.log" "$T/follow.log" $((c / 1000000000 * 1000000000)) >"$T/cmp" <<'EOF'
import json, sys
def starts(p):
    out = []
    for l in open(p):
        r = json.loads(l)
        if r.get("status") == 200:
            out.append(r["series"][0]["time_nanos"])
    return out
end = int(sys.argv[3])
truth = {t for t in starts(sys.argv[1]) if t < end}
got = [t for t in starts(sys.argv[2]) if t < end]
print("truth", len(truth))
print("missing", len(truth - set(got)))
print("duplicated", len(got) - len(set(got)))
EOF
cat "$T/cmp"
nt=$(field truth <"$T/cmp")
check "follow through faults: $nt windows, none missing" [ "$nt" -gt 10 -a "$(field missing <"$T/cmp")" = 0 ]
check "follow through faults: duplicated $(field duplicated <"$T/cmp") <= 2% of $nt (at most the in-flight one)" \
	awk -v d="$(field duplicated <"$T/cmp")" -v n="$nt" 'BEGIN { exit !(d <= 1 || d <= 0.02 * n) }'
check "nothing refused by the receiver in the follow run" bash -c "! grep -q '\"invalid\"' '$T/follow.log'"
check "outage logged once, not per attempt ($(grep -c retrying "$T/follow.err") lines)" \
	[ "$(grep -c retrying "$T/follow.err")" -le 4 ]

# ---- a 4xx is logged once, counted and skipped ----
echo 400 >"$T/e2e.mode"
profctl export --url "http://127.0.0.1:$P" --since 10s --cursor-file "$T/c400" 2>"$T/400.err"
rc=$?
cat "$T/400.err"
check "400s: exit 0, logged once with the server's message" \
	[ $rc -eq 0 -a "$(grep -c 'test receiver says 400' "$T/400.err")" = 1 ]
check "400s: counted as refused ($(status_of "$T/c400" http_4xx))" [ "$(status_of "$T/c400" http_4xx)" -gt 3 ]
echo ok >"$T/e2e.mode"

# ---- TLS with a private CA, basic auth ----
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=profd-test-ca -keyout "$T/ca.key" -out "$T/ca.pem" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout "$T/srv.key" -out "$T/srv.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' >"$T/san"
openssl x509 -req -in "$T/srv.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial -days 1 \
	-extfile "$T/san" -out "$T/srv.pem" 2>/dev/null
receiver tls --cert "$T/srv.pem" --key "$T/srv.key"
TP_=$(cat "$T/tls.port")
printf 'alice:s3cret\n' >"$T/basic"
profctl export --url "https://127.0.0.1:$TP_" --since 5s --ca-file "$T/ca.pem" --basic-auth-file "$T/basic" 2>"$T/tls.out"
rc=$?
check "TLS with --ca-file: exit 0 (rc $rc: $(tail -1 "$T/tls.out"))" [ $rc -eq 0 ]
check "TLS: requests accepted" grep -q '"status": 200' "$T/tls.log"
an headers "$T/tls.log" >"$T/tls.hdr"
check "basic auth sent: $(grep -i authorization "$T/tls.hdr")" \
	grep -qixF "authorization: Basic $(printf alice:s3cret | base64)" "$T/tls.hdr"
n=$(wc -l <"$T/tls.log")
profctl export --url "https://127.0.0.1:$TP_" --since 5s 2>"$T/notls.out"
rc=$?
check "TLS without the CA: refused, exit 1, one line ($(cat "$T/notls.out"))" \
	[ $rc -eq 1 -a "$(wc -l <"$T/notls.out")" = 1 -a "$(wc -l <"$T/tls.log")" = "$n" ]

# ---- wrong URLs: one line, exit 1 ----
wrong() {
	profctl export --url "$1" --since 5s >"$T/out" 2>"$T/err"
	local rc=$?
	check "wrong URL $1: exit 1, one line ($(cat "$T/err"))" [ $rc -eq 1 -a "$(wc -l <"$T/err")" = 1 ]
}
wrong http://127.0.0.1:1
wrong "http://127.0.0.1:$P/not/pyroscope"
wrong http://no-such-host.invalid:4040

# ---- without a usable libcurl: one line, exit 1, nothing sent, the cursor kept ----
# libcurl is loaded at run time: hide it (or put another library in its place)
# in a private mount namespace, as on a host without libcurl4.
CURL_SO=$(ldconfig -p | awk '/libcurl\.so\.4 .*x86-64/ { print $NF; exit }')
LIBZ=$(ldconfig -p | awk '/libz\.so\.1 .*x86-64/ { print $NF; exit }')
nolib() { # nolib FILE-PUT-IN-ITS-PLACE NAME
	cp "$T/c400" "$T/c.$2"
	n=$(wc -l <"$T/e2e.log")
	unshare -m --propagation private bash -c 'mount --bind "$1" "$(readlink -f "$2")" && shift 2 && exec "$@"' _ \
		"$1" "$CURL_SO" "$PROFCTL_BIN" --state-dir "$STATE" export --url "http://127.0.0.1:$P" --since 10s \
		--cursor-file "$T/c.$2" >"$T/$2.out" 2>"$T/$2.err"
	rc=$?
}
# sent_none NAME: the receiver got nothing new and the cursor file is as it was.
sent_none() { [ "$(wc -l <"$T/e2e.log")" = "$n" ] && cmp -s "$T/c400" "$T/c.$1"; }
# one_line NAME RE: exit 1 and one line of stderr that matches RE.
one_line() { [ $rc -eq 1 ] && [ "$(wc -l <"$T/$1.err")" = 1 ] && grep -q "$2" "$T/$1.err"; }
if [ -n "$CURL_SO" ] && [ -n "$LIBZ" ]; then
	nolib /dev/null nocurl
	check "no libcurl: exit 1, one line naming the package ($(cat "$T/nocurl.err"))" \
		one_line nocurl 'cannot load libcurl.*install libcurl4'
	check "no libcurl: nothing sent, the cursor file as it was" sent_none nocurl
	nolib "$LIBZ" notcurl
	check "another library as libcurl.so.4: exit 1, one line ($(cat "$T/notcurl.err"))" \
		one_line notcurl 'has no curl_global_init: not a libcurl'
	check "another library as libcurl.so.4: nothing sent, the cursor file as it was" sent_none notcurl
	# The same command with libcurl in place sends: the checks above are about the library.
	cp "$T/c400" "$T/c.withcurl"
	profctl export --url "http://127.0.0.1:$P" --since 10s --cursor-file "$T/c.withcurl" 2>/dev/null
	rc=$?
	check "with libcurl the same export sends (exit $rc)" \
		bash -c "[ $rc -eq 0 ] && [ \$(wc -l <'$T/e2e.log') -gt $n ]"
else
	fail "libcurl.so.4 or libz.so.1 not in ldconfig's cache: the no-libcurl checks cannot run"
fi

# ---- bad options: exit 2 ----
badopt() {
	profctl export "$@" >"$T/out" 2>"$T/err"
	local rc=$?
	check "profctl export $*: exit 2, one line ($(cat "$T/err"))" [ $rc -eq 2 -a "$(wc -l <"$T/err")" = 1 ]
}
badopt --since 1m
badopt --url ftp://x --since 1m
badopt --url http://x
badopt --url http://x --since yesterday
badopt --url http://x --since 1m --rate 0
badopt --url http://x --since 1m --label 'bad-name=1'
badopt --url http://x --since 1m --label __name__=x
badopt --url http://x --since 1m --header 'no colon'
badopt --url http://x --since 1m --timeout 0s
badopt --url http://x --since 1m --types cpu,gpu
badopt --url http://x --since 1m --bogus
printf 'url = http://x\nbogus = 1\n' >"$T/bad.conf"
badopt --config "$T/bad.conf" --since 1m
# The config file: the same keys; the command line wins.
printf 'url = http://127.0.0.1:%s\ntenant = from-config\nlabel = env=conf\n' "$P" >"$T/good.conf"
profctl export --config "$T/good.conf" --since 3s --label env=cli 2>/dev/null
check "config file: url and tenant from the file" bash -c "an() { /usr/bin/python3 $X/analyze.py \"\$@\"; }; an headers '$T/e2e.log' | grep -qix 'x-scope-orgid: from-config'"
check "config file: --label on the command line wins" bash -c "tail -1 '$T/e2e.log' | grep -q '\"env\": \"cli\"'"

# ---- the unit ----
if command -v systemd-analyze >/dev/null; then
	make --no-print-directory install DESTDIR="$T/root" PREFIX=/usr >"$T/install.log" 2>&1 || { cat "$T/install.log"; fail "make install failed"; }
	U=$T/root/usr/lib/systemd/system/profd-export.service
	check "make install: profd-export.service, export.conf, sysusers group" \
		test -f "$U" -a -f "$T/root/etc/profd/export.conf" -a -f "$T/root/usr/lib/sysusers.d/profd-export.conf"
	check "unit runs profctl export --follow" grep -q "^ExecStart=/usr/bin/profctl --state-dir /var/lib/profd export .*--follow" "$U"
	for need in DynamicUser=yes CapabilityBoundingSet=\$ ReadOnlyPaths=/var/lib/profd StateDirectory=profd-export \
		"RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX\$" SupplementaryGroups=profd-export; do
		check "unit sets ${need%\$}" grep -q "^$need" "$U"
	done
	sed "s|/usr/bin/profctl|$PROFCTL_BIN|" "$U" >"$T/profd-export.service"
	out=$(systemd-analyze verify --man=no "$T/profd-export.service" 2>&1)
	check "systemd-analyze verify: no complaints${out:+: $out}" [ -z "$out" ]
	sed "s|@SBINDIR@|$BUILD|g" systemd/profd.service >"$T/profd.service"
	score() { systemd-analyze security --offline=yes "$1" 2>&1 | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p'; }
	se=$(score "$T/profd-export.service") sp=$(score "$T/profd.service")
	check "exposure of profd-export.service ${se:-?} <= profd.service's ${sp:-?}" \
		awk -v a="${se:-99}" -v b="${sp:-0}" 'BEGIN { exit !(a <= b) }'
fi

check "profd exits 0 on SIGTERM" stop_profd
done_test
