#!/bin/bash
# profd sampling into a state directory whose file system fills up, then gets
# room again. While full, each window that cannot be written is counted
# (window_write_errors), logged on one line, and profd keeps sampling and
# answering; once there is room, windows are written again, and every window
# listed before the disk filled still reads.
# Then the same on an ext4 file system that turns read-only under profd (an
# error with errors=remount-ro, triggered through ext4's sysfs; a plain
# remount is refused while profd holds its files open): failures counted,
# profd runs on and stops cleanly, and after a restart on the repaired file
# system every window written before is still there.
source "$(dirname "$0")/lib.sh"

MNT=$T/mnt
mkdir -p "$MNT"
mount -t tmpfs -o size=4m,mode=0700 profd-faults "$MNT" || { fail "cannot mount a tmpfs at $MNT"; done_test; }
on_exit "umount -l '$MNT'"
STATE=$MNT/state

stat_of() { profctl status | awk -v k="$1" '$1 == k { print $2 }'; }
# start_and_list WHAT: profd writes a window with room; the windows listed go to $T/before.
start_and_list() {
	start_profd
	sleep 2
	check "$1: flush with room" profctl flush
	w0=$(stat_of windows_written)
	check "$1: a window was written with room ($w0)" test "${w0:-0}" -ge 1
	profctl ls | tail -n +2 | cut -f1-5 | sort >"$T/before"
}
# still_listed WHAT: every window in $T/before is listed now (segments are renamed when sealed: no file name).
still_listed() {
	profctl ls | tail -n +2 | cut -f1-5 | sort >"$T/after"
	local missing
	missing=$(comm -23 "$T/before" "$T/after" | wc -l)
	check "$1: every window listed before is still listed ($missing of $(wc -l <"$T/before") missing)" test "$missing" -eq 0
}
# faulty_flushes WHAT: flushes that cannot be written are counted, and sampling goes on.
# A "full" file system still has the slack of the open segment's last page:
# a window or two of a few hundred bytes may land there (and are kept), so
# asked-for flushes go on, 1.2 s apart, until one fails, at most six.
faulty_flushes() {
	local e0 e1 s1 s2 i
	e0=$(stat_of window_write_errors)
	for i in 1 2 3 4 5 6; do
		sleep 1.2
		profctl flush >/dev/null 2>&1
		e1=$(stat_of window_write_errors)
		[ "${e1:-0}" -gt "${e0:-0}" ] && break
	done
	check "$1: failed windows counted ($e0 -> $e1 after $i flushes)" test "${e1:-0}" -gt "${e0:-0}"
	check "$1: profd still runs" kill -0 "$PROFD_PID"
	s1=$(stat_of samples)
	sleep 1.5
	s2=$(stat_of samples)
	check "$1: sampling goes on ($s1 -> $s2 samples)" test "${s2:-0}" -gt "${s1:-0}"
}

"$TP/benchwork" 1 100000000 >/dev/null & BW=$!
on_exit "kill $BW"
start_and_list tmpfs

# Fill every byte left (dd stops at ENOSPC), then ask for windows.
dd if=/dev/zero of="$MNT/filler" bs=4k 2>/dev/null
faulty_flushes "full disk"
n=$(grep -c "cannot write a window" "$T/profd.log")
check "full disk: one warning line for $(stat_of window_write_errors) failures ($n)" test "$n" -eq 1
grep -m1 "cannot write a window" "$T/profd.log"

# Room again: the next windows are written and hold the load.
e1=$(stat_of window_write_errors)
rm -f "$MNT/filler"
sleep 1.2
check "room again: flush answered" profctl flush
w2=$(stat_of windows_written)
e2=$(stat_of window_write_errors)
check "room again: windows written again ($w0 before, $w2 now)" test "${w2:-0}" -gt "${w0:-0}"
# One timer flush may have been under way when the room came back.
check "room again: no new failures ($e1 then $e2)" test "${e2:-0}" -le "$((e1 + 1))"
check "room again: the last 2 s hold benchwork samples" \
	bash -c "'$PROFCTL_BIN' --state-dir '$STATE' --socket '$SOCK' dump --since 2s --comm benchwork | grep -q bw_unit"

still_listed "room again"
check "every listed window reads back" profctl dump --since 1h --format folded -o "$T/all.folded"
check "profd exits 0 on SIGTERM" stop_profd
umount "$MNT"

IMG=$T/ext4.img
truncate -s 32M "$IMG"
if ! mkfs.ext4 -q -F "$IMG" || ! mount -o loop,errors=remount-ro "$IMG" "$MNT"; then
	fail "cannot make and mount an ext4 image on a loop device"
	done_test
fi
DEV=$(basename "$(findmnt -no SOURCE "$MNT")")
STATE=$MNT/state
start_and_list ext4
check "ext4: file system turned read-only under profd" \
	bash -c "echo profd-test >/sys/fs/ext4/$DEV/trigger_fs_error && sleep 0.3 && ! touch '$MNT/probe' 2>/dev/null"
faulty_flushes read-only
check "read-only: windows written before still read" \
	bash -c "'$PROFCTL_BIN' --state-dir '$STATE' --socket '$SOCK' dump --no-flush --since 1h --comm benchwork | grep -q bw_unit"
check "read-only: profd exits 0 on SIGTERM" stop_profd
grep -m1 "cannot write a window" "$T/profd.log"

umount "$MNT"
check "ext4: mounted again after the error" mount -o loop "$IMG" "$MNT"
start_profd
sleep 2
check "after restart: flush answered" profctl flush
w3=$(stat_of windows_written)
check "after restart: windows written ($w3)" test "${w3:-0}" -ge 1
still_listed "after restart"
check "profd exits 0 on SIGTERM" stop_profd
done_test
