#!/usr/bin/env bash
# The slipcache package installed the ways a user installs it (docs/PYTHON.md), offline:
#  1. pip: a fresh `python3 -m venv --system-site-packages` env from Debian's Python,
#     `pip install --no-build-isolation --no-index .` from the checkout, the pytest suite
#     (python/tests) against the installed package from /tmp (so it cannot import the source
#     tree or build/python), then `pip uninstall -y` must leave the env as it was.
#  2. cmake --install: a build for another venv's Python (-DPython3_EXECUTABLE) installed into
#     that venv's prefix imports there with no PYTHONPATH; the same install moved to another
#     prefix (--prefix) imports through PYTHONPATH after the venv is gone (the module finds
#     libslipstream relative to itself); and the main build (Debian's Python) installed into a
#     third prefix lands in lib/python3.X/dist-packages, not local/lib/... .
# Then the self-contained wheel (scripts/check-wheel.sh): NEEDED only the C/C++ runtime, tagged
#     manylinux_2_X, installed with --no-index into a fresh venv and a batch loaded.
# Needs the main build's slip binary (scripts/test.sh builds build/), python3-venv, python3-pip.
# pip builds in a temporary directory outside the checkout (the same path each time, so ccache
# finds the last build's objects); cmake --install in build-cmake-install/ (beside build/:
# ccache, when installed, finds the objects build/ compiled).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${SLIP_PYTHON:-/usr/bin/python3}
SLIP_BIN=${SLIP:-$ROOT/build/apps/slip/slip}
SHARED=${SLIP_SHARED_DIR:-$ROOT/../shared}
[ -x "$SLIP_BIN" ] || { echo "check-python-install: $SLIP_BIN missing (run scripts/test.sh first)" >&2; exit 2; }
WORK=$(mktemp -d /tmp/slipcache-check.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
if command -v ccache >/dev/null; then
  export CMAKE_ARGS="-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
  export CCACHE_BASEDIR=$ROOT CCACHE_NOHASHDIR=1  # as scripts/test.sh: its objects are found here
fi
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
snapshot() { (cd "$1" && find . -path '*/__pycache__' -prune -o -print | sort); }

echo "== 1. pip install --no-build-isolation . into a fresh venv"
VENV=$WORK/venv
"$PYTHON" -m venv --system-site-packages "$VENV"
snapshot "$VENV" >"$WORK/before"
(cd "$ROOT" && "$VENV/bin/python" -m pip install --no-build-isolation --no-index --disable-pip-version-check .)
"$VENV/bin/python" -m pip show -f slip-cache
site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_path("platlib"))')
core=$(ls "$site"/slipcache/_core*.so)
if ldd "$core" | grep -q slipstream; then echo "the wheel's module links a libslipstream.so" >&2; exit 1; fi
for f in __init__.py _args.py _core.pyi py.typed; do [ -f "$site/slipcache/$f" ] || { echo "no slipcache/$f installed" >&2; exit 1; }; done
(cd /tmp && SLIP="$SLIP_BIN" SLIP_SHARED_DIR="$SHARED" SLIP_SOURCE_DIR="$ROOT" SLIPCACHE_EXPECT_PREFIX="$VENV" \
  "$VENV/bin/python" -m pytest -q -p no:cacheprovider "$ROOT/python/tests")
"$VENV/bin/python" -m pip uninstall -y --disable-pip-version-check slip-cache
snapshot "$VENV" >"$WORK/after"
if ! diff -u "$WORK/before" "$WORK/after"; then echo "pip uninstall left files behind" >&2; exit 1; fi
if (cd /tmp && "$VENV/bin/python" -c 'import slipcache' 2>/dev/null); then echo "slipcache still importable" >&2; exit 1; fi

echo "== 2. cmake --install for another venv's Python, into its prefix, then moved"
SAMPLE=$("$SLIP_BIN" convert "$ROOT/examples/sample" -o "$WORK/caches" -q)
smoke='import sys, slipcache
assert slipcache.__file__.startswith(sys.argv[2]), slipcache.__file__
b = next(iter(slipcache.Loader(sys.argv[1], batch_size=8, pipeline="96")))
assert b["image"].shape == (8, 96, 96, 3) and b["label"].shape == (8,)
print("imported", slipcache.__file__)'
VENV2=$WORK/venv2
"$PYTHON" -m venv --system-site-packages "$VENV2"
BUILD2=$ROOT/build-cmake-install
# shellcheck disable=SC2086
cmake -S "$ROOT" -B "$BUILD2" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLIP_BUILD_TESTS=OFF \
  -DPython3_EXECUTABLE="$VENV2/bin/python" -DCMAKE_INSTALL_PREFIX="$VENV2" ${CMAKE_ARGS:-}
cmake --build "$BUILD2"
cmake --install "$BUILD2" >/dev/null
(cd /tmp && env -u PYTHONPATH "$VENV2/bin/python" -c "$smoke" "$SAMPLE" "$VENV2/lib/")
cmake --install "$BUILD2" --prefix "$WORK/prefix" >/dev/null
rm -rf "$VENV2"
site2=$(echo "$WORK"/prefix/lib/python3*/site-packages)
(cd /tmp && PYTHONPATH="$site2" "$PYTHON" -c "$smoke" "$SAMPLE" "$site2/slipcache/")

echo "== 3. the main build (Debian's Python) installed into another prefix"
cmake --install "$ROOT/build" --prefix "$WORK/prefix3" >/dev/null
site3=$(echo "$WORK"/prefix3/lib/python3*/dist-packages)
[ ! -e "$WORK/prefix3/local" ] || { echo "installed under PREFIX/local" >&2; exit 1; }
(cd /tmp && PYTHONPATH="$site3" "$PYTHON" -c "$smoke" "$SAMPLE" "$site3/slipcache/")
echo "== 4. the self-contained wheel"
"$ROOT/scripts/check-wheel.sh"
echo "check-python-install: all passed"
