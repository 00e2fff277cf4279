#!/usr/bin/env bash
# `cmake --install` puts the library, headers, slip, man pages, completions, slipstream.pc and
# the CMake package in place; a tiny consumer builds against the installed tree twice
# (pkg-config and find_package) and runs on a cache.
source "$(dirname "$0")/common.bash"
: "${SLIP_BUILD_DIR:?SLIP_BUILD_DIR must point at the build tree}"
prefix=$WORK/prefix
cmake --install "$SLIP_BUILD_DIR" --prefix "$prefix" >/dev/null
libdir=$(cd "$prefix" && ls -d lib* | sed -n 1p)
for f in bin/slip include/slip/cache.hpp include/slip/source.hpp share/man/man1/slip.1 share/man/man1/slip-convert.1 \
         share/bash-completion/completions/slip share/zsh/vendor-completions/_slip share/fish/vendor_completions.d/slip.fish; do
  [ -e "$prefix/$f" ] || fail "not installed: $f"
done
lib=$(find "$prefix" -name 'libslipstream.so.*.*' | sed -n 1p)
[ -n "$lib" ] || fail "libslipstream.so.X.Y not installed"
soname=$(objdump -p "$lib" | awk '/SONAME/{print $2}')
# 0.x: every minor version may change the ABI, so the SONAME carries major.minor.
major=$(awk '/define SLIP_VERSION_MAJOR/{print $3}' "$prefix/include/slip/version.hpp")
minor=$(awk '/define SLIP_VERSION_MINOR/{print $3}' "$prefix/include/slip/version.hpp")
[ "$major" = 0 ] && want_soname=libslipstream.so.0.$minor || want_soname=libslipstream.so.$major
[ "$soname" = "$want_soname" ] || fail "SONAME is $soname, want $want_soname"
# Only the public API is exported: slip:: symbols (no slip::detail, no nlohmann/fmt/spdlog/std
# instantiations that a consumer's own copies could clash with).
nm -DC --defined-only "$lib" | awk '{$1=""; $2=""; print substr($0, 3)}' > "$WORK/exports"
[ "$(wc -l < "$WORK/exports")" -gt 50 ] || fail "too few exported symbols: $(wc -l < "$WORK/exports")"
if grep -v -E '^(slip::|typeinfo for slip::|typeinfo name for slip::|vtable for slip::|non-virtual thunk to slip::)' "$WORK/exports" | grep -q .; then
  grep -v -E '^(slip::|typeinfo for slip::|typeinfo name for slip::|vtable for slip::)' "$WORK/exports" | head; fail "non-slip symbols exported"
fi
! grep -q -E 'slip::detail|nlohmann|fmt::|spdlog' "$WORK/exports" || { grep -E 'slip::detail|nlohmann|fmt::|spdlog' "$WORK/exports" | head; fail "internal symbols exported"; }
pass "$(wc -l < "$WORK/exports") exported symbols, all public slip:: API"
pc=$(find "$prefix" -name slipstream.pc | sed -n 1p)
[ -n "$pc" ] || fail "slipstream.pc not installed"
pass "installed tree complete, SONAME $soname"

cache=$("$prefix/bin/slip" convert "$SRC/examples/sample" -o "$WORK/caches" -q)
want=$(sha256sum "$(find "$SRC/examples/sample" -mindepth 2 -type f | LC_ALL=C sort | sed -n 1p)" | cut -d' ' -f1)

export PKG_CONFIG_PATH=$(dirname "$pc")
g++ -o "$WORK/consumer-pc" "$SRC/tests/consumer/consumer.cpp" $(pkg-config --cflags --libs slipstream) -Wl,-rpath,"$prefix/$libdir"
out=$("$WORK/consumer-pc" "$cache")
echo "$out" | grep -q "40 samples, sample 0 sha256 $want, verify ok" || fail "pkg-config consumer: $out"
pass "pkg-config consumer: $out"

cmake -S "$SRC/tests/consumer" -B "$WORK/consumer-build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_RPATH="$prefix/$libdir" >/dev/null
cmake --build "$WORK/consumer-build" >/dev/null
out=$("$WORK/consumer-build/consumer" "$cache")
echo "$out" | grep -q "40 samples, sample 0 sha256 $want, verify ok" || fail "find_package consumer: $out"
pass "find_package(slipstream) consumer: $out"

# Embedding: the library prints nothing without a log handler (a tar member that makes a
# warning), and a conversion cancelled through its token from another thread ends with
# Error(interrupted) and leaves nothing in the output directory.
g++ -std=c++20 -o "$WORK/embed" "$SRC/tests/consumer/embed.cpp" $(pkg-config --cflags --libs slipstream) -Wl,-rpath,"$prefix/$libdir" -pthread
mkdir -p "$WORK/tar-src" "$WORK/embed-out"
cp "$(find "$SRC/examples/sample" -mindepth 2 -type f | LC_ALL=C sort | sed -n 1p)" "$WORK/tar-src/s0.jpg"
echo "no extension" > "$WORK/tar-src/README"
(cd "$WORK/tar-src" && tar cf "$WORK/warns.tar" s0.jpg README)
"$WORK/embed" "$WORK/warns.tar" "$SRC/examples/sample" "$WORK/embed-out" > "$WORK/embed.out" 2> "$WORK/embed.err" || fail "embed exited $?"
[ ! -s "$WORK/embed.err" ] || { cat "$WORK/embed.err"; fail "the library wrote to stderr"; }
[ "$(wc -l < "$WORK/embed.out")" = 1 ] || { cat "$WORK/embed.out"; fail "the library wrote to stdout"; }
grep -qE '^1 samples without a handler, 1 with; [1-9][0-9]* warnings; convert interrupted: cancelled; 0 entries left$' "$WORK/embed.out" ||
  fail "embed: $(cat "$WORK/embed.out")"
pass "embedding: silent without a log handler, warnings with one; a cancelled convert leaves nothing ($(cat "$WORK/embed.out"))"

# Internals are not reachable: a program calling slip::detail:: does not link.
if g++ -std=c++20 -o "$WORK/detail" "$SRC/tests/consumer/detail_symbol.cpp" $(pkg-config --cflags --libs slipstream) 2> "$WORK/detail.err"; then
  fail "a program linked slip::detail::check_field_name from the installed library"
fi
grep -q "undefined reference to .slip::detail::check_field_name" "$WORK/detail.err" || { cat "$WORK/detail.err"; fail "unexpected link error"; }
pass "slip::detail symbols do not link"

# The unstable API (slip/sigv4.hpp, SLIP_UNSTABLE_API sections) is opt-in: without the macro a
# consumer's include fails with the reason, and slip.hpp does not bring it in.
echo '#include <slip/sigv4.hpp>' > "$WORK/unstable.cpp"
if g++ -std=c++20 -fsyntax-only $(pkg-config --cflags slipstream) "$WORK/unstable.cpp" 2> "$WORK/unstable.err"; then
  fail "slip/sigv4.hpp compiled without SLIP_UNSTABLE_API"
fi
grep -q "unstable API" "$WORK/unstable.err" || { cat "$WORK/unstable.err"; fail "no reason given for the unstable header"; }
g++ -std=c++20 -fsyntax-only -DSLIP_UNSTABLE_API $(pkg-config --cflags slipstream) "$WORK/unstable.cpp" || fail "slip/sigv4.hpp with SLIP_UNSTABLE_API"
pass "unstable API only with SLIP_UNSTABLE_API"
