#!/bin/bash
# The store on a full and on a read-only file system: appends fail with
# ENOSPC, are counted, the store stays usable and resumes when space returns;
# a read-only store refuses a writer with EROFS and still reads. Runs the
# driver in build/tests/test_store against a small tmpfs.
source "$(dirname "$0")/lib.sh"

MNT=$T/mnt
mkdir -p "$MNT"
if ! mount -t tmpfs -o size=256k,mode=0700 profd-test "$MNT"; then
	fail "cannot mount a tmpfs at $MNT"
	done_test
fi
on_exit "umount -l '$MNT'"

check "full disk: ENOSPC counted, store usable, resumes, everything written reads" \
	"$BUILD/tests/test_store" --full-disk "$MNT"
check "remount read-only" mount -o remount,ro "$MNT"
check "read-only: writer gets EROFS, readers read" \
	"$BUILD/tests/test_store" --read-only "$MNT"

done_test
