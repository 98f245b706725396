# tpusim scalesim: SCALE-Sim v2 files in, its reports out, its cycles in
# compat mode; bad config and topology files; the shipped networks.
cat > s32.cfg <<'CFG'
[general]
run_name = run32

[architecture_presets]
ArrayHeight:    32
ArrayWidth:     32
IfmapSramSzkB:   64
FilterSramSzkB:  64
OfmapSramSzkB:   64
IfmapOffset:    0
FilterOffset:   10000000
OfmapOffset:    20000000
Bandwidth : 10
Dataflow : ws
MemoryBanks:   1

[run_presets]
InterfaceBandwidth: CALC
CFG
printf 'Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\nConv1,  224, 224,    11, 11,    3,      96,     4,\n' > conv1.csv
# SCALE-Sim v2's own test run (its test/golden_trace), row for row
expect_status 0 "$TPUSIM" scalesim -c s32.cfg -t conv1.csv -p logs --compat scalesim
# SCALE-Sim's golden_trace files, line for line (header, layer 0)
report_line() {  # FILE LINE EXPECTED
  [ "$(sed -n "$2p" "logs/run32/$1")" = "$3" ] || die "$1 line $2: $(sed -n "$2p" "logs/run32/$1")"
}
report_line COMPUTE_REPORT.csv 1 "LayerID, Total Cycles, Stall Cycles, Overall Util %, Mapping Efficiency %, Compute Util %,"
report_line COMPUTE_REPORT.csv 2 "0, 112283, 0, 91.68309650614964, 94.53125, 90.78000992063492,"
report_line BANDWIDTH_REPORT.csv 1 "LayerID, Avg IFMAP SRAM BW, Avg FILTER SRAM BW, Avg OFMAP SRAM BW, Avg IFMAP DRAM BW, Avg FILTER DRAM BW, Avg OFMAP DRAM BW,"
report_line BANDWIDTH_REPORT.csv 2 "0, 29.338590881967885, 0.31035864734643714, 31.035864734643713, 15.686576632947475, 0.3280954308794592, 31.243441697000126,"
report_line DETAILED_ACCESS_REPORT.csv 1 "LayerID, SRAM IFMAP Start Cycle, SRAM IFMAP Stop Cycle, SRAM IFMAP Reads, SRAM Filter Start Cycle, SRAM Filter Stop Cycle, SRAM Filter Reads, SRAM OFMAP Start Cycle, SRAM OFMAP Stop Cycle, SRAM OFMAP Writes, DRAM IFMAP Start Cycle, DRAM IFMAP Stop Cycle, DRAM IFMAP Reads, DRAM Filter Start Cycle, DRAM Filter Stop Cycle, DRAM Filter Reads, DRAM OFMAP Start Cycle, DRAM OFMAP Stop Cycle, DRAM OFMAP Writes,"
report_line DETAILED_ACCESS_REPORT.csv 2 "0, 33.0, 112176.0, 3294225, 1.0, 109197.0, 34848, 63.0, 112283.0, 3484800, -3243.0, 111824.0, 1805023, -3275.0, 102937.0, 34848, 1102.0, 112639.0, 3484831,"
# USER bandwidth mode: SCALE-Sim's other buffer model is not reproduced, so no DRAM columns
sed 's/InterfaceBandwidth: CALC/InterfaceBandwidth: USER/; s/run_name = run32/run_name = user32/' s32.cfg > user.cfg
expect_status 0 "$TPUSIM" scalesim -c user.cfg -t conv1.csv -p logs --compat scalesim
[ "$(head -1 logs/user32/BANDWIDTH_REPORT.csv)" = "LayerID, Avg IFMAP SRAM BW, Avg FILTER SRAM BW, Avg OFMAP SRAM BW," ] ||
  die "USER mode bandwidth report: $(cat logs/user32/BANDWIDTH_REPORT.csv)"
[ ! -e logs/user32/DETAILED_ACCESS_REPORT.csv ] || die "USER mode wrote a detailed access report"
# a layer beyond the memory model's range is refused, not guessed
printf 'h\nBig, 16777216, 16777216, 3, 3, 64, 8, 1,\n' > big.csv
expect_status 2 "$TPUSIM" scalesim -c s32.cfg -t big.csv -p logs --compat scalesim
expect_err_contains "layer 'Big' of big.csv with s32.cfg: SCALE-Sim's memory model is not reproduced for an operand of more than 2^50 words"
# one within 2^50 words whose folds or drains would run for hours is refused from its shape
# (before: os and is ran past 20 s on this 2^48-row layer, ws took 3 s), in every dataflow
printf 'h\nHuge, 16777216, 16777216, 1, 1, 1, 1, 1,\n' > huge.csv
for df in ws os is; do
  expect_status 2 timeout 10 "$TPUSIM" scalesim -c s32.cfg -t huge.csv -p logs --compat scalesim --dataflow $df
  expect_err_contains "not reproduced for a layer whose model would take more than 2^27 steps"
done
# long flags and --json; os and is in compat mode
expect_status 0 "$TPUSIM" scalesim --config s32.cfg --topology conv1.csv --logdir logs --compat scalesim --dataflow os --json
echo "$OUT" > os.json
[ "$(json_get layers.0.cycles os.json)" = $((95 * 3 * (32 + 32 + 363 - 2) - 1)) ] || die "os cycles"
expect_status 0 "$TPUSIM" scalesim -c s32.cfg -t conv1.csv -p logs --compat scalesim --dataflow is --json
echo "$OUT" > is.json
[ "$(json_get layers.0.cycles is.json)" = $((12 * 95 * (64 + 32 + 96 - 2) - 1)) ] || die "is cycles"
# tpusim's own model: fewer cycles than SCALE-Sim's (double buffering, partial folds), ws only
expect_status 0 "$TPUSIM" scalesim -c s32.cfg -t conv1.csv -p logs --json
echo "$OUT" > own.json
[ "$(json_get layers.0.cycles own.json)" -lt 112283 ] || die "own model"
expect_status 0 "$TPUSIM" matmul --chip teach --set mxu.rows=32 --set mxu.cols=32 --m 3025 --n 96 --k 363 --level timing --json
echo "$OUT" > mm.json
[ "$(json_get cycles mm.json)" = "$(json_get layers.0.cycles own.json)" ] || die "own model is not matmul's"
# each run's reports in a directory named after what ran (run_dir_name in
# cmd_scalesim.c): SCALE-Sim's run_name with the dataflow's ending, and the
# model; none overwrites another. s32.cfg's run_name has no dataflow ending.
[ "$(json_get report_dir os.json)" = run32_os ] && [ "$(json_get report_dir is.json)" = run32_is ] \
  && [ "$(json_get report_dir own.json)" = run32_tpusim ] || die "report directories"
sed 's/run_name = run32/run_name = tpu_32_ws/' s32.cfg > ws.cfg
for a in "--compat scalesim:tpu_32_ws" "--compat scalesim --dataflow ws:tpu_32_ws" "--compat scalesim --dataflow os:tpu_32_os" \
         "--dataflow is:tpu_32_is_tpusim" ":tpu_32_ws_tpusim" "--chip teach --cores 2:tpu_32_ws_teach_2cores"; do
  # shellcheck disable=SC2086
  expect_status 0 "$TPUSIM" scalesim -c ws.cfg -t conv1.csv -p dirs ${a%%:*}
  expect_out_contains "reports in dirs/${a##*:}/"
  [ -s "dirs/${a##*:}/COMPUTE_REPORT.csv" ] || die "${a%%:*}: no dirs/${a##*:}/COMPUTE_REPORT.csv"
done
[ "$(ls dirs | wc -l)" = 5 ] || die "report directories: $(ls dirs)"
# tpusim's own os and is (mxu.h, Dataflows): matmul's cycles in that dataflow, fewer than SCALE-Sim's
for df in os is; do
  expect_status 0 "$TPUSIM" scalesim -c s32.cfg -t conv1.csv -p logs --dataflow $df --json
  echo "$OUT" > own_$df.json
  [ "$(json_get dataflow own_$df.json)" = $df ] && [ "$(json_get compat own_$df.json)" = none ] || die "own $df: names"
  [ "$(json_get layers.0.cycles own_$df.json)" -lt "$(json_get layers.0.scalesim_cycles own_$df.json)" ] || die "own $df"
  expect_status 0 "$TPUSIM" matmul --chip teach --set mxu.rows=32 --set mxu.cols=32 --m 3025 --n 96 --k 363 \
    --level timing --dataflow $df --json
  echo "$OUT" > mm_$df.json
  [ "$(json_get cycles mm_$df.json)" = "$(json_get layers.0.cycles own_$df.json)" ] || die "own $df is not matmul's"
done
# os: one fold row of 3025 x 96 on 32x32 = 95 M-tiles x 3 N-tiles, each 363 cycles of K (> 32 rows: the edges
# bind), then the last tile's 363 + (17 - 1) + 31 + 31 (the last M-tile has 3025 - 94*32 = 17 rows)
[ "$(json_get layers.0.cycles own_os.json)" = $((284 * 363 + 363 + 16 + 31 + 31 + 1)) ] || die "own os cycles"
# GEMM topologies and depthwise layers
printf 'Layer,M,N,K,\nG1,64,48,40,\n' > g.csv
expect_status 0 "$TPUSIM" scalesim -c s32.cfg -t g.csv -i gemm -p logs --compat scalesim --json
echo "$OUT" > g.json
[ "$(json_get layers.0.cycles g.json)" = $((2 * 2 * (64 + 32 + 64 - 2) - 1)) ] || die "gemm cycles"
printf 'h\nDP1, 10, 10, 3, 3, 4, 1, 1,\n' > dp.csv
expect_status 0 "$TPUSIM" scalesim -c s32.cfg -t dp.csv -p logs --compat scalesim --json
echo "$OUT" > dp.json
[ "$(json_get layers.3.name dp.json)" = DP1Channel_3 ] && [ "$(json_get layers.3.k dp.json)" = 9 ] || die "depthwise"
# the shipped networks and SCALE-Sim's own topologies (when the shared copy is there)
for f in alexnet resnet18 resnet50; do
  expect_status 0 "$TPUSIM" scalesim -c "$TPU_ROOT/docs/scalesim/tpu_128.cfg" -t "$TPU_ROOT/docs/scalesim/$f.csv" -p logs --compat scalesim
done
expect_status 0 "$TPUSIM" scalesim -c "$TPU_ROOT/docs/scalesim/tpu_128.cfg" -t "$TPU_ROOT/docs/scalesim/bert_base_layer.csv" -i gemm -p logs
shared="$TPU_ROOT/../shared/scalesim-topologies"
if [ -d "$shared" ]; then
  for f in alexnet Resnet18 Resnet50 mobilenet yolo_tiny; do
    expect_status 0 "$TPUSIM" scalesim -c s32.cfg -t "$shared/$f.csv" -p logs --compat scalesim
  done
  for f in gpt2 transformer_partial; do
    expect_status 0 "$TPUSIM" scalesim -c s32.cfg -t "$shared/$f.csv" -i gemm -p logs --compat scalesim
  done
fi
expect_status 0 "$TPUSIM" scalesim --help
expect_out_contains "usage: tpusim scalesim -c FILE.cfg"
[ -z "$ERR" ] || die "--help wrote to stderr: $ERR"
# bad input: exit 2 naming file, line:col, field and what is allowed
expect_status 2 "$TPUSIM" scalesim -c s32.cfg
expect_err_contains "-t TOPOLOGY.csv is required"
expect_status 2 "$TPUSIM" scalesim -c s32.cfg -t conv1.csv --compat yes
expect_err_contains "--compat: expected scalesim or none, got 'yes'"
expect_status 2 "$TPUSIM" scalesim -c nope.cfg -t conv1.csv
expect_err_contains "nope.cfg: cannot read"
bad_inputs "$TPUSIM" scalesim -t conv1.csv -c <<'CASES'
df.cfg|[general]\nrun_name = x\n[architecture_presets]\nDataflow : xs\n|df.cfg:4:12: field 'Dataflow': expected ws, os or is, got 'xs'
rows.cfg|[general]\nrun_name = x\n[architecture_presets]\nArrayHeight: 0\n|rows.cfg:4:14: field 'ArrayHeight': expected an integer in 1..1024, got '0'
key.cfg|[general]\nrun_name = x\n[architecture_presets]\nArrayHight: 8\n|key.cfg:4:1: unknown key 'ArrayHight' in section [architecture_presets]
sec.cfg|[generals]\n|sec.cfg:1:2: unknown section 'generals'
bw.cfg|[run_presets]\nInterfaceBandwidth: FAST\n|field 'InterfaceBandwidth': expected CALC or USER
miss.cfg|[general]\nrun_name = x\n[architecture_presets]\nArrayHeight: 8\n|missing key 'ArrayWidth'
nokey.cfg|ArrayHeight: 8\n|nokey.cfg:1:1: a key before any [section]
slash.cfg|[general]\nrun_name = ../x\n|no '/' allowed
CASES
bad_inputs "$TPUSIM" scalesim -c s32.cfg -t <<'CASES'
few.csv|h\nC1, 10, 10, 3, 3, 4, 8,\n|few.csv:2:1: expected name, IFMAP Height
neg.csv|h\nC1, 10, -10, 3, 3, 4, 8, 1,\n|neg.csv:2:9: field 'IFMAP Width': expected an integer in 1..16777216, got '-10'
big.csv|h\nC1, 10, 10, 11, 3, 4, 8, 1,\n|big.csv:2:13: field 'Filter Height': 11 is larger than the IFMAP height 10
empty.csv|h\n\n|empty.csv: no layers
word.csv|h\nC1, 10, ten, 3, 3, 4, 8, 1,\n|field 'IFMAP Width'|got 'ten'
CASES
bad_inputs "$TPUSIM" scalesim -c s32.cfg -i gemm -t <<'CASES'
g3.csv|Layer,M,N,K,\nG, 4, 4,\n|g3.csv:2:1: expected name, M, N, K
gk.csv|Layer,M,N,K,\nG, 4, 4, 0,\n|gk.csv:2:10: field 'K'
CASES
