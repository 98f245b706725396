#!/usr/bin/env python3
"""Checks `tpusim scalesim --compat scalesim` against SCALE-Sim v2 itself.

usage: /usr/bin/python3 tests/xcheck/scalesim_xcheck.py SCALESIM_DIR [TPUSIM] [--nets[=A.csv,B.csv]]
       [--only-nets | --only-conv]

SCALE_SIM_DIR is a checkout of scalesim-project/scale-sim-v2 (not shipped
here; it needs numpy and tqdm: Debian's python3-numpy, python3-tqdm). For
seeded random GEMM topologies on several array shapes and all three
dataflows, and with --nets SCALE-Sim's own conv topologies (its
topologies/conv_nets/*.csv, or the ones named, which this repo does not
hold; SCALE-Sim takes minutes and gigabytes on the large ones), it runs both
and compares COMPUTE_REPORT.csv (cycles and stall cycles exactly, the
percentages to 1e-12 relative: SCALE-Sim averages per-fold values with
NumPy's pairwise sum), BANDWIDTH_REPORT.csv (SRAM and DRAM columns, to
1e-12 relative) and DETAILED_ACCESS_REPORT.csv (every field exactly). The
random GEMMs run with large SRAMs (1024 KiB) and with small ones (1 to 8
KiB, so that the buffers' epochs, drains and stalls matter); seeded random
small convolutions (overlapping windows, windows past the edge) run with 1
to 4 KiB SRAMs. --only-conv runs just those.
Prints one line per run and a summary; exits 1 on any difference. Not
part of `make test` (it needs SCALE-Sim); docs/SCALESIM.md records a run.
"""
import os, random, subprocess, sys, tempfile

def read_csv(path):
    rows = []
    with open(path) as f:
        next(f)
        for line in f:
            line = line.strip()
            if line:
                rows.append([x.strip() for x in line.split(",")[:-1]])
    return rows

def close(a, b):
    a, b = float(a), float(b)
    return a == b or abs(a - b) <= 1e-12 * max(abs(a), abs(b))

def write_cfg(path, rows, cols, df, sram=(1024, 1024, 1024)):
    with open(path, "w") as f:
        f.write("[general]\nrun_name = x\n\n[architecture_presets]\n"
                f"ArrayHeight: {rows}\nArrayWidth: {cols}\nIfmapSramSzkB: {sram[0]}\nFilterSramSzkB: {sram[1]}\n"
                f"OfmapSramSzkB: {sram[2]}\nIfmapOffset: 0\nFilterOffset: 10000000\nOfmapOffset: 20000000\n"
                f"Bandwidth : 10\nDataflow : {df}\nMemoryBanks: 1\n\n[run_presets]\nInterfaceBandwidth: CALC\n")

def run_pair(ss_dir, tpusim, cfg, topo, kind, work):
    ss_out, our_out = os.path.join(work, "ss"), os.path.join(work, "ours")
    env = dict(os.environ, PYTHONPATH=ss_dir)
    subprocess.run([sys.executable, os.path.join(ss_dir, "scalesim", "scale.py"), "-c", cfg, "-t", topo,
                    "-p", ss_out, "-i", kind], check=True, env=env, cwd=work, capture_output=True)
    subprocess.run([tpusim, "scalesim", "-c", cfg, "-t", topo, "-p", our_out, "-i", kind,
                    "--compat", "scalesim"], check=True, capture_output=True)
    bad = []
    for rep, ncols in (("COMPUTE_REPORT.csv", 6), ("BANDWIDTH_REPORT.csv", 7), ("DETAILED_ACCESS_REPORT.csv", 19)):
        a = read_csv(os.path.join(ss_out, "x", rep))
        b = read_csv(os.path.join(our_out, "x", rep))
        if len(a) != len(b):
            bad.append(f"{rep}: {len(a)} rows vs {len(b)}")
            continue
        for ra, rb in zip(a, b):
            exact = {"C": ra[:3] == rb[:3], "B": ra[0] == rb[0], "D": ra == rb}[rep[0]]
            if not exact or not all(close(x, y) for x, y in zip(ra[1:ncols], rb[1:ncols])):
                bad.append(f"{rep} layer {ra[0]}: SCALE-Sim {ra[:ncols]} tpusim {rb[:ncols]}")
    return len(read_csv(os.path.join(our_out, "x", "COMPUTE_REPORT.csv"))), bad

def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if not args:
        sys.exit(__doc__)
    ss_dir = os.path.abspath(args[0])
    tpusim = os.path.abspath(args[1] if len(args) > 1 else "./tpusim")
    rng = random.Random(16)
    runs, layers, fails = 0, 0, 0
    with tempfile.TemporaryDirectory() as work:
        cfg, topo = os.path.join(work, "x.cfg"), os.path.join(work, "t.csv")
        gemm_arrays = ((4, 4), (8, 8), (16, 8), (5, 13), (32, 32), (128, 128))
        for rows, cols in () if "--only-nets" in sys.argv or "--only-conv" in sys.argv else gemm_arrays:
            with open(topo, "w") as f:
                f.write("Layer,M,N,K,\n")
                for i in range(8):
                    f.write(f"G{i},{rng.randint(1, 300)},{rng.randint(1, 300)},{rng.randint(1, 300)},\n")
            for df in ("ws", "os", "is"):
              for sram in ((1024, 1024, 1024), (rng.choice((1, 2, 4, 8)), rng.choice((1, 2, 4, 8)), rng.choice((1, 2, 4, 8)))):
                write_cfg(cfg, rows, cols, df, sram)
                n, bad = run_pair(ss_dir, tpusim, cfg, topo, "gemm", work)
                runs, layers, fails = runs + 1, layers + n, fails + len(bad)
                print(f"gemm {rows}x{cols} {df} SRAM {sram} KiB: {n} layers, {'ok' if not bad else 'DIFFERENT'}")
                for b in bad:
                    print("   ", b)
        # seeded random small convolutions (overlapping windows, windows past the edge,
        # strides up to 3) with small SRAMs: the IFMAP walk and the epochs on real windows
        crng = random.Random(1616)
        for rows, cols in () if "--only-nets" in sys.argv else ((8, 8), (5, 13), (16, 4)):
            with open(topo, "w") as f:
                f.write("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n")
                for i in range(6):
                    h, w = crng.randint(3, 40), crng.randint(3, 40)
                    f.write(f"C{i}, {h}, {w}, {crng.randint(1, min(h, 5))}, {crng.randint(1, min(w, 5))}, "
                            f"{crng.randint(1, 8)}, {crng.randint(1, 40)}, {crng.randint(1, 3)},\n")
            for df in ("ws", "os", "is"):
                sram = tuple(crng.choice((1, 2, 4)) for _ in range(3))
                write_cfg(cfg, rows, cols, df, sram)
                n, bad = run_pair(ss_dir, tpusim, cfg, topo, "conv", work)
                runs, layers, fails = runs + 1, layers + n, fails + len(bad)
                print(f"conv {rows}x{cols} {df} SRAM {sram} KiB: {n} layers, {'ok' if not bad else 'DIFFERENT'}")
                for b in bad:
                    print("   ", b)
        sel = [a for a in sys.argv[1:] if a.startswith("--nets")]
        if sel:
            nets = os.path.join(ss_dir, "topologies", "conv_nets")
            names = sel[0][7:].split(",") if sel[0].startswith("--nets=") else sorted(
                n for n in os.listdir(nets) if n.endswith(".csv"))
            for name in names:
                for df in ("ws", "os", "is"):
                    write_cfg(cfg, 32, 32, df)
                    try:
                        n, bad = run_pair(ss_dir, tpusim, cfg, os.path.join(nets, name), "conv", work)
                    except subprocess.CalledProcessError as e:
                        print(f"{name} {df}: not run ({e.cmd[1]} failed: {e.stderr.decode()[-200:].strip()})")
                        continue
                    runs, layers, fails = runs + 1, layers + n, fails + len(bad)
                    print(f"{name} 32x32 {df}: {n} layers, {'ok' if not bad else 'DIFFERENT'}")
                    for b in bad:
                        print("   ", b)
    print(f"xcheck: {runs} runs, {layers} layers, {fails} differences")
    sys.exit(1 if fails or not runs else 0)

main()
