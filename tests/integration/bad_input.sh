#!/usr/bin/env bash
# Bad input: each case gives one clear error line naming the path (and sample), and its exit
# code; --on-error skip records each bad sample in the ledger and source = written + skipped.
source "$(dirname "$0")/common.bash"

good=$(find "$CORPUS/n01440764" -type f | LC_ALL=C sort | sed -n 1,3p)
mkroot() {  # mkroot NAME [bad file...]: an ImageFolder with 3 good images + the given files
  local r=$WORK/$1; shift
  mkdir -p "$r/a" "$r/b"
  for f in $good; do cp "$f" "$r/a/"; done
  for f in "$@"; do cp "$f" "$r/b/"; done
  [ $# -gt 0 ] || cp $good "$r/b/"
  echo "$r"
}

for bad in "$(bad_dir)"/*; do
  name=$(basename "$bad")
  case "$name" in garbage_in_entropy.JPEG) continue ;; esac  # only a full decode finds it (verify --decode)
  root=$(mkroot "r-$name" "$bad")
  expect_status 3 "$SLIP" convert "$root" -o "$WORK/o"
  [ "$(wc -l < "$WORK/err")" -eq 1 ] || { cat "$WORK/err"; fail "$name: error is not one line"; }
  grep -q "b/$name: sample 3: " "$WORK/err" || { cat "$WORK/err"; fail "$name: error does not name path and sample"; }
  [ -z "$(ls -A "$WORK/o")" ] || fail "$name: something left in the output directory"
  message=$(cat "$WORK/err")
  expect_status 0 "$SLIP" convert "$root" -o "$WORK/o" --on-error skip --json
  $PY - "$WORK/out" "$name" <<'PY' || fail "$name: skip accounting"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["source_samples"] == 4 and d["written"] == 3 and d["skipped"] == 1, d
assert d["source_samples"] == d["written"] + d["skipped"]
(e,) = [e for e in d["ledger"] if e["action"] == "skipped"]
assert e["origin"].endswith(sys.argv[2]) and e["reason"], e
PY
  echo "ok: $name -> $message"
  rm -rf "$WORK/o"
done

# A PNG named .JPEG with --non-jpeg fail is bad input; keep stores it verbatim.
png=$(corpus_png) || fail "no PNG in $CORPUS"
root=$(mkroot r-png "$CORPUS/$png")
expect_status 3 "$SLIP" convert "$root" -o "$WORK/o" --non-jpeg fail
grep -q "png image and --non-jpeg fail" "$WORK/err" || fail "--non-jpeg fail message"
expect_status 0 "$SLIP" convert "$root" -o "$WORK/o" --non-jpeg keep
cmp -s <("$SLIP" cat "$(cat "$WORK/out")" 3) "$CORPUS/$png" || fail "--non-jpeg keep changed the bytes"
pass "--non-jpeg fail / keep"

# A root with no class folders; a missing root; an unusable output directory.
mkdir -p "$WORK/flat" && cp $good "$WORK/flat/"
expect_status 3 "$SLIP" convert "$WORK/flat" -o "$WORK/o"
grep -q "flat: no class folders" "$WORK/err" || { cat "$WORK/err"; fail "no class folders message"; }
expect_status 4 "$SLIP" convert "$WORK/does-not-exist" -o "$WORK/o"
grep -q "does-not-exist" "$WORK/err" || fail "missing root not named"
root=$(mkroot r-ok)
expect_status 4 "$SLIP" convert "$root" -o /dev/null/sub
grep -q "/dev/null/sub" "$WORK/err" || fail "unusable output dir not named"
pass "root/output errors"

# Decompression bombs: --max-image-pixels (K/M/G suffixes) refuses images by their header.
root=$(mkroot r-bomb)
expect_status 3 "$SLIP" convert "$root" -o "$WORK/o" --max-image-pixels 100K
grep -q "exceeds --max-image-pixels 100000" "$WORK/err" || { cat "$WORK/err"; fail "bomb message"; }
expect_status 0 "$SLIP" convert "$root" -o "$WORK/o" --max-image-pixels 1M
expect_status 2 "$SLIP" convert "$root" -o "$WORK/o" --max-image-pixels 3Q
pass "--max-image-pixels"

# Usage errors exit 2.
expect_status 2 "$SLIP" convert
expect_status 2 "$SLIP" convert "$root" --non-jpeg sometimes
expect_status 2 "$SLIP" frobnicate
pass "usage errors"

# Permission errors (only meaningful when not root, so drop privileges when we are root).
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
  root=$(mkroot r-perm) && chmod 000 "$root/b/$(basename "$(echo "$good" | sed -n 1p)")"
  chmod -R a+rX "$WORK" 2>/dev/null || true; chmod 000 "$root/b/$(basename "$(echo "$good" | sed -n 1p)")"
  mkdir -p "$WORK/o-perm" && chmod 777 "$WORK/o-perm"
  expect_status 3 setpriv --reuid=65534 --regid=65534 --clear-groups "$SLIP" convert "$root" -o "$WORK/o-perm"
  grep -q "Permission denied" "$WORK/err" || { cat "$WORK/err"; fail "permission error message"; }
  mkdir -p "$WORK/ro" && chmod 555 "$WORK/ro"
  expect_status 4 setpriv --reuid=65534 --regid=65534 --clear-groups "$SLIP" convert "$(mkroot r-ok2)" -o "$WORK/ro"
  grep -q "$WORK/ro" "$WORK/err" || { cat "$WORK/err"; fail "unwritable output not named"; }
  pass "permission errors"
else
  echo "skip: permission cases need root + setpriv to switch users"
fi

# A full disk: a 1 MiB tmpfs (needs mount privileges; skipped where the sandbox forbids it).
mkdir -p "$WORK/small"
if mount -t tmpfs -o size=1m tmpfs "$WORK/small" 2>/dev/null; then
  expect_status 4 "$SLIP" convert "$CORPUS" -o "$WORK/small"
  grep -q "No space left on device" "$WORK/err" || { cat "$WORK/err"; umount "$WORK/small"; fail "disk full message"; }
  leftovers=$(ls -A "$WORK/small"); umount "$WORK/small"
  [ -z "$leftovers" ] || fail "disk full left $leftovers"
  pass "full disk"
else
  echo "skip: cannot mount a tmpfs here for the full-disk case"
fi
