# Cross-building slip for arm64 on Debian 12 x86-64 (scripts/check-aarch64.sh):
#   cmake -S . -B build-aarch64 --toolchain cmake/toolchains/aarch64-linux-gnu.cmake
# The compiler is Debian's crossbuild-essential-arm64; the libraries are the arm64 multiarch
# -dev packages, installed beside the host's under /usr (lib/aarch64-linux-gnu, include).
# Tests run under qemu-user: the arm64 libc6 of the multiarch packages provides
# /lib/ld-linux-aarch64.so.1 and the libraries, so qemu-aarch64 needs no -L prefix (one would mix
# the cross toolchain's libc with the multiarch loader).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
find_program(SLIP_QEMU_AARCH64 NAMES qemu-aarch64 qemu-aarch64-static REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR ${SLIP_QEMU_AARCH64})

# Headers, libraries and CMake packages from the arm64 multiarch directories (and the
# architecture-independent ones under /usr/share); programs from the host.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# pkg-config: the arm64 .pc files only (Debian 12 ships no aarch64-linux-gnu-pkg-config wrapper).
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
