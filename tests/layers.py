#!/usr/bin/env python3
"""The module rule (docs/ARCHITECTURE.md, "The modules"), checked on every
source file's #include "..." lines against the one table of the modules
that the doc shows: each row names a module, its public headers and the
modules it includes.

  - a module includes its own headers, and of another module only that
    module's public headers, and only of a module its row lists;
  - every edge the table lists is used by some include (the table is the
    real picture, not a wish), and the table has no cycle;
  - every folder of C sources is a module of the table;
  - nobody includes a .c file; tests may include any module's headers
    (white-box suites read mxu_int.h), but no .c file.

  layers.py [ROOT]          prints each violation as FILE:LINE: what; exit 1 if any
  layers.py --edges [ROOT]  prints the real module-to-module edges, one "a -> b" a line
"""
import os, re, sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
TABLE_HEAD = "| module | public headers | includes | owns |"


def read_table(root):
    """{module: (public headers, allowed modules)} from the doc's table."""
    doc = os.path.join(root, "docs", "ARCHITECTURE.md")
    rows, inside = {}, False
    for line in open(doc):
        line = line.rstrip("\n")
        if line.startswith(TABLE_HEAD):
            inside = True
            continue
        if inside and line.startswith("| ---"):
            continue
        if inside and not line.startswith("|"):
            break
        if inside:
            cells = [c.strip() for c in line.strip("|").split("|")]
            mod = cells[0].strip("`/ ")
            pub = set(re.findall(r"`([\w/]+\.(?:h|def))`", cells[1]))
            inc = set(m.strip("/") for m in re.findall(r"`([\w]+)/`", cells[2]))
            rows[mod] = (pub, inc)
    if not rows:
        sys.exit("layers.py: %s has no table headed %s" % (doc, TABLE_HEAD))
    return rows


def cycle(rows):
    """A cycle of the table's edges, or None."""
    state = {}
    def visit(m, path):
        state[m] = 1
        for n in sorted(rows[m][1]):
            if n not in rows:
                continue
            if state.get(n) == 1:
                return path + [m, n]
            if not state.get(n):
                c = visit(n, path + [m])
                if c:
                    return c
        state[m] = 2
        return None
    for m in sorted(rows):
        if not state.get(m):
            c = visit(m, [])
            if c:
                return c
    return None


def sources(root):
    for dirpath, dirs, files in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        first = rel_dir.split(os.sep)[0]
        if first in ("build", ".git") or (first.startswith(".") and first != "."):
            dirs[:] = []
            continue
        for f in sorted(files):
            if f.endswith((".c", ".h", ".def")):
                yield os.path.join(dirpath, f), os.path.normpath(os.path.join(rel_dir, f)).replace(os.sep, "/")


def check(root):
    rows = read_table(root)
    bad, used = [], set()
    c = cycle(rows)
    if c:
        bad.append("docs/ARCHITECTURE.md: the module table has a cycle: %s" % " -> ".join(c))
    for mod, (_, inc) in sorted(rows.items()):
        for n in sorted(inc - set(rows)):
            bad.append("docs/ARCHITECTURE.md: %s's row includes %s, which has no row" % (mod, n))
    seen_dirs = set()
    for path, rel in sources(root):
        top = rel.split("/", 1)[0]
        if "/" not in rel:
            continue
        if top not in rows and top != "tests":
            seen_dirs.add(top)
            continue
        for n, line in enumerate(open(path, errors="replace"), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            inc = m.group(1)
            where = "%s:%d" % (rel, n)
            if inc.endswith(".c"):
                bad.append("%s: includes a .c file (%s); link the library instead" % (where, inc))
                continue
            target = inc.split("/", 1)[0] if "/" in inc else None
            if target is None or target not in rows or top == "tests" or target == top:
                continue
            pub, allowed = rows[top]
            if target not in allowed:
                bad.append("%s: %s includes %s of %s, not a module its row lists (%s): a new arrow is a decision "
                           "to write into docs/ARCHITECTURE.md's table" % (where, top, inc, target,
                                                                          ", ".join(sorted(allowed)) or "none"))
            elif inc not in rows[target][0]:
                bad.append("%s: %s includes %s, a private header of %s (public: %s)"
                           % (where, top, inc, target, ", ".join(sorted(rows[target][0]))))
            else:
                used.add((top, target))
    for d in sorted(seen_dirs):
        bad.append("%s/: C sources in a folder the module table has no row for (docs/ARCHITECTURE.md)" % d)
    for mod, (_, inc) in sorted(rows.items()):
        for n in sorted(inc):
            if (mod, n) not in used and n in rows:
                bad.append("docs/ARCHITECTURE.md: %s's row lists %s, but no file of %s includes it: "
                           "the table must be the real picture" % (mod, n, mod))
    return bad, used


if __name__ == "__main__":
    args = sys.argv[1:]
    edges = "--edges" in args
    args = [a for a in args if a != "--edges"]
    root = args[0] if args else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    problems, used = check(root)
    if edges:
        for a, b in sorted(used):
            print("%s -> %s" % (a, b))
        sys.exit(0)
    for p in problems:
        print(p)
    sys.exit(1 if problems else 0)
