#!/usr/bin/env bash
# The self-contained wheel (docs/PYTHON.md "A wheel"): built as CI builds it (pip wheel with the
# backend's turbojpeg-source: libjpeg-turbo, libpng, zlib, xxhash, zstd and OpenSSL linked
# statically), then checked:
#  1. the extension's NEEDED entries are the C/C++ runtime only (libc, libm, libstdc++, libgcc_s,
#     the dynamic loader), none of the static libraries' symbols is exported, and the wheel's tag
#     is manylinux_2_X with X at least the newest GLIBC_2.X symbol version it needs (PEP 600);
#  2. LICENSE, License and the third-party notices are in its .dist-info;
#  3. `pip install --no-index <wheel>` into a fresh venv (numpy from the system's site-packages),
#     timed (printed, not asserted: the machine may be loaded), then imported from /tmp and a
#     batch loaded from a cache directory, with no build tree, checkout or PYTHONPATH in reach.
# Needs the main build's slip binary (to write the cache), readelf, python3-venv, python3-pip
# and a libjpeg-turbo source release of the system's major.minor (../shared/third_party).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${SLIP_PYTHON:-/usr/bin/python3}
SLIP_BIN=${SLIP:-$ROOT/build/apps/slip/slip}
SHARED=${SLIP_SHARED_DIR:-$ROOT/../shared}
[ -x "$SLIP_BIN" ] || { echo "check-wheel: $SLIP_BIN missing (run scripts/test.sh first)" >&2; exit 2; }
if [ -z "${SLIPCACHE_TURBOJPEG_SOURCE:-}" ]; then
  jconfig=$(echo '#include <jconfig.h>' | cpp -H -o /dev/null 2>&1 | sed -n 's/^\. //p' | head -1)
  system=$(sed -n 's/^#define LIBJPEG_TURBO_VERSION *\([0-9]*\.[0-9]*\).*/\1/p' "$jconfig")
  SLIPCACHE_TURBOJPEG_SOURCE=$(ls "$SHARED"/third_party/libjpeg-turbo-"$system".*.tar.xz 2>/dev/null | head -1 || true)
  [ -n "$SLIPCACHE_TURBOJPEG_SOURCE" ] || { echo "check-wheel: no libjpeg-turbo $system source release in $SHARED/third_party" >&2; exit 2; }
fi
export SLIPCACHE_TURBOJPEG_SOURCE
WORK=$(mktemp -d /tmp/slipcache-wheel.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
if command -v ccache >/dev/null; then
  export CMAKE_ARGS="-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
  export CCACHE_BASEDIR=$ROOT CCACHE_NOHASHDIR=1
fi
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}

echo "== building the wheel (turbojpeg-source: $SLIPCACHE_TURBOJPEG_SOURCE)"
(cd "$ROOT" && "$PYTHON" -m pip wheel -v --no-build-isolation --no-index --no-deps --disable-pip-version-check -w "$WORK/dist" .) >"$WORK/build.log" 2>&1 ||
  { tail -40 "$WORK/build.log"; echo "check-wheel: pip wheel failed" >&2; exit 1; }
wheel=$(ls "$WORK"/dist/slip_cache-*.whl)
echo "wheel: $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB)"

echo "== 1. what the extension needs"
mkdir "$WORK/unpacked"
"$PYTHON" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$wheel" "$WORK/unpacked"
core=$(ls "$WORK"/unpacked/slipcache/_core*.so)
needed=$(readelf -d "$core" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
echo "NEEDED: $(echo $needed)"
for lib in $needed; do
  case "$lib" in
    libc.so.6 | libm.so.6 | libstdc++.so.6 | libgcc_s.so.1 | ld-linux-*.so.* | libpthread.so.0 | libdl.so.2 | librt.so.1) ;;
    *) echo "check-wheel: the extension needs $lib (only the C/C++ runtime is allowed)" >&2; exit 1 ;;
  esac
done
glibc=$(readelf -V "$core" | sed -n 's/.*Name: GLIBC_2\.\([0-9]*\).*/\1/p' | sort -n | tail -1)
glibcxx=$(readelf -V "$core" | sed -n 's/.*Name: GLIBCXX_3\.4\.\([0-9]*\).*/\1/p' | sort -n | tail -1)
echo "newest symbol versions: GLIBC_2.$glibc, GLIBCXX_3.4.${glibcxx:-none}"
tag_x=$(basename "$wheel" | sed -n 's/.*-manylinux_2_\([0-9]*\)_[a-z0-9_]*\.whl$/\1/p')
[ -n "$tag_x" ] || { echo "check-wheel: $(basename "$wheel") is not tagged manylinux_2_X" >&2; exit 1; }
[ "$tag_x" -ge "$glibc" ] || { echo "check-wheel: tagged manylinux_2_$tag_x but needs GLIBC_2.$glibc" >&2; exit 1; }
# The static libraries' symbols stay inside (--exclude-libs): no clash with PIL's libjpeg or ssl's libcrypto.
leaked=$(nm -D --defined-only "$core" | awk '{print $3}' | grep -E '^(jpeg_|tj|png_|EVP_|OPENSSL_|ZSTD_|XXH|deflate|inflate)' | head -5 || true)
[ -z "$leaked" ] || { echo "check-wheel: the extension exports library symbols: $leaked" >&2; exit 1; }
pass_line="NEEDED: C/C++ runtime only; tag manylinux_2_$tag_x >= GLIBC_2.$glibc"
echo "$pass_line"

echo "== 2. licence metadata"
dist_info=$(ls -d "$WORK"/unpacked/slip_cache-*.dist-info)
grep -q '^License: MIT' "$dist_info/METADATA" || { echo "check-wheel: no License in METADATA" >&2; exit 1; }
cmp -s "$dist_info/LICENSE" "$ROOT/LICENSE" || { echo "check-wheel: LICENSE not in the wheel" >&2; exit 1; }
grep -q 'libjpeg' "$dist_info/THIRD_PARTY_NOTICES" || { echo "check-wheel: no libjpeg-turbo notice in the wheel" >&2; exit 1; }

echo "== 3. pip install --no-index <wheel> into a fresh venv, a batch from a cache directory"
"$PYTHON" -m venv --system-site-packages "$WORK/venv"
start=$(date +%s%N)
"$WORK/venv/bin/python" -m pip install --no-index --disable-pip-version-check -q "$wheel"
echo "installed in $(( ($(date +%s%N) - start) / 1000000 )) ms"
mkdir "$WORK/data"
cache=$("$SLIP_BIN" convert "$ROOT/examples/sample" -o "$WORK/data" -q)
mkdir "$WORK/elsewhere"
(cd "$WORK/elsewhere" && env -u PYTHONPATH -u LD_LIBRARY_PATH "$WORK/venv/bin/python" - "$cache" "$WORK/venv/" <<'PY')
import sys, slipcache
assert slipcache.__file__.startswith(sys.argv[2]), slipcache.__file__
batch = next(iter(slipcache.Loader(sys.argv[1], batch_size=8, pipeline="96")))
assert batch["image"].shape == (8, 96, 96, 3) and batch["label"].shape == (8,), {k: v.shape for k, v in batch.items()}
print("a batch of", batch["image"].shape, "from", slipcache.__file__)
PY
echo "check-wheel: all passed"
