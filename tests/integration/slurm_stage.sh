#!/usr/bin/env bash
# slip stage on the tests' SLURM cluster (munged, slurmctld, slurmd, started as slurm_array.sh
# starts them): two "nodes" as two stage directories, the documented `srun --ntasks-per-node=1
# slip stage` step run by three tasks per "node" at once. Each node's directory gets one copy
# (the bytes read from the source, summed per node), the ranks' later steps find it staged.
# Skips (exit 77, with the reason) where the daemons cannot start.
source "$(dirname "$0")/slurm_common.bash" srun

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
