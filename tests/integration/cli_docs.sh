#!/usr/bin/env bash
# Help, completions and man pages come from the one CLI definition: the committed man/ and
# completions/ must equal what the binary generates (scripts/regen-cli-docs.sh updates them),
# every subcommand and flag must appear in each, the scripts must load and complete in bash,
# zsh and fish, and the pages must be clean under mandoc -Tlint.
source "$(dirname "$0")/common.bash"

"$SLIP" man -o "$WORK/mandir"
ln -s "$WORK/mandir/man1" "$WORK/man"
[ -z "$(find "$WORK/mandir" -maxdepth 1 -name '*.1')" ] || fail "slip man -o DIR wrote pages beside DIR/man1"
diff -r "$SRC/man" "$WORK/man" >/dev/null || fail "man/ is stale: run scripts/regen-cli-docs.sh"
for shell in bash zsh fish; do
  "$SLIP" completions $shell > "$WORK/comp.$shell"
done
cmp -s "$WORK/comp.bash" "$SRC/completions/slip.bash" || fail "completions/slip.bash is stale: run scripts/regen-cli-docs.sh"
cmp -s "$WORK/comp.zsh" "$SRC/completions/_slip" || fail "completions/_slip is stale"
cmp -s "$WORK/comp.fish" "$SRC/completions/slip.fish" || fail "completions/slip.fish is stale"
pass "committed man pages and completions match the CLI definition"

# Every subcommand and every long flag of `--help` appears in each artefact.
commands=$("$SLIP" --help | awk '/^Subcommands:/{on=1; next} on && /^  [a-z]/{print $1}')
[ -n "$commands" ] || fail "no subcommands parsed from --help"
for c in $commands; do
  [ -f "$WORK/man/slip-$c.1" ] || fail "no man page for $c"
  flags=$("$SLIP" "$c" --help | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)
  for f in $flags; do
    esc=${f//-/\\\\-}
    grep -q -- "$esc" "$WORK/man/slip-$c.1" || fail "man page of $c lacks $f"
    grep -q -- "$f" "$WORK/comp.bash" || fail "bash completion lacks $c $f"
    grep -q -- "$f" "$WORK/comp.zsh" || fail "zsh completion lacks $c $f"
    grep -q -- "-l ${f#--}\b" "$WORK/comp.fish" || fail "fish completion lacks $c $f"
  done
done
pass "every subcommand and flag is in the man pages and the bash/zsh/fish completions"

if command -v mandoc >/dev/null; then
  out=$(mandoc -Tlint "$WORK"/man/*.1 2>&1 || true)
  [ -z "$out" ] || { echo "$out"; fail "mandoc -Tlint is not clean"; }
  pass "mandoc -Tlint clean"
else
  echo "skip: mandoc not installed"
fi
if command -v man >/dev/null; then
  man -l "$WORK/man/slip-convert.1" 2>/dev/null | grep -q "SYNOPSIS" || fail "man -l does not render slip-convert(1)"
  # `slip man -o DIR` makes DIR a MANPATH entry: man finds the pages by name there.
  [ "$(MANPATH=$WORK/mandir man -w slip-convert 2>/dev/null)" = "$WORK/mandir/man1/slip-convert.1" ] ||
    fail "MANPATH=DIR man -w slip-convert does not find DIR/man1/slip-convert.1 ($(MANPATH=$WORK/mandir man -w slip-convert 2>&1))"
  pass "slip man -o DIR writes DIR/man1: MANPATH=DIR man slip-convert finds it"
fi

# bash: `slip con<TAB>` and enum values.
got=$(bash -c "source '$WORK/comp.bash'; COMP_WORDS=(slip con); COMP_CWORD=1; _slip; echo \${COMPREPLY[*]}")
[ "$got" = convert ] || fail "bash: slip con<TAB> gave '$got'"
got=$(bash -c "source '$WORK/comp.bash'; COMP_WORDS=(slip convert --non-jpeg ''); COMP_CWORD=3; _slip; echo \${COMPREPLY[*]}")
[ "$got" = "transcode keep fail" ] || fail "bash: --non-jpeg <TAB> gave '$got'"
if "$SLIP" --help | grep -qE "^  bench "; then
  got=$(bash -c "source '$WORK/comp.bash'; COMP_WORDS=(slip bench x --pipeline ''); COMP_CWORD=4; _slip; echo \${COMPREPLY[*]}")
  echo "$got" | grep -qw rrc || fail "bash: bench --pipeline <TAB> gave '$got'"
fi
pass "bash completes"

if command -v fish >/dev/null; then
  got=$(fish -c "source '$WORK/comp.fish'; complete -C 'slip con'" | cut -f1 | tr '\n' ' ')
  [ "$got" = "convert " ] || fail "fish: slip con<TAB> gave '$got'"
  got=$(fish -c "source '$WORK/comp.fish'; complete -C 'slip convert --non-jpeg '" | cut -f1 | sort | tr '\n' ' ')
  [ "$got" = "fail keep transcode " ] || fail "fish: --non-jpeg gave '$got'"
  if "$SLIP" --help | grep -qE "^  bench "; then
    fish -c "source '$WORK/comp.fish'; complete -C 'slip bench --pipeline '" | cut -f1 | grep -qx rrc || fail "fish: bench --pipeline"
  fi
  pass "fish completes"
else
  echo "skip: fish not installed"
fi

if command -v zsh >/dev/null; then
  # compinit finds _slip through fpath and registers it for `slip`; the _describe call of the
  # command state is intercepted to read the candidates zsh would offer for `slip <TAB>`.
  mkdir -p "$WORK/zfunc" && cp "$WORK/comp.zsh" "$WORK/zfunc/_slip"
  got=$(ZDOTDIR=$WORK zsh -f -c '
    fpath=('"$WORK"'/zfunc $fpath); autoload -U compinit; compinit -u -D
    [[ $_comps[slip] == _slip ]] || { print "not registered"; exit 1 }
    autoload -U _slip
    _arguments() { state=cmds; return 0 }
    _describe() { print -l -- ${(P)2}; }
    words=(slip ""); CURRENT=2; _slip' 2>&1 | cut -d: -f1 | tr '\n' ' ')
  echo "$got" | grep -qw convert || fail "zsh: completion did not offer convert (got: $got)"
  pass "zsh registers _slip for slip and offers the subcommands"
  # Sourced, as `slip completions --help` says (`source <(slip completions zsh)` in ~/.zshrc),
  # after compinit and without it: _slip is registered, and sourcing prints nothing.
  for init in 'autoload -U compinit; compinit -u -D' ':'; do
    got=$(ZDOTDIR=$WORK zsh -f -c "$init"'; source <("$0" completions zsh) || exit 1; print -r -- "${_comps[slip]-unregistered}"' "$SLIP" 2>&1)
    [ "$got" = _slip ] || fail "zsh: source <(slip completions zsh) after '$init' gave: $got"
  done
  "$SLIP" completions --help | grep -q 'source <(slip completions zsh)' || fail "slip completions --help does not say how to install them"
  pass "zsh: source <(slip completions zsh) registers _slip, with or without compinit before it"
else
  echo "skip: zsh not installed"
fi

# On/off flags (--help, --json, --force, ...) take no value: no man page shows one after them,
# zsh does not wait for one, fish does not ask for one. Flags are the --help lines whose spec
# is followed by the description (two spaces), not by a TYPE.
for c in "" $commands; do
  page=$WORK/man/slip${c:+-$c}.1
  for f in $("$SLIP" $c --help | grep -oE '^  (-[A-Za-z0-9],)?--[a-z][a-z0-9-]*( {2,}|$)' | grep -oE -- '--[a-z][a-z0-9-]*'); do
    esc=${f//-/\\\\-}
    ! grep -qE -- "\\\\fB$esc\\\\fR \\\\fI" "$page" || fail "man page slip${c:+-$c} shows a value after the flag $f"
    ! grep -E -- "[{'\"]$f[],}'\"]" "$WORK/comp.zsh" | grep -q ':value:' || fail "zsh expects a value after the flag $c $f"
    ! grep -E -- "-l ${f#--}( |$)" "$WORK/comp.fish" | grep -qE -- ' -(x|r) ' || fail "fish expects a value after the flag $c $f"
  done
done
! grep -q '\\fIVALUE\\fR' "$WORK"/man/*.1 || fail "a man page shows VALUE"
pass "flags show no value in the man pages, zsh and fish"

# Positionals with a fixed set of values complete those values, not file names; no word twice.
got=$(bash -c "source '$WORK/comp.bash'; COMP_WORDS=(slip completions ''); COMP_CWORD=2; _slip; echo \${COMPREPLY[*]}")
[ "$got" = "bash zsh fish" ] || fail "bash: slip completions <TAB> gave '$got'"
got=$(bash -c "source '$WORK/comp.bash'; COMP_WORDS=(slip man ''); COMP_CWORD=2; _slip; echo \${COMPREPLY[*]}")
echo "$got" | grep -qw convert && ! echo "$got" | grep -q / || fail "bash: slip man <TAB> gave '$got'"
for c in $commands; do
  got=$(bash -c "source '$WORK/comp.bash'; COMP_WORDS=(slip $c --); COMP_CWORD=2; _slip; printf '%s\n' \${COMPREPLY[*]}")
  dup=$(echo "$got" | sort | uniq -d)
  [ -z "$dup" ] || fail "bash: slip $c -- offers $(echo $dup) twice"
done
if command -v fish >/dev/null; then
  got=$(fish -c "source '$WORK/comp.fish'; complete -C 'slip completions '" | cut -f1 | sort | tr '\n' ' ')
  [ "$got" = "bash fish zsh " ] || fail "fish: slip completions <TAB> gave '$got'"
fi
grep -q "'1:shell:(bash zsh fish)'" "$WORK/comp.zsh" || fail "zsh: completions does not offer the shells"
pass "completions and man complete their values; no word offered twice"

# The docs stand on their own: nothing a user of the repository reads cites the private spec
# (shared/spec, "spec 1.x", "spec §"), and user-facing text (README, docs, man pages,
# completions, --help, headers and library comments) does not send the reader to ../shared,
# which only the tests and benchmarks use. Every FORMAT.md anchor cited exists.
cd "$SRC"
hits=$(grep -rIn --exclude-dir=build --exclude-dir=.git --exclude-dir='build-*' --exclude=cli_docs.sh -e 'shared/spec' -e 'spec 1\.[0-9]' -e 'spec §' . || true)
[ -z "$hits" ] || { echo "$hits"; fail "references to the private spec"; }
hits=$(grep -rIn -e '\.\./shared' -e '§' README.md docs man completions apps lib/include lib/src || true)
[ -z "$hits" ] || { echo "$hits"; fail "user-facing text points at ../shared or at spec sections"; }
"$SLIP" --help | grep -q 'spec' && fail "--help cites the spec"
for c in $commands; do ! "$SLIP" $c --help | grep -qE 'spec [0-9§]|shared/' || fail "slip $c --help cites the spec"; done
anchors=$(grep -oE '<a id="[a-z0-9-]+"></a>' docs/FORMAT.md | sed -E 's/<a id="([^"]+)".*/\1/' | sort -u)
for ref in $(grep -rIhoE --exclude-dir=build --exclude-dir=.git 'FORMAT\.md#[a-z0-9-]+' . | sed 's/.*#//' | sort -u); do
  echo "$anchors" | grep -qx "$ref" || fail "docs/FORMAT.md has no anchor '$ref'"
done
for key in version num_samples fields file_sizes max_size image_format data_ptr data_size offsets.npy _yuv420.bin \
           content_id fingerprint checksums payload_checksums ledger manifest.json.xxh3 _index.npy; do
  grep -q -- "$key" docs/FORMAT.md || fail "docs/FORMAT.md does not describe $key"
done
grep -q '^demo-caches/' .gitignore || fail "demo-caches/ (written by the quick start) is not in .gitignore"
! grep -q 'closing note\|issue note' docs/SLURM.md || fail "docs/SLURM.md points at an issue note instead of stating its figures"
pass "docs stand on their own: no private spec, FORMAT.md anchors resolve"

# Typed placeholders (issue 38): no option or positional of any command shows CLI11's generic
# TEXT, UINT, INT or FLOAT; counts say N, byte sizes SIZE, durations SECONDS, files DIR, FILE,
# PATH, CACHE or SOURCE. The placeholder is the part of a --help line before the description.
specs() { "$SLIP" $1 --help | grep -E '^  [-a-z]' | sed -E 's/^  //; s/ {2,}.*//'; }
for c in "" $commands; do
  bad=$(specs "$c" | grep -wE 'TEXT|UINT|INT|FLOAT' || true)
  [ -z "$bad" ] || fail "slip $c --help shows a generic placeholder: $bad"
done
specs convert | grep -qE -- '--jobs N\b' || fail "convert --jobs is not shown as N: $(specs convert | grep -- --jobs)"
specs convert | grep -qE -- '--max-in-flight SIZE=256MiB' || fail "convert --max-in-flight is not shown as SIZE"
specs convert | grep -qE -- '--timeout SECONDS' || fail "convert --timeout is not shown as SECONDS"
specs convert | grep -qE -- '--non-jpeg \{transcode,keep,fail\}=transcode' || fail "a choice does not show its values alone"
specs cat | grep -qE '^index N REQUIRED' || fail "cat's index positional is not N"
pass "--help of every command: typed placeholders (N, SIZE, SECONDS, DIR, ...), no TEXT/UINT/FLOAT"

# ... and the completions offer no file names after a numeric option (there are files to offer
# here), in bash, zsh and fish; a DIR option still completes file names.
mkdir -p "$WORK/cwd" && touch "$WORK/cwd/a-file" "$WORK/cwd/12345"
cd "$WORK/cwd"
numeric=0
for c in $commands; do
  for f in $(specs "$c" | grep -E -- '--[a-z][a-z0-9-]* (N|SIZE|SECONDS|NUM|BYTES/S|I/N)\b' | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u); do
    numeric=$((numeric + 1))
    got=$(bash -c "source '$WORK/comp.bash'; COMP_WORDS=(slip $c $f ''); COMP_CWORD=3; _slip; echo \${COMPREPLY[*]}")
    [ -z "$got" ] || fail "bash: slip $c $f <TAB> offers '$got'"
    ! grep -E -- "[{'\"]$f[],}'\"]" "$WORK/comp.zsh" | grep -q '_files' || fail "zsh completes files after $c $f"
    ! grep -E -- "__fish_seen_subcommand_from $c\".* -l ${f#--}( |$)" "$WORK/comp.fish" | grep -qE -- ' -(r|F) ' ||
      fail "fish completes files after $c $f"
    if command -v fish >/dev/null; then
      got=$(fish -c "source '$WORK/comp.fish'; complete -C 'slip $c $f '" | cut -f1 | tr '\n' ' ')
      [ -z "$got" ] || fail "fish: slip $c $f <TAB> offers '$got'"
    fi
  done
done
[ "$numeric" -ge 30 ] || fail "only $numeric numeric options found in --help (the placeholders changed?)"
got=$(bash -c "source '$WORK/comp.bash'; COMP_WORDS=(slip convert -o a-); COMP_CWORD=3; _slip; echo \${COMPREPLY[*]}")
[ "$got" = a-file ] || fail "bash: slip convert -o a-<TAB> gave '$got', not the file"
got=$(bash -c "source '$WORK/comp.bash'; COMP_WORDS=(slip convert --download-dir a-); COMP_CWORD=3; _slip; echo \${COMPREPLY[*]}")
[ "$got" = a-file ] || fail "bash: slip convert --download-dir a-<TAB> gave '$got'"
cd "$SRC"
pass "no file names after any of the $numeric numeric options (--jobs, --io-depth, ...) in bash, zsh, fish; DIR options complete files"
