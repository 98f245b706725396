# tpusim run: the worked example, JSON report invariants, trace, thread
# invariance, and bad programs (exit 2 naming file, field and line:col).
EX="$(dirname "$TPUSIM")/../../docs/examples/train_step.json"
[ -f "$EX" ] || EX=$(cd "$(dirname "$0")/../.." 2>/dev/null && pwd)/docs/examples/train_step.json
cp "$EX" ex.json
expect_status 0 "$TPUSIM" run --chip teach --program ex.json --json --trace tr.json --threads 1
echo "$OUT" > r1.json
/usr/bin/python3 - r1.json tr.json <<'PY' || die "report invariants"
import json, sys
r = json.load(open(sys.argv[1])); t = json.load(open(sys.argv[2]))
keys = ["mxu_busy", "vpu_busy", "weight_load", "infeed_wait", "memory_wait", "collective_wait", "idle"]
assert sorted(r["stall"]) == sorted(keys), r["stall"]
assert sum(r["stall"].values()) == r["cycles"] * r["cores"]
assert len(r["per_core"]) == 4
for c in r["per_core"]:
    assert sum(c[k] for k in keys) == r["cycles"] == c["cycles"]
assert sum(sum(s[k] for k in keys) for s in r["steps"]) == r["cycles"] * 4
assert len(r["steps"]) == 3
for k in keys: assert r["stall"][k] == sum(c[k] for c in r["per_core"])
ev = t["traceEvents"]
names = {e["name"] for e in ev}
assert "infeed_wait" in names and "allreduce dW" in names, names
assert {e["pid"] for e in ev} == {0, 1, 2, 3}
assert all(e["dur"] >= 0 for e in ev if e["ph"] == "X")
tracks = {}
for e in ev:
    if e["ph"] == "X": tracks.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
for v in tracks.values():          # slices on one track never overlap
    v.sort()
    assert all(b[0] >= a[1] - 1e-9 for a, b in zip(v, v[1:])), v
PY
for n in 2 8; do
  expect_status 0 "$TPUSIM" run --chip teach --program ex.json --json --threads $n --print w
  echo "$OUT" | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); d.pop("wall_s"); print(json.dumps(d, sort_keys=True))' > n$n.json
done
cmp -s n2.json n8.json || die "results differ between 2 and 8 threads"
expect_status 0 "$TPUSIM" run --chip teach --program ex.json --level timing --json
[ "$(echo "$OUT" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["cycles"])')" = "$(json_get cycles r1.json)" ] || die "levels disagree"
expect_status 0 "$TPUSIM" run --chip teach --program ex.json
expect_out_contains "collective_wait"

# bad programs
bad_inputs "$TPUSIM" run --chip teach --program <<'CASES'
p1.json|{ "cores": 4,\n  "buffers": [ { "name": "a", "space": "hbm", "shape": [4, 4] } ],\n  "ops": [ { "op": "dma", "src": "a", "dst": "b" } ] }|p1.json:3:|field 'ops[0].dst': no buffer named 'b' on core 0
p2.json|{ "buffers": [ { "name": "a", "space": "ssd", "shape": [4, 4] } ], "ops": [] }|p2.json:1:40: field 'buffers[0].space': expected "hbm" or "vmem", got "ssd"
p3.json|{ "ops": [ { "op": "teleport" } ] }|field 'ops[0].op': unknown op "teleport"
p4.json|{ "ops": [ |p4.json:1:|malformed JSON
p5.json|{ "cores": 2, "ops": [] }|field 'cores': the program is for 2 core(s) but the chip has 4
p6.json|{ "buffers": [ { "name": "a", "space": "vmem", "shape": [200, 100] } ],\n "ops": [ { "op": "vpu", "fn": "relu", "in": ["a"], "out": ["a"], "name": "big" } ] }|op 0 ('big', vpu): needs 80000 bytes of VMEM
p7.json|{ "buffers": [ { "name": "a", "space": "vmem", "shape": [4, 4], "colour": 1 } ], "ops": [] }|field 'buffers[0].colour': unknown field
p8.json|{ "buffers": [ { "name": "a", "space": "vmem", "shape": [4, 4] } ],\n "ops": [ { "op": "infeed", "dst": "a" } ] }|queue holds 0 batch
p9.json|{ "buffers": [ { "name": "a", "space": "vmem", "shape": [4, 4] } ], "ops": [ { "op": "all_reduce", "src": "a", "dst": "a", "step": -1 } ] }|field 'ops[0].step': expected an integer in 0..1000000
p10.json|{ "per_core": [ { "ops": [] } ] }|field 'per_core': expected an array of 4 entries
p11.json|[1]|expected a JSON object
CASES
expect_status 2 "$TPUSIM" run --chip teach --program missing.json
expect_err_contains "missing.json: cannot read"
expect_status 2 "$TPUSIM" run --chip teach
expect_status 2 "$TPUSIM" run --chip teach --program ex.json --threads 0
expect_status 2 "$TPUSIM" run --chip teach --program ex.json --level pe
expect_status 0 "$TPUSIM" run --help

# per-core programs: different work per core, the all-reduce waits for the slower one
cat > pc.json <<'JSON'
{ "buffers": [ { "name": "x", "space": "vmem", "shape": [8, 8], "init": { "const": 1 } } ],
  "per_core": [
    { "ops": [ { "op": "all_reduce", "src": "x", "dst": "x" } ] },
    { "ops": [ { "op": "all_reduce", "src": "x", "dst": "x" } ] },
    { "ops": [ { "op": "all_reduce", "src": "x", "dst": "x" } ] },
    { "buffers": [ { "name": "big", "space": "vmem", "shape": [100, 8] } ],
      "ops": [ { "op": "vpu", "fn": "relu", "in": ["big"], "out": ["big"] },
               { "op": "vpu", "fn": "add", "in": ["x", "x"], "out": ["x"] },
               { "op": "all_reduce", "src": "x", "dst": "x" } ] } ] }
JSON
expect_status 0 "$TPUSIM" run --chip teach --program pc.json --json --print x
echo "$OUT" > pc_out.json
/usr/bin/python3 - pc_out.json <<'PY' || die "per_core program"
import json, sys
d = json.load(open(sys.argv[1]))
# core 3: relu of 100x8 (50 registers of 2x8) + add of 8x8 (4 registers): arrives at 54;
# ring all-reduce of 256 bytes over 4 cores: 2*3/4*256 + 6*100 = 984 cycles
assert d["cycles"] == 54 + 984, d["cycles"]
assert d["per_core"][0]["collective_wait"] == 54 + 984
assert d["per_core"][3]["vpu_busy"] == 54 and d["per_core"][3]["collective_wait"] == 984
assert all(v == 5.0 for core in d["buffers"]["x"] for v in core), d["buffers"]["x"][0][:4]
PY
# a collective missing on one core
/usr/bin/python3 -c 'import json; d=json.load(open("pc.json")); d["per_core"][2]["ops"]=[]; json.dump(d, open("pc2.json","w"))'
expect_status 2 "$TPUSIM" run --chip teach --program pc2.json
expect_err_contains "core 2 issues 0 collective(s) and core 0 issues 1"
# a column sum over one row is a legal VPU op (it was once refused because
# its cost on a 1-sublane validation VPU is 0 cycles)
cat > cs.json <<'JSON'
{"cores": 1, "buffers": [{"name": "x", "space": "vmem", "shape": [1, 16], "init": {"normal": 1}},
                         {"name": "y", "space": "vmem", "shape": [1, 16]}],
 "ops": [{"op": "vpu", "fn": "col_sum", "in": ["x"], "out": ["y"]}]}
JSON
expect_status 0 "$TPUSIM" run --set cores_per_chip=1 --set cores=1 --program cs.json --json
