#!/bin/bash
# Usage: submit.sh SRC OUT NTASKS [sbatch options for the merge job, e.g. --wait]
# Submits the conversion array and a merge job that runs after every task succeeded;
# prints the merge job's id.
set -euo pipefail
src=$1 out=$2 n=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
array=$(sbatch --parsable --array=0-$((n - 1)) "$here/convert-array.sbatch" "$src" "$out")
sbatch --parsable --dependency=afterok:${array%%;*} "$@" "$here/merge.sbatch" "$src" "$out"
