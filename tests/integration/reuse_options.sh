#!/usr/bin/env bash
# A cache is reused only when it is the cache that was asked for: every option that changes
# the bytes of a cache is part of its content id (and recorded in manifest slip.options), so
# `convert X --on-error skip` then `convert X --on-error fail` does not return the cache that
# dropped samples. Options that do not change bytes (-j, --io-depth) keep the id. A reused
# cache's --json reports what it holds ("reused": true, its counts and ledger).
source "$(dirname "$0")/common.bash"
good=$(find "$CORPUS/n01440764" -type f | LC_ALL=C sort | sed -n 1,3p)
r=$WORK/src && mkdir -p "$r/a" "$r/b"
for f in $good; do cp "$f" "$r/a/"; done
head -c 300 /dev/urandom > "$r/b/broken.JPEG" && cp $good "$r/b/"
png=$(corpus_png) || fail "no PNG in $CORPUS"
cp "$CORPUS/$png" "$r/b/png.JPEG"

expect_status 0 "$SLIP" convert "$r" -o "$WORK/o" --on-error skip --json
skip_path=$(json_get "$WORK/out" "['path']")
[ "$(json_get "$WORK/out" "['skipped']")" = 1 ] || fail "first run did not skip the broken image"
# The same source with --on-error fail must not find the skip cache: it converts and fails.
expect_status 3 "$SLIP" convert "$r" -o "$WORK/o" --json
grep -q "broken.JPEG" "$WORK/err" || { cat "$WORK/err"; fail "--on-error fail reused the skip cache"; }
# Again with skip: reused, and --json reports what the cache holds.
expect_status 0 "$SLIP" convert "$r" -o "$WORK/o" --on-error skip --json
$PY - "$WORK/out" "$skip_path" <<'PY' || fail "reused --json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["reused"] is True and d["path"] == sys.argv[2], d
assert d["skipped"] == 1 and d["written"] == 7 and d["transcoded"] == 1 and d["source_samples"] == 8, d
assert [e["action"] for e in d["ledger"]].count("skipped") == 1, d["ledger"]
assert d["bytes"] > 0, d
m = json.load(open(sys.argv[2] + "/manifest.json"))
assert m["slip"]["options"] == {"on-error": "skip"}, m["slip"]["options"]
PY
pass "--on-error skip vs fail: different caches; reused --json reports the stored counts and ledger"

# Each byte-affecting option gives its own cache; byte-neutral ones keep the id.
ids() { "$SLIP" convert "$r" -o "$WORK/o" --on-error skip --dry-run "$@" 2>/dev/null | tail -1; }
base=$(ids)
for opt in "--non-jpeg keep" "--non-jpeg fail" "--max-image-pixels 1000000" "--jpeg-restarts"; do
  other=$(ids $opt)
  [ "$other" != "$base" ] || fail "$opt does not change the content id"
done
for opt in "-j 1" "--io-depth 2" "--no-progress"; do
  same=$(ids $opt)
  [ "$same" = "$base" ] || fail "$opt changes the content id ($same vs $base)"
done
# The id follows docs/FORMAT.md §13, recomputed here independently (os.stat, hashlib): the
# defaults hash no options (the ids of earlier versions), other options hash their canonical form.
plain=$("$SLIP" convert "$r" -o "$WORK/o" --dry-run 2>/dev/null | tail -1)
with_opts=$("$SLIP" convert "$r" -o "$WORK/o" --dry-run --on-error skip --max-image-pixels 1000000 2>/dev/null | tail -1)
$PY - "$r" "$plain" "$with_opts" <<'PY' || fail "content id does not follow docs/FORMAT.md"
import hashlib, os, sys
root, plain, with_opts = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3]
exts = {".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp"}
lines = b""
for c in sorted(os.listdir(root)):
    for f in sorted(os.listdir(os.path.join(root, c))):
        if os.path.splitext(f)[1].lower() in exts:
            st = os.stat(os.path.join(root, c, f))
            lines += f"{c}/{f}\t{st.st_size}\t{st.st_mtime_ns}\n".encode()
fp = "sha256:" + hashlib.sha256(lines).hexdigest()
base = hashlib.sha256(f"imagefolder\n{root}\n{fp}\nslipstream-v1".encode()).hexdigest()
want = f"{os.path.basename(root)}-{base[:8]}.slipstream"
assert os.path.basename(plain) == want, (plain, want)
opts = hashlib.sha256((base + "\noptions\nmax-image-pixels=1000000\non-error=skip\n").encode()).hexdigest()
want = f"{os.path.basename(root)}-{opts[:8]}.slipstream"
assert os.path.basename(with_opts) == want, (with_opts, want)
PY
pass "byte-affecting options change the content id; -j, --io-depth and defaults do not"

# --fingerprint content on an ImageFolder: touching every file (a copy, a restore from backup)
# keeps the content id; the default stat fingerprint sees new mtimes.
a=$("$SLIP" convert "$r" -o "$WORK/fp" --on-error skip --dry-run --fingerprint content 2>/dev/null | tail -1)
s1=$("$SLIP" convert "$r" -o "$WORK/fp" --on-error skip --dry-run 2>/dev/null | tail -1)
touch -d '2001-01-01' "$r"/*/*
b=$("$SLIP" convert "$r" -o "$WORK/fp" --on-error skip --dry-run --fingerprint content 2>/dev/null | tail -1)
s2=$("$SLIP" convert "$r" -o "$WORK/fp" --on-error skip --dry-run 2>/dev/null | tail -1)
[ "$a" = "$b" ] || fail "content fingerprint changed with mtimes: $a vs $b"
[ "$s1" != "$s2" ] || fail "stat fingerprint ignores mtimes"
[ "$a" != "$s1" ] || fail "content and stat fingerprints give the same id"
pass "--fingerprint content: an ImageFolder keeps its content id when its files are touched"

# An option the source does not use is a usage error, not silently ignored.
for opt in "--layout imagefolder" "--missing skip" "--raw-field x" "--jobs 4" "--endpoint-url http://x" "--allow-truncated"; do
  expect_status 2 "$SLIP" convert "$r" -o "$WORK/o" $opt
  grep -qE "does not apply to imagefolder|applies to remote sources" "$WORK/err" || { cat "$WORK/err"; fail "$opt accepted for an ImageFolder"; }
done
pass "options a source does not use are usage errors (ImageFolder)"
if have_shared "options an FFCV file does not use (the FFCV fixture)"; then
  ffcv=$SLIP_SHARED_DIR/fixtures/ffcv/one_sample.beton
  expect_status 2 "$SLIP" convert "$ffcv" -o "$WORK/o" --rename foo=bar
  grep -q 'has no field "foo"' "$WORK/err" || { cat "$WORK/err"; fail "--rename matching nothing accepted"; }
  expect_status 2 "$SLIP" convert "$ffcv" -o "$WORK/o" --io-depth 4
  pass "options an FFCV file does not use are usage errors"
fi

# stdin: named by the hash of its bytes (spooled to $TMPDIR, removed after), so the same stream
# finds the same cache; an ImageFolder tar streamed on stdin works with --layout imagefolder.
mkdir -p "$WORK/tmp" "$WORK/if/c1" "$WORK/if/c2"
cp $(echo $good | cut -d' ' -f1) "$WORK/if/c1/a.jpg" && cp $(echo $good | cut -d' ' -f2) "$WORK/if/c2/b.jpg"
(cd "$WORK/if" && tar cf "$WORK/if.tar" c1/a.jpg c2/b.jpg)
first=$(TMPDIR=$WORK/tmp "$SLIP" convert - --layout imagefolder -o "$WORK/st" -q < "$WORK/if.tar")
second=$(TMPDIR=$WORK/tmp "$SLIP" convert - --layout imagefolder -o "$WORK/st" --json < "$WORK/if.tar" | $PY -c "import json,sys; d=json.load(sys.stdin); assert d['reused'], d; print(d['path'])")
[ "$first" = "$second" ] || fail "the same stdin stream gave two caches: $first, $second"
case "$(basename "$first")" in stdin-*.slipstream) ;; *) fail "stdin cache named $(basename "$first")";; esac
[ -z "$(ls -A "$WORK/tmp")" ] || fail "stdin spool left in TMPDIR: $(ls "$WORK/tmp")"
$PY -c "import json,sys; m=json.load(open(sys.argv[1]+'/manifest.json')); assert m['slip']['source']['uri'] == '-', m['slip']['source']" "$first" || fail "stdin uri"
pass "stdin: hashed identity (one cache per stream), --layout imagefolder works, spool removed"
