#!/usr/bin/env bash
# The README's commands run as written: the quick start (between its markers: the shell block,
# then the Python block) in a directory holding examples/ and build/ as a checkout does; the
# first setup command's demo (scripts/setup-and-demo.sh --demo-only); the package lists the two
# setup commands install exist in Debian; and the command table names every subcommand.
source "$(dirname "$0")/common.bash"
readme=$SRC/README.md

# The quick start, extracted between its markers.
$PY - "$readme" "$WORK" <<'PY' || fail "quick start blocks not found between the README's markers"
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"<!-- quick start: begin -->\n(.*?)<!-- quick start: end -->", text, re.S)
blocks = dict(re.findall(r"```(sh|python)\n(.*?)```", m.group(1), re.S)) if m else {}
assert set(blocks) == {"sh", "python"}, blocks.keys()
open(sys.argv[2] + "/quickstart.sh", "w").write(blocks["sh"])
open(sys.argv[2] + "/quickstart.py", "w").write(blocks["python"])
PY
checkout=$WORK/checkout
mkdir -p "$checkout/build/apps/slip"
ln -s "$SRC/examples" "$checkout/examples"
# build/apps/slip/slip: the slip under test (under qemu-user, the wrapper that runs the arm64 build).
ln -s "$(cd "$(dirname "$SLIP")" && pwd)/$(basename "$SLIP")" "$checkout/build/apps/slip/slip"
[ -n "${SLIP_BUILD_DIR:-}" ] && [ -d "$SLIP_BUILD_DIR/python" ] && ln -s "$SLIP_BUILD_DIR/python" "$checkout/build/python"
(cd "$checkout" && bash -euo pipefail "$WORK/quickstart.sh") >"$WORK/qs.out" 2>"$WORK/qs.err" ||
  { cat "$WORK/qs.out" "$WORK/qs.err"; fail "the README's quick start (shell) failed"; }
caches=("$checkout"/demo-caches/sample-*.slipstream)
[ "${#caches[@]}" -eq 1 ] && [ -f "${caches[0]}/manifest.json" ] || fail "the quick start made no cache in demo-caches/"
grep -qE '^samples +40$|40 samples|samples: *40' "$WORK/qs.out" || { cat "$WORK/qs.out"; fail "the quick start's info does not show the sample's 40 samples"; }
pass "README quick start (shell): convert, verify and info of examples/sample"

# The package CMake builds: build/python/slipcache with its compiled part _core*.so. Configured
# (the directory exists) but not compiled is a failure, not a skip: CI would never run the block.
if [ -d "$checkout/build/python/slipcache" ] && ! compgen -G "$checkout/build/python/slipcache/_core*.so" >/dev/null; then
  fail "build/python/slipcache has no _core*.so: build the slip_python target (the README's Python block needs it)"
fi
if compgen -G "$checkout/build/python/slipcache/_core*.so" >/dev/null; then
  (cd "$checkout" && PYTHONPATH=$checkout/build/python $PY - <<PY) >"$WORK/py.out" 2>&1 || { cat "$WORK/py.out"; fail "the README's quick start (Python) failed"; }
exec(open("$WORK/quickstart.py").read())
assert epoch == 1 and images.shape[1:] == (3, 224, 224) and images.dtype.name == "float32", (epoch, images.shape, images.dtype)
assert 0 <= labels.min() and labels.max() <= 3, labels
print("batches ok")
PY
  pass "README quick start (Python): two epochs of float32 NCHW batches from the cache"
else
  echo "skip: the Python module is not built (pybind11/python3-dev missing): the quick start's Python block was not run"
fi

# The first setup command's demo part, as the script runs it (into $SLIPSTREAM_CACHE_DIR).
SLIP=$SLIP expect_status 0 "$SRC/scripts/setup-and-demo.sh" --demo-only
grep -q 'sample' "$WORK/out" || { cat "$WORK/out"; fail "setup-and-demo.sh --demo-only printed no info"; }
ls -d "$SLIPSTREAM_CACHE_DIR"/sample-*.slipstream >/dev/null || fail "setup-and-demo.sh --demo-only wrote no cache"
pass "scripts/setup-and-demo.sh --demo-only converts, shows and verifies examples/sample"

# The package lists: no package twice, and every one known to apt where apt has package lists.
all=$(cat "$SRC/.ci/packages-build.txt" "$SRC/.ci/packages-test.txt" | grep -v '^#' | grep -v '^$')
dups=$(echo "$all" | sort | uniq -d)
[ -z "$dups" ] || fail "packages listed twice: $dups"
grep -q 'packages-build.txt' "$SRC/scripts/setup-and-demo.sh" || fail "setup-and-demo.sh does not install packages-build.txt"
grep -q 'packages-test.txt' "$SRC/scripts/setup-tests.sh" || fail "setup-tests.sh does not install packages-test.txt"
# One apt-cache call (each costs seconds): it prints a "NAME:" block for every package it knows.
if command -v apt-cache >/dev/null && apt-cache policy $all >"$WORK/apt" 2>/dev/null && grep -q '^build-essential:' "$WORK/apt"; then
  for p in $all; do grep -q "^$p:" "$WORK/apt" || fail "apt does not know the package '$p'"; done
  pass "the $(echo "$all" | wc -l) packages of .ci/packages-{build,test}.txt exist in apt"
else
  echo "skip: apt has no package lists here: package names not checked"
fi

# The command table names every subcommand (`slip <cmd>` in the table).
commands=$("$SLIP" --help | awk '/^Subcommands:/{on=1; next} on && /^  [a-z]/{print $1}')
[ -n "$commands" ] || fail "no subcommands parsed from --help"
table=$(sed -n '/^## Commands/,/^## /p' "$readme")
for c in $commands; do echo "$table" | grep -q "\`slip $c\b\|, \`slip $c\b" || fail "the README's command table lacks $c"; done
pass "the README's command table names every subcommand"
