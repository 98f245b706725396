#!/usr/bin/env python3
"""Checks a Chrome/Perfetto trace-event JSON file as Perfetto reads it:

  - complete slices ("ph": "X") on one track (pid, tid) either follow one
    another or nest (a slice that starts inside another ends inside it);
    Perfetto drops a slice that overlaps another without nesting;
  - every track with slices is named (thread_name metadata);
  - every flow start ("s") has its finish ("f") with the same id, and each
    end lies inside a slice of its track (Perfetto binds a flow to the
    enclosing slice);
  - counters ("C") have finite numeric values; no time is negative.

Times are compared exactly (parsed as decimals). Usage:
trace_check.py FILE... ; prints one line per problem and exits 1."""
import json, sys
from collections import defaultdict
from decimal import Decimal


def check(path):
    bad = []
    with open(path) as f:
        doc = json.load(f, parse_float=Decimal, parse_int=Decimal)
    ev = doc["traceEvents"] if isinstance(doc, dict) else doc
    tracks, named, flows = defaultdict(list), set(), defaultdict(list)
    for e in ev:
        ph = e.get("ph")
        if ph == "M" and e.get("name") == "thread_name":
            named.add((e["pid"], e["tid"]))
        elif ph == "X":
            if e["ts"] < 0 or e["dur"] < 0:
                bad.append("negative time: %r" % e)
            tracks[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"], e.get("name")))
        elif ph in ("s", "f"):
            flows[e["id"]].append(e)
        elif ph == "C":
            for k, v in e.get("args", {}).items():
                if not isinstance(v, Decimal) or not v.is_finite():
                    bad.append("counter %s %s: %r is not a finite number" % (e.get("name"), k, v))
    for key, sl in tracks.items():
        if key not in named:
            bad.append("track pid %s tid %s has slices but no thread_name" % key)
        sl.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for a, b, name in sl:
            while stack and stack[-1][1] <= a:
                stack.pop()
            if stack and b > stack[-1][1]:
                p = stack[-1]
                bad.append("pid %s tid %s: '%s' [%s, %s) overlaps '%s' [%s, %s) without nesting"
                           % (key[0], key[1], name, a, b, p[2], p[0], p[1]))
                continue
            stack.append((a, b, name))

    def inside(pid, tid, ts):
        return any(a <= ts <= b for a, b, _ in tracks.get((pid, tid), ()))
    for fid, es in flows.items():
        kinds = sorted(e["ph"] for e in es)
        if kinds != ["f", "s"]:
            bad.append("flow id %s: events %s, expected one 's' and one 'f'" % (fid, kinds))
            continue
        for e in es:
            if not inside(e["pid"], e["tid"], e["ts"]):
                bad.append("flow id %s: '%s' at %s is in no slice of pid %s tid %s"
                           % (fid, e["ph"], e["ts"], e["pid"], e["tid"]))
    return ["%s: %s" % (path, m) for m in bad]


def main():
    problems = []
    for p in sys.argv[1:]:
        problems += check(p)
    for m in problems[:50]:
        print(m)
    if len(problems) > 50:
        print("... %d problems in all" % len(problems))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
