#!/usr/bin/env python3
"""The include-direction rule (docs/ARCHITECTURE.md), checked on every
source file's #include "..." lines:

  cli -> {frontend, viz, scalesim, sweep} -> sim -> {mxu, vpu, datafeed} -> base

A module may include its own headers and the public header of a module on
a lower floor; never a header of a module on its own floor or above it,
never another module's private header (anything but its public header),
and nobody includes a .c file. Tests may include any module's headers
(white-box suites read mxu_int.h) but no .c file.

  layers.py [ROOT]    prints each violation as FILE:LINE: what; exit 1 if any
"""
import os, re, sys

FLOOR = {"base": 0, "mxu": 1, "vpu": 1, "datafeed": 1, "sim": 2,
         "frontend": 3, "viz": 3, "scalesim": 3, "sweep": 3,
         "cli": 4}
PUBLIC = {"base": {"base/base.h"}, "mxu": {"mxu/mxu.h"},
          "vpu": {"vpu/vpu.h", "vpu/vpu_ops.def"}, "datafeed": {"datafeed/df.h"},
          "sim": {"sim/sim.h", "sim/stall.def", "sim/ops.def"}, "frontend": {"frontend/fe.h"},
          "viz": {"viz/viz.h"}, "scalesim": {"scalesim/scalesim.h"},
          "sweep": {"sweep/sweep.h"}, "cli": set()}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def module_of(path):
    top = path.split("/", 1)[0]
    return top if top in FLOOR or top == "tests" else None


def check(root):
    bad = []
    for dirpath, dirs, files in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        if rel_dir.split(os.sep)[0] in ("build", ".git"):
            dirs[:] = []
            continue
        for f in sorted(files):
            if not f.endswith((".c", ".h", ".def")):
                continue
            rel = os.path.normpath(os.path.join(rel_dir, f)).replace(os.sep, "/")
            mod = module_of(rel)
            if mod is None:
                continue
            for n, line in enumerate(open(os.path.join(dirpath, f), errors="replace"), 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                inc = m.group(1)
                where = "%s:%d" % (rel, n)
                if inc.endswith(".c"):
                    bad.append("%s: includes a .c file (%s); link the library instead" % (where, inc))
                    continue
                target = module_of(inc)
                if target is None or target == "tests" or mod == "tests" or target == mod:
                    continue
                if FLOOR[target] >= FLOOR[mod]:
                    bad.append("%s: %s (floor %d) includes %s of %s (floor %d): arrows point down only"
                               % (where, mod, FLOOR[mod], inc, target, FLOOR[target]))
                elif inc not in PUBLIC[target]:
                    bad.append("%s: %s includes %s, a private header of %s (public: %s)"
                               % (where, mod, inc, target, ", ".join(sorted(PUBLIC[target]))))
    return bad


if __name__ == "__main__":
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    problems = check(root)
    for p in problems:
        print(p)
    sys.exit(1 if problems else 0)
