#!/bin/bash
# A file's name after its inode number is given to another file. Exec
# events list a new image's mappings by (device, inode), and profd names
# them from paths learned earlier from /proc. A program copy A runs (its
# path is learned), is deleted, and copies B are made in the same
# directory until one gets A's inode number (ext4 gives a just-freed inode
# to the next file of its group). Both copies are of one program with the
# same modification time: size and mtime are equal, only the change time
# (which no user can set) tells them apart. B's samples must be named by
# B's path, the one /proc shows, never by the deleted A's.
source "$(dirname "$0")/lib.sh"

PROG=$TP/sym_short
D=$T/reuse
# pprof_has FILE PATH: how many times the pprof's strings hold PATH (its mappings' file names).
pprof_has() { gzip -dc "$1" | grep -a -o -F "$2" | wc -l; }
# dump_pid PID NAME: the pid's folded and pprof profiles since the test began, into $T/NAME.*
dump_pid() {
	profctl dump --pid "$1" --since "$(since_start)" >"$T/$2.folded" &&
		profctl dump --pid "$1" --since "$(since_start)" --no-flush --format pprof -o "$T/$2.pb.gz"
}

mkdir "$D"
case $(stat -f -c %T "$D") in
ext2/ext3|ext4) ;;
*) skip_test "$D is on $(stat -f -c %T "$D"), not ext4: no inode number reuse to rely on" ;;
esac

start_profd --frequency 499 --no-offcpu
caught_up || fail "profd did not catch up within 12 flushes of 10 s"

# attempt K: runs copy A K, deletes it and makes copy B until one gets A's
# inode number. The number freed by the delete goes to the first new file
# of its group that asks (ext4 takes the lowest free number): empty files
# take the free numbers below it (others' deletes), until one gets it; that
# one is removed again, and the copy made at once takes the number in its
# turn, unless another process's new file takes it first (a busy host):
# then the whole attempt is made again, with a new copy A.
attempt() {
	local k=$1 i n=
	A=$D/prog-a$k
	cp --preserve=timestamps "$PROG" "$A"
	"$A" 300 &
	a=$!
	wait $a || fail "$A exited $?"
	ino=$(stat -c %i "$A")
	sa=$(stat -c '%s bytes, mtime %y' "$A")
	dump_pid $a a || fail "dump of $A failed"
	rm "$A"
	got=
	for i in $(seq 4000); do
		: >"$D/fill$k.$i"
		n=$(stat -c %i "$D/fill$k.$i")
		[ "$n" = "$ino" ] || continue
		rm "$D/fill$k.$i"
		cp --preserve=timestamps "$PROG" "$D/prog-b"
		[ "$(stat -c %i "$D/prog-b")" = "$ino" ] && got=$i && return 0
		echo "attempt $k: another file took inode $ino between its free and prog-b's copy"
		rm "$D/prog-b"
		return 1
	done
	echo "attempt $k: prog-a's inode $ino was not given back (the last empty file got ${n:-none})"
	return 1
}
for k in 1 2 3; do
	attempt $k && break
done
check "$A: its samples name its functions ($(grep -c short_spin "$T/a.folded") stacks with short_spin)" \
	grep -q short_spin "$T/a.folded"
check "$A: its samples are named by its path ($(pprof_has "$T/a.pb.gz" "$A") in the pprof)" \
	[ "$(pprof_has "$T/a.pb.gz" "$A")" -ge 1 ]
if [ -z "$got" ]; then
	fail "no attempt of 3 gave prog-a's inode to prog-b: the reuse this test needs did not happen"
	done_test
fi
B=$D/prog-b
ok "$B has prog-a's inode $ino, after $((got - 1)) empty files took lower free numbers"
sb=$(stat -c '%s bytes, mtime %y' "$B")
check "prog-b's size and mtime are prog-a's ($sb; prog-a: $sa)" [ "$sa" = "$sb" ]

"$B" 300 &
b=$!
wait $b || fail "$B exited $?"
dump_pid $b b || fail "dump of prog-b failed"
nb=$(pprof_has "$T/b.pb.gz" "$B")
na=$(pprof_has "$T/b.pb.gz" "$A")
check "prog-b: its samples name its functions ($(grep -c short_spin "$T/b.folded") stacks with short_spin)" \
	grep -q short_spin "$T/b.folded"
check "prog-b: its samples are named by its own path ($nb in the pprof), not by the deleted $A's ($na)" \
	[ "$nb" -ge 1 -a "$na" -eq 0 ]
echo "status: $(profctl status | awk -F'\t' '$1 ~ /^process_names_/ { printf "%s %s ", $1, $2 }')"
check "profd exits 0 on SIGTERM" stop_profd
done_test
