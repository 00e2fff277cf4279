# A real single-node SLURM cluster on this machine for the tests (munged, slurmctld, slurmd
# from Debian's slurm-wlm and munge), shared by slurm_array.sh and slurm_stage.sh.
# Usage: source slurm_common.bash [EXTRA_COMMAND...]  (after common.bash; skips with exit 77 and
# the reason when a command is missing or the daemons cannot start).
source "$(dirname "$0")/common.bash"
skip() { echo "SKIP: $*"; exit 77; }
for cmd in munged slurmctld slurmd sinfo "$@"; do command -v "$cmd" >/dev/null || skip "$cmd not installed (apt-get install slurm-wlm munge)"; done
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
