#!/bin/sh
# Regenerates vmlinux.h (kernel types for CO-RE) from the running kernel's BTF.
set -eu
out=${1:-build/vmlinux.h}
btf=/sys/kernel/btf/vmlinux
[ -r "$btf" ] || { echo "gen-vmlinux: $btf not readable; profd needs a kernel built with CONFIG_DEBUG_INFO_BTF=y" >&2; exit 1; }
bpftool btf dump file "$btf" format c > "$out.tmp"
mv "$out.tmp" "$out"
