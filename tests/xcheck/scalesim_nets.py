#!/usr/bin/env python3
"""SCALE-Sim v2 and `tpusim scalesim --compat scalesim` side by side on SCALE-Sim's own networks.

usage: /usr/bin/python3 tests/xcheck/scalesim_nets.py SCALESIM_DIR [TPUSIM] [NET ...]

For each NET (default: alexnet Resnet18 mobilenet yolo_tiny, from
SCALESIM_DIR/topologies/conv_nets/) and each dataflow (ws, os, is) it runs
SCALE-Sim v2 and tpusim on docs/scalesim/tpu_128.cfg (its Dataflow line
changed for os and is), checks that BANDWIDTH_REPORT.csv and
DETAILED_ACCESS_REPORT.csv are byte-identical and that COMPUTE_REPORT.csv
has equal cycles and percentages to 1e-12, and prints one Markdown row:
layers, total cycles, SCALE-Sim's CPU seconds and peak RSS, tpusim's (best
of 10) and the ratios. Needs SCALE-Sim's checkout (python3-numpy,
python3-tqdm); takes about 25 minutes on one core. Not part of make test;
docs/SCALESIM.md records a run. Exits 1 on any difference.
"""
import filecmp, os, subprocess, sys, tempfile

def rows(path):
    with open(path) as f:
        return [[x.strip() for x in l.split(",")[:-1]] for l in list(f)[1:] if l.strip()]

def run(args, env=None, cwd=None):
    """CPU seconds and peak RSS (KiB) of one child process."""
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    if status:
        raise RuntimeError(f"{args[0]} failed: {err.decode()[-300:]}")
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss

def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    ss_dir, tpusim = args[0], args[1] if len(args) > 1 else "./tpusim"
    nets = args[2:] or ["alexnet", "Resnet18", "mobilenet", "yolo_tiny"]
    base = open("docs/scalesim/tpu_128.cfg").read()
    env = dict(os.environ, PYTHONPATH=ss_dir)
    bad = 0
    print("| network | dataflow | layers | cycles | reports | SCALE-Sim CPU s | SCALE-Sim RSS MiB "
          "| tpusim CPU ms | tpusim RSS MiB | CPU ratio | memory ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as work:
        for df in ("ws", "os", "is"):
            cfg = os.path.join(work, f"tpu_128_{df}.cfg")
            with open(cfg, "w") as f:
                f.write(base.replace("Dataflow : ws", f"Dataflow : {df}"))
            for net in nets:
                topo = os.path.join(ss_dir, "topologies", "conv_nets", net + ".csv")
                ss, ours = os.path.join(work, "ss"), os.path.join(work, "ours")
                s_cpu, s_rss = run([sys.executable, os.path.join(ss_dir, "scalesim", "scale.py"), "-c", cfg,
                                    "-t", topo, "-p", ss, "-i", "conv"], env=env, cwd=work)
                t_cpu, t_rss = min(run([tpusim, "scalesim", "-c", cfg, "-t", topo, "-p", ours,
                                        "--compat", "scalesim"]) for _ in range(10))
                d_ss, d_ours = os.path.join(ss, "tpu_128x128_ws"), os.path.join(ours, "tpu_128x128_ws")
                same = all(filecmp.cmp(os.path.join(d_ss, r), os.path.join(d_ours, r), shallow=False)
                           for r in ("BANDWIDTH_REPORT.csv", "DETAILED_ACCESS_REPORT.csv"))
                a, b = rows(os.path.join(d_ss, "COMPUTE_REPORT.csv")), rows(os.path.join(d_ours, "COMPUTE_REPORT.csv"))
                same = same and len(a) == len(b) and all(
                    x[1:3] == y[1:3] and all(abs(float(u) - float(v)) <= 1e-12 * max(abs(float(u)), 1.0)
                                             for u, v in zip(x[3:6], y[3:6])) for x, y in zip(a, b))
                bad += not same
                print(f"| {net} | {df} | {len(a)} | {sum(int(r[1]) for r in a)} | "
                      f"{'identical' if same else 'DIFFERENT'} | {s_cpu:.1f} | {s_rss / 1024:.0f} | "
                      f"{t_cpu * 1e3:.1f} | {t_rss / 1024:.1f} | {s_cpu / t_cpu:.0f}x | {s_rss / t_rss:.0f}x |",
                      flush=True)
                subprocess.run(["rm", "-rf", ss, ours])
    sys.exit(1 if bad else 0)

main()
