#!/usr/bin/env bash
# Every code block of README.md and docs/*.md is run here, or says why not. The line before a
# block (after blank lines) may be:
#   <!-- not run: REASON -->         not runnable here (hardware, a cluster, a remote bucket, a
#                                    path that is an example, output rather than a command): skipped,
#                                    with its reason printed
#   <!-- run by: tests/.../X.sh -->  run by that test (which must exist and name the document)
#   <!-- run: reference data -->     run here with the reference data only ($CACHE is then a
#                                    cache of its corpus), else skipped with the reason
# Any other block runs here as written: shell in a scratch directory holding examples/, with
# `slip` on PATH, HOME, SLIPSTREAM_CACHE_DIR and TMPDIR inside the test's work directory and
# $CACHE a cache of the corpus (with its label index); Python blocks with the built slipcache
# package. A block that fails fails the test.
source "$(dirname "$0")/common.bash"
cd "$SRC"
mapfile -t docs < <(ls README.md docs/*.md)
$PY - "$WORK/blocks" "${docs[@]}" <<'PY' || fail "malformed block markers (see above)"
import os, re, sys
out, docs = sys.argv[1], sys.argv[2:]
os.makedirs(out)
bad = 0
def blocks(lines):
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            lang, j = lines[i][3:].strip(), i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            yield i, lang, "\n".join(lines[i + 1:j]) + "\n"
            i = j + 1
            continue
        if lines[i].startswith("    ") and (i == 0 or lines[i - 1].strip() == ""):
            j = i
            while j < len(lines) and (lines[j].startswith("    ") or lines[j].strip() == ""):
                j += 1
            yield i, "", "\n".join(l[4:] for l in lines[i:j]).strip() + "\n"
            i = j
            continue
        i += 1
for doc in docs:
    lines = open(doc, encoding="utf-8").read().split("\n")
    previous = None
    for start, lang, text in blocks(lines):
        k = start - 1
        while k >= 0 and lines[k].strip() == "":
            k -= 1
        before = lines[k].strip() if k >= 0 else ""
        where = f"{doc}:{start + 1}"
        name = re.sub(r"[^A-Za-z0-9]", "_", where)
        if before == "<!-- quick start: begin -->":
            before = "<!-- run by: tests/integration/readme_commands.sh -->"
        elif before.startswith("```") and previous is not None:
            before = previous  # a block right after another (the quick start's shell, then Python)
        previous = before
        m = re.fullmatch(r"<!-- (not run|run by|run): ?(.*?) -->", before)
        kind, arg = (m.group(1), m.group(2).strip()) if m else ("run", "")
        if kind == "not run":
            if not arg:
                print(f"{where}: '<!-- not run: -->' without a reason"); bad += 1
            print(f"skip\t{where}\t{arg}", file=open(os.path.join(out, "list"), "a"))
        elif kind == "run by":
            test = arg
            if not os.path.isfile(test) or doc not in open(test).read():
                print(f"{where}: run by {test}, which does not exist or does not name {doc}"); bad += 1
            print(f"by\t{where}\t{test}", file=open(os.path.join(out, "list"), "a"))
        else:
            if m and arg != "reference data":
                print(f"{where}: unknown marker {before}"); bad += 1
            ext = "py" if lang == "python" else "sh"
            open(os.path.join(out, f"{name}.{ext}"), "w").write(text)
            need = "shared" if arg == "reference data" else "-"
            print(f"run\t{where}\t{name}.{ext}\t{need}", file=open(os.path.join(out, "list"), "a"))
sys.exit(1 if bad else 0)
PY

# The scratch world the blocks run in.
run=$WORK/run && mkdir -p "$run/bin" "$WORK/home" "$WORK/caches" "$WORK/tmp"
ln -s "$SRC/examples" "$run/examples"
ln -s "$(cd "$(dirname "$SLIP")" && pwd)/$(basename "$SLIP")" "$run/bin/slip"
CACHE=$("$SLIP" convert "$CORPUS" -o "$WORK/caches" -q)
"$SLIP" index "$CACHE" --field label -q
pybuilt=
[ -n "${SLIP_BUILD_DIR:-}" ] && compgen -G "$SLIP_BUILD_DIR/python/slipcache/_core*.so" >/dev/null && pybuilt=$SLIP_BUILD_DIR/python

ran=0 skipped=0
while IFS=$'\t' read -r kind where file need; do
  case $kind in
    skip) echo "skip: $where: $file"; skipped=$((skipped + 1)); continue ;;
    by) echo "ok: $where runs in $file"; ran=$((ran + 1)); continue ;;
  esac
  if [ "$need" = shared ] && ! have_shared "$where"; then skipped=$((skipped + 1)); continue; fi
  if [[ $file == *.py ]]; then
    [ -n "$pybuilt" ] || { echo "skip: $where: the Python module is not built (slip_python)"; skipped=$((skipped + 1)); continue; }
    (cd "$run" && HOME=$WORK/home SLIPSTREAM_CACHE_DIR=$WORK/caches CACHE=$CACHE PYTHONPATH=$pybuilt \
      $PY "$WORK/blocks/$file") > "$WORK/block.out" 2>&1 || { cat "$WORK/block.out"; fail "$where (Python) failed"; }
  else
    (cd "$run" && HOME=$WORK/home SLIPSTREAM_CACHE_DIR=$WORK/caches TMPDIR=$WORK/tmp CACHE=$CACHE PATH=$run/bin:$PATH \
      bash -euo pipefail "$WORK/blocks/$file") > "$WORK/block.out" 2>&1 || { cat "$WORK/block.out"; fail "$where failed"; }
  fi
  echo "ok: $where ran"
  ran=$((ran + 1))
done < "$WORK/blocks/list"
[ "$ran" -ge 3 ] || fail "only $ran blocks ran"
pass "$ran code blocks of README.md and docs/*.md ran (or run in the test named), $skipped skipped with their reasons"
