#!/usr/bin/env bash
# Every relative Markdown link in the repository's documents resolves: the file exists, and a
# #fragment names a heading (GitHub's anchor for it) or an <a id="..."> in the target. Links in
# code (fenced blocks, `spans`) are not links. The README stays a front page: under 200 lines.
source "$(dirname "$0")/common.bash"
cd "$SRC"
mapfile -t docs < <(git ls-files --cached --others --exclude-standard '*.md' 2>/dev/null || find . -name '*.md' -not -path './build*' -not -path './.git/*')
[ "${#docs[@]}" -gt 5 ] || fail "found only ${#docs[@]} Markdown files"
$PY - "${docs[@]}" <<'PY' || fail "broken links in the docs"
import os, re, sys

def strip_code(text):
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)

def anchors(path, cache={}):
    if path not in cache:
        text = open(path, encoding="utf-8").read()
        found, seen = set(re.findall(r'<a (?:id|name)="([^"]+)"', text)), {}
        for line in re.sub(r"^```.*?^```", "", text, flags=re.S | re.M).splitlines():
            m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            found.add(slug if n == 0 else f"{slug}-{n}")
        cache[path] = found
    return cache[path]

bad, checked = [], 0
for doc in sys.argv[1:]:
    text = strip_code(open(doc, encoding="utf-8").read())
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        checked += 1
        path, _, frag = target.partition("#")
        resolved = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
        if not os.path.exists(resolved):
            bad.append(f"{doc}: ({target}): no file {resolved}")
        elif frag and resolved.endswith(".md") and frag not in anchors(resolved):
            bad.append(f"{doc}: ({target}): {resolved} has no anchor #{frag}")
for b in bad:
    print(b)
print(f"{checked} relative links checked in {len(sys.argv) - 1} documents")
sys.exit(1 if bad else 0)
PY
pass "every relative link between the docs resolves (files and anchors)"
lines=$(wc -l < README.md)
[ "$lines" -lt 200 ] || fail "README.md has $lines lines (the front page stays under 200; details go to docs/)"
pass "README.md has $lines lines"
