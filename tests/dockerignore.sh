#!/usr/bin/env bash
# tests/dockerignore.sh - the Docker build context holds no build trees.
#
# The Dockerfile does `COPY . .`; without .dockerignore a developer's
# build*/CMakeCache.txt (whose CMAKE_HOME_DIRECTORY is their checkout, not
# /src) lands in the image and the build stage's cmake fails, and .git and
# node_modules bloat the context.  No Docker engine is needed: the rules are
# applied here the way docker does (Go filepath.Match per pattern, "**" for
# any number of directories, trailing "/" dropped, "!" re-includes, the
# last matching rule wins) to (1) fixed paths that must be excluded or kept
# and (2) a walk of the real working tree, which must contain no
# CMakeCache.txt, .git or node_modules and must contain what the build needs.
# Env: XPV_SRC (set by ctest; default: this script's checkout).
set -euo pipefail
SRC=${XPV_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
PYTHONPATH="$(dirname "$0")" exec python3 - "$SRC" <<'PY'
import os, re, sys

src = sys.argv[1]
path = os.path.join(src, ".dockerignore")
import checks
from checks import check

if not os.path.isfile(path):
    print("FAIL no .dockerignore in %s: COPY . . would copy build trees" % src)
    sys.exit(1)

def translate(pat):
    """Docker pattern -> regex over '/'-separated context paths."""
    out, i = "", 0
    while i < len(pat):
        c = pat[i]
        if pat.startswith("**/", i):
            out += "(?:.*/)?"; i += 3; continue
        if pat.startswith("**", i):
            out += ".*"; i += 2; continue
        if c == "*": out += "[^/]*"
        elif c == "?": out += "[^/]"
        elif c == "[":
            j = pat.find("]", i)
            if j < 0: out += re.escape(c)
            else:
                cls = pat[i + 1:j]
                if cls.startswith("^") or cls.startswith("!"): cls = "^" + cls[1:]
                out += "[" + cls + "]"; i = j
        elif c == "\\" and i + 1 < len(pat):
            i += 1; out += re.escape(pat[i])
        else: out += re.escape(c)
        i += 1
    return re.compile(out + r"\Z")

rules = []
for line in open(path, encoding="utf-8"):
    line = line.strip()
    if not line or line.startswith("#"): continue
    neg = line.startswith("!")
    if neg: line = line[1:].strip()
    line = os.path.normpath(line).lstrip("/")
    rules.append((neg, translate(line)))

def excluded(rel):
    """Docker: a path is excluded when the last rule matching it, or one of
    its parent directories, is an exclusion."""
    parts = rel.split("/")
    ex = False
    for neg, rx in rules:
        for k in range(1, len(parts) + 1):
            if rx.match("/".join(parts[:k])):
                ex = not neg
                break
    return ex

# 1. Fixed paths.
for p in ["build/CMakeCache.txt", "build-docker/CMakeCache.txt",
          "build-asan/xpview", ".git/HEAD", "tests/browser/node_modules/x/y.js",
          "node_modules/a"]:
    check(excluded(p), "excluded: " + p)
for p in ["CMakeLists.txt", "Dockerfile", ".ci/docker-build", "ingest/loader.c",
          "server/embed/embed.c", "web/index.html", "proto", "tests/CMakeLists.txt",
          "tools/registry.c", "tests/browser/harness.js"]:
    check(not excluded(p), "kept: " + p)

# 2. The working tree as docker would send it.
bad, n = [], 0
for root, dirs, files in os.walk(src):
    rel_root = os.path.relpath(root, src)
    rel_root = "" if rel_root == "." else rel_root + "/"
    dirs[:] = [d for d in dirs if not excluded(rel_root + d)]
    for d in dirs:
        if d in (".git", "node_modules"): bad.append(rel_root + d)
    for f in files:
        rel = rel_root + f
        if excluded(rel): continue
        n += 1
        if f == "CMakeCache.txt": bad.append(rel)
check(not bad, "context of %d files holds no CMakeCache.txt, .git or node_modules%s"
      % (n, (": " + ", ".join(bad[:5])) if bad else ""))
print()
if checks.fails:
    print("%d check(s) failed" % checks.fails); sys.exit(1)
print("all checks passed")
PY
