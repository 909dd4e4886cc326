#!/bin/bash
# Builds the libFuzzer targets (clang -fsanitize=fuzzer,address,undefined) and runs each
# for a while: about 10 s each by default (make test), 5 minutes each with "long" (make fuzz).
# Corpora persist in $BUILD/fuzz/corpus-<target>; crashes are written to $BUILD/fuzz/.
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
CLANG=${CLANG:-clang}
secs=${FUZZ_SECONDS:-10}
[ "${1:-}" = long ] && secs=${FUZZ_SECONDS:-300}
out=$BUILD/fuzz
mkdir -p "$out"
passed=0 failed=0

if ! echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' |
	"$CLANG" -fsanitize=fuzzer -x c - -o "$out/.probe" 2>/dev/null; then
	echo "fuzz: $CLANG cannot build libFuzzer targets; install clang and libclang-rt-dev" >&2
	echo "0 passed, 1 failed"
	exit 1
fi

FLAGS="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -std=gnu11 -D_GNU_SOURCE -Ilib -Ibpf -I$BUILD"
LIBS="-lelf -llzma -lz"

build() { # target sources...
	local t=$1; shift
	"$CLANG" $FLAGS -o "$out/$t" "tests/fuzz/$t.c" "$@" $LIBS
}

# empty_corpus TARGET: makes its corpus directory; true when it has no input yet.
empty_corpus() {
	mkdir -p "$out/corpus-$1"
	[ -z "$(ls -A "$out/corpus-$1")" ]
}

# seed_cc OUT CFLAGS...: a small program built into OUT.
seed_cc() {
	local o=$1; shift
	printf 'int f(int x){return x+1;} int main(void){return f(0);}\n' >"$out/seed.c"
	cc -O1 "$@" -o "$o" "$out/seed.c" 2>/dev/null
}

seed_elf() {
	local c=$out/corpus-fuzz_elf
	empty_corpus fuzz_elf || return 0
	seed_cc "$c/pie"
	seed_cc "$c/nopie" -no-pie -fno-pie
	cp "$c/pie" "$c/stripped" && strip -s "$c/stripped"
	printf '_ZN7wlspace6MatrixIdE8multiplyEi' >"$c/cxx"
	printf '_RNvXs_Cs1234_7mycrateNtB4_3FooNtNtCs5678_4core3fmt7Display3fmt' >"$c/rust"
}

seed_text() {
	local c=$out/corpus-fuzz_perfmap
	mkdir -p "$c"
	[ -n "$(ls -A "$c")" ] && return
	printf '1000 100 first\n0x2000 0x10 LazyCompile:*foo /a.js:1\n' >"$c/perfmap"
	printf '5581a0001000-5581a0005000 r-xp 00001000 fd:01 1234 /usr/bin/app\n7ffd0-7ffd2 r-xp 0 00:00 0 [vdso]\n' >"$c/maps"
	printf 'ffffffff81000000 T _stext\nffffffffc0a00000 t ext4_readpage\t[ext4]\n' >"$c/kallsyms"
}

run_one() { # target max_len: the verdict into $out/$t.verdict (runs side by side)
	local t=$1 max_len=$2
	local log=$out/$t.log
	if "$out/$t" -max_total_time="$secs" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="$out/$t-" -print_final_stats=1 "$out/corpus-$t" >"$log" 2>&1; then
		echo "PASS fuzz/$t ($secs s, $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$') runs)" >"$out/$t.verdict"
	else
		{ echo "FAIL fuzz/$t (log: $log)"; tail -n 30 "$log" | sed 's/^/    /'; } >"$out/$t.verdict"
	fi
}

# Segments and a summary file of the unit tests' fixtures: the first byte picks the path (fuzz_segment.c).
seed_segment() {
	local c=$out/corpus-fuzz_segment f
	mkdir -p "$c"
	[ -n "$(ls -A "$c")" ] && return
	f=$(ls tests/unit/data/v2/seg-*.pfd | head -1)
	{ printf '\001'; cat "$f"; } >"$c/v2-segment"
	f=$(ls tests/unit/data/v3/sum-*.pfd | head -1)
	{ printf '\003'; cat "$f"; } >"$c/v3-summary"
}

# Small ELF files for the walker's readers: .eh_frame, .debug_frame, and a
# file with the symbols and relocation the CPython probe looks for.
seed_unwind() {
	local c=$out/corpus-fuzz_unwind
	empty_corpus fuzz_unwind || return 0
	seed_cc "$c/pie"
	seed_cc "$c/debug-frame" -g -fno-asynchronous-unwind-tables
	cat >"$out/seed-py.c" <<'C'
struct { char pad[1024]; } _PyRuntime = { { 1 } };
void code_dealloc(void *p) { (void)p; }
struct ty { char pad[48]; void (*dealloc)(void *); char rest[400]; } PyCode_Type = { .dealloc = code_dealloc };
const unsigned long Py_Version = 0x030b07f0;
void _PyEval_EvalFrameDefault(void) {}
int main(void) { return 0; }
C
	cc -O1 -fPIE -pie -o "$c/python" "$out/seed-py.c" 2>/dev/null
	cp "$c/python" "$c/python-stripped" && strip -s "$c/python-stripped"
}

seed_elf
seed_text
seed_segment
seed_unwind
# Every tests/fuzz/fuzz_*.c is a target; the symbolizer's name their few sources,
# any other links against the whole library. The targets are built side by
# side (each is one clang process), then run one per CPU.
declare -A max_lens=() build_pids=()
for src in tests/fuzz/fuzz_*.c; do
	t=$(basename "$src" .c)
	case $t in
	fuzz_elf) srcs="lib/elfsym.c lib/strtab.c lib/demangle.c" max_len=65536 LIBS="-lelf -llzma -lz" ;;
	fuzz_perfmap) srcs="lib/perfmap.c lib/procmaps.c lib/kallsyms.c lib/strtab.c lib/parse.c lib/safeopen.c" max_len=16384 LIBS="-lelf -llzma -lz" ;;
	fuzz_unwind) srcs="lib/unwind_table.c lib/pyinterp.c lib/pyoffsets.c lib/filecache.c lib/procmaps.c lib/safeopen.c lib/parse.c lib/strtab.c" max_len=65536 LIBS="-lelf -lz" ;;
	fuzz_pyline) srcs="lib/pyline.c lib/pystack.c" max_len=4096 LIBS="" ;;
	fuzz_segment) srcs="lib/store.c lib/modframes.c lib/codec.c lib/crc32c.c lib/profile.c lib/clock.c" max_len=65536 LIBS="-lzstd -lz -lm" ;;
	*) srcs=$(ls lib/*.c) max_len=65536 LIBS="-lbpf -lelf -ldw -lunwind-generic -lunwind -lzstd -llzma -lz -lm" ;;
	esac
	mkdir -p "$out/corpus-$t"
	max_lens[$t]=$max_len
	# shellcheck disable=SC2086
	build "$t" $srcs >"$out/$t.build.log" 2>&1 &
	build_pids[$t]=$!
done
# Every build is done before the first run: a fuzzer gets its CPU to itself.
declare -A built=()
for t in "${!build_pids[@]}"; do
	if wait "${build_pids[$t]}"; then built[$t]=1
	else failed=$((failed + 1)); echo "FAIL fuzz/$t (build)"; sed 's/^/    /' "$out/$t.build.log"; fi
done
# One fuzzer per CPU at a time (at most 4): each still has a CPU to itself.
jobs_max=$(nproc 2>/dev/null || echo 1)
[ "$jobs_max" -gt 4 ] && jobs_max=4
ran=()
for src in tests/fuzz/fuzz_*.c; do
	t=$(basename "$src" .c)
	[ -n "${built[$t]:-}" ] || continue
	ran+=("$t")
	rm -f "$out/$t.verdict"
	while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n; done
	run_one "$t" "${max_lens[$t]}" &
done
wait
for t in "${ran[@]}"; do
	if [ -s "$out/$t.verdict" ] && head -1 "$out/$t.verdict" | grep -q '^PASS'; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		[ -s "$out/$t.verdict" ] || echo "FAIL fuzz/$t (no verdict)" >"$out/$t.verdict"
	fi
	cat "$out/$t.verdict"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
