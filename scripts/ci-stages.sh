#!/usr/bin/env bash
# The CI stages that .ci/run runs, in order, each with its budget in minutes (the whole run stays
# under 50 minutes on the CI machine: 2 cores, Debian 12), and their last measured times.
#
#   scripts/ci-stages.sh --list          the stages: name, budget, last measured time and result
#   scripts/ci-stages.sh --run [NAME...] runs the stages (all, or those named), timing each
#
# --run appends one line per stage to the log (SLIP_CI_LOG, default build/ci-stages.log):
#   <UTC time>\t<stage>\t<seconds>\t<exit status>\t<CPU seconds (user + system, the stage's processes)>
# --list shows each stage's latest line. The CPU seconds hardly depend on what else runs: on a
# loaded machine they say what the stage costs (about CPU / 2 of wall time on CI's 2 cores; the
# first stage installs GNU time, so a fresh machine's first line has none). A stage over its
# budget is reported, not failed: a slow machine is not a defect; the figures say which budget to
# revisit.
set -euo pipefail
cd "$(dirname "$0")/.."
log=${SLIP_CI_LOG:-build/ci-stages.log}

# name|budget (minutes)|command|what
STAGES=(
  "test|13|scripts/setup-tests.sh|apt packages, s3rver, configure, build, ctest (unit, reference, end-to-end)"
  "jpeg-fallback|5|scripts/test-jpeg-fallback.sh|the JPEG engine's public-API path: the pixel suite again; libjpeg-turbo 3.1 from ../shared/third_party loaded and compiled against (scripts/test-jpeg-31.sh)"
  "jpeg-12bit|2|scripts/test-jpeg-12bit.sh|a 12-bit libjpeg.so.62 built from ../shared/third_party (library target only): refused with one message"
  "python-install|4|scripts/check-python-install.sh|pip into a fresh venv, tests against the installed copy, cmake --install, the self-contained wheel (scripts/check-wheel.sh)"
  "aarch64|9|scripts/check-aarch64.sh --ci|cross build, unit and pixel tests under qemu-user"
  "lint|3|scripts/lint.sh|clang-format on every C/C++ file, clang-tidy on lib/src and apps (unity batches)"
  "sanitizers|14|scripts/ci-sanitizers.sh 10|clang ASan+UBSan: unit, fuzz-replay and hostile-input tests, 10 s per fuzzer; TSan on the threaded paths"
)

field() { local IFS='|'; read -r -a f <<<"$1"; echo "${f[$2]}"; }

list() {
  local total=0 s name budget last
  printf '%-15s %7s  %-36s  %s\n' STAGE BUDGET "LAST (wall s, CPU s, exit, when)" COMMAND
  for s in "${STAGES[@]}"; do
    name=$(field "$s" 0) budget=$(field "$s" 1)
    total=$((total + budget))
    last=$( [ -f "$log" ] && awk -F'\t' -v n="$name" '$2 == n {l = $3 " s, " ($5 == "" ? "-" : $5 " s") ", exit " $4 ", " $1} END {print l}' "$log" || true)
    printf '%-15s %4s min  %-36s  %s\n' "$name" "$budget" "${last:-not measured}" "$(field "$s" 2)"
  done
  printf '%-15s %4s min\n' total "$total"
}

run() {
  local s name budget cmd t0 secs rc failed=0
  mkdir -p "$(dirname "$log")"
  for s in "${STAGES[@]}"; do
    name=$(field "$s" 0) budget=$(field "$s" 1) cmd=$(field "$s" 2)
    if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qxF "$name"; then continue; fi
    echo "== stage $name (budget $budget min): $cmd"
    t0=$(date +%s)
    rc=0
    cpu_file=$(mktemp)
    if [ -x /usr/bin/time ]; then
      /usr/bin/time -o "$cpu_file" -f '%U %S' bash -c "$cmd" || rc=$?
    else
      bash -c "$cmd" || rc=$?
    fi
    secs=$(($(date +%s) - t0))
    cpu=$([ -s "$cpu_file" ] && awk 'END {printf "%d", $1 + $2}' "$cpu_file" || true)
    rm -f "$cpu_file"
    if [ "$rc" -eq 77 ]; then echo "== stage $name: skipped (exit 77, reason above)"; rc=0; fi
    printf '%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$name" "$secs" "$rc" "$cpu" >>"$log"
    echo "== stage $name: exit $rc in $secs s, $cpu CPU s (budget $((budget * 60)) s)"
    [ "$secs" -le $((budget * 60)) ] || echo "== stage $name: over its budget ($secs s > $((budget * 60)) s)" >&2
    [ "$rc" -eq 0 ] || { failed=1; break; }
  done
  return "$failed"
}

case ${1:-} in
  --list) list ;;
  --run) shift; run "$@" ;;
  *) echo "usage: $0 --list | --run [STAGE...]" >&2; exit 2 ;;
esac
