# tpusim viz in a real window under Xvfb: key presses (pause, step, tile step,
# core select, run) are sent as SDL events by --script; the state lines and
# the screenshots must change exactly as the keys say.
here=$(dirname "$(readlink -f "$1")")
if ! has_xvfb; then
  echo "t_viz_xvfb: SKIP: Xvfb is not installed (make deps installs xvfb and xauth)"; exit 0
fi
# the GEMM (the old default on teach, asked for by its shape): four cores
# with different values, so selecting another core changes the array
G="--m 128 --n 16 --k 16"
# shellcheck disable=SC2086
expect_status 0 "$TPUSIM" viz --chip teach $G --headless --json --out run0
echo "$OUT" > run.json
read -r s0 s1 cx cy cc < <(/usr/bin/python3 -c 'import json; d=json.load(open("run.json")); t=d["tiles"]; L=d["layout"]
px = L["timeline_w"] // 3
print(t[0]["stream_start"], t[1]["stream_start"], L["timeline_x"] + px, L["core_y"][0] + 2, int(px * d["total_cycles"] / L["timeline_w"]))')
# shellcheck disable=SC2086
expect_status 0 window "$TPUSIM" viz --chip teach $G \
  --cycle $((s0 + 2)) --speed 30 --out shots \
  --script "space,s,wait:5,s,right,s,shift+right,s,2,s,space,wait:30,space,click:$cx:$cy,q"
echo "$OUT" > states.txt
st() { sed -n "$1p" states.txt | grep -v '^saved\|^banner' || true; }
grep -v '^saved\|^banner' states.txt > s.txt
line() { sed -n "$1p" s.txt; }
[ "$(line 1)" = "cycle $((s0 + 2)) core 1 paused speed 30" ] || die "space did not pause at the start cycle: $(line 1)"
[ "$(line 4)" = "cycle $((s0 + 3)) core 1 paused speed 30" ] || die "right did not step one cycle: $(line 4)"
[ "$(line 6)" = "cycle $s1 core 1 paused speed 30" ] || die "shift+right did not go to the next tile ($s1): $(line 6)"
[ "$(line 8)" = "cycle $s1 core 2 paused speed 30" ] || die "2 did not select core 2: $(line 8)"
[ "$(line 10)" = "cycle $s1 core 2 running speed 30" ] || die "space did not resume: $(line 10)"
c=$(line 11 | cut -d' ' -f2)
# 30 wait frames plus the frames of the two actions, at 30 cycles/s and 1/30 s per frame
[ "$c" -ge $((s1 + 30)) ] && [ "$c" -le $((s1 + 33)) ] || die "running 32 frames at 30 cycles/s moved from $s1 to $c"
[ "$(line 12)" = "cycle $cc core 2 paused speed 30" ] || die "a click on the timeline did not jump to cycle $cc: $(line 12)"
for n in 1 2 3 4 5; do [ -s shots/tpusim-viz-00$n.png ] || die "screenshot $n missing"; done
/usr/bin/python3 - "$here" run.json <<'PY' || die "screenshots did not change as the keys say"
import json, sys
sys.path.insert(0, sys.argv[1]); import png_read
L = json.load(open(sys.argv[2]))["layout"]
shots = [png_read.read("shots/tpusim-viz-%03d.png" % n, L["array_y"] + 8 * L["cell"]) for n in range(1, 6)]
assert all(s[0] == L["width"] and s[1] == L["height"] for s in shots)
def cells(img):   # the colors at the 8x8 cell centers
    return [png_read.pixel(img, L["array_x"] + c * L["cell"] + L["cell"] - 3,
                           L["array_y"] + r * L["cell"] + L["cell"] - 3) for r in range(8) for c in range(8)]
raw = [open("shots/tpusim-viz-%03d.png" % n, "rb").read() for n in (1, 2)]
assert raw[0] == raw[1], "paused, yet the window changed"
assert cells(shots[1]) != cells(shots[2]), "right (one cycle) did not change the array"
assert cells(shots[2]) != cells(shots[3]), "shift+right did not change the array"
assert cells(shots[3]) != cells(shots[4]), "core 2 shows the same array as core 1"
PY
# n / p: the next event after the first row streams is later, and p comes back
# shellcheck disable=SC2086
expect_status 0 window "$TPUSIM" viz --chip teach $G \
  --cycle "$s0" --script "space,n,p,p,q"
echo "$OUT" | grep -v '^banner' > np.txt
read -r _ c1 _ < <(sed -n 2p np.txt)
[ "$c1" -gt "$s0" ] || die "n did not move forward from $s0: $(sed -n 2p np.txt)"
[ "$(sed -n 3p np.txt | cut -d' ' -f2)" = "$s0" ] || die "p did not come back to $s0: $(sed -n 3p np.txt)"
[ "$(sed -n 4p np.txt | cut -d' ' -f2)" -lt "$s0" ] || die "p did not go before $s0: $(sed -n 4p np.txt)"
# the timeline zooms around the mouse (wheel) or the cycle shown (z / x) and pans ([ / ])
# shellcheck disable=SC2086
expect_status 0 window "$TPUSIM" viz --chip teach $G \
  --cycle "$s0" --script "space,hover:$cx:$cy,wheelup,z,],x,x,q"
echo "$OUT" > zoom.txt
/usr/bin/python3 - zoom.txt "$cc" <<'PY' || die "zoom and pan did not move the timeline's view as the keys say: $(cat zoom.txt)"
import re, sys
lines = open(sys.argv[1]).read().splitlines(); cc = int(sys.argv[2])
views = [tuple(map(int, re.search(r"view (\d+)\.\.(\d+)", l).groups())) if "view" in l else None for l in lines]
assert views[0] is None and views[1] is None, views            # space, hover: whole run
a, b = views[2]; assert a <= cc < b, (cc, views[2])             # wheel up around the hovered cycle
assert views[3][1] - views[3][0] < b - a                        # z: narrower
assert views[4][0] > views[3][0]                                # ]: later
assert views[5][1] - views[5][0] > views[4][1] - views[4][0]    # x: wider
PY
# resizing the window (as a user drags its corner): the frame, the layout and
# the screenshots follow the window's new size, smaller and larger
expect_status 0 window "$TPUSIM" viz --chip teach --out rs --script "space,size:1000x700,wait:3,s,size:1300x850,wait:3,s,q"
/usr/bin/python3 - "$here" <<'PY' || die "the window's frame did not follow its new size"
import struct, sys
sys.path.insert(0, sys.argv[1]); import png_read
for n, size in ((1, (1000, 700)), (2, (1300, 850))):
    path = "rs/tpusim-viz-%03d.png" % n
    assert struct.unpack(">II", open(path, "rb").read()[16:24]) == size, (path, size)
    img = png_read.read(path)
    # the legend's stall swatches sit in the right half, below the middle: laid out for this size
    right = {png_read.pixel(img, x, y)[:3] for x in range(size[0] // 2, size[0], 4) for y in range(size[1] // 2, size[1], 4)}
    assert len(right) > 5, (path, len(right))
PY
# playback skips a long wait with an empty array, and says so on screen: from
# cycle 0 of the GEMM on teach (memory_wait until the first weight load w0),
# the first frame jumps to half a second (2 cycles at 4 cycles/s) before w0;
# n names the event it jumps to; w turns skipping off, and the wait plays (#32)
w0=$(/usr/bin/python3 -c 'import json; print(json.load(open("run.json"))["tiles"][0]["load_start"])')
# shellcheck disable=SC2086
expect_status 0 window "$TPUSIM" viz --chip teach $G --cycle 0 --out sk --script "wait:1,space,s,n,q"
echo "$OUT" > skip.txt
[ "$(sed -n 1p skip.txt)" = "banner: skipping $((w0 - 2)) cycles with an empty array, mostly memory_wait (w: play them)" ] \
  || die "no skip banner: $(cat skip.txt)"
[ "$(sed -n 2p skip.txt)" = "cycle $((w0 - 2)) core 1 paused speed 4" ] || die "the skip did not stop before the weight load: $(cat skip.txt)"
grep -qx "banner: next event: tile 1 of 4: weights start loading (cycle $w0)" skip.txt || die "n did not name its event: $(cat skip.txt)"
/usr/bin/python3 - "$here" <<'PY' || die "the skip banner is not on screen"
import sys
sys.path.insert(0, sys.argv[1]); import png_read
img = png_read.read("sk/tpusim-viz-001.png")
amber = sum(png_read.pixel(img, x, y)[:3] == (0xe0, 0xb0, 0x00) for x in range(640, 1280, 2) for y in range(400, 800, 2))
assert amber > 500, amber          # the banner's box, in the right half (the array's amber cells are left)
PY
# shellcheck disable=SC2086
expect_status 0 window "$TPUSIM" viz --chip teach $G --cycle 0 --script "w,wait:30,space,q"
echo "$OUT" > noskip.txt
grep -qx "banner: waits are played cycle by cycle (w: skip them)" noskip.txt || die "w did not say so: $(cat noskip.txt)"
c=$(grep '^cycle' noskip.txt | tail -1 | cut -d' ' -f2)
[ "$c" -ge 3 ] && [ "$c" -le 5 ] || die "with w, 31 frames at 4 cycles/s should play about 4 cycles of the wait, got $c"
# the class workload, the default on teach (docs/TEACHING.md), as the class
# sees it: the window opens at cycle 0 (the infeed wait comes before the
# first weight load) and within the first minute of playback (60 state
# lines, one a second) the cores wait on infeed (the first banner skips
# most of that wait, saying so), the weights load, the first wavefront and
# the partial tile come, and the all-reduce (its cycles from --at)
script=$(/usr/bin/python3 -c "print(','.join(['wait:29,a'] * 60) + ',q')")
# (through window: under ASan libdbus' known leak is suppressed, as for every window here)
window "$TPUSIM" viz --chip teach --script "$script" > class.txt 2>&1 || die "the class workload did not run: $(tail -3 class.txt)"
for e in weight-load partial-tile wavefront all-reduce infeed-wait; do
  SDL_VIDEODRIVER=dummy "$TPUSIM" viz --chip teach --headless --png "$T/c.png" --at $e --json > "class-$e.json" \
    || die "the class workload has no $e"
done
/usr/bin/python3 - <<'PY' || die "the class workload does not show its events in the first minute: $(grep banner class.txt)"
import json
lines = open("class.txt").read().splitlines()
ev = ("weight-load", "partial-tile", "wavefront", "all-reduce", "infeed-wait")
at = {e: json.load(open("class-%s.json" % e))["start_cycle"] for e in ev}
assert at["infeed-wait"] == 0 and "infeed_wait" in lines[0], (at, lines[0])
seconds = [l for l in lines if l.startswith("cycle")]
reached = int(seconds[-1].split()[1])
assert len(seconds) >= 60 and reached > at["all-reduce"] > at["partial-tile"] > at["wavefront"] > at["weight-load"], (at, reached)
assert any("mostly collective_wait" in l for l in lines), "no banner for the all-reduce"
PY
# the help lists every key at any window size: at 640x480 and 1920x1080 its
# box (#101024) ends above the frame's bottom margin, so no line is cut, and
# its last line (q or Esc) is drawn inside it (#32)
expect_status 0 window "$TPUSIM" viz --chip teach --size 640x480 --out hs --script "space,h,s,size:1920x1080,wait:3,s,q"
/usr/bin/python3 - "$here" <<'PY' || die "the help does not fit the window"
import sys
sys.path.insert(0, sys.argv[1]); import png_read
for n, (w, h) in ((1, (640, 480)), (2, (1920, 1080))):
    img = png_read.read("hs/tpusim-viz-%03d.png" % n)
    col = [png_read.pixel(img, 14, y)[:3] for y in range(h)]
    box = [y for y in range(h) if col[y] == (0x10, 0x10, 0x24)]
    assert box and box[0] <= 14 and box[-1] < h - 12, (n, box[:1], box[-1:])
    last = [y for y in range(box[-1] - 40, box[-1]) if any(sum(png_read.pixel(img, x, y)[:3]) > 450 for x in range(20, w // 2))]
    assert last, (n, "no text in the box's last lines")
PY
