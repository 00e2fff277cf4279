#!/usr/bin/env bash
# Builds the libFuzzer targets (cmake --preset fuzz, clang, ASan+UBSan) and runs each for
# SECONDS (default 60) on seeds from ../shared. Crashes are saved under
# tests/data/regress/<target>/ — add each as a regression (ctest replays that directory).
# Prints, per target: run time, executions, exec/s, coverage (edges) and crashes.
# FUZZ_SEED=N fixes libFuzzer's seed (CI does: the same mutations every run, so a red CI means a
# real regression, not a lucky draw); unset, every run explores afresh.
# FUZZ_BUILD=DIR uses that configured build's targets instead (CI: build-asan, preset asan, whose
# tests share the objects); the default is build-fuzz (preset fuzz, optimised for long runs).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
build=${FUZZ_BUILD:-build-fuzz}
[ -n "${FUZZ_BUILD:-}" ] || cmake --preset fuzz >/dev/null
targets=$(grep -o '^fuzz_[a-z0-9_]*' tests/fuzz/targets.txt)
# (slip itself too: tests/fuzz/seeds.sh converts the seed caches with it)
# shellcheck disable=SC2086
if ! cmake --build "$build" -j "$(nproc)" --target slip $targets >"$build/fuzz-build.log" 2>&1; then
  tail -n 60 "$build/fuzz-build.log"
  exit 1
fi
export SLIP=${SLIP:-$PWD/$build/apps/slip/slip} SLIP_SOURCE_DIR=$PWD
export SLIP_SHARED_DIR=${SLIP_SHARED_DIR:-$PWD/../shared} SLIP_PYTHON=${SLIP_PYTHON:-/usr/bin/python3}
export ASAN_OPTIONS=detect_leaks=0
work=$build/corpus
bash tests/fuzz/seeds.sh "$work"
declare -A dict=()
while read -r t d; do dict[$t]=$d; done < <(grep '^fuzz_' tests/fuzz/targets.txt)
status=0
printf '%-20s %8s %12s %10s %8s %8s\n' target seconds executions exec/s cov crashes
for t in $(grep -o '^fuzz_[a-z0-9_]*' tests/fuzz/targets.txt); do
  mkdir -p "tests/data/regress/$t" "$work/$t.live"
  log=$build/$t.log
  before=$(ls "tests/data/regress/$t" | wc -l)
  "$build/tests/fuzz/$t" "$work/$t.live" "$work/$t" -dict="tests/fuzz/dict/${dict[$t]}.dict" \
    -max_total_time="$seconds" -rss_limit_mb=4096 -timeout=20 -print_final_stats=1 ${FUZZ_SEED:+-seed=$FUZZ_SEED} \
    -artifact_prefix="tests/data/regress/$t/" >"$log" 2>&1 || status=1
  execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo 0)
  rate=$(grep -oE 'stat::average_exec_per_sec: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo 0)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -n1 | grep -oE '[0-9]+' || echo 0)
  crashes=$(( $(ls "tests/data/regress/$t" | wc -l) - before ))
  printf '%-20s %8s %12s %10s %8s %8s\n' "$t" "$seconds" "$execs" "$rate" "$cov" "$crashes"
done
exit $status
