#!/usr/bin/python3
"""ONNX files for tests/e2e/t_onnx.sh, built with Debian's python3-onnx
helper API (onnx.helper, onnx.numpy_helper), as torch.onnx.export writes
them (NCHW, initializers, opsets 11..17), and the checks against ONNX's own
shape inference.

  onnx_write.py make DIR           writes DIR/*.onnx (and the IDX data set and
                                   the reference loss of loss.onnx)
  onnx_write.py bad DIR            writes DIR/o_*.onnx, files tpusim refuses
                                   (tests/e2e/t_badinput.sh's corpus)
  onnx_write.py check FILE M.JSON  compares `tpusim model FILE --json` (M.JSON)
                                   with onnx.shape_inference: the parameter
                                   count and every layer's output shape
"""
import json, os, struct, sys

import numpy as np
import onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh

RNG = np.random.default_rng(30)


def w(name, *shape, scale=0.3):
    return nh.from_array((RNG.standard_normal(shape) * scale).astype(np.float32), name)


def pos(name, n):
    return nh.from_array((RNG.random(n) + 0.5).astype(np.float32), name)


def bn(x, y, c, name, inits):
    inits += [pos(name + "_g", c), w(name + "_b", c), w(name + "_m", c), pos(name + "_v", c)]
    return h.make_node("BatchNormalization", [x, name + "_g", name + "_b", name + "_m", name + "_v"], [y],
                       name=name, epsilon=1e-5, momentum=0.9)


def model(nodes, name, shape, out, inits, opset=13, classes=10):
    g = h.make_graph(nodes, name, [h.make_tensor_value_info("x", T.FLOAT, ["N"] + shape)],
                     [h.make_tensor_value_info(out, T.FLOAT, ["N", classes])], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)], producer_name="onnx_write.py",
                     producer_version="1")
    onnx.checker.check_model(m)
    return m


def small_cnn():
    """Conv (same pads), Relu, MaxPool, Flatten of a C x H x W image into a Gemm (transB), Softmax."""
    inits = [w("w1", 8, 1, 3, 3), w("b1", 8), w("w2", 10, 8 * 14 * 14), w("b2", 10)]
    nodes = [h.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             h.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             h.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
             h.make_node("Flatten", ["p1"], ["f"], name="flatten"),
             h.make_node("Gemm", ["f", "w2", "b2"], ["z"], name="fc", transB=1),
             h.make_node("Softmax", ["z"], ["y"], name="softmax", axis=1)]
    return model(nodes, "small_cnn", [1, 28, 28], "y", inits, opset=11)


def resnet():
    """A ResNet-style graph as PyTorch exports it: a strided Conv with
    symmetric pads (not Keras' 'same'), BatchNormalization, MaxPool k3 s2
    p1 after a Relu, a residual block (Add), a depthwise Conv (group =
    channels), Clip(0, 6), Concat on channels, Pad, AveragePool,
    GlobalAveragePool, Flatten, Dropout, Gemm."""
    i = []
    n = [h.make_node("Conv", ["x", "c1w"], ["c1"], name="stem", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
         bn("c1", "b1", 16, "stem_bn", i), h.make_node("Relu", ["b1"], ["r1"], name="stem_relu"),
         h.make_node("MaxPool", ["r1"], ["p1"], name="stem_pool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
         h.make_node("Conv", ["p1", "a1w"], ["a1"], name="blk_conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
         bn("a1", "ab1", 16, "blk_bn1", i), h.make_node("Relu", ["ab1"], ["ar1"], name="blk_relu1"),
         h.make_node("Conv", ["ar1", "a2w"], ["a2"], name="blk_conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
         bn("a2", "ab2", 16, "blk_bn2", i), h.make_node("Add", ["ab2", "p1"], ["s"], name="blk_add"),
         h.make_node("Relu", ["s"], ["sr"], name="blk_relu2"),
         h.make_node("Conv", ["sr", "dww", "dwb"], ["dw"], name="dw", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=16),
         h.make_node("Clip", ["dw", "zero", "six"], ["dr"], name="relu6"),
         h.make_node("Conv", ["dr", "pww", "pwb"], ["pw"], name="pw", kernel_shape=[1, 1]),
         h.make_node("Concat", ["pw", "sr"], ["cat"], name="cat", axis=1),
         h.make_node("Pad", ["cat", "pads"], ["pd"], name="pad", mode="constant"),
         h.make_node("AveragePool", ["pd"], ["ap"], name="avg", kernel_shape=[2, 2], strides=[2, 2]),
         h.make_node("GlobalAveragePool", ["ap"], ["g"], name="gap"),
         h.make_node("Flatten", ["g"], ["f"], name="flatten", axis=1),
         h.make_node("Dropout", ["f", "ratio"], ["d"], name="drop"),
         h.make_node("Gemm", ["d", "fcw", "fcb"], ["y"], name="fc", transB=1)]
    i += [w("c1w", 16, 3, 3, 3), w("a1w", 16, 16, 3, 3), w("a2w", 16, 16, 3, 3), w("dww", 32, 1, 3, 3), w("dwb", 32),
          w("pww", 24, 32, 1, 1), w("pwb", 24), w("fcw", 5, 40), w("fcb", 5),
          nh.from_array(np.float32(0), "zero"), nh.from_array(np.float32(6), "six"),
          nh.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads"), nh.from_array(np.float32(0.25), "ratio")]
    return model(n, "small_resnet", [3, 32, 32], "y", i, opset=17, classes=5)


def transformer():
    """A transformer-style block (embedding Gather, LayerNormalization, an
    attention MatMul of 3-D tensors, Transpose, Softmax, the Erf form of Gelu,
    a custom-domain op): every operator type tpusim does not read yet."""
    i = [nh.from_array(np.zeros((100, 16), np.float32), "emb"), w("ln_g", 16), w("ln_b", 16), w("wq", 16, 16),
         nh.from_array(np.float32(2 ** 0.5), "sqrt2"), nh.from_array(np.float32(1), "one"),
         nh.from_array(np.float32(0.5), "half")]
    n = [h.make_node("Gather", ["emb", "x"], ["e"], name="embed"),
         h.make_node("LayerNormalization", ["e", "ln_g", "ln_b"], ["ln"], name="ln1", axis=-1),
         h.make_node("MatMul", ["ln", "wq"], ["q"], name="q_proj"),
         h.make_node("Transpose", ["q"], ["qt"], name="k_t", perm=[0, 2, 1]),
         h.make_node("MatMul", ["q", "qt"], ["s"], name="scores"),
         h.make_node("Softmax", ["s"], ["a"], name="attn", axis=-1),
         h.make_node("Div", ["a", "sqrt2"], ["g1"], name="gelu_div"),
         h.make_node("Erf", ["g1"], ["g2"], name="gelu_erf"),
         h.make_node("Add", ["g2", "one"], ["g3"], name="gelu_add"),
         h.make_node("Mul", ["a", "g3"], ["g4"], name="gelu_mul"),
         h.make_node("Mul", ["g4", "half"], ["g5"], name="gelu_half"),
         h.make_node("FusedGelu", ["g5"], ["y"], name="fused", domain="com.microsoft")]
    g = h.make_graph(n, "tiny_transformer", [h.make_tensor_value_info("x", T.INT64, ["N", 8])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)], i)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17), h.make_opsetid("com.microsoft", 1)])


def loss_model(d):
    """A model and a data set whose first step's loss numpy computes from
    the file's weights: 64 IDX images of 4x4, one batch of all of them."""
    x = RNG.integers(0, 256, (64, 4, 4), dtype=np.uint8)
    y = (np.arange(64) % 10).astype(np.uint8)
    os.makedirs(d + "/idx", exist_ok=True)
    for pre in ("train", "t10k"):
        open(d + "/idx/%s-images-idx3-ubyte" % pre, "wb").write(struct.pack(">IIII", 0x803, 64, 4, 4) + x.tobytes())
        open(d + "/idx/%s-labels-idx1-ubyte" % pre, "wb").write(struct.pack(">II", 0x801, 64) + y.tobytes())
    inits = [w("cw", 3, 1, 3, 3), w("cb", 3), w("fw", 3 * 4 * 4, 10), w("fb", 10)]
    nodes = [h.make_node("Conv", ["x", "cw", "cb"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             h.make_node("Relu", ["c"], ["r"], name="relu"),
             h.make_node("Flatten", ["r"], ["f"], name="flatten"),
             h.make_node("MatMul", ["f", "fw"], ["z"], name="fc"),
             h.make_node("Relu", ["z"], ["y"], name="out")]
    m = model(nodes, "loss_check", [1, 4, 4], "y", inits, opset=12)
    # the reference: NCHW in numpy, f32 inputs normalized to [0, 1]
    W = {t.name: nh.to_array(t) for t in inits}
    xs = x.astype(np.float32)[:, None] / 255.0
    pad = np.pad(xs, ((0, 0), (0, 0), (1, 1), (1, 1)))
    c = np.zeros((64, 3, 4, 4), np.float64)
    for ky in range(3):
        for kx in range(3):
            c += np.einsum("nhw,f->nfhw", pad[:, 0, ky:ky + 4, kx:kx + 4], W["cw"][:, 0, ky, kx])
    c = np.maximum(c + W["cb"][None, :, None, None], 0)
    z = np.maximum(c.reshape(64, -1) @ W["fw"], 0)   # MatMul has no bias (fb is unused: not a parameter)
    z -= z.max(axis=1, keepdims=True)
    loss = float(np.mean(np.log(np.exp(z).sum(axis=1)) - z[np.arange(64), y]))
    open(d + "/loss.txt", "w").write("%.9g\n" % loss)
    return m


def make(d):
    os.makedirs(d, exist_ok=True)
    for name, m in (("small_cnn", small_cnn()), ("resnet", resnet()), ("transformer", transformer()),
                    ("loss", loss_model(d))):
        onnx.save(m, os.path.join(d, name + ".onnx"))


def bad(d):
    """One refusal each: the message t_badinput.sh expects is in its corpus."""
    os.makedirs(d, exist_ok=True)
    x, c1 = ["x"], [w("w", 4, 2, 3, 3)]
    def conv(name, inp="x", out="c", **kw):
        return h.make_node("Conv", [inp, "w"], [out], name=name, kernel_shape=[3, 3], **kw)
    head = [h.make_node("GlobalAveragePool", ["c"], ["g"], name="gap"), h.make_node("Flatten", ["g"], ["f"], name="fl"),
            h.make_node("Gemm", ["f", "fw"], ["y"], name="fc", transB=1)]
    fw = [w("fw", 10, 4)]
    def save(name, nodes, inits, shape=(4, 8, 8), opset=13, out="y"):
        g = h.make_graph(nodes, name, [h.make_tensor_value_info("x", T.FLOAT, ["N"] + list(shape))],
                         [h.make_tensor_value_info(out, T.FLOAT, ["N", 10])], inits)
        onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", opset)]), os.path.join(d, name + ".onnx"))
    save("o_group", [conv("g2", group=2)] + head, c1 + fw)
    save("o_dil", [conv("dil", dilations=[2, 2])] + head, [w("w", 4, 4, 3, 3)] + fw)
    save("o_opset", [conv("c0")] + head, [w("w", 4, 4, 3, 3)] + fw, opset=9)
    save("o_stride", [conv("st", strides=[1, 2])] + head, [w("w", 4, 4, 3, 3)] + fw)
    save("o_addk", [conv("c0"), h.make_node("Add", ["c", "k"], ["c2"], name="addk")] +
         [h.make_node("GlobalAveragePool", ["c2"], ["g"], name="gap")] + head[1:],
         [w("w", 4, 4, 3, 3), w("k", 4, 6, 6)] + fw)
    save("o_wshape", [conv("c0")] + head, [w("w", 4, 4, 3, 3), w("fw", 10, 5)])
    save("o_pool", [conv("c0"), h.make_node("MaxPool", ["c"], ["p"], name="mp", kernel_shape=[3, 3],
                                            strides=[2, 2], pads=[1, 1, 1, 1]),
                    h.make_node("GlobalAveragePool", ["p"], ["g"], name="gap")] + head[1:],
         [w("w", 4, 4, 3, 3)] + fw)
    save("o_reshape", [conv("c0"), h.make_node("Reshape", ["c", "shp"], ["r"], name="rs")],
         [w("w", 4, 4, 3, 3), nh.from_array(np.array([0, 4, 36], np.int64), "shp")], out="r")
    save("o_2in", [conv("c0")] + head, [w("w", 4, 4, 3, 3)] + fw, shape=(4, "H", 8))
    save("o_big", [conv("c0")] + head, [w("w", 4, 4, 3, 3)] + fw, shape=(4, 2, 2))
    open(os.path.join(d, "o_junk.onnx"), "wb").write(b"\xff\xff\xff\xff not protobuf")


def check(path, report):
    m = onnx.load(path)
    inf = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    shapes = {}
    for v in list(inf.graph.value_info) + list(inf.graph.output):
        shapes[v.name] = [d.dim_value for d in v.type.tensor_type.shape.dim]
    used = {n for node in m.graph.node for n in node.input}
    params = sum(int(np.prod(t.dims)) for t in m.graph.initializer
                 if t.data_type == T.FLOAT and t.name in used and t.dims)
    r = json.load(open(report))
    assert r["parameters"] == params, "parameters: tpusim %d, ONNX initializers %d" % (r["parameters"], params)
    nodes = {n.name: n for n in m.graph.node}
    checked = 0
    for L in r["layers"]:
        n = nodes.get(L["name"])
        if n is None:
            continue   # a layer tpusim adds before a node (its zero padding)
        s = shapes[n.output[0]]
        want = [s[2], s[3], s[1]] if len(s) == 4 else [1, 1, s[1]]
        assert L["output_shape"] == want, "%s: tpusim %s, ONNX %s (NCHW %s)" % (L["name"], L["output_shape"], want, s)
        checked += 1
    assert checked >= 4, "%s: only %d layers checked" % (path, checked)


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    elif sys.argv[1] == "bad":
        bad(sys.argv[2])
    else:
        check(sys.argv[2], sys.argv[3])
