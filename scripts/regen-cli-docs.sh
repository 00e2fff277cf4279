#!/usr/bin/env bash
# Regenerates, from the CLI definition (the one source of truth): man/, completions/ and the
# generated part of docs/COMMANDS.md (synopses, environment variables, pipelines: between its
# "generated: begin/end" markers).
# Usage: scripts/regen-cli-docs.sh [path/to/slip] [OUTDIR]
#   OUTDIR (default: the repository) receives man/, completions/ and docs/COMMANDS.md; the
#   tests (tests/integration/cli_docs.sh, docs_generated.sh) regenerate into a temporary
#   directory and compare it with the committed files.
set -euo pipefail
cd "$(dirname "$0")/.."
SLIP=${1:-build/apps/slip/slip}
OUT=${2:-.}
mkdir -p "$OUT/docs"
# `slip man -o DIR` writes DIR/man1/*.1 (a MANPATH entry); the repository keeps them flat in man/.
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
"$SLIP" man -o "$tmp" && rm -rf "$OUT/man" && mv "$tmp/man1" "$OUT/man"
mkdir -p "$OUT/completions"
"$SLIP" completions bash > "$OUT/completions/slip.bash"
"$SLIP" completions zsh > "$OUT/completions/_slip"
"$SLIP" completions fish > "$OUT/completions/slip.fish"
# docs/COMMANDS.md: the text between the markers is replaced by `slip man --markdown`.
"$SLIP" man --markdown > "$tmp/reference.md"
awk -v ref="$tmp/reference.md" '
  /^<!-- generated: begin/ { while ((getline line < ref) > 0) print line; skip = 1; found = 1; next }
  /^<!-- generated: end -->/ { skip = 0; next }
  !skip { print }
  END { if (!found) { print "regen-cli-docs.sh: docs/COMMANDS.md has no <!-- generated: begin --> marker" > "/dev/stderr"; exit 1 } }
' docs/COMMANDS.md > "$tmp/COMMANDS.md"
cp "$tmp/COMMANDS.md" "$OUT/docs/COMMANDS.md"
