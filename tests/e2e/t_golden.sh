# The golden set (tests/golden/cases.txt): every recorded invocation prints
# the same normalized JSON and writes files with the same sha256 as recorded.
/usr/bin/python3 "$TPU_ROOT/tests/golden/golden.py" "$TPUSIM" check > "$T/golden.txt" \
  || { cat "$T/golden.txt"; die "golden outputs changed (tests/golden/golden.py)"; }
# A record's tolerance (golden.py, TOLERANCES) covers the keys its rule
# names and nothing else: shown on the tr-mlp-ref record.
/usr/bin/python3 - "$TPU_ROOT/tests/golden" <<'PY' || die "golden.py's tolerance"
import copy, json, sys
sys.path.insert(0, sys.argv[1])
import golden
text = open(sys.argv[1] + "/out/tr-mlp-ref.json").read()
rec = json.loads(text)
assert rec["tolerance"]["name"] == "blas", rec.get("tolerance")
def now(f):
    r = copy.deepcopy(rec); f(r["json"]); return golden.compare(text, r)
assert now(lambda j: None) is None
assert now(lambda j: j.update(train_loss=j["train_loss"] * (1 + 1e-6), params_hash="0")) is None
assert now(lambda j: j.update(val_accuracy=j["val_accuracy"] + 0.005)) is None
assert now(lambda j: j.update(train_loss=j["train_loss"] * (1 + 1e-4)))
assert now(lambda j: j.update(val_accuracy=j["val_accuracy"] + 0.01))
assert now(lambda j: j.update(sim_step_cycles=j["sim_step_cycles"] + 1))
assert now(lambda j: j.pop("params_hash"))
r = copy.deepcopy(rec); r["tolerance"]["rules"][1]["rel"] = 1.0
assert golden.compare(text, r), "a record's rule changed without an update"
# a record without a tolerance is compared byte for byte
t2 = open(sys.argv[1] + "/out/tr-mlp-tile.json").read()
r2 = json.loads(t2); r2["json"]["train_loss"] *= 1 + 1e-9
assert golden.compare(t2, r2)
PY
