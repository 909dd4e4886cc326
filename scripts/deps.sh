#!/bin/sh
# Installs the Debian packages profd needs to build, run and test.
# Idempotent: checks with dpkg-query first and only calls apt when something is missing.
set -eu

PKGS="clang llvm make gcc pkg-config libbpf-dev bpftool libelf-dev libdw-dev \
libunwind-dev libzstd-dev zlib1g-dev liblzma-dev linux-perf bpftrace \
systemd procps util-linux python3 xz-utils binutils g++ libcurl4-openssl-dev"

case "${1:-}" in
--test) PKGS="$PKGS chromium libclang-rt-14-dev nodejs golang-go protobuf-compiler python3-protobuf golang-github-google-pprof-dev openssl gdb jq" ;;
esac

# One dpkg-query for all of them: it names each package it knows, with its
# status; a package it does not know is missing as well.
# shellcheck disable=SC2086
installed=" $(dpkg-query -W -f='${Package} ${Status}\n' $PKGS 2>/dev/null |
	awk '/ install ok installed$/ { printf "%s ", $1 }' || true)"
missing=""
for p in $PKGS; do
	case "$installed" in
	*" $p "*) ;;
	*) missing="$missing $p" ;;
	esac
done

[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing Debian packages:$missing; run 'sudo make deps' or install them with apt-get" >&2
	exit 1
fi

echo "deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null || { echo "deps: apt-get update failed; check the Debian mirror in /etc/apt/sources.list" >&2; exit 1; }
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null || { echo "deps: apt-get install failed for:$missing" >&2; exit 1; }
