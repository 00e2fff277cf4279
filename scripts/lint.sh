#!/usr/bin/env bash
# Style and static checks: clang-format on every C/C++ file, clang-tidy (.clang-tidy) on the
# library and CLI sources. Usage: scripts/lint.sh [--fix]   (BUILD=build: where
# compile_commands.json is, configured here if missing). Exit 1 on any finding.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
fix=0
[ "${1:-}" = "--fix" ] && fix=1
status=0

mapfile -t all < <(git ls-files '*.cpp' '*.hpp' '*.cc' '*.h' '*.c')
if [ "$fix" -eq 1 ]; then
  clang-format -i "${all[@]}"
elif ! clang-format --dry-run --Werror "${all[@]}"; then
  echo "lint: clang-format differs (scripts/lint.sh --fix rewrites the files)" >&2
  status=1
fi

[ -f "$BUILD/compile_commands.json" ] || cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
# The generated headers (version) must exist for the sources to parse.
cmake --build "$BUILD" --target slipstream_objects -- -n >/dev/null 2>&1 || true
for gen in "$BUILD/lib/generated/slip_version_config.hpp" "$BUILD/lib/generated-include/slip/version.hpp"; do
  [ -f "$gen" ] || { echo "lint: $gen missing (configure $BUILD first)" >&2; exit 1; }
done
mapfile -t sources < <(git ls-files 'lib/src/*.cpp' 'apps/*.cpp')
if ! printf '%s\n' "${sources[@]}" |
  xargs -P "$(nproc)" -n 4 clang-tidy -p "$BUILD" --quiet --warnings-as-errors='*' 2> >(grep -v 'warnings generated' >&2); then
  echo "lint: clang-tidy found problems" >&2
  status=1
fi
[ "$status" -eq 0 ] && echo "lint: clean"
exit "$status"
