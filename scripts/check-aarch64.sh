#!/usr/bin/env bash
# Cross-builds slip for arm64 (aarch64) with Debian's cross toolchain and arm64 multiarch -dev
# packages, then runs the unit and end-to-end tests under qemu-user (docs/ARM64.md).
# Installs what it needs when it is missing (root, or sudo). Builds into build-aarch64/.
# Usage: scripts/check-aarch64.sh [--ci] [extra ctest args]
#   --ci  CI's selection (about a quarter of the emulated time): every unit test but the exhaustive
#         sweeps, the fuzz replay and the end-to-end tests whose output is pixels or cache bytes.
#         Without it, every test that can run under qemu-user.
set -euo pipefail
ci=0
if [ "${1:-}" = "--ci" ]; then
  ci=1
  shift
fi
cd "$(dirname "$0")/.."
BUILD=${BUILD_AARCH64:-build-aarch64}
PYTHON=/usr/bin/python3  # Debian's: the tests' reference checks run on the host
pyver=$("$PYTHON" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')

# The arm64 libraries the build links (the header-only ones, CLI11, nlohmann-json and stb's
# headers, come from .ci/packages-build.txt), and libpython's headers for the module (python3-dev:arm64
# would replace the host's python3; libpython3.X-dev:arm64 installs beside it).
arm64_packages=(libturbojpeg0-dev libjpeg62-turbo-dev libpng-dev libspdlog-dev libssl-dev libarchive-dev libcurl4-openssl-dev
  libexpat1-dev libxxhash-dev libzstd-dev libgtest-dev libgmock-dev libstdc++6 "libpython$pyver-dev")
wanted=(crossbuild-essential-arm64 qemu-user "${arm64_packages[@]/%/:arm64}")
missing=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "check-aarch64: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  dpkg --print-foreign-architectures | grep -qx arm64 || $SUDO dpkg --add-architecture arm64
  $SUDO apt-get update
  $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi

# The optimisation of scripts/test.sh's build without its debug information, as a unity build
# (SLIP_UNITY_BUILD: the headers parsed once per batch of sources), for CI's two cores. No bench, no fuzzers (their replay drivers are part of the tests). The Python module builds
# against the arm64 libpython headers; its extension suffix is the arm64 one (pybind11 would ask
# the host interpreter, and does unless the interpreter it last saw is this one).
launcher=()
# --ci runs no Python test under qemu (python.module is excluded below): the module is not built.
python_module=(-DSLIP_BUILD_PYTHON=ON)
[ "$ci" -eq 1 ] && python_module=(-DSLIP_BUILD_PYTHON=OFF)
command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$BUILD" -G Ninja --toolchain "$PWD/cmake/toolchains/aarch64-linux-gnu.cmake" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" "${launcher[@]}" \
  -DSLIP_BUILD_BENCH=OFF -DSLIP_BUILD_FUZZ=OFF -DSLIP_UNITY_BUILD=ON -DSLIP_PYTHON="$PYTHON" \
  -DPython3_INCLUDE_DIR="/usr/include/python$pyver" -DPYBIND11_PYTHON_EXECUTABLE_LAST="$PYTHON" \
  -DPYTHON_MODULE_EXTENSION=".cpython-${pyver/./}-aarch64-linux-gnu.so" "${python_module[@]}"
cmake --build "$BUILD" -j "$(nproc)"
# ELF e_machine 183 (EM_AARCH64): what the tests run is the arm64 build.
[ "$(od -An -tu2 -j18 -N2 "$BUILD/apps/slip/slip" | tr -d ' ')" = 183 ] || { echo "check-aarch64: $BUILD/apps/slip/slip is not arm64" >&2; exit 1; }

# Not run under qemu-user (each needs the host to run what the arm64 build made):
#  python.module               the host's Python (numpy, Pillow, torchvision are x86-64) cannot import the arm64 module
#  integration.install_consumer  compiles consumers with the host's g++ against the installed arm64 library
#  integration.bounded_rss       measures resident memory, which under emulation is qemu's, not slip's
#  integration.remote_planning   plans 1,000,000 shards and 100,000 twice: minutes of CPU emulated
#  integration.imagefolder_slowfs  mounts tests/slowfs, an arm64 FUSE daemon the host would run emulated
unset SLIP_TEST_LIBJPEG3_DIR  # an x86-64 libjpeg-turbo 3.x (tests/integration/jpeg_engine.sh) cannot load into arm64 slip
excluded='^(python\.module|integration\.install_consumer|integration\.bounded_rss|integration\.remote_planning|integration\.imagefolder_slowfs)$'
selection=()
if [ "$ci" -eq 1 ]; then
  # CI's hour: the code that differs by processor (kernels, decode, hashing, byte order of the
  # formats) through the unit tests and the pixel and cache-byte end-to-end tests. Left to the
  # full run: the exhaustive sweeps (every byte flipped, every truncation, every n up to 5000,
  # mutated inputs), which repeat the same parsers thousands of times, and the end-to-end tests
  # of servers, SLURM, signals and the CLI's text.
  excluded="${excluded%)\$}|Sweep\..*|TruncationSweep\..*|Feistel\.BijectionForEveryNUpTo5000|ImageDecode\.SurvivesMutatedInputs)\$"
  selection=(-R '^([A-Z][A-Za-z0-9]*\.|All/|Fixtures/|Levels/|fuzz_replay$|integration\.(pipeline_identical|jpeg_restarts|imagefolder_e2e|yuv420|jpeg_engine|kernel_levels|parallel_writes)$)')
fi
total=$(ctest --test-dir "$BUILD" -N | sed -n 's/^Total Tests: //p')
chosen=$(ctest --test-dir "$BUILD" -N "${selection[@]}" -E "$excluded" | sed -n 's/^Total Tests: //p')
echo "check-aarch64: running $chosen of $total tests under $(qemu-aarch64 --version | head -1)$([ "$ci" -eq 1 ] && echo " (--ci selection)"); excluded: $excluded"
ctest --test-dir "$BUILD" --output-on-failure -j "$(nproc)" "${selection[@]}" -E "$excluded" "$@"
