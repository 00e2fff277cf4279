#!/usr/bin/env bash
# A/B of the planar resampler or the colour conversion between two revisions, timed alternately
# in one process (the machines here are shared and drift by 2x within minutes; two runs one
# after the other cannot show a 5% change, two builds interleaved in one process can).
#
#   bench/kernel_ab.sh REV_A REV_B resample W H OUT bilinear|bicubic   e.g. HEAD~1 HEAD resample 433 433 224 bicubic
#   bench/kernel_ab.sh REV_A REV_B colour W 0 0 -                      (sixteen W x W crops into a batch)
#
# Each revision's lib/src and lib/include are compiled as the library compiles the kernels
# (-O3 -ffp-contract=off); BUILD (default build) supplies the generated headers and libslipstream
# for the symbols the colour conversion's file needs. Prints B/A (lower: B faster); for the
# resampler, also whether both gave the same bytes (exit 1 if not).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 7 ] || { sed -n '2,12p' "$0" >&2; exit 2; }
rev_a=$1 rev_b=$2 kind=$3
BUILD=${BUILD:-build}
source_file=lib/src/decode/resample_planar.cpp
colour=()
[ "$kind" = colour ] && source_file=lib/src/image/yuv420.cpp colour=(-DSLIP_AB_COLOUR)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flags=(-O3 -ffp-contract=off -std=c++20 -fPIC -shared -Wl,-Bsymbolic -w -I "$BUILD/lib/generated-include" -I "$BUILD/lib/generated")
for side in a b; do
  rev=$rev_a
  [ $side = b ] && rev=$rev_b
  mkdir -p "$work/$side"
  git archive "$rev" lib/src lib/include | tar -x -C "$work/$side"
  # The planar weights, in their own file since the resampler's split (with the passes before it).
  weights=()
  [ "$kind" != colour ] && [ -f "$work/$side/lib/src/decode/resample_weights.cpp" ] &&
    weights=(-DSLIP_AB_SOURCE2="\"$work/$side/lib/src/decode/resample_weights.cpp\"")
  g++ "${flags[@]}" "${colour[@]}" "${weights[@]}" -I "$work/$side/lib/src" -I "$work/$side/lib/include" -DSLIP_AB_SOURCE="\"$work/$side/$source_file\"" \
    -DSLIP_AB_ENTRY=slip_ab_$side bench/kernel_ab/entry.cpp -o "$work/libslip_ab_$side.so" -L "$BUILD/lib" -lslipstream \
    -Wl,-rpath,"$PWD/$BUILD/lib"
done
g++ -O2 -std=c++20 bench/kernel_ab/driver.cpp -o "$work/driver" -L "$work" -lslip_ab_a -lslip_ab_b -Wl,-rpath,"$work"
"$work/driver" "$kind" "$4" "$5" "$6" "$7"
