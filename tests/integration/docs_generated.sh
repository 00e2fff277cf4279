#!/usr/bin/env bash
# The generated documents cannot drift from the CLI definition: scripts/regen-cli-docs.sh,
# run into a temporary directory, reproduces the committed docs/COMMANDS.md (its synopses,
# environment table and pipeline table), man/ and completions/ exactly. Every environment
# variable the code reads is in the table (slip/environment.hpp) and so in --help, the man
# pages and COMMANDS.md; every pipeline of the registry is in `slip bench --help` and COMMANDS.md.
source "$(dirname "$0")/common.bash"
cd "$SRC"

bash scripts/regen-cli-docs.sh "$SLIP" "$WORK/regen" || fail "scripts/regen-cli-docs.sh failed"
diff -u docs/COMMANDS.md "$WORK/regen/docs/COMMANDS.md" > "$WORK/diff" ||
  { head -40 "$WORK/diff"; fail "docs/COMMANDS.md is stale: run scripts/regen-cli-docs.sh"; }
diff -r man "$WORK/regen/man" > /dev/null || fail "man/ is stale: run scripts/regen-cli-docs.sh"
diff -r completions "$WORK/regen/completions" > /dev/null || fail "completions/ are stale: run scripts/regen-cli-docs.sh"
pass "docs/COMMANDS.md's generated part, man/ and completions/ match the CLI definition"

# Each synopsis names every flag of its command's --help.
commands=$("$SLIP" --help | awk '/^Subcommands:/{on=1; next} on && /^  [a-z]/{print $1}')
[ -n "$commands" ] || fail "no subcommands parsed from --help"
for c in $commands; do
  row=$(grep -F "| \`slip $c " docs/COMMANDS.md | first_lines 1) || true
  [ -n "$row" ] || fail "COMMANDS.md has no synopsis of $c"
  for f in $("$SLIP" "$c" --help | sed '/^Exit codes:/,$d' | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u); do
    [ "$f" = --help ] && continue
    grep -q -- "[[ ]$f[] ]" <<< "$row" || fail "the synopsis of $c lacks $f"
  done
done
pass "every flag of every command is in its COMMANDS.md synopsis"

# Every variable the code reads by name is in the table, so in --help and the man pages.
help=$("$SLIP" --help)
"$SLIP" man > "$WORK/slip.1"
read_vars=$(grep -rhoE '(env_value\([^,]+, |getenv\()"[A-Z][A-Z0-9_]+"' lib apps python/*.cpp | grep -oE '"[A-Z0-9_]+"' | tr -d '"' | sort -u)
[ "$(echo "$read_vars" | wc -l)" -ge 10 ] || fail "found only $(echo "$read_vars" | wc -l) variables read in the code"
for v in $read_vars SLIP_PARALLEL_WRITES SLIP_JPEG_INTERNALS SLIP_SIMD; do
  grep -qw -- "$v" <<< "$help" || fail "$v is read by the code but not in slip --help's environment table"
  grep -qF -- "\\fB$v\\fR" "$WORK/slip.1" || fail "$v is not in slip(1)'s ENVIRONMENT section"
  grep -q "\`$v\`" docs/COMMANDS.md || fail "$v is not in COMMANDS.md's environment table"
done
pass "every environment variable the code reads ($(echo "$read_vars" | wc -l)) is in --help, slip(1) and COMMANDS.md"

# The pipelines: the registry's names are bench's choices, the table's rows and the Loader's docs.
bench_help=$("$SLIP" bench --help)
pipes=$(sed -n '/^### Pipelines/,/^<!-- generated: end/p' docs/COMMANDS.md | grep -oE '^\| `[a-z-]+`' | tr -d '|` ')
[ "$(echo "$pipes" | wc -l)" -ge 5 ] || fail "COMMANDS.md's pipeline table has $(echo "$pipes" | wc -l) rows"
for p in $pipes; do
  grep -q -- "$p" <<< "$bench_help" || fail "pipeline $p is not in slip bench --help"
done
for p in $(sed -n '/^### Pipelines/,/^<!-- generated: end/p' docs/COMMANDS.md | grep -E '\| yes \|$' | grep -oE '^\| `[a-z-]+`' | tr -d '|` '); do
  grep -q "\`\`\"$p\"\`\`" python/slipcache/__init__.py || fail "the Loader's docstring does not describe pipeline \"$p\""
done
pass "the pipeline registry's names are bench's choices and the Loader's documented pipelines"
