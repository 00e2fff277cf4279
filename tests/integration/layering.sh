#!/usr/bin/env bash
# The library's layers (docs/ARCHITECTURE.md): no file in lib/src includes a header of a higher
# layer. util is the bottom; net and image sit on it; format on those; sources, decode, index and
# shuffle (and dataset: many caches, mixed orders) on format; convert, subset, verify and loader
# on those; stage (which verifies what it copies) on everything. A public header (slip/*.hpp)
# belongs to the layer that implements it. A new directory or public header must be placed in a
# layer here, so the check cannot be dodged by adding one. Above the library, apps/ (the slip
# command and the bench harness, apps/bench_harness/) include its public headers only.
source "$(dirname "$0")/common.bash"
cd "$SRC"
$PY - <<'PY' || fail "upward includes in lib/src, or lib/src headers in apps/ (see the lines above)"
import os, re, sys

DIRS = {"util": 0, "net": 1, "image": 1, "format": 2, "sources": 3, "decode": 3, "index": 3,
        "shuffle": 3, "dataset": 3, "convert": 4, "subset": 4, "verify": 4, "loader": 4,
        "stage": 5}
PUBLIC = {  # slip/<name>.hpp -> layer of its implementation
    "export": 0, "error": 0, "error_class": 0, "hash": 0, "log": 0, "runtime": 0, "simd": 0,
    "schema": 0, "version": 0, "environment": 0,
    "transport": 1,
    "sigv4": 1, "image": 1, "yuv420_image": 1,
    "cache": 2, "npy": 2, "yuv420": 2, "source": 2, "inspect": 2,
    "decode": 3, "pipelines": 3, "remote": 3, "shuffle": 3, "index": 3, "dataset": 3, "mix": 3,
    "convert": 4, "merge": 4, "subset": 4, "verify": 4, "loader": 4,
    "stage": 5, "slip": 6,
}
bad, checked = [], 0
for root, _, files in os.walk("lib/src"):
    for name in sorted(files):
        if not name.endswith((".cpp", ".hpp")):
            continue
        path = os.path.join(root, name)
        parts = os.path.relpath(path, "lib/src").split(os.sep)
        if len(parts) < 2:
            continue  # lib/src/version_config.hpp.in and the like
        if parts[0] not in DIRS:
            bad.append(f"{path}: directory {parts[0]}/ has no layer (add it to tests/integration/layering.sh)")
            continue
        mine = DIRS[parts[0]]
        for n, line in enumerate(open(path, encoding="utf-8"), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m:
                continue
            inc = m.group(1)
            top, _, rest = inc.partition("/")
            if top == "slip" and rest.endswith(".hpp"):
                stem = rest[:-4]
                if stem not in PUBLIC:
                    bad.append(f"{path}:{n}: public header {inc} has no layer (add it to tests/integration/layering.sh)")
                    continue
                theirs = PUBLIC[stem]
            elif top in DIRS and rest:
                theirs = DIRS[top]
            else:
                continue  # generated headers (slip_version_config.hpp), same-directory names
            checked += 1
            if theirs > mine:
                bad.append(f"{path}:{n}: {parts[0]}/ (layer {mine}) includes {inc} (layer {theirs})")
# apps/: the public API (slip/*.hpp) and their own headers, never lib/src's.
for root, _, files in os.walk("apps"):
    for name in sorted(files):
        if not name.endswith((".cpp", ".hpp")):
            continue
        path = os.path.join(root, name)
        for n, line in enumerate(open(path, encoding="utf-8"), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if m and m.group(1).partition("/")[0] in DIRS:
                bad.append(f"{path}:{n}: includes the library's internal {m.group(1)} (apps/ use the public API)")
            elif m:
                checked += 1
for line in bad:
    print(line)
print(f"checked {checked} includes")
sys.exit(1 if bad or checked < 100 else 0)
PY
echo "ok: no upward includes in lib/src"
