#!/usr/bin/env bash
# A real single-node SLURM cluster on this machine (munged, slurmctld, slurmd from Debian's
# slurm-wlm and munge), the documented array script submitted with sbatch, and the merged
# cache compared with a local build. Skips (exit 77, with the reason) where the daemons
# cannot start.
source "$(dirname "$0")/slurm_common.bash" sbatch

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
