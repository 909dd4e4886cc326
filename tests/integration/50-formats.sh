#!/bin/bash
# Every export of a real profile decodes back to the folded lines of the same
# window: pprof (also --threads), speedscope, SVG; top agrees with folded; the
# SVG works in headless Chromium: search matches the folded share, click zooms.
source "$(dirname "$0")/lib.sh"

cp "$TP/phases" "$T/phases_new"
start_profd
since=$(date -u +%Y-%m-%dT%H:%M:%SZ)
"$TP/phases" 5 >/dev/null &
PID=$!
"$T/phases_new" 1 >/dev/null &
dd if=/dev/zero of=/dev/null bs=4k count=1000000 2>/dev/null # kernel time, for the kernel's build-id
wait $PID
profctl flush >/dev/null || fail "profctl flush"
sleep 1.1 # the until bound below must cover the window just flushed
until=$(date -u -d '+1 sec' +%Y-%m-%dT%H:%M:%SZ)
# One fixed window for every format: absolute times, no flush in between.
view() { profctl "$@" --no-flush --pid $PID --since "$since" --until "$until"; }
decode() { "$BUILD/tests/test_views" "$@"; }

view dump >"$T/folded" || { fail "dump exited $?"; done_test; }
total=$(awk '{ s += $NF } END { print s + 0 }' "$T/folded")
check "folded has samples: $total in $(wc -l <"$T/folded") lines" [ "$total" -gt 100 ]
sort "$T/folded" >"$T/want"

same() { # NAME FILE: FILE's lines equal folded's, line by line
	sort "$2" >"$2.sorted"
	if cmp -s "$2.sorted" "$T/want"; then ok "$1 decodes to the folded lines ($(wc -l <"$2") lines, total $total)"
	else fail "$1 differs from folded:"; diff "$2.sorted" "$T/want" | head -5; fi
}
view dump --format pprof -o "$T/cpu.pb.gz" && decode --pprof-to-folded "$T/cpu.pb.gz" >"$T/pprof.folded"
same pprof "$T/pprof.folded"
view dump --threads >"$T/folded.threads"
sort "$T/folded.threads" >"$T/want.threads"
view dump --threads -o "$T/threads.pb.gz" && decode --pprof-to-folded "$T/threads.pb.gz" --threads | sort >"$T/pprof.threads"
check "pprof --threads decodes to folded --threads" cmp -s "$T/pprof.threads" "$T/want.threads"
view dump -o "$T/cpu.json" && decode --speedscope-to-folded "$T/cpu.json" >"$T/ss.folded"
same speedscope "$T/ss.folded"
check "speedscope is valid JSON" python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$T/cpu.json"
view dump --format svg -o "$T/cpu.svg" && decode --svg-to-folded "$T/cpu.svg" >"$T/svg.folded"
same svg "$T/svg.folded"
check "svg is well-formed XML" python3 -c 'import xml.dom.minidom, sys; xml.dom.minidom.parse(sys.argv[1])' "$T/cpu.svg"
# The reference reader (golang-go from scripts/deps.sh --test): its total must be ours.
if go tool pprof -raw "$T/cpu.pb.gz" >"$T/go.raw" 2>"$T/go.err"; then
	ok "go tool pprof reads the profile"
	gototal=$(go tool pprof -top -sample_index=samples "$T/cpu.pb.gz" 2>/dev/null | awk '/total$/ { for (i = 1; i <= NF; i++) if ($i == "of") { print $(i + 1); exit } }')
	check "go tool pprof total '$gototal' equals folded total $total" [ "$gototal" = "$total" ]
	# Build-ids are read at export time from the files (ELF notes): the test
	# program's mapping must carry the one readelf finds in it.
	bid=$(readelf -n "$TP/phases" | awk '/Build ID:/ { print $3 }')
	got_bid=$(awk -v f="$TP/phases" '/^Mappings/ { m = 1 } m { for (i = 1; i < NF; i++) if ($i == f) print $(i + 1) }' "$T/go.raw" | head -1)
	# pprof keeps each sampled pc (other views merge by function): a backend can
	# re-symbolize them, so the phases mapping has more locations than functions.
	read -r nloc nfn < <(awk -v f="$TP/phases" '/^Locations/ { l = 1 } /^Mappings/ { l = 0 }
		l && index($0, " " f ":") { locs[$2] = 1; fns[$4] = 1 } END { print length(locs), length(fns) }' "$T/go.raw")
	check "pprof keeps sampled addresses: $nloc locations for $nfn functions of phases" [ "${nloc:-0}" -gt "${nfn:-0}" -a "${nfn:-0}" -ge 3 ]
	check "pprof mapping of phases has its build-id '$got_bid' = readelf's '$bid'" [ -n "$bid" -a "$got_bid" = "$bid" ]
else
	fail "go tool pprof cannot read the profile: $(head -2 "$T/go.err")"
fi
# A file changed after the window started may not be what ran: no build-id for it.
chmod 755 "$T/phases_new"
profctl dump --no-flush --comm phases_new --since "$since" --until "$until" -o "$T/new.pb.gz" &&
	go tool pprof -raw "$T/new.pb.gz" >"$T/new.raw" 2>/dev/null
check "a binary changed since the window has a mapping without a build-id" \
	awk -v f="$T/phases_new" '/^Mappings/ { m = 1 } m { for (i = 1; i < NF; i++) if ($i == f) { found = 1; bad += $(i + 1) != "[FN]" } } END { exit !(found && !bad) }' "$T/new.raw"
# The kernel mapping carries the running kernel's build-id (from its ELF notes, decoded here apart).
kbid=$(python3 -c '
import struct
b = open("/sys/kernel/notes", "rb").read(); o = 0
while o + 12 <= len(b):
    n, d, t = struct.unpack_from("<III", b, o); do = o + 12 + ((n + 3) & ~3)
    if t == 3 and b[o + 12:o + 15] == b"GNU": print(b[do:do + d].hex()); break
    o = do + ((d + 3) & ~3)')
profctl dump --no-flush --comm dd --since "$since" --until "$until" -o "$T/dd.pb.gz" &&
	go tool pprof -raw "$T/dd.pb.gz" >"$T/dd.raw" 2>/dev/null
got_kbid=$(awk '/^Mappings/ { m = 1 } m { for (i = 1; i < NF; i++) if ($i == "[kernel.kallsyms]") print $(i + 1) }' "$T/dd.raw" | head -1)
check "pprof kernel mapping has the kernel's build-id '$got_kbid' = /sys/kernel/notes '$kbid'" [ -n "$kbid" -a "$got_kbid" = "$kbid" ]

# top: total share of the leaf of the heaviest stack equals its folded share.
leaf=$(head -1 "$T/folded" | awk '{ $NF = ""; n = split($0, f, ";"); sub(/ $/, "", f[n]); print f[n] }')
share=$(awk -v l="$leaf" '{ v = $NF; $NF = ""; sub(/ $/, ""); n = split($0, f, ";"); for (i = 2; i <= n; i++) if (f[i] == l) { s += v; break }; t += v } END { printf "%.2f%%", 100 * s / t }' "$T/folded")
view top --limit 0 >"$T/top"
got=$(awk -F'\t' -v l="$leaf" '$5 == l { print $4 }' "$T/top")
check "top: total share of '$leaf' $got = folded share $share" [ "$got" = "$share" ]

# The SVG in Chromium: search for that frame, read the matched share back.
share_raw=$(awk -v l="$leaf" '{ v = $NF; $NF = ""; sub(/ $/, ""); n = split($0, f, ";"); for (i = 1; i <= n; i++) if (f[i] == l) { s += v; break }; t += v } END { printf "%.4f", 100 * s / t }' "$T/folded")
re="^$(printf '%s' "$leaf" | sed 's/[][\.*^$+?(){}|/]/\\&/g')\$"
if node tests/browser/flamegraph.mjs "$T/cpu.svg" "$re" "$T/flamegraph.png" >"$T/browser.json"; then
	cat "$T/browser.json"
	pct=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["pct"])' "$T/browser.json")
	check "browser: search /$re/ matched $pct%, folded share $share_raw%" within "$pct" "$share_raw" 0.01
	check "browser: screenshot taken" [ -s "$T/flamegraph.png" ]
	check "browser: hovering the root shows the folded total $total in the details line and tooltip" python3 -c '
import json, sys; o = json.load(open(sys.argv[1])); want = "%s samples, 100.00%%" % format(int(sys.argv[2]), ",")
sys.exit(not (want in o["hover"] and want in o["hoverTitle"]))' "$T/browser.json" "$total"
	check "browser: a clicked frame zooms to the full width, Reset zoom shows" python3 -c '
import json, sys; o = json.load(open(sys.argv[1])); sys.exit(not (abs(o["zoomWidthRatio"] - 1) < 0.01 and o["resetShown"]))' "$T/browser.json"
	mkdir -p "$BUILD/test-artifacts" && cp "$T"/flamegraph*.png "$BUILD/test-artifacts/"
else
	fail "headless Chromium could not drive the SVG (scripts/deps.sh --test installs chromium and nodejs)"
fi

check "profd exits 0 on SIGTERM" stop_profd
done_test
