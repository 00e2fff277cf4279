#!/usr/bin/env bash
# The JPEG engine's guard (docs/JPEG_ENGINE.md): slip --version and bench --json say which
# libjpeg is loaded and whether the entropy hook is on; SLIP_JPEG_INTERNALS=off turns it off with
# the reason, and the public-API path then decodes every sample of a cache to the reference
# (verify --decode) and runs every pipeline. With SLIP_TEST_LIBJPEG3_DIR naming the lib directory
# of a libjpeg-turbo 3.x built from source, the same under that library (the hook must be off).
source "$(dirname "$0")/common.bash"

"$SLIP" --version >"$WORK/version"
grep -q '^  libjpeg-turbo: compiled against libjpeg-turbo [0-9]' "$WORK/version" || fail "no compiled-against line"
grep -q '^  libjpeg loaded: .*libjpeg\.so.* (libjpeg-turbo [23]\.x ABI)$' "$WORK/version" || fail "no loaded-library line"
grep -q '^  SIMD kernels: ' "$WORK/version" || fail "no SIMD line"
compiled_generation=$(sed -n 's/^  libjpeg-turbo: compiled against libjpeg-turbo \([0-9]\).*/\1/p' "$WORK/version")
loaded_generation=$(sed -n 's/^  libjpeg loaded: .* (libjpeg-turbo \([0-9]\)\.x ABI)$/\1/p' "$WORK/version")
[ "$compiled_generation" -ge 3 ] && compiled_generation=3
hook_here=on
if [ "${SLIP_JPEG_INTERNALS:-}" = off ]; then
  hook_here=off
  grep -q '^  JPEG entropy hook: off: turned off by the program' "$WORK/version" || fail "forced off but not reported"
elif [ "$compiled_generation" != "$loaded_generation" ]; then
  hook_here=off  # e.g. a 2.1 build run under LD_LIBRARY_PATH=<libjpeg-turbo 3.x>
  grep -q '^  JPEG entropy hook: off: the loaded libjpeg.s internal layout is not the one compiled against' "$WORK/version" ||
    fail "another ABI generation loaded but the hook is not off"
else
  grep -q '^  JPEG entropy hook: on' "$WORK/version" || { cat "$WORK/version"; fail "the hook is off with the library this build was compiled against"; }
fi
SLIP_JPEG_INTERNALS=off "$SLIP" --version | grep -q '^  JPEG entropy hook: off: turned off by the program (SLIP_JPEG_INTERNALS=off)$' ||
  fail "SLIP_JPEG_INTERNALS=off"
# The loaded library by its own version string (3.0.4, 3.1.4 and 3.2 share libjpeg.so.62.4.0),
# the headers by where CMake found them.
grep -q '^  libjpeg loaded: libjpeg-turbo [0-9][0-9.]* (build [0-9]*) from /' "$WORK/version" || fail "the loaded version is not named"
grep -q '^  libjpeg-turbo: compiled against libjpeg-turbo [0-9.]* (jpeglib.h [0-9.]* from /' "$WORK/version" ||
  fail "the headers' origin is not named"
grep -q '^  libpng [0-9]*\.[0-9]*\.[0-9]*$' "$WORK/version" || fail "no libpng version"
pass "slip --version names the libraries and the hook"

# SLIP_JPEG_INTERNALS as SLIP_SIMD: on, off, auto; anything else a usage error naming it.
for bad in OFF false no 0; do
  for cmd in --version "info $SRC/examples/sample"; do
    set +e
    SLIP_JPEG_INTERNALS=$bad "$SLIP" $cmd >/dev/null 2>"$WORK/err"
    rc=$?
    set -e
    [ "$rc" = 2 ] && grep -q "SLIP_JPEG_INTERNALS: unknown value '$bad'" "$WORK/err" || { cat "$WORK/err"; fail "SLIP_JPEG_INTERNALS=$bad $cmd: exit $rc"; }
  done
done
for good in on auto; do SLIP_JPEG_INTERNALS=$good "$SLIP" --version >/dev/null || fail "SLIP_JPEG_INTERNALS=$good"; done
pass "SLIP_JPEG_INTERNALS takes on, off and auto, and refuses anything else with exit 2"

cache=$("$SLIP" convert "$SRC/examples/sample" -o "$WORK/c" -q)
restarts=$("$SLIP" convert "$SRC/examples/sample" -o "$WORK/r" -q --jpeg-restarts)
# Every pipeline under a given environment; the engine object reports what --version said.
# The checksums of every output pixel go to $WORK/sums.<label>: the same bytes on every path.
check_engine() {
  local label=$1 want_hook=$2; shift 2
  : >"$WORK/sums.$label"
  for c in "$cache" "$restarts"; do
    env "$@" "$SLIP" verify "$c" --decode -q || fail "verify --decode ($*) on $c"
    for p in decode center rrc multicrop; do
      for resample in rgb planar; do
        [ "$p" = decode ] && [ "$resample" = planar ] && continue
        env "$@" "$SLIP" bench "$c" -p "$p" -e 2 -b 8 --no-limit --checksum --json $([ "$p" = decode ] || echo --resample "$resample") \
          >"$WORK/b.json" || fail "bench -p $p ($*)"
        echo "$(basename "$c") $p $resample $(json_get "$WORK/b.json" '["checksum"]')" >>"$WORK/sums.$label"
      $PY - "$WORK/b.json" "$want_hook" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); e = d["engine"]
assert e["entropy_hook"] == (sys.argv[2] == "on"), e
assert e["libjpeg_compiled"].startswith("libjpeg-turbo ") and "libjpeg" in e["libjpeg_loaded"], e
assert ("reason" in e) == (not e["entropy_hook"]), e
PY
      done
    done
  done
}
check_engine here "$hook_here" SLIP_JPEG_INTERNALS="${SLIP_JPEG_INTERNALS:-on}"
check_engine off off SLIP_JPEG_INTERNALS=off
cmp -s "$WORK/sums.here" "$WORK/sums.off" || { diff "$WORK/sums.here" "$WORK/sums.off"; fail "the hook and the public API gave other pixels"; }
[ "$(wc -l <"$WORK/sums.here")" -eq 14 ] || fail "checksums missing"
pass "verify --decode and every pipeline (rgb and planar) give the same pixels with the hook on and forced off"

if [ -n "${SLIP_TEST_LIBJPEG3_DIR:-}" ]; then
  LD_LIBRARY_PATH=$SLIP_TEST_LIBJPEG3_DIR "$SLIP" --version >"$WORK/v3"
  grep -q 'libjpeg loaded: .*62\.4\..* (libjpeg-turbo 3\.x ABI)' "$WORK/v3" || { cat "$WORK/v3"; fail "not running with libjpeg-turbo 3.x"; }
  if grep -q 'compiled against libjpeg-turbo 2\.' "$WORK/v3"; then
    grep -q 'JPEG entropy hook: off: the loaded libjpeg' "$WORK/v3" || fail "a 2.x build kept the hook on under 3.x"
    check_engine v3 off LD_LIBRARY_PATH="$SLIP_TEST_LIBJPEG3_DIR"
    cmp -s "$WORK/sums.here" "$WORK/sums.v3" || { diff "$WORK/sums.here" "$WORK/sums.v3"; fail "libjpeg-turbo 3.x gave other pixels"; }
  fi
  pass "under libjpeg-turbo 3.x from $SLIP_TEST_LIBJPEG3_DIR"
else
  echo "skipped: the libjpeg-turbo 3.x part (set SLIP_TEST_LIBJPEG3_DIR to a 3.x lib directory)"
fi
