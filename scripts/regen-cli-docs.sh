#!/usr/bin/env bash
# Regenerates man/ and completions/ from the CLI definition (the one source of truth).
# Usage: scripts/regen-cli-docs.sh [path/to/slip]   (tests/integration/cli_docs.sh checks they match)
set -euo pipefail
cd "$(dirname "$0")/.."
SLIP=${1:-build/apps/slip/slip}
# `slip man -o DIR` writes DIR/man1/*.1 (a MANPATH entry); the repository keeps them flat in man/.
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
"$SLIP" man -o "$tmp" && rm -rf man && mv "$tmp/man1" man
mkdir -p completions
"$SLIP" completions bash > completions/slip.bash
"$SLIP" completions zsh > completions/_slip
"$SLIP" completions fish > completions/slip.fish
