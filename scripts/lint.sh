#!/usr/bin/env bash
# Style and static checks: clang-format on every C/C++ file, clang-tidy (.clang-tidy) on the
# library and CLI sources. Exit 1 on any finding.
#   scripts/lint.sh            clang-tidy on the unity batches of a lint configuration (BUILD_LINT,
#                              default build-lint: lib and apps only, nothing compiled): each batch
#                              of 8 sources parses the shared headers once, about 5x less CPU than
#                              one run per file (CI's form)
#   scripts/lint.sh --per-file one clang-tidy run per source, with BUILD's compile_commands.json
#                              (BUILD=build, configured here if missing): the thorough form (a
#                              using-declaration unused in its own file but used by a later file
#                              of its batch is only seen here)
#   scripts/lint.sh --fix      rewrites the files with clang-format
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
BUILD_LINT=${BUILD_LINT:-build-lint}
mode=${1:-unity}
status=0

mapfile -t all < <(git ls-files '*.cpp' '*.hpp' '*.cc' '*.h' '*.c')
if [ "$mode" = --fix ]; then
  clang-format -i "${all[@]}"
  exit 0
elif ! clang-format --dry-run --Werror "${all[@]}"; then
  echo "lint: clang-format differs (scripts/lint.sh --fix rewrites the files)" >&2
  status=1
fi

tidy_checks=()
if [ "$mode" = --per-file ]; then
  db=$BUILD
  [ -f "$db/compile_commands.json" ] || cmake -S . -B "$db" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  mapfile -t sources < <(git ls-files 'lib/src/*.cpp' 'apps/*.cpp')
else
  db=$BUILD_LINT
  cmake -S . -B "$db" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLIP_UNITY_BUILD=ON -DSLIP_BUILD_TESTS=OFF \
    -DSLIP_BUILD_BENCH=OFF -DSLIP_BUILD_PYTHON=OFF -DSLIP_BUILD_FUZZ=OFF >/dev/null
  # The unity batches of lib/ and apps/, and the sources kept out of them (their own flags).
  mapfile -t sources < <(/usr/bin/python3 - "$db" "$PWD" <<'PY'
import json, os, sys
db, root = sys.argv[1], sys.argv[2]
for entry in json.load(open(os.path.join(db, "compile_commands.json"))):
    f = os.path.realpath(os.path.join(entry["directory"], entry["file"]))
    rel = os.path.relpath(f, root)
    if rel.startswith(("lib/src/", "apps/")) or (
            "/Unity/unity_" in rel and rel.startswith((os.path.join(os.path.basename(db), "lib/"), os.path.join(os.path.basename(db), "apps/")))):
        if not rel.endswith(".c"):
            print(rel)
PY
  )
  tidy_checks=(--checks=-bugprone-suspicious-include)  # a unity batch #includes .cpp files by design
fi
for gen in "$db/lib/generated/slip_version_config.hpp" "$db/lib/generated-include/slip/version.hpp"; do
  [ -f "$gen" ] || { echo "lint: $gen missing (configure $db first)" >&2; exit 1; }
done
[ "${#sources[@]}" -gt 0 ] || { echo "lint: no sources found in $db/compile_commands.json" >&2; exit 1; }
echo "lint: clang-tidy on ${#sources[@]} $([ "$mode" = --per-file ] && echo sources || echo 'unity batches and sources') ($db)"
if ! printf '%s\n' "${sources[@]}" |
  xargs -P "$(nproc)" -n 1 clang-tidy -p "$db" --quiet --warnings-as-errors='*' "${tidy_checks[@]}" 2> >(grep -v 'warnings generated' >&2); then
  echo "lint: clang-tidy found problems" >&2
  status=1
fi
[ "$status" -eq 0 ] && echo "lint: clean"
exit "$status"
