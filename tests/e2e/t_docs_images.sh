# Every picture in docs/ is what `make docs-images` draws now (#32): each
# line of the Makefile's docs-images recipe that draws one is run as written
# (the program and the bench from this build, the output in $T) and the
# bytes are compared with the committed file, so a change to the timing
# model or the renderer that alters a picture fails here until the picture
# is redrawn. The pictures are deterministic: simulated cycles, our own PNG
# encoder (viz/viz_png.c), gnuplot's pngcairo writes no date.
# Left out, for its cost: the seed sweep's plot (docs/sweep-seed-vgg19.png,
# 64 timing-level training runs of VGG19, Xception and ResNet152V2, minutes
# of CPU); its points are checked by docs/SEED_EXPERIMENT.md's own commands.
# Also: every `./tpusim ... --png docs/...` command quoted in the docs is
# exactly a line of the recipe (so the exercises' commands draw the pictures
# shown), and every picture in docs/ comes from one.
bench="$(dirname "$TPUSIM")/tests/bench_hbm"
[ -x "$bench" ] || { echo "t_docs_images: SKIP: $bench not built (make test builds it): the HBM plot is not compared"; bench=""; }
SDL_VIDEODRIVER=dummy BENCH="$bench" /usr/bin/python3 - "$TPU_ROOT" "$TPUSIM" "$T" <<'PY' || die "docs pictures differ from what make docs-images draws now"
import glob, os, re, subprocess, sys
root, tpusim, tmp = sys.argv[1:]
bench = os.environ["BENCH"]
mk = open(os.path.join(root, "Makefile")).read()
m = re.search(r"^docs-images:.*\n((?:\t.*\n|.*\\\n)+)", mk, re.M)
assert m, "no docs-images target in the Makefile"
lines = m.group(1).replace("\\\n", " ").splitlines()
SKIP = ("sweep-seed", "seed-sweep")      # the sweep and its copy: see above
made, fails = set(), []
for line in (l.strip() for l in lines):
    if not line or line.startswith("@mkdir") or any(s in line for s in SKIP):
        continue
    outs = re.findall(r"(docs/[\w./-]+\.png)", line)
    pic = [o for o in outs if "--png " + o in line or line.endswith(o) or "out='" + o in line]
    assert pic, "docs-images line draws no docs/ picture: " + line
    if "bench_hbm" in line and not bench:
        made.update(pic)
        continue
    cmd = line.replace("$(BIN)", tpusim).replace("$(B)/tests/bench_hbm", bench or "false")
    cmd = cmd.replace("build/hbm.csv", tmp + "/hbm.csv")
    for p in pic:
        cmd = cmd.replace(p, tmp + "/" + os.path.basename(p))
    r = subprocess.run(cmd, shell=True, cwd=root, capture_output=True, text=True)
    if r.returncode:
        fails.append("%s: exit %d: %s" % (line, r.returncode, r.stderr.strip()[-300:]))
        continue
    for p in pic:
        made.add(p)
        extra = [p[:-4] + ".dat"] if "ex6-dataflow" in p else []     # the chart's numbers too
        for f in [p] + extra:
            new = open(tmp + "/" + os.path.basename(f), "rb").read()
            if new != open(os.path.join(root, f), "rb").read():
                fails.append("%s differs from what `%s` draws now: run make docs-images" % (f, line))
# every picture in docs/ is drawn by the recipe (or left out above, with the reason)
for p in sorted(glob.glob(os.path.join(root, "docs", "**", "*.png"), recursive=True)):
    rel = os.path.relpath(p, root)
    if rel not in made and not any(s in rel for s in SKIP):
        fails.append("%s is not drawn by make docs-images" % rel)
# the docs' commands that write a docs/ picture are the recipe's, word for word
recipe = {l.strip().replace("$(BIN)", "./tpusim") for l in lines}
for doc in [os.path.join(root, "README.md")] + glob.glob(os.path.join(root, "docs", "*.md")):
    for cmd in re.findall(r"(\./tpusim viz [^`\n]*--png docs/[\w./-]+\.png)", open(doc).read()):
        if cmd.strip() not in recipe:
            fails.append("%s: `%s` is not a line of make docs-images" % (os.path.relpath(doc, root), cmd))
if fails:
    print("\n".join(fails), file=sys.stderr)
    sys.exit(1)
PY
