#!/usr/bin/env bash
# Every SIMD level this CPU has, end to end: slip bench --checksum over the decoding pipelines
# (full decode; center, rrc and multicrop with both filters on the rgb and planar resampling
# paths; YUV420 sibling files; a restart-marker cache) and slip verify --decode give the same
# bytes at --kernels scalar, sse4, avx2 and avx512 (and under SLIP_SIMD); a level the CPU lacks
# is refused with a message naming it and what the CPU has.
source "$(dirname "$0")/common.bash"

# The levels, from /proc/cpuinfo (as libgcc probes them; AVX-512 needs F, BW, VNNI and VBMI).
# A build for another processor (arm64 under qemu-user: SLIP_TARGET_ARCH) has the scalar kernels only.
read -r -a levels <<<"$(SLIP_TARGET_ARCH=${SLIP_TARGET_ARCH:-x86_64} $PY - <<'PY'
import os
flags = set(next(l for l in open("/proc/cpuinfo") if l.startswith("flags")).split(":")[1].split())
if os.environ["SLIP_TARGET_ARCH"] not in ("x86_64", "AMD64", "amd64"): flags = set()
levels = ["scalar"]
if {"sse4_1", "ssse3"} <= flags: levels.append("sse4")
if len(levels) == 2 and "avx2" in flags: levels.append("avx2")
if len(levels) == 3 and {"avx512f", "avx512bw", "avx512_vnni", "avx512vbmi"} <= flags: levels.append("avx512")
print(" ".join(levels))
PY
)"
best=${levels[-1]}
echo "levels on this CPU: ${levels[*]}"

# A mix of the corpus: three images of each kind (format, colour, subsampling, progressive),
# the restart-marker ones, and the tiny and very tall ones.
mkdir -p "$WORK/mix/a"
if have_shared "the corpus's mix of kinds (all of examples/sample instead)"; then
  awk -F'\t' 'NR>1 { kind = $5 "|" $6 "|" $7 "|" $8; if (n[kind]++ < 3 || $9 ~ /restart|tiny|very tall/) print $1 }' \
    "$SLIP_SHARED_DIR/corpus/imagenet_like.manifest.tsv" | while read -r f; do cp "$CORPUS/$f" "$WORK/mix/a/"; done
else
  find "$CORPUS" -type f -iname '*.jpeg' -exec cp {} "$WORK/mix/a/" \;
fi
cache=$("$SLIP" convert "$WORK/mix" -o "$WORK/c" -q)
restarts=$("$SLIP" convert "$WORK/mix" -o "$WORK/c" -q --jpeg-restarts)
"$SLIP" yuv420 "$cache" -q >/dev/null
n=$(find "$WORK/mix" -type f | wc -l)
echo "$n images"

# One configuration per line: a name, then bench arguments.
configs=("decode|$cache -p decode" "decode-siblings|$cache -p decode --yuv420-siblings")
for p in center rrc multicrop; do
  for filter in bilinear bicubic; do
    for resample in rgb planar; do configs+=("$p-$filter-$resample|$cache -p $p --filter $filter --resample $resample"); done
  done
done
configs+=("rrc-siblings-rgb|$cache -p rrc --yuv420-siblings --resample rgb" "rrc-siblings-planar|$cache -p rrc --yuv420-siblings --resample planar"
  "rrc-restarts-planar|$restarts -p rrc --resample planar" "multicrop-restarts-rgb|$restarts -p multicrop --resample rgb --filter bicubic"
  "center-float32-chw|$cache -p center --dtype float32 --layout chw")

# bench_sum LEVEL ARGS...: the run's "kernels" and "checksum" (and that it hashed every sample).
bench_sum() {
  local level=$1; shift
  "$SLIP" bench "$@" --kernels "$level" -e 2 -j 2 -b 16 --order shuffle --no-limit --checksum --json >"$WORK/b.json"
  $PY - "$WORK/b.json" "$level" "$n" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["kernels"] == sys.argv[2], (d["kernels"], sys.argv[2])
assert d["samples"] == int(sys.argv[3]) and len(d["epochs"]) == 2, d
assert len(d["checksum"]) == 16, d
print(d["checksum"])
PY
}

declare -A want
for level in "${levels[@]}"; do
  for c in "${configs[@]}"; do
    name=${c%%|*}
    sum=$(bench_sum "$level" ${c#*|})
    if [ -z "${want[$name]:-}" ]; then
      want[$name]=$sum
    elif [ "${want[$name]}" != "$sum" ]; then
      fail "bench $name: checksum $sum at $level, ${want[$name]} at ${levels[0]}"
    fi
  done
  echo "ok: $level: ${#configs[@]} bench configurations, the same checksums as ${levels[0]}"
done
# The checksums depend on the pixels: another seed, another filter, gives other ones.
[ "${want[rrc-bilinear-planar]}" != "${want[rrc-bicubic-planar]}" ] || fail "bilinear and bicubic hash alike"
[ "${want[rrc-bilinear-rgb]}" != "${want[rrc-bilinear-planar]}" ] || fail "rgb and planar hash alike"
other=$("$SLIP" bench "$cache" -p rrc --seed 9 -e 2 -j 2 -b 16 --order shuffle --no-limit --checksum --json | json_get /dev/stdin '["checksum"]')
[ "$other" != "${want[rrc-bilinear-planar]}" ] || fail "another seed hashes alike"
pass "every level (${levels[*]}) gives the same bytes in every pipeline"

# The default is the CPU's best; SLIP_SIMD picks another, and --kernels wins over it.
"$SLIP" bench "$cache" -p rrc -e 1 --no-limit --json | $PY -c 'import json,sys; d=json.load(sys.stdin); assert d["kernels"] == sys.argv[1], d' "$best"
SLIP_SIMD=scalar "$SLIP" bench "$cache" -p rrc -e 2 -j 2 -b 16 --order shuffle --no-limit --checksum --json >"$WORK/e.json"
[ "$(json_get "$WORK/e.json" '["kernels"]')" = scalar ] || fail "SLIP_SIMD=scalar not used"
[ "$(json_get "$WORK/e.json" '["checksum"]')" = "${want[rrc-bilinear-planar]}" ] || fail "SLIP_SIMD=scalar: other bytes"
SLIP_SIMD=scalar "$SLIP" bench "$cache" -p rrc -e 1 --no-limit --kernels "$best" --json | \
  $PY -c 'import json,sys; d=json.load(sys.stdin); assert d["kernels"] == sys.argv[1], d' "$best"
"$SLIP" bench "$cache" -p rrc -e 1 --no-limit --kernels scalar >"$WORK/text"
grep -q '(scalar kernels)' "$WORK/text" && grep -q '^checksum: ' "$WORK/text" && fail "a checksum without --checksum"
grep -q '(scalar kernels)' "$WORK/text" || { cat "$WORK/text"; fail "text output does not name the level"; }
pass "default level, SLIP_SIMD, --kernels over SLIP_SIMD, text output"

declare -A decoded
for level in "${levels[@]}"; do
  for c in "$cache" "$restarts"; do
    expect_status 0 "$SLIP" verify "$c" --decode --kernels "$level" --json
    got=$($PY -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["ok"] and d["decode"]["images"] > 0, d; print(d["decode"])' "$WORK/out")
    [ "${decoded[$c]:-$got}" = "$got" ] || fail "verify --decode at $level: $got, at ${levels[0]}: ${decoded[$c]}"
    decoded[$c]=$got
  done
done
pass "verify --decode passes at every level, with the same differences (${decoded[$cache]})"

# A level this CPU lacks: refused (usage error, exit 2) naming it and what the CPU has, by
# --kernels, by SLIP_SIMD and by verify; a name that is no level is refused too.
all=(scalar sse4 avx2 avx512)
if [ "${#levels[@]}" -lt 4 ]; then
  missing=${all[${#levels[@]}]}
  msg="SIMD level $missing is not available on this CPU (it has $(IFS=,; echo "${levels[*]}" | sed 's/,/, /g'))"
  expect_status 2 "$SLIP" bench "$cache" -p rrc -e 1 --no-limit --kernels "$missing"
  grep -qF "slip: error: $msg" "$WORK/err" || { cat "$WORK/err"; fail "bench --kernels $missing: message"; }
  [ ! -s "$WORK/out" ] || fail "bench ran at a level the CPU lacks"
  expect_status 2 env SLIP_SIMD="$missing" "$SLIP" bench "$cache" -p rrc -e 1 --no-limit
  grep -qF "SLIP_SIMD: $msg" "$WORK/err" || { cat "$WORK/err"; fail "SLIP_SIMD=$missing: message"; }
  expect_status 2 "$SLIP" verify "$cache" --decode --kernels avx512
  grep -qF "SIMD level avx512 is not available on this CPU" "$WORK/err" || { cat "$WORK/err"; fail "verify --kernels avx512: message"; }
  pass "$missing (and above) refused: $msg"
else
  echo "ok: this CPU has every level; nothing to refuse"
fi
expect_status 2 "$SLIP" bench "$cache" --kernels avx3
grep -q "kernels" "$WORK/err" || fail "--kernels avx3: message"
expect_status 2 env SLIP_SIMD=fast "$SLIP" verify "$cache"
grep -qF "SLIP_SIMD: unknown SIMD level 'fast' (scalar, sse4, avx2 or avx512)" "$WORK/err" || { cat "$WORK/err"; fail "SLIP_SIMD=fast: message"; }
pass "unknown level names refused"
