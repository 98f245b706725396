# tpusim viz: help, bad input, no display, and headless frames checked pixel
# by pixel against the tile times and stall totals the same run reports.
here=$(dirname "$(readlink -f "$1")")
expect_status 0 "$TPUSIM" viz --help
expect_out_contains "--headless"
expect_out_contains "shift+right"
expect_out_contains "next / previous event"
expect_out_contains "--scale"
# bad input: exit 2 with a message
expect_status 2 "$TPUSIM" viz --m 0 --headless --out o;      expect_err_contains "--m"
expect_status 2 "$TPUSIM" viz --frames 3;                    expect_err_contains "go with --headless"
expect_status 2 "$TPUSIM" viz --headless;                    expect_err_contains "needs --out"
expect_status 2 "$TPUSIM" viz --chip teach --core 5 --headless --out o; expect_err_contains "has 4 cores"
expect_status 2 "$TPUSIM" viz --chip teach --cycle 99999999 --headless --out o; expect_err_contains "the run lasts"
expect_status 2 "$TPUSIM" viz --size 10x10 --headless --out o; expect_err_contains "--size"
expect_status 2 "$TPUSIM" viz --bogus;                       expect_err_contains "unknown option"
expect_status 2 "$TPUSIM" viz --precision f64 --headless --out o; expect_err_contains "bf16x3"
expect_status 2 "$TPUSIM" viz --chip nosuch --headless --out o
touch afile
expect_status 1 "$TPUSIM" viz --chip teach --headless --out afile; expect_err_contains "not a directory"
# no display: a clear message suggesting --headless, exit 2
expect_status 2 env -u DISPLAY -u WAYLAND_DISPLAY SDL_VIDEODRIVER=dummy "$TPUSIM" viz --chip teach
expect_err_contains "no display"; expect_err_contains "--headless"
expect_status 2 env -u DISPLAY -u WAYLAND_DISPLAY -u SDL_VIDEODRIVER "$TPUSIM" viz --chip teach
expect_err_contains "--headless"
# ours is the only message: the display libraries' own complaints stay off (#32)
expect_status 2 env -u DISPLAY -u WAYLAND_DISPLAY -u SDL_VIDEODRIVER -u XDG_RUNTIME_DIR "$TPUSIM" viz --chip teach
[ "$(wc -l < "$T/err.txt")" = 1 ] && head -1 "$T/err.txt" | grep -q "^tpusim viz: no display" || die "more than our message: $ERR"
# a script is checked whole before any of it runs: 'space' is not acted on before 'bogus' is refused
expect_status 2 env SDL_VIDEODRIVER=dummy "$TPUSIM" viz --chip teach --script space,bogus
expect_err_contains "--script: unknown action 'bogus'"
[ -z "$OUT" ] || die "viz --script space,bogus ran 'space' first: $OUT"

# the run's tile times and layout, then frames across the first tile
expect_status 0 "$TPUSIM" viz --chip teach --m 40 --n 12 --k 20 --headless --json --out run0
echo "$OUT" > run.json
s0=$(/usr/bin/python3 -c 'import json; print(json.load(open("run.json"))["tiles"][0]["stream_start"])')
expect_status 0 "$TPUSIM" viz --chip teach --m 40 --n 12 --k 20 --headless --json --cycle $((s0 + 2)) --frames 4 --every 3 --out fr
echo "$OUT" > fr.json
for f in 0 1 2 3; do [ -s fr/frame_00000$f.png ] || die "frame $f missing"; done
[ ! -e fr/frame_000004.png ] || die "too many frames"
/usr/bin/python3 - "$here" fr.json <<'PY' || die "frames do not match the PE model's wavefront or the stall totals"
import json, sys
sys.path.insert(0, sys.argv[1]); import png_read
d = json.load(open(sys.argv[2])); L = d["layout"]; tiles = d["tiles"]
s0 = tiles[0]["stream_start"]
IDLE, LOADING, HOLDING = (0x2a, 0x2a, 0x2a), (0xe0, 0xb0, 0x00), (0x5a, 0x4a, 0x1e)
for f in range(4):
    t = s0 + 2 + 3 * f
    img = png_read.read("fr/frame_%06d.png" % f, L["array_y"] + 8 * L["cell"])
    assert img[0] == L["width"] and img[1] == L["height"]
    for r in range(8):
        for c in range(8):
            dd = t - r - c
            comp = any(x["stream_start"] <= dd < x["stream_start"] + x["m"] and r < x["k"] and c < x["n"] for x in tiles)
            px = png_read.pixel(img, L["array_x"] + c * L["cell"] + L["cell"] - 3, L["array_y"] + r * L["cell"] + L["cell"] - 3)
            got = px not in (IDLE, LOADING, HOLDING)
            assert got == comp, "cycle %d cell (%d,%d): pixel %s, computing expected: %s" % (t, r, c, px, comp)
# the stall strip of each core: band lengths proportional to the reported totals
img = png_read.read("fr/frame_000000.png", max(L["core_y"]) + L["strip_h"])
T = d["total_cycles"]; w = L["timeline_w"]
col = {k: tuple(int(v[i:i + 2], 16) for i in (1, 3, 5)) for k, v in d["colors"].items()}
for p, tot in enumerate(d["stall_cycles_per_core"]):
    assert sum(tot.values()) == T
    y = L["core_y"][p] + L["strip_h"] // 2
    row = [png_read.pixel(img, L["timeline_x"] + x, y) for x in range(w)]
    edges = sum(1 for x in range(1, w) if row[x] != row[x - 1])
    for k, cyc in tot.items():
        n = sum(1 for px in row if px == col[k])
        assert abs(n - cyc * w / T) <= edges + 2, (p, k, n, cyc * w / T)
PY

# --program: the timeline is the chip engine's. viz's totals equal tpusim
# run --json's 'stall' (per core and summed), and the headless frame's stall
# strips have pixel runs proportional to those figures, within a pixel of
# rounding per band (plus the cursor's pixel).
cp "$TPU_ROOT/docs/examples/train_step.json" ex.json
expect_status 0 "$TPUSIM" run --chip teach --program ex.json --json
echo "$OUT" > run.json
expect_status 0 "$TPUSIM" viz --chip teach --program ex.json --headless --json --png prog.png
echo "$OUT" > vp.json
/usr/bin/python3 - "$here" run.json vp.json prog.png <<'PY' || die "viz --program disagrees with tpusim run or its bands are off"
import json, sys
sys.path.insert(0, sys.argv[1]); import png_read
r = json.load(open(sys.argv[2])); d = json.load(open(sys.argv[3])); L = d["layout"]
assert d["total_cycles"] == r["cycles"], (d["total_cycles"], r["cycles"])
assert d["stall"] == r["stall"], (d["stall"], r["stall"])
for p, pc in enumerate(r["per_core"]):
    assert d["stall_cycles_per_core"][p] == {k: pc[k] for k in d["stall"]}, (p, d["stall_cycles_per_core"][p], pc)
assert {t["op"] for t in d["tiles"]} == {"forward", "dW"}, {t["op"] for t in d["tiles"]}
img = png_read.read(sys.argv[4], max(L["core_y"]) + L["strip_h"])
T = d["total_cycles"]; w = L["timeline_w"]
col = {k: tuple(int(v[i:i + 2], 16) for i in (1, 3, 5)) for k, v in d["colors"].items()}
for p, tot in enumerate(d["stall_cycles_per_core"]):
    y = L["core_y"][p] + L["strip_h"] // 2
    row = [png_read.pixel(img, L["timeline_x"] + x, y) for x in range(w)]
    for k, cyc in tot.items():
        n = sum(1 for px in row if px == col[k])
        runs = sum(1 for x in range(w) if row[x] == col[k] and (x == 0 or row[x - 1] != col[k]))
        assert abs(n - cyc * w / T) <= runs + 1, (p, k, n, cyc * w / T, runs)
PY
# bad programs: exit 2 with the file, line:column and field, as tpusim run
printf '{ "cores": 4,\n  "buffers": [ { "name": "a", "space": "hbm", "shape": [4, 4] } ],\n  "ops": [ { "op": "dma", "src": "a", "dst": "b" } ] }' > p1.json
expect_status 2 "$TPUSIM" viz --chip teach --program p1.json --headless --out o
expect_err_contains "p1.json:3:"
expect_err_contains "field 'ops[0].dst': no buffer named 'b' on core 0"
printf '{ "ops": [ ' > p4.json
expect_status 2 "$TPUSIM" viz --chip teach --program p4.json --headless --out o
expect_err_contains "p4.json:1:"
printf '{ "buffers": [ { "name": "a", "space": "vmem", "shape": [2000, 1000] } ],\n "ops": [ { "op": "vpu", "fn": "relu", "in": ["a"], "out": ["a"], "name": "big" } ] }' > p6.json
expect_status 2 "$TPUSIM" viz --chip teach --program p6.json --headless --out o
expect_err_contains "p6.json: "
expect_status 2 "$TPUSIM" viz --chip teach --program nosuch.json --headless --out o; expect_err_contains "cannot read"
expect_status 2 "$TPUSIM" viz --chip teach --program ex.json --m 8 --headless --out o; expect_err_contains "one or the other"
expect_status 2 "$TPUSIM" viz --chip teach --program; expect_err_contains "needs a file name"
# the GEMM is the engine's run of tpusim matmul --cores's program: the same
# figures, on all the chip's cores (default) and with --cores
for c in "" 2; do
  expect_status 0 "$TPUSIM" viz --chip teach ${c:+--cores $c} --m 40 --n 12 --k 20 --precision bf16x3 --headless --json --png g.png
  echo "$OUT" > vg.json
  expect_status 0 "$TPUSIM" matmul --chip teach --cores ${c:-4} --m 40 --n 12 --k 20 --precision bf16x3 --level timing --json
  echo "$OUT" > mg.json
  /usr/bin/python3 - vg.json mg.json <<'PY' || die "viz's GEMM figures differ from tpusim matmul --cores ${c:-4}"
import json, sys
v = json.load(open(sys.argv[1])); m = json.load(open(sys.argv[2]))
assert v["cores"] == m["cores"], (v["cores"], m["cores"])
assert v["total_cycles"] == m["cycles"] and v["stall"] == m["stall"], (v["total_cycles"], v["stall"], m["cycles"], m["stall"])
for p, pc in enumerate(m["per_core"]):
    assert v["stall_cycles_per_core"][p] == {k: pc[k] for k in v["stall"]}, p
PY
done
expect_status 2 "$TPUSIM" viz --chip teach --cores 5 --headless --out o; expect_err_contains "--cores"
expect_status 2 "$TPUSIM" viz --chip teach --cores 2 --program ex.json --headless --out o; expect_err_contains "goes with a GEMM"
# --model: one training step, lowered as tpusim train lowers it; the same
# step cycles and stall shares as train --json, the batch ready when train's
# is (its transfer from the host, docs/TRAINING.md "The host side of a fit":
# hidden by the first epoch's compile unless that is made free and the link slow)
for how in "" "--set host.compile_s=0 --set host.compile_s_per_kernel=0 --set host.infeed_gb_per_s=0.01"; do
# shellcheck disable=SC2086
expect_status 0 "$TPUSIM" train --chip teach --model mlp --batch 64 --data synthetic --synthetic-n 64 --level timing --steps-per-epoch 1 $how --json
echo "$OUT" > tm.json
W=$(json_get per_core.0.infeed_wait tm.json)
if [ -z "$how" ]; then [ "$W" = 0 ] || die "the compile hides the first batch's transfer"; else [ "$W" -gt 0 ] || die "a slow link"; fi
expect_status 0 "$TPUSIM" viz --chip teach --model mlp --batch 64 --infeed-ready "$W" --headless --json --png m.png
echo "$OUT" > vm.json
/usr/bin/python3 - vm.json tm.json <<'PY' || die "viz --model disagrees with tpusim train"
import json, sys
v = json.load(open(sys.argv[1])); t = json.load(open(sys.argv[2]))
assert v["total_cycles"] == t["sim_step_cycles"], (v["total_cycles"], t["sim_step_cycles"])
n = v["cores"] * v["total_cycles"]
for k, share in t["stall"].items():
    assert abs(v["stall"][k] / n - share) < 1e-9, (k, v["stall"][k] / n, share)
assert v["stall"]["mxu_busy"] > 0 and v["stall"]["collective_wait"] > 0, v["stall"]
PY
done
expect_status 0 "$TPUSIM" viz --chip teach --model mlp --batch 64 --infeed-ready 50000 --headless --json --png m2.png
[ "$(echo "$OUT" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["stall"]["infeed_wait"])')" = 200000 ] \
  || die "--infeed-ready 50000 should make each of the 4 cores wait 50000 cycles on infeed"
printf '{ "name": "bad", "input": [4],\n  "layers": [ { "type": "dense", "units": 0 } ] }' > bad_model.json
expect_status 2 "$TPUSIM" viz --chip teach --model bad_model.json --headless --out o; expect_err_contains "bad_model.json"
expect_status 2 "$TPUSIM" viz --chip teach --model nosuch --headless --out o
expect_status 2 "$TPUSIM" viz --chip teach --model mlp --batch 6 --headless --out o; expect_err_contains "does not divide"
expect_status 2 "$TPUSIM" viz --chip teach --batch 64 --headless --out o; expect_err_contains "go with --model"
expect_status 2 "$TPUSIM" viz --chip teach --model mlp --program ex.json --headless --out o; expect_err_contains "give one"

# The first minute. The README's headless example (the GEMM, the default
# on tpu-v2-8), with no --cycle, starts at the first weight load: its first
# frame's array is not idle (cells not in the idle colour), a later frame
# shows the wavefront (computing cells), the legend has a swatch per stall
# kind and the cell states, and the title's text is twice as tall at
# --scale 2 as at --scale 1. On teach the default is the class workload
# (docs/TEACHING.md): the same step as its model file at batch 32 with
# --infeed-ready 300, starting at cycle 0 in the infeed wait (which comes
# before the first weight load); its frames from the first weight load show
# the same.
expect_status 0 "$TPUSIM" viz --headless --frames 20 --every 8 --out readme --json
echo "$OUT" > readme.json
expect_status 0 "$TPUSIM" viz --chip teach --headless --at weight-load --frames 20 --every 8 --out teach --json
echo "$OUT" > teach.json
expect_status 0 "$TPUSIM" viz --chip teach --headless --frames 2 --out teach0 --json
echo "$OUT" > teach0.json
expect_status 0 "$TPUSIM" viz --chip teach --model "$TPU_ROOT/docs/examples/teach-class.json" --batch 32 --infeed-ready 300 \
  --headless --frames 2 --out teach0m --json
echo "$OUT" > teach0m.json
cmp teach0/frame_000001.png teach0m/frame_000001.png || die "viz --chip teach is not the class workload's model file"
/usr/bin/python3 - <<'PY' || die "viz --chip teach: not the class workload, or not from cycle 0 in its infeed wait"
import json
d, m = json.load(open("teach0.json")), json.load(open("teach0m.json"))
for k in ("total_cycles", "stall", "stall_cycles_per_core", "tiles", "start_cycle"):
    assert d[k] == m[k], k
assert d["model"]["name"] == "teach-class" and d["model"]["global_batch"] == 32 and d["model"]["infeed_ready"] == 300, d["model"]
assert d["start_cycle"] == 0 and d["moment"]["core_stall"] == "infeed_wait" and d["stall_spans"]["infeed_wait"]["end"] == 300, d
PY
expect_status 0 "$TPUSIM" viz --chip teach --headless --scale 2 --png s2.png
/usr/bin/python3 - "$here" <<'PY' || die "the README example's frames do not show the array working, the legend or scaled text"
import json, sys
sys.path.insert(0, sys.argv[1]); import png_read
IDLE, LOADING, HOLDING = (0x2a, 0x2a, 0x2a), (0xe0, 0xb0, 0x00), (0x5a, 0x4a, 0x1e)
def cells(path, L, full=False):   # each cell's colour, away from its value text
    img = png_read.read(path, None if full else L["array_y"] + L["array_h"])
    n, off = L["array_w"] // L["cell"], (L["cell"] - 3 if L["cell"] >= 8 else L["cell"] // 2)
    return img, [png_read.pixel(img, L["array_x"] + c * L["cell"] + off, L["array_y"] + r * L["cell"] + off)
                 for r in range(L["array_h"] // L["cell"]) for c in range(n)]
for run, dirname in (("readme.json", "readme"), ("teach.json", "teach")):
    d = json.load(open(run)); L = d["layout"]
    assert d["start_cycle"] == d["tiles"][0]["load_start"] > 0, (d["start_cycle"], d["tiles"][0])
    img, first = cells(dirname + "/frame_000000.png", L, True)
    assert sum(1 for p in first if p not in (IDLE, HOLDING)) >= 1, dirname + ": the first frame shows an idle array"
    busy = [sum(1 for p in cells(dirname + "/frame_%06d.png" % f, L)[1] if p not in (IDLE, LOADING, HOLDING)) for f in range(1, 20)]
    assert max(busy) >= 8, (dirname + ": no wavefront in the 20 frames", busy)
    col = [tuple(int(v[i:i + 2], 16) for i in (1, 3, 5)) for v in d["colors"].values()]
    for k, c in enumerate(col + [IDLE]):
        y = L["legend_y"] + (k + 1) * L["line"] + L["line"] // 2
        assert png_read.pixel(img, L["legend_x"] + 2, y) == c, ("legend row", k, png_read.pixel(img, L["legend_x"] + 2, y), c)
def title_height(path):    # rows of the black header band with text in them
    im = png_read.read(path, 100)
    band = [y for y in range(100) if png_read.pixel(im, 1, y) == (0, 0, 0)]
    rows = [y for y in band if any(sum(png_read.pixel(im, x, y)) > 200 for x in range(8, 200))]
    return rows[-1] - rows[0] + 1
h1, h2 = title_height("teach/frame_000000.png"), title_height("s2.png")
assert 1.8 <= h2 / h1 <= 2.2, ("text height at --scale 1 and 2", h1, h2)
PY
# cell values grow with --scale too (#32): in the default still (the class
# workload's first full wavefront) cell (0, 0) computes; the first line of
# dark text in it (4 px of "w 0.39" at --scale 1) is at least 1.6 times as
# tall at --scale 2 (one line, the activation)
expect_status 0 "$TPUSIM" viz --chip teach --headless --png s1.png --json
echo "$OUT" > s1.json
expect_status 0 "$TPUSIM" viz --chip teach --headless --scale 2 --png s2.png --json
echo "$OUT" > s2.json
/usr/bin/python3 - "$here" <<'PY' || die "cell values do not grow with --scale"
import json, sys
sys.path.insert(0, sys.argv[1]); import png_read
def glyph_h(name):
    L = json.load(open(name + ".json"))["layout"]
    img = png_read.read(name + ".png", L["array_y"] + L["cell"])
    x0, y0, c = L["array_x"], L["array_y"], L["cell"]
    dark = [any(sum(png_read.pixel(img, x, y)[:3]) < 150 for x in range(x0 + 1, x0 + c * 3 // 5)) for y in range(y0, y0 + c - 1)]
    first = dark.index(True)       # the first line: up to two blank rows in a row
    end = first + 1
    while end < len(dark) and (dark[end] or (end + 1 < len(dark) and dark[end + 1])): end += 1
    return end - first
h1, h2 = glyph_h("s1"), glyph_h("s2")
assert h2 >= 1.6 * h1, ("cell text height at --scale 1 and 2", h1, h2)
PY
expect_status 2 "$TPUSIM" viz --chip teach --scale 9 --headless --out o; expect_err_contains "--scale"
# --gif: a cycle range as one animated GIF (checked pixel by pixel in check_viz)
expect_status 0 "$TPUSIM" viz --chip teach --headless --cycle 1740 --frames 12 --every 4 --gif slide.gif
expect_out_contains "12 frames, cycles 1740..1784"
[ "$(head -c 6 slide.gif)" = GIF89a ] || die "slide.gif is not a GIF"
expect_status 2 "$TPUSIM" viz --chip teach --gif x.gif;                      expect_err_contains "--gif"
expect_status 2 "$TPUSIM" viz --chip teach --headless --gif x.gif --out o;   expect_err_contains "without --out"
expect_status 1 "$TPUSIM" viz --chip teach --headless --gif /nonexistent/x.gif; expect_err_contains "/nonexistent/x.gif"
# --at EVENT chooses a picture by what it should show, not a cycle number (#32):
# the first tile's load, full diagonal and results, a partial tile, an
# infeed wait, an all-reduce
expect_status 0 "$TPUSIM" viz --chip teach --headless --png at0.png --json
echo "$OUT" > at0.json
for e in weight-load wavefront result; do
  expect_status 0 "$TPUSIM" viz --chip teach --headless --png "at-$e.png" --at "$e" --json
  echo "$OUT" > "at-$e.json"
done
/usr/bin/python3 - <<'PY' || die "--at: the cycles are not the first tile's events"
import json
t = json.load(open("at0.json"))["tiles"][0]
at = {e: json.load(open("at-%s.json" % e))["start_cycle"] for e in ("weight-load", "wavefront", "result")}
assert at == {"weight-load": t["load_start"], "wavefront": t["stream_start"] + t["k"] - 1, "result": t["last_result"]}, (at, t)
PY
expect_status 0 "$TPUSIM" viz --chip teach --model mlp --batch 64 --infeed-ready 5000 --headless --png at-i.png --at infeed-wait --json
[ "$(json_get start_cycle /dev/stdin <<< "$OUT")" = 0 ] || die "--at infeed-wait: the wait begins the step"
expect_status 0 "$TPUSIM" viz --chip teach --model mlp --batch 64 --headless --png at-a.png --at all-reduce --json
echo "$OUT" > at-a.json
/usr/bin/python3 -c 'import json; d=json.load(open("at-a.json")); assert 0 < d["start_cycle"] < d["total_cycles"], d["start_cycle"]' \
  || die "--at all-reduce"
expect_status 0 "$TPUSIM" viz --chip teach --model mlp --batch 64 --headless --png at-p.png --at partial-tile
# full-array: the first cycle every cell of a tile computes, and the moment says so
expect_status 0 "$TPUSIM" viz --chip teach --m 128 --n 16 --k 16 --headless --png at-f.png --at full-array --json
echo "$OUT" > at-f.json
/usr/bin/python3 - <<'PY' || die "--at full-array: not the first cycle every cell computes"
import json
d = json.load(open("at-f.json")); t = d["tiles"][0]; m = d["moment"]
assert d["start_cycle"] == m["cycle"] == t["stream_start"] + t["k"] + t["n"] - 2, (d["start_cycle"], t)
assert m["event"] == "full-array" and m["cells_computing"] == m["cells"] == 64 and m["core_stall"] == "mxu_busy", m
PY
expect_status 2 "$TPUSIM" viz --chip teach --m 8 --n 8 --k 8 --headless --png at-x.png --at full-array
expect_err_contains "a tile needs M of at least its rows + columns - 1"
expect_status 2 "$TPUSIM" viz --chip teach --m 8 --n 8 --k 8 --headless --png at-x.png --at all-reduce
expect_err_contains "--at all-reduce: core 1 has none in this run"
expect_status 2 "$TPUSIM" viz --chip teach --headless --png at-x.png --at sunrise
expect_err_contains "--at: expected weight-load, wavefront, result, partial-tile, infeed-wait, all-reduce or full-array, got 'sunrise'"
expect_status 2 "$TPUSIM" viz --chip teach --headless --png at-x.png --at result --cycle 5
expect_err_contains "--at and --cycle both choose the first cycle shown"
# every preset, at --scale 1 and 1.5: each core's four unit rows carry their
# label (text pixels in the label column beside the row), and the labels do
# not run into each other (a blank pixel row at each boundary between rows)
# (#32). The pod slices (more than a board's 16 cores) are refused by the
# visualizer, which says so (#34): every preset it shows.
shown=""
for c in $("$TPUSIM" --values chip); do
  "$TPUSIM" info --chip "$c" --json > info-$c.json
  [ "$(json_get chip.cores info-$c.json)" -le 16 ] && shown="$shown $c"
done
[ "$(echo $shown)" = "tpu-v2-8 tpu-v3-8 teach" ] || die "presets the visualizer shows: $shown"
expect_status 2 "$TPUSIM" viz --chip tpu-v3-2048 --headless --png pod.png
expect_err_contains "the chip 'tpu-v3-2048' has 2048 cores; the visualizer shows at most 16 (a board): use --cores N"
for c in $shown; do
  for s in 1 1.5; do
    expect_status 0 "$TPUSIM" viz --chip "$c" --headless --scale $s --png "lab-$c-$s.png" --json
    echo "$OUT" > "lab-$c-$s.json"
  done
done
/usr/bin/python3 - "$here" $shown <<'PY' || die "unit labels missing or overlapping"
import json, sys
sys.path.insert(0, sys.argv[1]); import png_read
for c in sys.argv[2:]:
    for s in ("1", "1.5"):
        d = json.load(open("lab-%s-%s.json" % (c, s))); L = d["layout"]
        img = png_read.read("lab-%s-%s.png" % (c, s))
        f, rh = L["font"], L["strip_h"]
        # 8 cores at 1280x800 take two columns, so that a label is at least 9 px (#32)
        assert rh >= 12 or s != "1", (c, s, "unit rows of", rh, "px")
        for p, cy in enumerate(L["core_y"]):
            tx = L["core_x"][p]
            txt = lambda y: any(sum(png_read.pixel(img, x, y)[:3]) > 120 for x in range(tx - 4 * f, tx))
            for u in range(4):
                top = cy + rh + u * rh
                assert any(txt(y) for y in range(top, top + rh)), (c, s, "core", p + 1, "unit row", u, "has no label")
                assert u == 0 or not txt(top) or not txt(top - 1), (c, s, "core", p + 1, "unit rows", u - 1, u, "touch")
PY
