#!/usr/bin/env python3
"""Function length: lists C functions longer than a limit (default 120
lines, the architecture issue's bound), from the line of the signature to
the closing brace at column 0, over every .c file in the tree (build/
excluded). House style (STYLE.md) puts a function's braces that way.

  funclen.py [--limit N] [--top K] [ROOT]   exit 1 if any exceeds N
"""
import argparse, os, re, sys

SIG = re.compile(r'^[A-Za-z_][^;#]*\(')


def functions(path):
    lines = open(path, errors="replace").read().split("\n")
    i = 0
    while i < len(lines):
        if SIG.match(lines[i]) and not lines[i].rstrip().endswith(";"):
            j = i
            while j < len(lines) and "{" not in lines[j] and not lines[j].rstrip().endswith(";"):
                j += 1
            if j < len(lines) and lines[j].rstrip().endswith("{"):
                k = j + 1
                while k < len(lines) and not lines[k].startswith("}"):
                    k += 1
                name = re.findall(r'([A-Za-z_0-9]+)\s*\(', lines[i])
                test = re.match(r'START_TEST\((\w+)\)', lines[i])  # a libcheck test: its name
                yield (k - i + 1, i + 1, test.group(1) if test else name[0] if name else lines[i].strip())
                i = k
        i += 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=120)
    ap.add_argument("--top", type=int, default=0, help="also list the K longest")
    ap.add_argument("root", nargs="?", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    a = ap.parse_args()
    found = []
    for d, dirs, files in os.walk(a.root):
        rel = os.path.relpath(d, a.root)
        if rel.split(os.sep)[0] in ("build", ".git"):
            dirs[:] = []
            continue
        for f in files:
            if f.endswith(".c"):
                p = os.path.join(d, f)
                for n, line, name in functions(p):
                    found.append((n, os.path.relpath(p, a.root), line, name))
    found.sort(reverse=True)
    for n, p, line, name in found[:a.top]:
        print("%4d  %s:%d  %s" % (n, p, line, name))
    over = [f for f in found if f[0] > a.limit]
    for n, p, line, name in over:
        print("%s:%d: %s is %d lines (limit %d)" % (p, line, name, n, a.limit))
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
