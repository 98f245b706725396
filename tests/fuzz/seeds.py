#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/NAME/, one file
per seed) from the repository's own example files and from small files
built here; run from the repository root: python3 tests/fuzz/seeds.py.
The seeds are committed (make test replays them); this script says where
each came from and rebuilds them. Crash reproducers found by make fuzz are
added by hand as tests/fuzz/NAME/crash-*, next to the seeds, and kept."""
import glob, gzip, json, os, shutil, struct, subprocess, sys, tempfile, zlib

sys.path.insert(0, "tests/e2e")
from tfrecord_write import example, record   # noqa: E402

ROOT = "tests/fuzz"
JOURNAL = [  # the two lines of a real journal (see main)
    '{"point":0,"axes":{"m":"8"},"status":"ok","report":{"chip":"tpu-v2-8","m":8,"n":8,"k":8,"precision":"bf16","level":"tile","cycles":150,"time_s":2.1428571428571428e-7,"mxu_utilization":0.00020833333333333335,"flops_per_s":4778666666.666667,"peak_flops_per_s":22937600000000.0,"tiles":1,"macs":512,"weight_loads":1,"wall_s":1.381499896524474e-5,"max_abs_err":0.022618835223029876,"max_rel_err":0.0029438018198744008,"schema_version":1,"command":"matmul","configuration":{"chip":{"name":"tpu-v2-8","description":"Cloud TPU v2-8: 4 chips, 2 TensorCores per chip, one 128x128 MXU per core","source":"Jouppi et al., \'A Domain-Specific Supercomputer for Training Deep Neural Networks\', CACM 63(7), 2020, Table 3 (TPUv2: 700 MHz, 2 cores/chip, 1 MXU of 128x128 per core, 16 GiB HBM at 700 GB/s per chip, ICI links of 496 Gbit/s); Norrie et al., \'The Design Process for Google\'s Training Chips: TPUv2 and TPUv3\', IEEE Micro 41(2), 2021 (vector registers of 8 sublanes x 128 lanes, vector memory). Cloud TPU docs: 4 chips of 2 cores on a 2-D torus. VMEM size, HBM and ICI latencies, VPU op costs, the DMA engines (transfers in flight, request size) and the on-chip path between the two cores are not published; those values are assumptions, each explained in docs/CHIPS.md.","cores":8,"cores_per_chip":2,"clock_mhz":700.0,"mxu":{"rows":128,"cols":128,"per_core":1,"double_buffer":true},"vpu":{"sublanes":8,"lanes":128,"cycles":{"elementwise":1,"divide":4,"transcendental":4,"cross_lane":4,"cross_sublane":2}},"hbm":{"capacity_gib":16.0,"bandwidth_gb_per_s":700.0,"latency_ns":500.0},"vmem":{"capacity_kib":16384},"ici":{"link_gbit_per_s":496.0,"latency_ns":1000.0,"topology":"torus"},"dma":{"outstanding":16,"request_bytes":512},"onchip":{"link_gbit_per_s":2800.0,"latency_ns":500.0},"compiler":{"fusion":true,"implicit_conv":true,"memory_planning":true},"host":{"dispatch_s":0.00050000000000000001,"infeed_gb_per_s":16.0,"compile_s":2.0,"compile_s_per_kernel":0.02}}},"tpusim_version":"0.2.0"},"row":{"cycles":150,"time_s":2.1428571428571428e-7,"mxu_utilization":0.00020833333333333335,"flops_per_s":4778666666.666667,"achieved_flops_per_s":null,"tiles":1,"macs":512,"hbm_bytes":null,"bound":null,"max_abs_err":0.022618835223029876,"max_rel_err":0.0029438018198744008}}',
    '{"point":1,"axes":{"m":"16"},"status":"ok","report":{"chip":"tpu-v2-8","m":16,"n":8,"k":8,"precision":"bf16","level":"tile","cycles":158,"time_s":2.2571428571428571e-7,"mxu_utilization":0.00039556962025316455,"flops_per_s":9073417721.5189877,"peak_flops_per_s":22937600000000.0,"tiles":1,"macs":1024,"weight_loads":1,"wall_s":4.5880005927756429e-6,"max_abs_err":0.023080954400328757,"max_rel_err":0.0026178092046096734,"schema_version":1,"command":"matmul","configuration":{"chip":{"name":"tpu-v2-8","description":"Cloud TPU v2-8: 4 chips, 2 TensorCores per chip, one 128x128 MXU per core","source":"Jouppi et al., \'A Domain-Specific Supercomputer for Training Deep Neural Networks\', CACM 63(7), 2020, Table 3 (TPUv2: 700 MHz, 2 cores/chip, 1 MXU of 128x128 per core, 16 GiB HBM at 700 GB/s per chip, ICI links of 496 Gbit/s); Norrie et al., \'The Design Process for Google\'s Training Chips: TPUv2 and TPUv3\', IEEE Micro 41(2), 2021 (vector registers of 8 sublanes x 128 lanes, vector memory). Cloud TPU docs: 4 chips of 2 cores on a 2-D torus. VMEM size, HBM and ICI latencies, VPU op costs, the DMA engines (transfers in flight, request size) and the on-chip path between the two cores are not published; those values are assumptions, each explained in docs/CHIPS.md.","cores":8,"cores_per_chip":2,"clock_mhz":700.0,"mxu":{"rows":128,"cols":128,"per_core":1,"double_buffer":true},"vpu":{"sublanes":8,"lanes":128,"cycles":{"elementwise":1,"divide":4,"transcendental":4,"cross_lane":4,"cross_sublane":2}},"hbm":{"capacity_gib":16.0,"bandwidth_gb_per_s":700.0,"latency_ns":500.0},"vmem":{"capacity_kib":16384},"ici":{"link_gbit_per_s":496.0,"latency_ns":1000.0,"topology":"torus"},"dma":{"outstanding":16,"request_bytes":512},"onchip":{"link_gbit_per_s":2800.0,"latency_ns":500.0},"compiler":{"fusion":true,"implicit_conv":true,"memory_planning":true},"host":{"dispatch_s":0.00050000000000000001,"infeed_gb_per_s":16.0,"compile_s":2.0,"compile_s_per_kernel":0.02}}},"tpusim_version":"0.2.0"},"row":{"cycles":158,"time_s":2.2571428571428571e-7,"mxu_utilization":0.00039556962025316455,"flops_per_s":9073417721.5189877,"achieved_flops_per_s":null,"tiles":1,"macs":1024,"hbm_bytes":null,"bound":null,"max_abs_err":0.023080954400328757,"max_rel_err":0.0026178092046096734}}',
]


def put(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def copy(target, pattern, prefix=b""):
    for p in sorted(glob.glob(pattern)):
        put(target, os.path.basename(p), prefix + open(p, "rb").read())


def idx(dims, code, payload):
    return struct.pack(">BBBB", 0, 0, code, len(dims)) + b"".join(struct.pack(">I", d) for d in dims) + payload


def npy(descr, shape, payload):
    h = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, repr(tuple(shape)))
    h += " " * (63 - (10 + len(h)) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + payload


def ckpt(seed=1, batch=2, epochs=1, step=5, v4=False):
    """Format 3 (frontend/train.c): magic, 8 u64 fields, the run's sums (4 +
    7 stall kinds, f64), each epoch's history (5 f64), the per-core sums
    (cores, cycles, 16 cores x 7 stall kinds, u64), the f32 arrays, CRC-32.
    Format 4 (v4): the per-core sums hold the cores' rows only."""
    n = 15   # the target's model: dense 4 -> 3, Adam (params, m, v)
    body = (b"TPUSIMC4" if v4 else b"TPUSIMC3") + struct.pack("<8Q", n, 2, seed, batch, epochs, step, step, step)
    body += struct.pack("<11d", 1000.0, 60.0, 16384.0, 1e-6, 100, 0, 0, 0, 800, 100, 0)
    body += b"".join(struct.pack("<5d", 1.2, 0.5, 1.3, 0.4, 1e-6) for _ in range(epochs))
    body += struct.pack("<2Q", 1, 1000) + struct.pack("<7Q", 100, 0, 0, 0, 800, 100, 0) + bytes(0 if v4 else 8 * 7 * 15)
    body += b"".join(struct.pack("<f", 0.01 * i) for i in range(3 * n))
    return body + struct.pack("<I", zlib.crc32(body) & 0xffffffff)


def main():
    for d in glob.glob(os.path.join(ROOT, "*/")):
        for f in glob.glob(d + "*"):
            if not os.path.basename(f).startswith("crash-"):
                os.remove(f)
    copy("chip", "sim/presets/*.json")
    put("chip", "seed-base.json", '{"base": "teach", "mxu": {"rows": 8, "cols": 8}}\n')
    copy("program", "docs/examples/train_step.json")
    put("program", "seed-per-core.json", '{"cores": 2, "buffers": [{"name": "a", "space": "hbm", "shape": [256, 128]},'
        ' {"name": "b", "space": "vmem", "shape": [256, 128]}, {"name": "w", "space": "vmem", "shape": [256, 128]},'
        ' {"name": "c", "space": "vmem", "shape": [128, 128]}],'
        ' "per_core": [{"ops": [{"op": "dma", "src": "a", "dst": "b"}, {"op": "matmul", "a": "b", "b": "w",'
        ' "trans_a": true, "dst": "c"}, {"op": "all_reduce", "src": "c", "dst": "c"}]},'
        ' {"ops": [{"op": "vpu", "fn": "relu", "in": ["c"], "out": ["c"]}, {"op": "all_reduce", "src": "c", "dst": "c"}]}]}\n')
    copy("model", "docs/examples/small-*.json")
    copy("model", "tests/data/keras/*.json")
    # Keras 1: a channels-first Model with Merge(mode="concat") and 3-element inbound nodes
    put("model", "seed-keras1.json", '{"class_name": "Model", "keras_version": "1.0.8", "config": {"name": "k1", "input_layers": [["in", 0, 0]], "output_layers": [["d", 0, 0]], "layers": [ {"class_name": "InputLayer", "name": "in", "config": {"name": "in", "batch_input_shape": [null, 3, 16, 12], "input_dtype": "float32"}, "inbound_nodes": []}, {"class_name": "Convolution2D", "name": "c1", "config": {"name": "c1", "nb_filter": 8, "nb_row": 3, "nb_col": 3, "border_mode": "same", "subsample": [2, 2], "dim_ordering": "th", "bias": true, "activation": "relu", "init": "glorot_uniform"}, "inbound_nodes": [[["in", 0, 0]]]}, {"class_name": "BatchNormalization", "name": "bn", "config": {"name": "bn", "mode": 0, "axis": 1, "epsilon": 0.001, "momentum": 0.99}, "inbound_nodes": [[["c1", 0, 0]]]}, {"class_name": "Convolution2D", "name": "c2", "config": {"name": "c2", "nb_filter": 4, "nb_row": 1, "nb_col": 1, "border_mode": "valid", "dim_ordering": "th", "bias": false}, "inbound_nodes": [[["bn", 0, 0]]]}, {"class_name": "Merge", "name": "m", "config": {"name": "m", "mode": "concat", "concat_axis": 1}, "inbound_nodes": [[["bn", 0, 0], ["c2", 0, 0]]]}, {"class_name": "MaxPooling2D", "name": "p", "config": {"name": "p", "pool_size": [2, 2], "strides": [2, 2], "border_mode": "valid", "dim_ordering": "th"}, "inbound_nodes": [[["m", 0, 0]]]}, {"class_name": "Flatten", "name": "f", "config": {"name": "f"}, "inbound_nodes": [[["p", 0, 0]]]}, {"class_name": "Dropout", "name": "dr", "config": {"name": "dr", "p": 0.5}, "inbound_nodes": [[["f", 0, 0]]]}, {"class_name": "Dense", "name": "d", "config": {"name": "d", "output_dim": 5, "activation": "softmax"}, "inbound_nodes": [[["dr", 0, 0]]]}]}} ')
    # a native transformer and a tf.keras 2 ViT block (issue #29's layers)
    put("model", "transformer_native.json", (
        '{ "input": [8], "layers": [\n  { "type": "embedding", "input_dim": 50, "output_dim": 6, "token_ty'
        'pes": 2 },\n  { "type": "position_embedding", "max_length": 16 },\n  { "type": "layer_normalizatio'
        'n", "name": "e" },\n  { "type": "multi_head_attention", "name": "a", "num_heads": 2, "key_dim": 3'
        ' },\n  { "type": "add", "inputs": ["a", "e"] }, { "type": "layer_normalization" },\n  { "type": "t'
        'ake" }, { "type": "dense", "units": 6 }, { "type": "tanh" }, { "type": "dense", "units": 3 } ] }'
        '\n'))
    put("model", "vit_mha_tf2.json", (
        '{"class_name": "Functional", "keras_version": "2.15.0", "config": {"name": "m", "layers": [\n{"cl'
        'ass_name": "InputLayer", "name": "in", "config": {"name": "in", "batch_input_shape": [null, 6, 8'
        ']}, "inbound_nodes": []},\n{"class_name": "LayerNormalization", "name": "ln", "config": {"name": '
        '"ln", "axis": -1, "epsilon": 1e-6}, "inbound_nodes": [[["in", 0, 0, {}]]]},\n{"class_name": "Mult'
        'iHeadAttention", "name": "mha", "config": {"name": "mha", "num_heads": 2, "key_dim": 4, "value_d'
        'im": null, "dropout": 0.1, "use_bias": true, "output_shape": null, "attention_axes": null}, "inb'
        'ound_nodes": [[["ln", 0, 0, {"value": ["ln", 0, 0], "use_causal_mask": true}]]]},\n{"class_name":'
        ' "Add", "name": "add", "config": {"name": "add"}, "inbound_nodes": [[["mha", 0, 0, {}], ["in", 0'
        ', 0, {}]]]},\n{"class_name": "Dense", "name": "ff", "config": {"name": "ff", "units": 16, "activa'
        'tion": "gelu"}, "inbound_nodes": [[["add", 0, 0, {}]]]},\n{"class_name": "Softmax", "name": "sm",'
        ' "config": {"name": "sm", "axis": 1}, "inbound_nodes": [[["ff", 0, 0, {}]]]},\n{"class_name": "Gl'
        'obalAveragePooling1D", "name": "gap", "config": {"name": "gap"}, "inbound_nodes": [[["sm", 0, 0,'
        ' {}]]]},\n{"class_name": "Dense", "name": "out", "config": {"name": "out", "units": 3}, "inbound_'
        'nodes": [[["gap", 0, 0, {}]]]}],\n"input_layers": [["in", 0, 0]], "output_layers": [["out", 0, 0]'
        ']}}\n'))
    # double-encoded: json.dump(model.to_json()) wrote a JSON string holding the model
    put("model", "seed-double-encoded.json", json.dumps(open("tests/data/keras/res_func_k3.json").read()))
    # jansson 2.14's lexer overran the heap when a grow of its token buffer failed (base.c: tpu_json_decode)
    put("model", "seed-lexer-oom.json", '{ "input": [8, 8, 3], "layers": [ { "type": "conv2d", "name": "m", "filters": 4,'
        ' "kernel": 3, "padding": "same" }, { "type": "swish", "name": "ms" }, { "type": "global_avgpool" },'
        ' { "type": "dense", "units": 10 } ] }')
    for name in ("alexnet@67x67x3:10", "vgg16@32x32x3:10", "vgg19@48x48x1:5"):
        put("model", "seed-zoo-" + name.split("@")[0], "zoo:" + name)
    put("model", "seed-graph.json", '{"input": [8, 8, 2], "layers": ['
        '{"type": "conv2d", "name": "a", "filters": 4, "kernel": 3, "padding": "same"},'
        '{"type": "batch_normalization", "name": "bn"},'
        '{"type": "conv2d", "name": "b", "inputs": ["bn"], "filters": 4, "kernel": 1},'
        '{"type": "add", "inputs": ["a", "b"]}, {"type": "zero_padding", "padding": 1},'
        '{"type": "maxpool", "size": 3, "stride": 2, "padding": "same"},'
        '{"type": "global_avgpool"}, {"type": "dense", "units": 3, "activation": "softmax"}]}\n')
    # a binary head: a sigmoid layer after a conv's one value, a flatten, the
    # loss named (binary cross-entropy folds the sigmoid in)
    put("model", "seed-binary.json", '{"input": [6, 6, 1], "loss": "binary_cross_entropy", "layers": ['
        '{"type": "conv2d", "filters": 3, "kernel": 3, "stride": 2, "activation": "relu"},'
        '{"type": "conv2d", "filters": 1, "kernel": 2}, {"type": "sigmoid"}, {"type": "flatten"}]}\n')
    # grouped convolutions: groups 2 'same' with bias, then groups 4 strided
    put("model", "seed-grouped.json", '{"input": [6, 6, 4], "layers": ['
        '{"type": "conv2d", "filters": 6, "kernel": 3, "padding": "same", "groups": 2, "activation": "relu"},'
        '{"type": "conv2d", "filters": 4, "kernel": 2, "stride": 2, "groups": 2, "use_bias": false},'
        '{"type": "flatten"}, {"type": "dense", "units": 3}]}\n')
    # two outputs: class scores and a tanh value (its head's loss, squared
    # error), weighted
    put("model", "seed-outputs.json", '{"input": [6], "outputs": [{"layer": "p", "weight": 1},'
        '{"layer": "v", "weight": 0.5}], "layers": [{"type": "dense", "name": "h", "units": 4, "activation": "relu"},'
        '{"type": "dense", "name": "p", "units": 3}, {"type": "dense", "name": "v", "inputs": "h", "units": 1,'
        '"activation": "tanh"}]}\n')
    # ONNX: the files of tests/e2e/t_onnx.sh and t_badinput.sh, built with
    # Debian's python3-onnx (which the system's python3 has)
    with tempfile.TemporaryDirectory() as tmp:
        for how in ("make", "bad"):
            subprocess.run(["/usr/bin/python3", "tests/e2e/onnx_write.py", how, tmp], check=True)
        copy("onnx", os.path.join(tmp, "*.onnx"))
    copy("pipeline", "datafeed/examples/*.json")
    copy("pipeline", "docs/examples/train-*.json")
    put("npy", "seed-f4.npy", npy("<f4", [2, 3], struct.pack("<6f", *range(6))))
    put("npy", "seed-u1.npy", npy("|u1", [3, 2, 2], bytes(range(12))))
    put("npy", "seed-i8.npy", npy("<i8", [3], struct.pack("<3q", 0, 1, 2)))
    images = idx([3, 2, 2], 8, bytes(range(12)))
    labels = idx([3], 8, bytes([0, 1, 2]))
    put("idx", "seed-images", b"\x00" + images)
    put("idx", "seed-images-gz", b"\x00" + gzip.compress(images, mtime=0))
    put("idx", "seed-images-rank4", b"\x00" + idx([3, 1, 2, 2], 8, bytes(range(12))))
    put("idx", "seed-labels", b"\x01" + labels)
    put("idx", "seed-labels-gz", b"\x01" + gzip.compress(labels, mtime=0))
    copy("scalesim", "docs/scalesim/*.cfg", b"\x00")
    copy("scalesim", "docs/scalesim/alexnet.csv", b"\x01")
    copy("scalesim", "docs/scalesim/bert_base_layer.csv", b"\x02")
    put("sweep", "seed-train.json", '{ "command": "train", "options": {"model": "mlp", "level": "timing",'
        ' "data": "synthetic", "steps-per-epoch": 2}, "axes": [{"option": "batch", "values": [32, 64]},'
        ' {"option": "cores", "values": [1, 2]}, {"set": "mxu.rows", "values": [128, 64]}]}\n')
    put("sweep", "seed-matmul.json", '{"command": "matmul", "options": {"m": 256, "level": "timing",'
        ' "set": {"hbm.bandwidth_gbs": 600}}, "axes": [{"option": "n", "values": [128, 256]}]}\n')
    put("ckpt", "seed-valid", b"\x00" + ckpt())
    put("ckpt", "seed-fixcrc", b"\x01" + ckpt(step=7))
    put("ckpt", "seed-step-2e63", b"\x01" + ckpt(step=1 << 63))   # asserted in the optimizer of 0.2.0
    put("ckpt", "seed-valid-v4", b"\x00" + ckpt(v4=True))
    put("tfrecord", "seed-three", b"".join(record(example(bytes((i * 7 + k) & 255 for k in range(12)), i))
                                           for i in range(3)))
    rec = bytes([1]) + bytes((i * 5) % 256 for i in range(3072))   # CIFAR-10: a label byte, 3072 pixels
    put("cifar", "seed-two", rec * 2)
    put("cifar", "seed-short", rec + rec[:100])
    put("images", "seed-png", b"\x00" + png(4, 3, (10, 200, 30)))
    jpg = subprocess.run(["cjpeg", "-quality", "90"], input=b"P6 4 3 255\n" + bytes((10, 200, 30)) * 12,
                         stdout=subprocess.PIPE, check=True).stdout   # Debian's libjpeg-turbo-progs
    put("images", "seed-jpeg", b"\x01" + jpg)
    put("images", "seed-gif", b"\x02" + jpg[:40])
    # a sweep's journal, as `tpusim sweep --out D matmul --m 8,16 --n 8 --k 8` wrote it (tpusim 0.2.0+),
    # beside that sweep's sweep.json (tests/fuzz/fz_journal.c); then one point failed, and a torn last line
    put("journal", "seed-two", JOURNAL[0] + "\n" + JOURNAL[1] + "\n")
    put("journal", "seed-failed", JOURNAL[0] + "\n" + '{"point":1,"axes":{"m":"16"},"status":"failed","exit":2,'
        '"error":"--m: expected an integer","report":null,"row":null}\n')
    put("journal", "seed-torn", JOURNAL[0] + "\n" + JOURNAL[1][:80])


def png(w, h, rgb):
    """An 8-bit RGB PNG of one colour, written by hand (zlib for IDAT)."""
    raw = b"".join(b"\0" + bytes(rgb) * w for _ in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


if __name__ == "__main__":
    main()
