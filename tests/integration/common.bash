# Sourced by the integration tests: environment, temp dir, assertions.
set -euo pipefail
# set -e ends a test silently; say where (ctest shows this line in the failure's output).
trap 'echo "FAIL: ${BASH_SOURCE[0]##*/} line $LINENO: \`$BASH_COMMAND\` exited $?" >&2' ERR
: "${SLIP:?SLIP must point at the slip binary}"
PY=${SLIP_PYTHON:-/usr/bin/python3}
SRC=${SLIP_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# The reference data (corpus, fixtures, reference outputs; -DSLIP_SHARED_DIR) is not part of the
# repository. Without it CORPUS is examples/sample (40 of the corpus's photos, of the same
# awkward kinds), and what needs more skips with the reason: need_shared (the whole test,
# exit 77: ctest reports it skipped) or have_shared (one part, with a "skip:" line).
SLIP_SHARED_DIR=${SLIP_SHARED_DIR:-$SRC/../shared}
if [ -d "$SLIP_SHARED_DIR/corpus/imagenet_like" ]; then
  CORPUS=$SLIP_SHARED_DIR/corpus/imagenet_like
else
  CORPUS=$SRC/examples/sample
fi
first_lines() {  # first_lines N: the first N lines of stdin, reading all of it. `| head -N` under
  # pipefail fails the pipeline (and set -e ends the test, silently) when the producer is still
  # writing as head exits: SIGPIPE, once a listing outgrows the 64 KiB pipe buffer.
  awk -v n="$1" 'NR <= n'
}
have_shared() {  # have_shared WHAT: true with the reference data, else prints why WHAT is not checked
  [ -d "$SLIP_SHARED_DIR/corpus/imagenet_like" ] && return 0
  echo "skip: $* (needs the reference data: $SLIP_SHARED_DIR not found; see -DSLIP_SHARED_DIR)"
  return 1
}
need_shared() {  # need_shared WHAT: exits 77 (skipped) without the reference data
  have_shared "$@" || exit 77
}
bad_dir() {  # a directory of broken image files: the corpus's bad/, or the same kinds made here
  if [ -d "$SLIP_SHARED_DIR/corpus/bad" ]; then echo "$SLIP_SHARED_DIR/corpus/bad"; return; fi
  [ -d "$WORK/bad-made" ] || $PY - "$CORPUS" "$WORK/bad-made" "$(corpus_png)" <<'PY'
import os, random, sys
corpus, out, png = sys.argv[1:4]
os.makedirs(out)
jpeg = open(os.path.join(corpus, "n01440764/n01440764_10235.JPEG"), "rb").read()  # baseline 4:2:0
sof = jpeg.index(b"\xff\xc0")  # SOF0: length(2) precision(1) height(2) width(2)
def patched(at, value):
    b = bytearray(jpeg); b[at:at + 2] = value; return bytes(b)
garbage = bytearray(jpeg); mid = len(jpeg) // 2
garbage[mid:mid + 2048] = random.Random(0).randbytes(2048)
files = {
    "zero_bytes.JPEG": b"", "text_file.jpg": b"This is a text file, not an image; slip must say so.\n" * 2,
    "truncated_half.JPEG": jpeg[: len(jpeg) // 2], "missing_eoi.JPEG": jpeg[:-2], "soi_only.JPEG": b"\xff\xd8",
    "sof_height_zero.JPEG": patched(sof + 5, b"\0\0"), "sof_width_zero.JPEG": patched(sof + 7, b"\0\0"),
    "png_truncated.JPEG": open(os.path.join(corpus, png), "rb").read()[: os.path.getsize(os.path.join(corpus, png)) // 3],
    "garbage_in_entropy.JPEG": bytes(garbage),
}
for name, data in files.items():
    open(os.path.join(out, name), "wb").write(data)
PY
  echo "$WORK/bad-made"
}
corpus_png() {  # the path (relative to CORPUS) of its first PNG, whatever the file's name says
  local f
  for f in $(cd "$CORPUS" && find . -type f | LC_ALL=C sort); do
    [ "$(head -c 4 "$CORPUS/$f" | tail -c 3)" = PNG ] && { echo "${f#./}"; return 0; }
  done
  return 1
}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/slip-it-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export SLIPSTREAM_CACHE_DIR=$WORK/cache-root

two_class_folder() {  # two_class_folder DIR: an ImageFolder of the corpus's first 6 JPEGs, alternately in a/ and b/
  mkdir -p "$1/a" "$1/b"
  local i=0 f
  for f in $(find "$CORPUS" -type f -name '*.JPEG' | LC_ALL=C sort | first_lines 6); do
    cp "$f" "$1/$([ $((i % 2)) = 0 ] && echo a || echo b)/"
    i=$((i + 1))
  done
}
fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }
# expect_status WANT CMD... : runs CMD, captures stdout/stderr in $WORK/out, $WORK/err.
expect_status() {
  local want=$1; shift
  local got=0
  "$@" >"$WORK/out" 2>"$WORK/err" || got=$?
  [ "$got" -eq "$want" ] || { cat "$WORK/err" >&2; fail "'$*' exited $got, want $want"; }
}
json_get() { $PY -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval('d'+sys.argv[2]))" "$1" "$2"; }
# cpu_seconds CMD...: runs CMD (stdout/stderr to $WORK/out, $WORK/err; any exit status) and prints
# the CPU time (user + system) it and its children used. CPU time, unlike wall time, hardly moves
# with the machine's load: a test compares the CPU times of two sizes of the same work in one run
# (linear: ~10x for 10x the input; quadratic: ~100x), never a time against a fixed bound.
cpu_seconds() {
  $PY - "$WORK/out" "$WORK/err" "$@" <<'PY'
import resource, subprocess, sys
with open(sys.argv[1], "wb") as out, open(sys.argv[2], "wb") as err:
    subprocess.run(sys.argv[3:], stdout=out, stderr=err, stdin=subprocess.DEVNULL)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.3f" % (r.ru_utime + r.ru_stime))
PY
}
# linear_ratio WHAT SMALL LARGE FACTOR: fails unless LARGE CPU seconds are within 4x of FACTOR
# times SMALL (a quadratic cost shows as FACTOR^2: 100x for 10x the input). Small runs are
# floored at 0.05 s so that start-up noise cannot inflate the ratio.
linear_ratio() {
  local what=$1 small=$2 large=$3 factor=$4
  $PY -c "import sys; s, l, f = max(float(sys.argv[1]), 0.05), float(sys.argv[2]), float(sys.argv[3]); r = l / s
print('%s: %.2f s CPU for %gx the input of %.2f s: %.1fx' % (sys.argv[4], l, f, s, r)); sys.exit(0 if r <= 4 * f else 1)" \
    "$small" "$large" "$factor" "$what" || fail "$what: CPU time grows faster than the input (quadratic?)"
}
