#!/usr/bin/env bash
# slip stage on the tests' SLURM cluster (munged, slurmctld, slurmd, started as slurm_array.sh
# starts them): two "nodes" as two stage directories, the documented `srun --ntasks-per-node=1
# slip stage` step run by three tasks per "node" at once. Each node's directory gets one copy
# (the bytes read from the source, summed per node), the ranks' later steps find it staged.
# Skips (exit 77, with the reason) where the daemons cannot start.
source "$(dirname "$0")/common.bash"
skip() { echo "SKIP: $*"; exit 77; }
for cmd in munged slurmctld slurmd srun sinfo; do command -v $cmd >/dev/null || skip "$cmd not installed (apt-get install slurm-wlm munge)"; done
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

cache=$("$SLIP" convert "$CORPUS" -o "$WORK/caches" -q)
bytes=$(find "$cache" -maxdepth 1 -type f ! -name '*.lock' -printf '%s\n' | awk '{s += $1} END {print s}')
name=$(basename "$cache")
cd "$WORK/jobs"
# One node here: six tasks, task i on "node" i % 2 (its own stage directory, as /dev/shm is
# per node), all staging at once as the ranks of two 3-GPU nodes would.
srun --ntasks=6 --overcommit bash -c \
  '"$3" stage --copy "$1" --to "$2/node$((SLURM_PROCID % 2))" --json >"$2/task.$SLURM_PROCID"' _ "$cache" "$WORK" "$SLIP" ||
  { cat "$WORK"/task.* "$conf/slurmd.log" 2>/dev/null | tail -n 20; fail "the srun step failed"; }
$PY - "$WORK" "$bytes" "$name" <<'PY' || fail "per-node staging: $(cat "$WORK"/task.*)"
import json, sys
work, size, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
for node in (0, 1):
    rows = [json.load(open(f"{work}/task.{i}")) for i in range(6) if i % 2 == node]
    assert all(r["path"] == f"{work}/node{node}/{name}" for r in rows), rows
    assert sum(r["copied"] for r in rows) == 1, (node, rows)
    assert sum(r["bytes_copied"] for r in rows) == size, (node, size, rows)
PY
for node in 0 1; do "$SLIP" verify "$WORK/node$node/$name" >/dev/null || fail "verify of node $node's copy"; done
pass "srun: 3 tasks per node staging at once: one copy per node ($bytes bytes read per node), verified"

# The documented prolog step (docs/SLURM.md): one task per node, then the ranks; the ranks
# find the copy there and read nothing.
srun --ntasks=2 --overcommit bash -c '"$3" stage "$1" --to "$2/node$SLURM_PROCID" --json >"$2/again.$SLURM_PROCID"' _ "$cache" "$WORK" "$SLIP" ||
  fail "the second srun step failed"
for node in 0 1; do
  [ "$(json_get "$WORK/again.$node" '["copied"]')" = False ] || fail "node $node staged again: $(cat "$WORK/again.$node")"
done
pass "srun again: both nodes' copies found staged, nothing copied"
