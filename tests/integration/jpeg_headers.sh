#!/usr/bin/env bash
# cmake/LibjpegHeaders.cmake: jpeglib.h and jpegint.h must come from one libjpeg-turbo. A prefix
# with its own jpeglib.h but no jpegint.h (upstream never installs it) beside the system's
# jpegint.h of another version: configure says so and compiles the public API only;
# -DSLIP_LIBJPEG_TURBO_SOURCE_DIR naming that version's source tree gives the matching jpegint.h;
# a source tree of another version is refused. Fake headers: only the version macros are read.
source "$(dirname "$0")/common.bash"
command -v cmake >/dev/null || { echo "skipped: no cmake"; exit 77; }
[ -f /usr/include/jpegint.h ] || { echo "skipped: the system has no jpegint.h (Debian's libjpeg62-turbo-dev adds it)"; exit 77; }
mkdir -p "$WORK/prefix/include" "$WORK/tree/src" "$WORK/old/src"
printf '#define JPEG_LIB_VERSION 62\n#define LIBJPEG_TURBO_VERSION  3.1.4.1\n' >"$WORK/prefix/include/jconfig.h"
cp /usr/include/jpeglib.h "$WORK/prefix/include/"
printf 'set(VERSION 3.1.4.1)\n' >"$WORK/tree/CMakeLists.txt"
echo '/* 3.1.4.1 */' >"$WORK/tree/src/jpegint.h"
printf 'set(VERSION 3.0.4)\n' >"$WORK/old/CMakeLists.txt"
echo '/* 3.0.4 */' >"$WORK/old/src/jpegint.h"
configure() {  # configure NAME [cmake args]: the check's report in $WORK/NAME.log
  local name=$1; shift
  cmake -S "$SRC/tests/cmake/libjpeg_headers" -B "$WORK/b-$name" -DSLIP_REPO="$SRC" "$@" >"$WORK/$name.log" 2>&1
}

configure system
grep -q 'origin: jpeglib.h [0-9.]* from /usr/include, jpegint.h from /usr/include' "$WORK/system.log" || { cat "$WORK/system.log"; fail "system headers"; }
grep -q 'public-only: $' "$WORK/system.log" && ! grep -q 'SLIP_NO_JPEG_INTERNALS' "$WORK/system.log" || fail "system headers: internals off"
pass "the system's jpeglib.h and jpegint.h belong together"

configure mixed -DLIBJPEG_INCLUDE_DIRS="$WORK/prefix/include"
grep -q "origin: jpeglib.h 3.1.4.1 from $WORK/prefix/include" "$WORK/mixed.log" || { cat "$WORK/mixed.log"; fail "mixed: origin"; }
grep -q "public-only: jpegint.h in /usr/include is of libjpeg-turbo '[0-9.]*', not of jpeglib.h's 3.1.4.1" "$WORK/mixed.log" ||
  { cat "$WORK/mixed.log"; fail "mixed: no reason"; }
grep -q 'definitions: .*SLIP_NO_JPEG_INTERNALS' "$WORK/mixed.log" || fail "mixed: internals still compiled"
grep -q 'CMake Warning' "$WORK/mixed.log" || fail "mixed: configure does not warn"
pass "a prefix's jpeglib.h with the system's jpegint.h: public API only, and configure says why"

configure tree -DLIBJPEG_INCLUDE_DIRS="$WORK/prefix/include" -DSLIP_LIBJPEG_TURBO_SOURCE_DIR="$WORK/tree"
grep -q "origin: jpeglib.h 3.1.4.1 from $WORK/prefix/include, jpegint.h from the source tree $WORK/tree" "$WORK/tree.log" ||
  { cat "$WORK/tree.log"; fail "tree: origin"; }
! grep -q 'SLIP_NO_JPEG_INTERNALS' "$WORK/tree.log" || fail "tree: internals off"
cmp -s "$WORK/b-tree/libjpeg-internal/jpegint.h" "$WORK/tree/src/jpegint.h" || fail "tree: jpegint.h not taken from the tree"
pass "-DSLIP_LIBJPEG_TURBO_SOURCE_DIR of the same release supplies jpegint.h"

if configure old -DLIBJPEG_INCLUDE_DIRS="$WORK/prefix/include" -DSLIP_LIBJPEG_TURBO_SOURCE_DIR="$WORK/old"; then
  fail "a source tree of another release was accepted"
fi
# (CMake wraps the message: compared as one line.)
tr -s ' \n' '  ' <"$WORK/old.log" | grep -q "is libjpeg-turbo '3.0.4' .*but jpeglib.h in $WORK/prefix/include is libjpeg-turbo '3.1.4.1'" ||
  { cat "$WORK/old.log"; fail "old: no reason"; }
pass "a source tree of another release is refused at configure time"
