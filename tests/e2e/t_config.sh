# Chip configuration: presets, --set, files with a base, and every kind of bad input.
for p in tpu-v2-8 tpu-v3-8 teach; do
  expect_status 0 "$TPUSIM" info --chip $p --json
  [ "$(echo "$OUT" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["chip"]["name"])')" = $p ] || die "name of $p"
done
expect_status 0 "$TPUSIM" info --json
echo "$OUT" > info.json
[ "$(json_get chip.cores info.json)" = 8 ] || die "default chip is not tpu-v2-8"
/usr/bin/python3 - info.json <<'PY' || die "v2 peak"
import json,sys
d=json.load(open(sys.argv[1]))
assert abs(d["peaks"]["bf16_flops_per_s_per_chip"] - 2*128*128*2*700e6) < 1, d["peaks"]
PY
expect_status 0 "$TPUSIM" info --chip teach --set mxu.rows=16 --set ici.topology=torus --json
echo "$OUT" > t.json
[ "$(json_get chip.mxu.rows t.json)" = 16 ] || die "--set mxu.rows"
# the effective config round-trips: info --json's chip object loads as a file
/usr/bin/python3 -c 'import json,sys; json.dump(json.load(open("t.json"))["chip"], open("rt.json","w"))'
expect_status 0 "$TPUSIM" info --chip rt.json --json
# a file may start from a preset
printf '{ "base": "teach", "cores": 2, "cores_per_chip": 2 }' > small.json
expect_status 0 "$TPUSIM" info --chip small.json --json
echo "$OUT" > s.json
[ "$(json_get chip.cores s.json)" = 2 ] && [ "$(json_get chip.mxu.rows s.json)" = 8 ] || die "base"

# bad input: exit 2, a message naming file, key, line:col and what is allowed
bad_inputs "$TPUSIM" info --chip <<'CASES'
big.json|{ "base": "teach",\n  "mxu": { "rows": 2000 } }|big.json:2:20: key 'mxu.rows': expected an integer in 1..1024, got 2000
zero.json|{ "base": "teach", "cores": 0 }|key 'cores': expected an integer in 1..2048, got 0
neg.json|{ "base": "teach", "hbm": { "bandwidth_gb_per_s": -3 } }|key 'hbm.bandwidth_gb_per_s': expected a number in [0.01, 1000000] GB/s, got -3
ovf.json|{ "base": "teach", "cores": 99999999999999999999999 }|ovf.json:1:
type.json|{ "base": "teach", "mxu": { "rows": "eight" } }|key 'mxu.rows': expected an integer in 1..1024, got a non-number
real.json|{ "base": "teach", "mxu": { "rows": 8.5 } }|got a non-integer number
unk.json|{ "base": "teach",\n "mxu": { "rowz": 8 } }|unk.json:2:19: unknown key 'mxu.rowz'
trunc.json|{ "base": "teach", "cores": 4,\n|trunc.json:2:|malformed JSON
missing.json|{ "cores": 4 }|missing key 'cores_per_chip'
badbase.json|{ "base": "tpu-v9" }|key 'base': expected the name of a preset (tpu-v2-8, tpu-v3-8, teach, tpu-v2-32, tpu-v2-128, tpu-v2-256, tpu-v2-512, tpu-v3-32, tpu-v3-64, tpu-v3-128, tpu-v3-256, tpu-v3-512, tpu-v3-1024, tpu-v3-2048)
div.json|{ "base": "teach", "cores": 3 }|does not divide cores
arr.json|[1,2]|expected a JSON object
CASES
expect_status 2 "$TPUSIM" info --chip no-such-file.json
expect_err_contains "no-such-file.json: not a preset"
expect_status 2 "$TPUSIM" info --set mxu.rows=0
expect_err_contains "--set mxu.rows: expected an integer in 1..1024, got '0'"
expect_status 2 "$TPUSIM" info --set mxu.rows=12abc
expect_status 2 "$TPUSIM" info --set nope=1
expect_err_contains "unknown key 'nope'"
expect_status 2 "$TPUSIM" info --set ici.topology=mesh
expect_status 2 "$TPUSIM" info --set mxu.double_buffer=yes
expect_status 2 "$TPUSIM" info --set clock_mhz=nan
expect_status 2 "$TPUSIM" info --bogus
expect_status 2 "$TPUSIM" nosuchcommand
expect_status 0 "$TPUSIM" --help
expect_out_contains "matmul"
expect_status 0 "$TPUSIM" info --help
