# The findings of the outside bad-input sweep (#18), one section each: the
# input that went wrong, and what it gives now. Each failed on the release
# before the fix (see the commit that added it). The corpus of every other
# bad input is tests/e2e/t_badinput.sh.
S="--data synthetic --synthetic-n 256 --batch 64"
PY=/usr/bin/python3
# idx DIR H W TEST_H TEST_W [gz]: the four MNIST-style IDX files, 256
# training and 64 test images of random pixels, labels 0..9
idx() {
  $PY - "$@" <<'PY'
import gzip, os, random, struct, sys
d, h, w, th, tw = sys.argv[1], *map(int, sys.argv[2:6])
gz = len(sys.argv) > 6
os.makedirs(d, exist_ok=True)
r = random.Random(0)
for pre, n, hh, ww in (("train", 256, h, w), ("t10k", 64, th, tw)):
    img = struct.pack(">BBBBIII", 0, 0, 8, 3, n, hh, ww) + bytes(r.randrange(256) for _ in range(n * hh * ww))
    lab = struct.pack(">BBBBI", 0, 0, 8, 1, n) + bytes(r.randrange(10) for _ in range(n))
    for kind, data in (("images-idx3", img), ("labels-idx1", lab)):
        p = "%s/%s-%s-ubyte" % (d, pre, kind)
        open(p + (".gz" if gz else ""), "wb").write(gzip.compress(data) if gz else data)
PY
}
# no report prints nan or inf, and every JSON number is finite
no_nan() { ! grep -qiE '(^|[^a-z0-9_.])-?(nan|inf|infinity)([^a-z0-9_.]|$)' "$T/out.txt" || die "nan or inf in the output: $OUT"; }

# {== Crashes (1): every split of a data source is checked against the model.
# The test split of another image size was read past its buffer (ASan: heap
# over-read in fe_forward; the release build exited 0 with garbage accuracy).
idx d1 28 28 32 32
expect_status 2 "$TPUSIM" train --model mlp --data d1 --batch 64 --cores 2
expect_err_contains "--data d1 (test split): d1/t10k-images-idx3-ubyte: the test split has samples of 32x32x1 and 10 classes; the model takes input 28x28x1"
idx d2 32 32 28 28
expect_status 2 "$TPUSIM" train --model mlp --data d2 --batch 64 --cores 2 --level timing
expect_err_contains "d2/train-images-idx3-ubyte: the training split has samples of 32x32x1"
# a pipeline's source fits the model, but --data's test split does not
printf '{ "source": { "kind": "synthetic", "n": 128, "shape": [32, 32, 3], "classes": 10 },\n  "stages": [ { "op": "batch", "batch_size": 64, "drop_remainder": true } ] }' > rgb.json
printf '{ "input": [32, 32, 3], "layers": [ { "type": "flatten" }, { "type": "dense", "units": 10 } ] }' > rgbm.json
expect_status 2 "$TPUSIM" train --model rgbm.json --pipeline rgb.json --batch 64
expect_err_contains "t10k-images-idx3-ubyte.gz: the test split has samples of 28x28x1 and 10 classes; the model takes input 32x32x3"
# synthetic data too small for a test split
expect_status 2 "$TPUSIM" train --model mlp --data synthetic --synthetic-n 3 --batch 1 --cores 1
expect_err_contains "synthetic source: the test split has no samples"
# }==

# {== Corrupt gzip: every .gz input's trailer (CRC-32, length) is checked and
# nothing may follow it; an image file's data is used only after the check.
# (An image file's CRC error was found after its images were published and
# never delivered: exit 0; a label file's trailer was never read.)
flip() { $PY -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[-int(sys.argv[2])]^=1; open(p,"wb").write(b)' "$1" "$2"; }
junk() { $PY -c 'import sys; p=sys.argv[1]; b=open(p,"rb").read(); open(p,"wb").write(b+b"junk"+b[-4:])' "$1"; }
idx g 28 28 28 28 gz
flip g/train-images-idx3-ubyte.gz 6
expect_status 2 "$TPUSIM" train --model mlp --data g --batch 64 --cores 2
expect_out_contains "Epoch 1/1"                 # found mid-training
expect_err_contains "the pipeline g/train-images-idx3-ubyte.gz: corrupt gzip file: the CRC-32 in its trailer does not match the data"
rm -r g; idx g 28 28 28 28 gz
flip g/t10k-labels-idx1-ubyte.gz 6
expect_status 2 "$TPUSIM" train --model mlp --data g --batch 64 --cores 2
expect_err_contains "g/t10k-labels-idx1-ubyte.gz: corrupt gzip file: the CRC-32 in its trailer does not match the data"
rm -r g; idx g 28 28 28 28 gz
flip g/train-labels-idx1-ubyte.gz 2               # the length field
expect_status 2 "$TPUSIM" train --model mlp --data g --batch 64 --cores 2
expect_err_contains "g/train-labels-idx1-ubyte.gz: corrupt gzip file: the length in its trailer does not match the data"
rm -r g; idx g 28 28 28 28 gz
junk g/train-labels-idx1-ubyte.gz
expect_status 2 "$TPUSIM" train --model mlp --data g --batch 64 --cores 2
expect_err_contains "g/train-labels-idx1-ubyte.gz: corrupt gzip file: trailing data after the gzip stream"
rm -r g; idx g 28 28 28 28 gz
junk g/train-images-idx3-ubyte.gz
expect_status 2 "$TPUSIM" train --model mlp --data g --batch 64 --cores 2
expect_err_contains "g/train-images-idx3-ubyte.gz: corrupt gzip file: trailing data after the gzip stream"
# }==

# {== Malformed input accepted: a NUL byte and garbage after the JSON, in
# every JSON file and in a .npy header; a program description that is not a
# string; an infeed with both ready_cycles and batches.
printf '{ "ops": [] }\0garbage' > nul.json
expect_status 2 "$TPUSIM" run --chip teach --program nul.json
expect_err_contains "nul.json:1:14: contains a NUL byte; expected JSON text"
printf '{ "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 },\n  "stages": [ { "op": "batch", "batch_size": 2 } ] }\0{' > nulp.json
expect_status 2 "$TPUSIM" pipeline --pipeline nulp.json
expect_err_contains "nulp.json:2:53: contains a NUL byte"
expect_status 2 "$TPUSIM" train --model mlp --pipeline nulp.json
expect_err_contains "nulp.json:2:53: contains a NUL byte"
printf '{ "input": [4], "layers": [ { "type": "dense", "units": 2 } ] }\0x' > nulm.json
expect_status 2 "$TPUSIM" model nulm.json
expect_err_contains "nulm.json:1:64: contains a NUL byte"
printf '{ "base": "teach" }\0x' > nulc.json
expect_status 2 "$TPUSIM" info --chip nulc.json
expect_err_contains "nulc.json:1:20: contains a NUL byte"
printf '{ "command": "matmul", "axes": [] }\0x' > nuls.json
expect_status 2 "$TPUSIM" sweep --no-plot --out sw --file nuls.json
expect_err_contains "nuls.json:1:36: contains a NUL byte"
$PY - <<'PY'
import struct
def npy(name, header, data=struct.pack("<4f", 1, 2, 3, 4)):
    h = header + b" " * ((64 - (10 + len(header) + 1) % 64) % 64) + b"\n"
    open(name, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h + data)
npy("a.npy", b"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }")
npy("nul.npy", b"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }\0garbage")
npy("extra.npy", b"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), 'x': 1}")
PY
expect_status 0 "$TPUSIM" matmul --a a.npy --b a.npy
expect_status 2 "$TPUSIM" matmul --a nul.npy --b a.npy
expect_err_contains "nul.npy: header byte 59 is a NUL byte"
expect_status 2 "$TPUSIM" matmul --a a.npy --b extra.npy
expect_err_contains "extra.npy: header has a key 'x'"
printf '{ "description": 5, "ops": [] }' > desc.json
expect_status 2 "$TPUSIM" run --chip teach --program desc.json
expect_err_contains "desc.json:1:18: field 'description': expected a string, got an integer"
printf '{ "ops": [], "infeed": { "ready_cycles": [0, 10], "batches": 2 } }' > both.json
expect_status 2 "$TPUSIM" run --chip teach --program both.json
expect_err_contains "both.json:1:62: field 'infeed.batches': give either \"ready_cycles\""
# }==
