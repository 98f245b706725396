#!/usr/bin/env python3
"""Golden-output check: runs every case of cases.txt with the tpusim binary
and compares its normalized --json output and the sha256 of every file it
wrote under $D with the recorded tests/golden/out/NAME.json.

  golden.py TPUSIM check  [-j N] [--except NAME,...] [NAME...]   exit 1 and a diff on any difference
  golden.py TPUSIM update [-j N] [NAME...]   rewrite the records (results changed on purpose)

Normalized: keys measured on the host rather than simulated (wall_s, and
any key that starts with 'wall' or 'host_' or ends in '_fps') are dropped,
as is the release label 'tpusim_version' (a version bump is not a change of
results; tests/e2e/t_install.sh checks it equals `tpusim --version`),
and the scratch directory's path is replaced by '$D'.

What a record may hold (docs/TESTING.md): bit for bit, only what tpusim
itself determines -- cycles, stalls, its own kernels' bits, its reports.
A case whose values come from the host's BLAS (the reference backend's
training: OpenBLAS picks its sgemm kernel, and with it the order of the
sums, by CPU) names a tolerance rule of TOLERANCES in its third field; the
record then carries the rule, and those keys are compared within it while
everything else stays exact. tests/e2e/t_portable.sh replays the whole set
under every BLAS kernel and every SIMD path the host can run.
"""
import concurrent.futures, hashlib, json, math, os, re, shlex, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
VOLATILE_PREFIX = ("wall", "host_")
VOLATILE_SUFFIX = ("_fps", "wall_s")

# Tolerance rules, by name. Each key path (dotted, list indices as numbers)
# is matched by the first rule whose pattern finds it: "rel" and "abs"
# compare numbers within that bound, "free" does not compare the value at
# all (a hash of values: any last-bit difference changes it). Every key no
# rule names must be equal.
TOLERANCES = {
    "blas": {
        "why": "the reference backend trains with OpenBLAS sgemm, whose kernel and so its order of f32 sums "
               "depends on the CPU: after 3 steps the losses of the Prescott, Nehalem, Sandybridge, Haswell and "
               "Zen kernels differ by up to 8.2e-9 relative on one host, and the parameters' hash differs in all "
               "but Haswell and Zen; an accuracy may flip a sample that sits near a tie. The simulated timing of "
               "the same run is exact.",
        "rules": [
            {"pattern": r"(^|\.)params_hash$", "free": True},
            {"pattern": r"loss$", "rel": 1e-5},
            {"pattern": r"accuracy$", "abs": 0.006},
        ],
    },
}


def cases():
    out = []
    for line in open(os.path.join(HERE, "cases.txt")):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = [p.strip() for p in line.split("|")]
        name, args = parts[0], parts[1]
        tol = None
        if len(parts) > 2:
            m = re.fullmatch(r"tolerance=(\w+)", parts[2])
            if not m or m.group(1) not in TOLERANCES:
                sys.exit("cases.txt: %s: third field must be tolerance=NAME, one of %s" % (name, ", ".join(TOLERANCES)))
            tol = m.group(1)
        out.append((name, args, tol))
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


def run(tpusim, name, args, tol):
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
        if tol:
            rec["tolerance"] = dict(TOLERANCES[tol], name=tol)
        return rec
    finally:
        subprocess.run(["rm", "-rf", d])


def within(want, got, tol, path=""):
    """The paths where got differs from want beyond the record's tolerance."""
    if isinstance(want, dict) and isinstance(got, dict):
        if set(want) != set(got):
            return [path + " (keys: %s)" % sorted(set(want) ^ set(got))]
        return [p for k in want for p in within(want[k], got[k], tol, (path + "." if path else "") + k)]
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return [path + " (length %d, now %d)" % (len(want), len(got))]
        return [p for i, (a, b) in enumerate(zip(want, got)) for p in within(a, b, tol, "%s.%d" % (path, i))]
    for r in tol["rules"]:
        if re.search(r["pattern"], path):
            if r.get("free"):
                return []
            num = lambda x: isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
            if num(want) and num(got):
                bound = r["rel"] * abs(want) if "rel" in r else r["abs"]
                return [] if abs(got - want) <= bound else ["%s (%r, now %r; %s %g)" % (
                    path, want, got, "rel" if "rel" in r else "abs", r.get("rel", r.get("abs")))]
            break
    return [] if want == got else ["%s (%r, now %r)" % (path, want, got)]


def compare(want_text, rec):
    """None if rec matches the record, else the lines saying how it differs."""
    text = json.dumps(rec, indent=1, sort_keys=True) + "\n"
    if text == want_text:
        return None
    try:
        want = json.loads(want_text)
    except ValueError:
        want = None
    if want and want.get("tolerance") and want["tolerance"] == rec.get("tolerance"):
        bad = within({k: v for k, v in want.items() if k != "tolerance"},
                     {k: v for k, v in rec.items() if k != "tolerance"}, want["tolerance"])
        if not bad:
            return None
        return ["beyond the record's tolerance '%s':" % want["tolerance"]["name"]] + bad[:40]
    import difflib
    return list(difflib.unified_diff(want_text.splitlines(), text.splitlines(), "recorded", "now", lineterm=""))[:40]


def main():
    argv = sys.argv[1:]
    jobs, skip = 1, set()
    if "-j" in argv:
        i = argv.index("-j")
        jobs = int(argv[i + 1])
        del argv[i:i + 2]
    if "--except" in argv:
        i = argv.index("--except")
        skip = set(argv[i + 1].split(","))
        del argv[i:i + 2]
    tpusim, mode, only = argv[0], argv[1], set(argv[2:])
    unknown = (only | skip) - {c[0] for c in cases()}
    if unknown:
        sys.exit("golden.py: no case named %s" % ", ".join(sorted(unknown)))
    outdir = os.path.join(HERE, "out")
    os.makedirs(outdir, exist_ok=True)
    todo = [c for c in cases() if (not only or c[0] in only) and c[0] not in skip]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        recs = list(pool.map(lambda c: run(tpusim, *c), todo))
    bad = 0
    for (name, args, _), rec in zip(todo, recs):
        path = os.path.join(outdir, name + ".json")
        if mode == "update":
            open(path, "w").write(json.dumps(rec, indent=1, sort_keys=True) + "\n")
            continue
        diff = compare(open(path).read() if os.path.exists(path) else "", rec)
        if diff:
            bad += 1
            print("golden: %s differs (tpusim %s)" % (name, args))
            for l in diff:
                print("    " + l)
    if mode == "check":
        print("golden: %d passed, %d failed" % (len(todo) - bad, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
