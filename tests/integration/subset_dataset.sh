#!/usr/bin/env bash
# slip subset over a dataset (issue 44): the parts of a `convert --shard I/4` conversion, read as
# one dataset, give the subset of the merged cache: the same ids (--mode ids) and, copied, the
# same images and field values byte for byte, for values, few-shot draws (--per-class, whose
# draws run over each value's global ids) and class names.
source "$(dirname "$0")/common.bash"
out=$WORK/out-dir
for i in 0 1 2 3; do "$SLIP" convert "$SRC/examples/sample" -o "$out" --shard $i/4 --no-progress -q > /dev/null; done
parts=$(ls -d "$out"/*.parts)
merged=$("$SLIP" merge --source "$SRC/examples/sample" -o "$out" -q)

# Every storage file but the manifest (whose provenance names the parent) equal byte for byte.
same_values() {
  local a=$1 b=$2 n=0 f
  for f in "$b"/*; do
    case ${f##*/} in manifest.json*) continue ;; esac
    cmp -s "$f" "$a/${f##*/}" || fail "${f##*/} differs between $a and $b"
    n=$((n + 1))
  done
  [ "$n" -ge 3 ] || fail "only $n storage files in $b"
  [ "$(ls "$a" | grep -vc '^manifest.json')" -eq "$n" ] || fail "$a has other files than $b"
}

cases=("--values 0,2" "--values 1,3 --per-class 3 --seed 5" "--values 0,1,2,3 --per-class 4 --seed 11" "--names n01440764,n03888605 --per-class 2")
for i in "${!cases[@]}"; do
  args=${cases[$i]}
  # shellcheck disable=SC2086
  "$SLIP" subset "$parts" $args --mode ids -o "$WORK/p$i.npy" -q > /dev/null || fail "ids over the parts ($args)"
  # shellcheck disable=SC2086
  "$SLIP" subset "$merged" $args --mode ids -o "$WORK/m$i.npy" -q > /dev/null || fail "ids over the merged cache ($args)"
  cmp "$WORK/p$i.npy" "$WORK/m$i.npy" || fail "selected ids differ ($args)"
  # shellcheck disable=SC2086
  "$SLIP" subset "$parts" $args -o "$WORK/sp$i" --json -q > "$WORK/sp.json" || fail "copy over the parts ($args)"
  # shellcheck disable=SC2086
  "$SLIP" subset "$merged" $args -o "$WORK/sm$i" -q > "$WORK/sm.path" || fail "copy over the merged cache ($args)"
  [ "$(json_get "$WORK/sp.json" '["caches"]')" = 4 ] || fail "caches in --json ($args)"
  same_values "$(json_get "$WORK/sp.json" '["path"]')" "$(cat "$WORK/sm.path")"
  expect_status 0 "$SLIP" verify "$(json_get "$WORK/sp.json" '["path"]')"
done
n=$($PY -c 'import numpy, sys; print(len(numpy.load(sys.argv[1])))' "$WORK/p1.npy")
[ "$n" -eq 6 ] || fail "--per-class 3 of 2 values selected $n"
pass "subset over 4 parts = subset of the merged cache: ids, images and fields byte for byte (values, few-shot, names)"

# A list file of the parts is the same dataset.
ls -d "$parts"/part-* > "$WORK/list.txt"
"$SLIP" subset "$WORK/list.txt" --values 1,3 --per-class 3 --seed 5 --mode ids -o "$WORK/l.npy" -q > /dev/null
cmp "$WORK/l.npy" "$WORK/m1.npy" || fail "list file's ids"
# A value no cache holds is a usage error; a caches whose fields differ is refused naming it.
expect_status 2 "$SLIP" subset "$parts" --values 9 --mode ids -o "$WORK/x.npy"
grep -q 'has no sample with value 9' "$WORK/err" || fail "unknown value: $(cat "$WORK/err")"
yuv=$("$SLIP" convert "$SRC/examples/sample" -o "$WORK/yuv" --image-format yuv420 -q)
expect_status 3 "$SLIP" subset "$parts/part-00000-of-00004.slipstream" "$yuv" --values 0 --mode ids -o "$WORK/x.npy"
grep -qF "$yuv" "$WORK/err" && grep -q "fields differ" "$WORK/err" || fail "mismatched fields: $(cat "$WORK/err")"
[ ! -e "$WORK/x.npy" ] || fail "a refused subset wrote its output"
pass "list files; unknown values and mismatched caches refused"
