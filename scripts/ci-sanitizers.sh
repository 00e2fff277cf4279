#!/usr/bin/env bash
# The sanitizer jobs of CI: ASan+UBSan (clang) on the unit tests and every test of hostile input,
# TSan on the threaded code, and each libFuzzer target for a short time. One clang build
# (preset asan, with libFuzzer's coverage hooks) serves both the ASan tests and the fuzzers.
# Usage: scripts/ci-sanitizers.sh [fuzz seconds] [--full]
#   --full  the whole ctest suite under ASan+UBSan (about 2.5x CI's share; run it before a
#           release or after touching a parser, outside CI)
set -euo pipefail
cd "$(dirname "$0")/.."
fuzz_seconds=20 full=0
for a in "$@"; do
  case $a in
    --full) full=1 ;;
    *) fuzz_seconds=$a ;;
  esac
done
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

# CI's share under ASan: the unit tests (parsers, sweeps of flipped and truncated bytes, the
# decode engine, the Loader), the fuzz replays, and the end-to-end tests of hostile input. The
# rest of the suite drives the same code through the CLI; --full runs it too. Never under ASan:
# install_consumer links an uninstrumented program against the instrumented library;
# slurm_array/slurm_stage need daemons that outlive the sanitizer run; imagefolder_slowfs is a
# speed ratio, which ASan's per-file CPU cost drowns; kill_midway times SIGKILLs against an
# uninstrumented convert's pace and checks atomic renames, not memory.
hostile='bad_input|untrusted_caches|hostile_[a-z_]+|tar_bounds|tar_shards|field_typing|remote_hostile|remote_bounds|error_classes|never_written|verify_pickle_limits|source_truncated|jpeg_headers|jpeg_restarts|litdata_pil_modes|silent_answers|wrong_results|terminal_safety|ledger_reasons|imagefolder_walk|concurrent_manifest|concurrent_force|stage|dataset_cli|reuse_damaged'
if [ "$full" = 1 ]; then
  select=(-E 'slurm_array|slurm_stage|install_consumer|imagefolder_slowfs|manifest_scale|remote_planning|kill_midway')
else
  select=(-R "^([A-Z][A-Za-z0-9]*\\.|All/|Fixtures/|fuzz_replay\$|integration\\.($hostile)\$)")
fi
echo "== ASan + UBSan (clang): $([ "$full" = 1 ] && echo 'whole test suite' || echo 'unit tests, fuzz replays, hostile-input tests')"
cmake --preset asan >/dev/null
build build-asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs" "${select[@]}"

echo "== TSan: thread pool, parallel convert, verify and the decode engine"
cmake --preset tsan >/dev/null
build build-tsan -j "$jobs" --target slip_unit_tests
TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/slip_unit_tests \
  --gtest_filter='ParallelFor*:Runtime*:PyFixture*:CorpusSubset*:Feistel.RankSlices*:DecodeEngine.OneAndTwoThreads*:ReadAhead*:FileWriter*:WorkerPool*:LibraryLog*:Loader.*:DatasetLoader.*:Stage.SixConcurrent*'

echo "== libFuzzer: ${fuzz_seconds}s per target"
FUZZ_SEED=1 FUZZ_BUILD=build-asan scripts/fuzz.sh "$fuzz_seconds"
