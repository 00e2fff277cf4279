#!/usr/bin/env bash
# A real single-node SLURM cluster on this machine (munged, slurmctld, slurmd from Debian's
# slurm-wlm and munge), the documented array script submitted with sbatch, and the merged
# cache compared with a local build. Skips (exit 77, with the reason) where the daemons
# cannot start.
source "$(dirname "$0")/common.bash"
skip() { echo "SKIP: $*"; exit 77; }
for cmd in munged slurmctld slurmd sbatch sinfo; do command -v $cmd >/dev/null || skip "$cmd not installed (apt-get install slurm-wlm munge)"; done
[ "$(id -u)" -eq 0 ] || skip "slurmd needs root to start here"

export SOURCE_DATE_EPOCH=1700000000
conf=$WORK/slurm
mkdir -p "$conf/state" "$conf/spool" "$WORK/jobs"
host=$(hostname)
port=$((17000 + RANDOM % 2000))
cat > "$conf/slurm.conf" <<CONF
ClusterName=sliptest
SlurmctldHost=$host
SlurmUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
StateSaveLocation=$conf/state
SlurmdSpoolDir=$conf/spool
SlurmctldPidFile=$conf/slurmctld.pid
SlurmdPidFile=$conf/slurmd.pid
SlurmctldLogFile=$conf/slurmctld.log
SlurmdLogFile=$conf/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
NodeName=$host CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$conf/slurm.conf

# munged: Debian's package ships a key; start our own daemon if none answers.
if ! munge -n >/dev/null 2>&1; then
  [ -f /etc/munge/munge.key ] || skip "no /etc/munge/munge.key"
  mkdir -p /run/munge && chown munge:munge /run/munge 2>/dev/null || true
  munged --force 2>/dev/null || skip "munged does not start"
  sleep 1
  munge -n >/dev/null 2>&1 || skip "munge does not answer"
fi
cleanup_slurm() {
  [ -f "$conf/slurmd.pid" ] && kill "$(cat "$conf/slurmd.pid")" 2>/dev/null
  [ -f "$conf/slurmctld.pid" ] && kill "$(cat "$conf/slurmctld.pid")" 2>/dev/null
  sleep 1
  rm -rf "$WORK"
}
trap cleanup_slurm EXIT
slurmctld -i || skip "slurmctld does not start: $(tail -n3 "$conf/slurmctld.log" 2>/dev/null)"
slurmd || skip "slurmd does not start: $(tail -n3 "$conf/slurmd.log" 2>/dev/null)"
for i in $(seq 1 30); do sinfo -h -o %T 2>/dev/null | grep -qE '^idle' && break; sleep 1; done
sinfo -h -o %T | grep -qE '^idle' || skip "the node did not become idle: $(sinfo 2>&1 | tail -n2)"
echo "ok: single-node SLURM up ($(sinfo -h -o '%P %D %T'))"

# The documented scripts, as a user runs them: slip on PATH, parts under OUT.
export PATH=$(dirname "$SLIP"):$PATH
out=$WORK/caches
cd "$WORK/jobs"
merge_job=$("$SRC/docs/slurm/submit.sh" "$CORPUS" "$out" 4 --wait)
state=$(sacct -n -j "$merge_job" -o State 2>/dev/null | sed -n 1p | tr -d ' ' || true)
merged=$(tail -n1 "$WORK"/jobs/slip-merge-*.log)
[ -d "$merged" ] || { cat "$WORK"/jobs/*.log; fail "merge job left no cache (state: $state)"; }
ls "$WORK"/jobs/slip-convert-*_{0,1,2,3}.log >/dev/null || fail "not all 4 array tasks ran"
single=$("$SLIP" convert "$CORPUS" -o "$WORK/single" -q)
diff -r "$single" "$merged" >/dev/null || fail "the SLURM-built cache differs from the local build"
"$SLIP" verify "$merged" >/dev/null || fail "verify of the SLURM-built cache"
# The recipe merges with --clean: no parts left, slip ls shows the one cache.
[ -z "$(ls -d "$out"/*.parts 2>/dev/null)" ] || fail "the merge job left the parts"
"$SLIP" ls "$out" | grep -q 'parts' && fail "slip ls still lists parts after the merge job: $("$SLIP" ls "$out")"
pass "sbatch --array=0-3 + dependent merge (docs/slurm): cache byte-identical to the local build, parts cleaned"

# The documented resubmission of a missing part (docs/SLURM.md), on the real slurmctld: the
# array alone, part 1 deleted, the indices `merge --status` reports resubmitted with the same
# script; the new task fills part 1 of 4 (the split the array recorded), and the merge job then
# gives the same cache again.
out2=$WORK/caches2
sbatch --wait --array=0-3 "$SRC/docs/slurm/convert-array.sbatch" "$CORPUS" "$out2" >/dev/null || { cat "$WORK"/jobs/*.log; fail "array failed"; }
workdir=$(ls -d "$out2"/*.parts)
rm -rf "$workdir/part-00001-of-00004.slipstream"
missing=$("$SLIP" merge --status "$workdir" | awk '$2!="done"{printf "%s%s", s, $1; s=","}' || true)
[ "$missing" = 1 ] || fail "merge --status reports '$missing' missing"
sbatch --wait --array="$missing" "$SRC/docs/slurm/convert-array.sbatch" "$CORPUS" "$out2" >/dev/null || { cat "$WORK"/jobs/*.log; fail "resubmitted task failed"; }
[ -d "$workdir/part-00001-of-00004.slipstream" ] || { ls "$workdir"; cat "$WORK"/jobs/*.log; fail "resubmission did not fill part 1"; }
[ -z "$(ls "$workdir" | grep -- '-of-00001')" ] || fail "resubmission wrote a 1-part split"
"$SLIP" merge --status "$workdir" >/dev/null || fail "parts still missing after the resubmission"
rm -f "$WORK"/jobs/slip-merge-*.log
sbatch --wait "$SRC/docs/slurm/merge.sbatch" "$CORPUS" "$out2" >/dev/null || { cat "$WORK"/jobs/*.log; fail "merge job failed"; }
diff -r "$single" "$(tail -n1 "$WORK"/jobs/slip-merge-*.log)" >/dev/null || fail "merge after the resubmission differs"
pass "sbatch --array=1 (the documented resubmission) fills part 1 of 4; the merge job's cache is byte-identical"
