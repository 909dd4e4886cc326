#!/bin/bash
# Issue 3: samples carry their cgroup; `profctl dump --cgroup` takes a unit
# name, a container id (or the 12 digits docker prints) or a path prefix.
# The cgroups are made by hand in the cgroup2 hierarchy, shaped as systemd
# and docker name them, so the test needs neither.
source "$(dirname "$0")/lib.sh"

CG=$(findmnt -n -t cgroup2 -o TARGET | head -n 1)
[ -n "$CG" ] && [ -w "$CG/cgroup.procs" ] || skip_test "no writable cgroup2 hierarchy"
ID=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
SVC=profdtest-$$.service
mkdir -p "$CG/system.slice"
mkdir "$CG/system.slice/$SVC" "$CG/system.slice/docker-$ID.scope" "$CG/profdtest-other-$$" || skip_test "cannot create cgroups under $CG"
on_exit "rmdir '$CG/system.slice/$SVC' '$CG/system.slice/docker-$ID.scope' '$CG/profdtest-other-$$'"
for n in cg_unit cg_docker cg_other; do cp "$TP/sym_spin" "$T/$n"; done

start_profd
pids=
# Each moves itself into its cgroup, then execs the workload.
sh -c "echo \$\$ >'$CG/system.slice/$SVC/cgroup.procs' && exec '$T/cg_unit' 1.0" & pids+=" $!"
sh -c "echo \$\$ >'$CG/system.slice/docker-$ID.scope/cgroup.procs' && exec '$T/cg_docker' 1.0" & pids+=" $!"
sh -c "echo \$\$ >'$CG/profdtest-other-$$/cgroup.procs' && exec '$T/cg_other' 1.0" & pids+=" $!"
wait $pids
profctl flush >/dev/null

# comms WANT: the process names with samples under --cgroup WANT, sorted
comms() { profctl dump --since "$(since_start)" --no-flush --cgroup "$1" | awk '{ split($0, f, ";"); print f[1] }' | grep '^cg_' | sort -u | tr '\n' ' '; }
got=$(comms "$SVC"); echo "--cgroup $SVC: $got"
check "--cgroup with a systemd unit name selects that unit's process" test "$got" = "cg_unit "
got=$(comms "${ID:0:12}"); echo "--cgroup ${ID:0:12}: $got"
check "--cgroup with a 12-digit container id selects the container" test "$got" = "cg_docker "
got=$(comms "$ID"); echo "--cgroup <64-digit id>: $got"
check "--cgroup with a full container id selects the container" test "$got" = "cg_docker "
got=$(comms /system.slice); echo "--cgroup /system.slice: $got"
check "--cgroup with a path prefix selects everything below it" test "$got" = "cg_docker cg_unit "
got=$(comms "docker-$ID.scope"); echo "--cgroup docker-<id>.scope: $got"
check "--cgroup with the container's scope unit selects it" test "$got" = "cg_docker "
got=$(comms "${ID:0:11}"); echo "--cgroup ${ID:0:11}: $got"
check "--cgroup with an 11-digit prefix (too short to be sure) selects nothing" test -z "$got"

check "profd exits 0 on SIGTERM" stop_profd
done_test
