#!/usr/bin/env bash
# Limits the input cannot talk its way past (issue 36): --max-image-pixels holds for GIF, BMP
# and PNM too, checked from the header before anything is decoded (it was a fixed 179 Mpx for
# them); and a warning an input repeats (members without an extension) is printed a few times,
# then summarised with a count, instead of once per member.
source "$(dirname "$0")/common.bash"

# One shard per format, each a 2000x1500 image (3 Mpx): over a limit of 1 Mpx, under the default.
for fmt in gif bmp ppm; do
  mkdir -p "$WORK/$fmt"
  $PY -c "from PIL import Image; Image.new('RGB', (2000, 1500), (200, 10, 10)).save('$WORK/$fmt/a.$fmt')"
  echo 1 > "$WORK/$fmt/a.cls"
  tar -C "$WORK/$fmt" -cf "$WORK/$fmt.tar" a.$fmt a.cls
  expect_status 3 timeout -k 5 300 "$SLIP" convert "$WORK/$fmt.tar" --non-jpeg transcode --max-image-pixels 1000000 -o "$WORK/out-$fmt"
  grep -q "2000x1500 pixels exceeds --max-image-pixels 1000000" "$WORK/err" || { cat "$WORK/err"; fail "$fmt: the limit was not applied"; }
  expect_status 0 timeout -k 5 300 "$SLIP" convert "$WORK/$fmt.tar" --non-jpeg transcode -o "$WORK/out-$fmt"
  pass "$fmt: --max-image-pixels applied from the header"
done

# 300 members without an extension beside one sample: a few warnings, then one count.
mkdir -p "$WORK/noext" && images=("$CORPUS"/*/*.JPEG) && cp "${images[0]}" "$WORK/noext/a.jpg"
(cd "$WORK/noext" && for i in $(seq 1 300); do echo x > "junk$i"; done && tar -cf "$WORK/noext.tar" a.jpg junk*)
expect_status 0 "$SLIP" convert "$WORK/noext.tar" -o "$WORK/out-noext"
lines=$(grep -c "no extension" "$WORK/err" || true)
[ "$lines" -le 10 ] || fail "$lines warning lines for 300 members without an extension"
grep -q "more members skipped" "$WORK/err" || { head -20 "$WORK/err"; fail "the repeated warnings are not counted"; }
grep -q "295 more" "$WORK/err" || { head -20 "$WORK/err"; fail "the count of members not shown is wrong"; }
pass "300 members without an extension: $lines lines and a count"
