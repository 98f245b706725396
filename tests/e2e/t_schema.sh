# Every command's --json report against the one schema (docs/report.schema.json,
# docs/JSON.md), with Debian's python3-jsonschema; and the schema shown to
# reject a report that breaks it (a missing stall part, a share above 1).
S="$TPU_ROOT/docs/report.schema.json"
cp "$TPU_ROOT/docs/examples/train_step.json" prog.json
# a model with two outputs: its report adds each output's loss
cat > two.model <<'JSON'
{ "name": "two_heads", "input": [8], "layers": [ { "type": "dense", "units": 10, "name": "policy" },
  { "type": "dense", "units": 1, "activation": "tanh", "inputs": "input", "name": "value" } ],
  "outputs": [ { "layer": "policy" }, { "layer": "value", "weight": 0.5 } ] }
JSON
n=0
while IFS='|' read -r name args; do
  [ -n "$name" ] || continue
  expect_status 0 "$TPUSIM" $args --json
  printf '%s\n' "$OUT" > "$name.json"
  n=$((n + 1))
done <<CASES
info|info --chip tpu-v3-8 --set mxu.rows=64
model|model cnn --batch 8
matmul|matmul --m 130 --n 64 --k 300 --chip teach --precision bf16x3
matmul_os|matmul --m 130 --n 64 --k 300 --chip teach --dataflow os
scalesim_is|scalesim -c $TPU_ROOT/docs/scalesim/tpu_128.cfg -t $TPU_ROOT/docs/scalesim/alexnet.csv --dataflow is
matmul_cores|matmul --cores 4 --m 512 --n 256 --k 384 --chip tpu-v2-8 --level timing
run|run --program prog.json --chip teach
pipeline|pipeline --config $TPU_ROOT/datafeed/examples/prefetch.json
train|train --model mlp --level timing --data synthetic --steps-per-epoch 2 --epochs 2
train_tile|train --model mlp --data synthetic --synthetic-n 512 --batch 64 --epochs 1
model_outputs|model two.model
train_outputs|train --model two.model --data synthetic --synthetic-n 512 --batch 64 --epochs 2
scalesim|scalesim -c $TPU_ROOT/docs/scalesim/tpu_128.cfg -t $TPU_ROOT/docs/scalesim/alexnet.csv
viz|viz --headless --chip teach --m 8 --n 8 --k 8 --out vf --frames 1
run_topology|run --topology $TPU_ROOT/docs/scalesim/bert_base_layer.csv --input-type gemm --cores 2
matmul_topology|matmul --topology $TPU_ROOT/docs/scalesim/alexnet.csv --chip teach
scalesim_chip|scalesim -c $TPU_ROOT/docs/scalesim/tpu_128.cfg -t $TPU_ROOT/docs/scalesim/alexnet.csv --chip tpu-v2-8 --cores 2
CASES
expect_status 0 "$TPUSIM" sweep --out sw --no-plot matmul --m 64,128 --n 64 --k 64 --chip teach
/usr/bin/python3 - "$S" *.json sw/points.jsonl <<'PY' || die "schema"
import json, sys
from jsonschema import Draft202012Validator
schema = json.load(open(sys.argv[1]))
Draft202012Validator.check_schema(schema)
v = Draft202012Validator(schema)
docs = []
for p in sys.argv[2:]:
    if p.endswith(".jsonl"):
        docs += [("%s:%d" % (p, i + 1), json.loads(l)["report"]) for i, l in enumerate(open(p))]
    elif not p.endswith("schema.json") and p != "prog.json":
        docs.append((p, json.load(open(p))))
bad = [(p, e.message, list(e.path)) for p, d in docs for e in v.iter_errors(d)]
assert not bad, bad[:5]
assert len(docs) >= 17, len(docs)
# one meaning of utilization: a GEMM's own multiply-adds over the arrays' capacity
m = json.load(open("matmul.json"))
c = m["configuration"]["chip"]["mxu"]
cap = c["rows"] * c["cols"] * m["cycles"] * m["configuration"]["chip"]["mxu"]["per_core"]
assert abs(m["mxu_utilization"] - 130 * 64 * 300 / cap) < 1e-9, m["mxu_utilization"]
# the schema has teeth: a run report without a stall part, a train share above 1
r = json.load(open("run.json")); del r["stall"]["weight_load"]
t = json.load(open("train.json")); t["stall"]["idle"] = 1.5
o = json.load(open("matmul_os.json")); o["dataflow"] = "xs"
assert not v.is_valid(r) and not v.is_valid(t) and not v.is_valid(o)
# the model's loss, and its outputs' layers, losses and weights
m = json.load(open("model_outputs.json"))
assert json.load(open("model.json"))["loss"] == "softmax_cross_entropy" and "outputs" not in json.load(open("model.json"))
assert [(o["layer"], o["loss"], o["weight"]) for o in m["outputs"]] == \
    [("policy", "softmax_cross_entropy", 1), ("value", "mean_squared_error", 0.5)], m["outputs"]
# each output's loss: keyed <output>_loss, >= 0
t = json.load(open("train_outputs.json"))
assert sorted(t["val_output_losses"]) == ["policy_loss", "value_loss"], t["val_output_losses"]
assert sorted(t["history"][1]["output_losses"]) == ["policy_loss", "value_loss"]
t["history"][1]["output_losses"]["policy"] = t["history"][1]["output_losses"].pop("policy_loss")
u = json.load(open("train_outputs.json")); u["train_output_losses"]["value_loss"] = -1
assert not v.is_valid(t) and not v.is_valid(u)
# and in the topology forms: a layer without its stall table, a layer's utilization above 1
r = json.load(open("run_topology.json")); del r["layers"][0]["stall"]
m = json.load(open("matmul_topology.json")); m["layers"][1]["mxu_utilization"] = 2
c = json.load(open("scalesim_chip.json")); del c["layers"][2]["stall"]
assert not v.is_valid(r) and not v.is_valid(m) and not v.is_valid(c)
t = json.load(open("train.json")); del t["per_core"]
assert not v.is_valid(t)
# train's stall parts in cycles, per core: each core's add up to its cycles
# (the steps' cycles summed), their sums over the cores are stall_cycles,
# and their shares of the core-cycles are the stall shares
for name in ("train.json", "train_tile.json"):
    t = json.load(open(name))
    kinds = list(t["stall"])
    assert len(t["per_core"]) == t["cores"] and t["per_core_steps"] == t["epochs"] * t["steps_per_epoch"], name
    for c in t["per_core"]:
        # sim_step_cycles is the mean step, rounded (an epoch's first waits for its transfer)
        assert sum(c[k] for k in kinds) == c["cycles"], (name, c)
        assert abs(c["cycles"] - t["sim_step_cycles"] * t["per_core_steps"]) <= t["per_core_steps"] / 2, (name, c)
    tot = t["per_core"][0]["cycles"] * t["cores"]
    for k in kinds:
        assert t["stall_cycles"][k] == sum(c[k] for c in t["per_core"]), (name, k)
        assert abs(t["stall_cycles"][k] / tot - t["stall"][k]) < 1e-9, (name, k)
PY
[ "$n" = 17 ] || die "cases: $n"
