#!/usr/bin/env bash
# The sanitizer jobs of CI: the whole suite under ASan+UBSan, the threaded code under TSan,
# and each libFuzzer target for a short time. Usage: scripts/ci-sanitizers.sh [fuzz seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
fuzz_seconds=${1:-20}
jobs=$(nproc)

# Quiet builds that still show why they failed.
build() {
  local log
  log=$(mktemp)
  if ! cmake --build "$@" >"$log" 2>&1; then
    tail -n 60 "$log"
    rm -f "$log"
    return 1
  fi
  rm -f "$log"
}

# (install_consumer links an uninstrumented program against the instrumented library; slurm_array
# needs daemons that outlive the sanitizer run; imagefolder_slowfs is a speed ratio, which ASan's
# per-file CPU cost drowns (3.2x against its 4x seen here); kill_midway times SIGKILLs against
# an uninstrumented convert's pace and checks atomic renames, not memory: all run in the main job.)
echo "== ASan + UBSan: whole test suite"
cmake --preset asan >/dev/null
build build-asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs" -E 'slurm_array|install_consumer|imagefolder_slowfs|manifest_scale|remote_planning|kill_midway'

echo "== TSan: thread pool, parallel convert, verify and the decode engine"
cmake --preset tsan >/dev/null
build build-tsan -j "$jobs" --target slip_unit_tests
TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/slip_unit_tests \
  --gtest_filter='ParallelFor*:Runtime*:PyFixture*:CorpusSubset*:Feistel.RankSlices*:DecodeEngine.OneAndTwoThreads*:ReadAhead*:FileWriter*:WorkerPool*:LibraryLog*'

echo "== libFuzzer: ${fuzz_seconds}s per target"
FUZZ_SEED=1 scripts/fuzz.sh "$fuzz_seconds"
