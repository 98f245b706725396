#!/usr/bin/env python3
"""Golden-output check: runs every case of cases.txt with the tpusim binary
and compares its normalized --json output and the sha256 of every file it
wrote under $D with the recorded tests/golden/out/NAME.json.

  golden.py TPUSIM check   [NAME...]   exit 1 and a diff on any difference
  golden.py TPUSIM update  [NAME...]   rewrite the records (results changed on purpose)

Normalized: keys measured on the host rather than simulated (wall_s, and
any key that starts with 'wall' or 'host_' or ends in '_fps') are dropped,
as is the release label 'tpusim_version' (a version bump is not a change of
results; tests/e2e/t_install.sh checks it equals `tpusim --version`),
and the scratch directory's path is replaced by '$D'. Everything else,
cycles, stalls, losses, accuracies, hashes of values, must match exactly.
"""
import hashlib, json, os, shlex, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
VOLATILE_PREFIX = ("wall", "host_")
VOLATILE_SUFFIX = ("_fps", "wall_s")


def cases():
    out = []
    for line in open(os.path.join(HERE, "cases.txt")):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, args = (p.strip() for p in line.split("|", 1))
        out.append((name, args))
    return out


def strip(v, d):
    if isinstance(v, dict):
        return {k: strip(x, d) for k, x in v.items()
                if not k.startswith(VOLATILE_PREFIX) and not k.endswith(VOLATILE_SUFFIX) and k != "tpusim_version"}
    if isinstance(v, list):
        return [strip(x, d) for x in v]
    if isinstance(v, str):
        return v.replace(d, "$D")
    return v


def file_hashes(d):
    h = {}
    for base, _, files in os.walk(d):
        for f in files:
            p = os.path.join(base, f)
            h[os.path.relpath(p, d)] = hashlib.sha256(open(p, "rb").read()).hexdigest()
    return dict(sorted(h.items()))


def run(tpusim, name, args):
    d = tempfile.mkdtemp(prefix="golden-")
    try:
        argv = [tpusim] + [a.replace("$D", d) for a in shlex.split(args)]
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", SDL_VIDEODRIVER="dummy")
        p = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
        rec = {"args": args, "status": p.returncode}
        try:
            rec["json"] = strip(json.loads(p.stdout), d)
        except ValueError:
            rec["stdout"] = p.stdout
            rec["stderr"] = p.stderr
        rec["files"] = file_hashes(d)
        return rec
    finally:
        subprocess.run(["rm", "-rf", d])


def main():
    tpusim, mode, only = sys.argv[1], sys.argv[2], set(sys.argv[3:])
    outdir = os.path.join(HERE, "out")
    os.makedirs(outdir, exist_ok=True)
    bad = 0
    n = 0
    for name, args in cases():
        if only and name not in only:
            continue
        n += 1
        rec = run(tpusim, name, args)
        path = os.path.join(outdir, name + ".json")
        text = json.dumps(rec, indent=1, sort_keys=True) + "\n"
        if mode == "update":
            open(path, "w").write(text)
            continue
        want = open(path).read() if os.path.exists(path) else ""
        if text != want:
            bad += 1
            print("golden: %s differs (tpusim %s)" % (name, args))
            import difflib
            for l in list(difflib.unified_diff(want.splitlines(), text.splitlines(),
                                               "recorded", "now", lineterm=""))[:40]:
                print("    " + l)
    if mode == "check":
        print("golden: %d passed, %d failed" % (n - bad, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
