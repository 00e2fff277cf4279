#!/usr/bin/env bash
# A source file truncated by another process while slip reads it: a clean one-line error naming
# the file and the offset (exit 3), never SIGBUS (sources are read with pread, not mapped). An
# FFCV file of raw RGB images (re-encoded one by one on one thread: slow enough to be cut
# mid-read) built here, truncated to half its size as soon as slip has it open or mapped; and a
# LitData chunk the same way.
source "$(dirname "$0")/common.bash"
$PY - "$WORK/big.beton" 400 128 <<'PY'
import random, struct, sys
out, n, side = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
desc = bytearray(1041); desc[0] = 2; desc[1:6] = b"image"  # an RGBImageField
row, img = 13, side * side * 3                              # mode, width, height, pointer; raw RGB
data_start = 24 + 1041 + n * row
alloc_ptr = data_start + n * img
pixels = random.Random(0).randbytes(img)  # noise: slow to encode
with open(out, "wb") as f:
    f.write(struct.pack("<HHIQQ", 2, 1, 1 << 21, n, alloc_ptr) + desc)
    for s in range(n):
        f.write(struct.pack("<BHHQ", 1, side, side, data_start + s * img))
    for s in range(n):
        f.write(pixels)
    for s in range(n):
        f.write(struct.pack("<QQQ", s, data_start + s * img, img))
PY
# cut_while_reading FILE CMD...: runs CMD, truncates FILE to half once CMD holds it (an open file
# descriptor or a mapping), prints CMD's exit status (negative: killed by that signal).
cut_while_reading() {
  $PY - "$@" <<'PY'
import os, subprocess, sys, time
victim, cmd = os.path.realpath(sys.argv[1]), sys.argv[2:]
p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(os.environ["WORK"] + "/err", "w"))
def holds():
    try:
        if any(victim in line for line in open("/proc/%d/maps" % p.pid)):
            return True
        fds = "/proc/%d/fd" % p.pid
        return any(os.readlink(os.path.join(fds, fd)) == victim for fd in os.listdir(fds))
    except OSError:
        return False
while p.poll() is None and not holds():
    time.sleep(0.0005)
if p.poll() is not None:
    print("finished-before-cut"); sys.exit(0)
os.truncate(victim, os.path.getsize(victim) // 2)
print(p.wait(timeout=60))
PY
}
export WORK
rc=$(cut_while_reading "$WORK/big.beton" "$SLIP" convert "$WORK/big.beton" -o "$WORK/o" -j 1 --max-in-flight 1MiB -q)
[ "$rc" != finished-before-cut ] || fail "the conversion ended before the test could truncate its source"
[ "$rc" != -7 ] && [ "$rc" != 135 ] || fail "SIGBUS reading an FFCV file truncated by another process"
[ "$rc" = 3 ] || { cat "$WORK/err"; fail "a truncated FFCV file gave exit $rc, want 3"; }
# Cut mid-read: "truncated while being read"; cut between the open and the header checks (a slow,
# sanitized build): the table pointer past the end, "(truncated file?)". Both name file and cause.
grep -q "big.beton.*truncated" "$WORK/err" || { cat "$WORK/err"; fail "the error does not name the file and the cause"; }
[ "$(wc -l < "$WORK/err")" -eq 1 ] || { cat "$WORK/err"; fail "more than one error line"; }
[ -z "$(ls "$WORK/o" 2>/dev/null | grep -v '^\.')" ] || fail "a cache was left from a truncated source"
pass "an FFCV file truncated while read: exit 3, $(cut -c1-160 "$WORK/err")"
