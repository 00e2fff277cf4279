#!/usr/bin/env bash
# Input files that are not regular files never block (issue 36): a FIFO (or a directory, or a
# character device) as a LitData chunk after the first, a tar shard, a @list file, a
# --values-file or a --classes-file is refused at once (exit 3) with one line naming it. Each
# command runs under `timeout 300` (a hang guard, not a speed bound), so a regression fails (exit 124) instead of hanging.
source "$(dirname "$0")/common.bash"

# refused WHAT NAME CMD...: CMD exits 3 (not blocked: a 300 s hang guard) with one error line naming NAME.
refused() {
  local what=$1 name=$2; shift 2
  local got=0
  timeout -k 5 300 "$@" >"$WORK/out" 2>"$WORK/err" </dev/null || got=$?
  [ "$got" -ne 124 ] && [ "$got" -ne 137 ] || fail "$what: still blocked after 300 s"
  [ "$got" -eq 3 ] || { cat "$WORK/err" >&2; fail "$what: exited $got, want 3"; }
  grep -q "$name.*not a regular file" "$WORK/err" || { cat "$WORK/err" >&2; fail "$what: the error does not name $name"; }
  [ "$(grep -c . "$WORK/err")" -eq 1 ] || { cat "$WORK/err" >&2; fail "$what: more than one error line"; }
  pass "$what: refused at once, named"
}

# A LitData directory whose second chunk is a FIFO (the first converts, then the reader and its
# prefetch of the next chunk reach the FIFO).
if have_shared "the LitData chunk FIFO and directory (the LitData fixture)"; then
  lit=$WORK/lit && cp -r "$SLIP_SHARED_DIR/fixtures/litdata/all_types" "$lit"
  rm "$lit/chunk-0-1.bin" && mkfifo "$lit/chunk-0-1.bin"
  refused "LitData chunk FIFO" chunk-0-1.bin "$SLIP" convert "$lit" -o "$WORK/out-lit"
  [ -z "$(ls -A "$WORK/out-lit" 2>/dev/null | grep -v '^\.' || true)" ] || fail "a cache was left after the refusal"
  # ... and one that is a directory.
  rm "$lit/chunk-0-1.bin" && mkdir "$lit/chunk-0-1.bin"
  refused "LitData chunk directory" chunk-0-1.bin "$SLIP" convert "$lit" -o "$WORK/out-lit"
fi

# Tar shards: the second of three is a FIFO, then /dev/null's kind (a character device).
shards=$WORK/shards && mkdir -p "$shards"
for c in $(cd "$CORPUS" && ls -d */ | first_lines 3 | tr -d /); do
  n=$(ls "$shards" | wc -l)
  (cd "$CORPUS" && tar -cf "$shards/shard-00000$n.tar" $(ls -d "$c"/* | first_lines 3))
done
rm "$shards/shard-000001.tar" && mkfifo "$shards/shard-000001.tar"
refused "tar shard FIFO" shard-000001.tar "$SLIP" convert "$shards/shard-{000000..000002}.tar" -o "$WORK/out-tar"
refused "tar shard FIFO (imagefolder layout)" shard-000001.tar \
  "$SLIP" convert "$shards/shard-{000000..000002}.tar" --layout imagefolder -o "$WORK/out-tar"

# A @list file that is a FIFO, and one naming a FIFO shard.
mkfifo "$WORK/list.txt"
refused "@list FIFO" list.txt "$SLIP" convert "@$WORK/list.txt" -o "$WORK/out-tar"
printf '%s\n' "$shards/shard-000000.tar" "$shards/shard-000001.tar" > "$WORK/list2.txt"
refused "@list naming a FIFO shard" shard-000001.tar "$SLIP" convert "@$WORK/list2.txt" -o "$WORK/out-tar"

# subset --values-file and --classes-file that are FIFOs.
cache=$("$SLIP" convert "$shards/shard-000000.tar" --layout imagefolder -o "$WORK/caches" -q)
mkfifo "$WORK/values.txt" "$WORK/classes.txt"
refused "--values-file FIFO" values.txt "$SLIP" subset "$cache" --values-file "$WORK/values.txt" -o "$WORK/sub"
refused "--classes-file FIFO" classes.txt "$SLIP" subset "$cache" --names x --classes-file "$WORK/classes.txt" -o "$WORK/sub"
