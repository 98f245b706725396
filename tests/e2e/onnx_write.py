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
import json, math, os, struct, sys

import numpy as np
import onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh

RNG = np.random.default_rng(30)
IDX = {}


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


def k(name, v, dt=np.float32):
    return nh.from_array(np.array(v, dt), name)


def dense3(x, y, name, n_in, n_out, inits, bias=True):
    """nn.Linear on a sequence as torch.onnx.export writes it: MatMul by
    the transposed weight, then Add of the bias."""
    inits.append(w(name + "_w", n_in, n_out))
    if not bias:
        return [h.make_node("MatMul", [x, name + "_w"], [y], name=name)]
    inits.append(w(name + "_b", n_out, scale=0.1))
    return [h.make_node("MatMul", [x, name + "_w"], [name + "_mm"], name=name + "_mm"),
            h.make_node("Add", [name + "_mm", name + "_b"], [y], name=name)]


def attention(x, y, name, c, heads, d, inits, mul_scale=False, kt_twice=False, mask=None, length=0, packed=False,
              q_scale=False):
    """Hand-written multi-head self-attention: projections, Reshape to
    [b, L, H, d] and Transpose to heads, Softmax(Q K^T / sqrt(d)) V, heads
    merged, the output projection; with mask "where" (masked_fill of the
    keys after the query with -inf) or "add" (-1e9 added there), causal;
    packed: one projection to Q, K and V split on the last axis (nanoGPT's
    c_attn(x).split(C, dim=2))."""
    n = []
    if packed:
        n += dense3(x, name + "_qkv", name + "_qkv", c, 3 * heads * d, inits)
        inits.append(k(name + "_split", [heads * d] * 3, np.int64))
        n.append(h.make_node("Split", [name + "_qkv", name + "_split"], [name + "_q", name + "_k", name + "_v"],
                             name=name + "_split", axis=2))
    for p in "qkv":
        if not packed:
            n += dense3(x, name + "_" + p, name + "_" + p, c, heads * d, inits)
        n.append(h.make_node("Reshape", [name + "_" + p, name + "_hs"], [name + "_" + p + "r"], name=name + "_" + p + "r"))
    inits.append(k(name + "_hs", [0, 0, heads, d], np.int64))
    inits.append(k(name + "_ms", [0, 0, heads * d], np.int64))
    n.append(h.make_node("Transpose", [name + "_qr"], [name + "_qh"], name=name + "_qh", perm=[0, 2, 1, 3]))
    n.append(h.make_node("Transpose", [name + "_vr"], [name + "_vh"], name=name + "_vh", perm=[0, 2, 1, 3]))
    if kt_twice:
        n.append(h.make_node("Transpose", [name + "_kr"], [name + "_kh"], name=name + "_kh", perm=[0, 2, 1, 3]))
        n.append(h.make_node("Transpose", [name + "_kh"], [name + "_kt"], name=name + "_kt", perm=[0, 1, 3, 2]))
    else:
        n.append(h.make_node("Transpose", [name + "_kr"], [name + "_kt"], name=name + "_kt", perm=[0, 2, 3, 1]))
    if q_scale:   # timm: q = q * self.scale, before the product
        inits.append(k(name + "_sc", 1 / d ** 0.5))
        n += [h.make_node("Mul", [name + "_qh", name + "_sc"], [name + "_qs"], name=name + "_scale"),
              h.make_node("MatMul", [name + "_qs", name + "_kt"], [name + "_s"], name=name + "_qk")]
    else:
        inits.append(k(name + "_sc", 1 / d ** 0.5 if mul_scale else d ** 0.5))
        n += [h.make_node("MatMul", [name + "_qh", name + "_kt"], [name + "_s0"], name=name + "_qk"),
              h.make_node("Mul" if mul_scale else "Div", [name + "_s0", name + "_sc"], [name + "_s"],
                          name=name + "_scale")]
    if mask:
        after = np.triu(np.ones((length, length), bool), 1)
        if mask == "where":
            inits += [k(name + "_mask", after[None, None], np.bool_), k(name + "_ninf", -np.inf)]
            n.append(h.make_node("Where", [name + "_mask", name + "_ninf", name + "_s"], [name + "_sm"],
                                 name=name + "_causal"))
        else:
            inits.append(k(name + "_mask", np.where(after, -1e9, 0.0)))
            n.append(h.make_node("Add", [name + "_s", name + "_mask"], [name + "_sm"], name=name + "_causal"))
    n += [h.make_node("Softmax", [name + "_sm" if mask else name + "_s"], [name + "_p"], name=name + "_softmax",
                      axis=-1),
          h.make_node("MatMul", [name + "_p", name + "_vh"], [name + "_o"], name=name + "_pv"),
          h.make_node("Transpose", [name + "_o"], [name + "_ot"], name=name + "_ot", perm=[0, 2, 1, 3]),
          h.make_node("Reshape", [name + "_ot", name + "_ms"], [name + "_om"], name=name + "_merge")]
    return n + dense3(name + "_om", y, name, heads * d, c, inits)


def gelu_erf(x, y, name, inits):
    """torch.onnx's Gelu before opset 20: x * (erf(x / sqrt(2)) + 1) * 0.5."""
    inits += [k(name + "_sqrt2", 2 ** 0.5), k(name + "_one", 1.0), k(name + "_half", 0.5)]
    return [h.make_node("Div", [x, name + "_sqrt2"], [name + "_d"], name=name + "_div"),
            h.make_node("Erf", [name + "_d"], [name + "_e"], name=name + "_erf"),
            h.make_node("Add", [name + "_e", name + "_one"], [name + "_a"], name=name + "_add"),
            h.make_node("Mul", [x, name + "_a"], [name + "_m"], name=name + "_mul"),
            h.make_node("Mul", [name + "_m", name + "_half"], [y], name=name)]


def gelu_tanh(x, y, name, inits):
    """torch.onnx's Gelu(approximate='tanh'): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    inits += [k(name + "_three", 3.0), k(name + "_kappa", 0.044715), k(name + "_beta", (2 / np.pi) ** 0.5),
              k(name + "_one", 1.0), k(name + "_half", 0.5)]
    return [h.make_node("Pow", [x, name + "_three"], [name + "_c"], name=name + "_cube"),
            h.make_node("Mul", [name + "_kappa", name + "_c"], [name + "_kc"], name=name + "_kappa"),
            h.make_node("Add", [x, name + "_kc"], [name + "_i"], name=name + "_inner"),
            h.make_node("Mul", [name + "_i", name + "_beta"], [name + "_bi"], name=name + "_scale"),
            h.make_node("Tanh", [name + "_bi"], [name + "_t"], name=name + "_tanh"),
            h.make_node("Add", [name + "_one", name + "_t"], [name + "_a"], name=name + "_add"),
            h.make_node("Mul", [name + "_half", x], [name + "_hx"], name=name + "_halfx"),
            h.make_node("Mul", [name + "_hx", name + "_a"], [y], name=name)]


def layernorm13(x, y, name, c, inits):
    """torch.onnx's layer_norm before opset 17: ReduceMean, Sub, Pow, ReduceMean,
    Add eps, Sqrt, Div, Mul gamma, Add beta."""
    inits += [pos(name + "_g", c), w(name + "_b", c, scale=0.1), k(name + "_two", 2.0), k(name + "_eps", 1e-5)]
    return [h.make_node("ReduceMean", [x], [name + "_m"], name=name + "_mean", axes=[-1]),
            h.make_node("Sub", [x, name + "_m"], [name + "_d"], name=name + "_sub"),
            h.make_node("Pow", [name + "_d", name + "_two"], [name + "_p"], name=name + "_pow"),
            h.make_node("ReduceMean", [name + "_p"], [name + "_v"], name=name + "_var", axes=[-1]),
            h.make_node("Add", [name + "_v", name + "_eps"], [name + "_ve"], name=name + "_eps"),
            h.make_node("Sqrt", [name + "_ve"], [name + "_s"], name=name + "_sqrt"),
            h.make_node("Div", [name + "_d", name + "_s"], [name + "_n"], name=name + "_div"),
            h.make_node("Mul", [name + "_n", name + "_g"], [name + "_gn"], name=name + "_gamma"),
            h.make_node("Add", [name + "_gn", name + "_b"], [y], name=name)]


def transformer(d):
    """Opset 17 with its LayerNormalization op: token ids [N, 8], a Gather
    embedding, a learned position table Gathered at 0..7 and added, a
    pre-norm block (attention, the Erf form of Gelu, residual Adds), the
    mean over the positions and a classifier."""
    i = [w("emb", 50, 16), w("pos_t", 16, 16), k("pos_ix", np.arange(8), np.int64),
         pos("ln1_g", 16), w("ln1_b", 16, scale=0.1), pos("ln2_g", 16), w("ln2_b", 16, scale=0.1)]
    n = [h.make_node("Gather", ["emb", "x"], ["e"], name="embed"),
         h.make_node("Gather", ["pos_t", "pos_ix"], ["pe"], name="pos_rows"),
         h.make_node("Add", ["e", "pe"], ["h0"], name="pos_add"),
         h.make_node("LayerNormalization", ["h0", "ln1_g", "ln1_b"], ["l1"], name="ln1", axis=-1, epsilon=1e-5)]
    n += attention("l1", "a1", "attn", 16, 2, 8, i, mask="add", length=8, packed=True)
    n += [h.make_node("Add", ["h0", "a1"], ["h1"], name="res1"),
          h.make_node("LayerNormalization", ["h1", "ln2_g", "ln2_b"], ["l2"], name="ln2", axis=-1, epsilon=1e-5)]
    n += dense3("l2", "f1", "ff1", 16, 32, i) + gelu_erf("f1", "g1", "gelu", i) + dense3("g1", "f2", "ff2", 32, 16, i)
    n += [h.make_node("Add", ["h1", "f2"], ["h2"], name="res2"),
          h.make_node("ReduceMean", ["h2"], ["pool"], name="pool", axes=[1], keepdims=0),
          h.make_node("Gemm", ["pool", "head_w", "head_b"], ["y"], name="head", transB=1)]
    i += [w("head_w", 10, 16), w("head_b", 10)]
    g = h.make_graph(n, "tiny_transformer", [h.make_tensor_value_info("x", T.INT64, ["N", 8])],
                     [h.make_tensor_value_info("y", T.FLOAT, ["N", 10])], i)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)], producer_name="onnx_write.py", producer_version="1")
    onnx.checker.check_model(m)
    # the first loss on 64 sequences of 8 token ids (IDX images of 1 x 8 read by a pipeline without
    # normalize: the ids themselves)
    x = RNG.integers(0, 50, (64, 1, 8), dtype=np.uint8)
    y = (np.arange(64) % 10).astype(np.uint8)
    os.makedirs(d + "/tok", exist_ok=True)
    for pre in ("train", "t10k"):
        open(d + "/tok/%s-images-idx3-ubyte" % pre, "wb").write(struct.pack(">IIII", 0x803, 64, 1, 8) + x.tobytes())
        open(d + "/tok/%s-labels-idx1-ubyte" % pre, "wb").write(struct.pack(">II", 0x801, 64) + y.tobytes())
    json.dump({"source": {"kind": "idx", "images": "tok/train-images-idx3-ubyte", "elements": 64,
                          "labels": "tok/train-labels-idx1-ubyte"}, "stages": [{"op": "batch", "batch_size": 64}]},
              open(d + "/tok.json", "w"))
    W = {t.name: nh.to_array(t).astype(np.float64) for t in i}
    def lin(v, p):
        return v @ W[p + "_w"] + W[p + "_b"]
    def ln(v, p):
        mu = v.mean(-1, keepdims=True)
        return (v - mu) / np.sqrt(((v - mu) ** 2).mean(-1, keepdims=True) + 1e-5) * W[p + "_g"] + W[p + "_b"]
    def heads(v):
        return v.reshape(64, 8, 2, 8).transpose(0, 2, 1, 3)
    h0 = W["emb"][x[:, 0]] + W["pos_t"][:8]
    l1 = ln(h0, "ln1")
    q, kk, v = np.split(lin(l1, "attn_qkv"), 3, axis=2)
    sc = heads(q) @ heads(kk).transpose(0, 1, 3, 2) / 8 ** 0.5
    sc[..., np.triu(np.ones((8, 8), bool), 1)] = -np.inf   # causal
    p = np.exp(sc - sc.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    h1 = h0 + lin((p @ heads(v)).transpose(0, 2, 1, 3).reshape(64, 8, 16), "attn")
    f = lin(ln(h1, "ln2"), "ff1")
    g = 0.5 * f * (1 + np.vectorize(math.erf)(f / 2 ** 0.5))
    z = (h1 + lin(g, "ff2")).mean(1) @ W["head_w"].T + W["head_b"]
    z -= z.max(axis=1, keepdims=True)
    loss = float(np.mean(np.log(np.exp(z).sum(axis=1)) - z[np.arange(64), y]))
    open(d + "/loss_tok.txt", "w").write("%.9g\n" % loss)
    return m


def transformer13(d):
    """Opset 13, the decomposed LayerNormalization: a float sequence [N, 4, 4]
    (an IDX image's rows), an input projection, a [1, 4, 8] position table
    added, attention (scale by Mul, K^T as two Transposes), the tanh form of
    Gelu, a Sigmoid gate (Mul of two tensors), a Transpose and a Reshape to
    the classifier; and the first training step's loss from numpy."""
    i = [w("pos_t", 1, 4, 8)]
    n = dense3("x", "p", "in_proj", 4, 8, i) + [h.make_node("Add", ["p", "pos_t"], ["h0"], name="pos_add")]
    n += layernorm13("h0", "l1", "ln1", 8, i)
    n += attention("l1", "a1", "attn", 8, 2, 4, i, q_scale=True, kt_twice=True, mask="where", length=4)
    n += [h.make_node("Add", ["h0", "a1"], ["h1"], name="res1")] + layernorm13("h1", "l2", "ln2", 8, i)
    n += dense3("l2", "f1", "ff1", 8, 12, i) + gelu_tanh("f1", "g1", "gelu", i)
    n += [h.make_node("Sigmoid", ["g1"], ["sg"], name="gate_sig"), h.make_node("Mul", ["g1", "sg"], ["gm"], name="gate")]
    n += dense3("gm", "f2", "ff2", 12, 8, i, bias=False)
    n += [h.make_node("Add", ["h1", "f2"], ["h2"], name="res2"),
          h.make_node("Transpose", ["h2"], ["ht"], name="to_cl", perm=[0, 2, 1]),
          h.make_node("Reshape", ["ht", "flat"], ["fl"], name="flat"),
          h.make_node("Gemm", ["fl", "head_w", "head_b"], ["y"], name="head", transB=1)]
    i += [k("flat", [0, -1], np.int64), w("head_w", 10, 32), w("head_b", 10)]
    m = model(n, "tiny_transformer13", [4, 4], "y", i, opset=13)
    x, y = idx_set(d)
    W = {t.name: nh.to_array(t).astype(np.float64) for t in i}
    s = x.astype(np.float64).reshape(64, 4, 4) / 255.0
    def lin(v, p, bias=True):
        return v @ W[p + "_w"] + (W[p + "_b"] if bias else 0)
    def ln(v, p):
        mu = v.mean(-1, keepdims=True)
        return (v - mu) / np.sqrt(((v - mu) ** 2).mean(-1, keepdims=True) + 1e-5) * W[p + "_g"] + W[p + "_b"]
    def heads(v):
        return v.reshape(64, 4, 2, 4).transpose(0, 2, 1, 3)
    h0 = lin(s, "in_proj") + W["pos_t"]
    l1 = ln(h0, "ln1")
    sc = heads(lin(l1, "attn_q")) @ heads(lin(l1, "attn_k")).transpose(0, 1, 3, 2) / 2.0
    sc[..., np.triu(np.ones((4, 4), bool), 1)] = -np.inf   # causal
    p = np.exp(sc - sc.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = (p @ heads(lin(l1, "attn_v"))).transpose(0, 2, 1, 3).reshape(64, 4, 8)
    h1 = h0 + lin(o, "attn")
    f = lin(ln(h1, "ln2"), "ff1")
    g = 0.5 * f * (1 + np.tanh((2 / np.pi) ** 0.5 * (f + 0.044715 * f ** 3)))
    g = g / (1 + np.exp(-g)) * 1.0
    h2 = h1 + lin(g, "ff2", bias=False)
    z = h2.transpose(0, 2, 1).reshape(64, 32) @ W["head_w"].T + W["head_b"]
    z -= z.max(axis=1, keepdims=True)
    loss = float(np.mean(np.log(np.exp(z).sum(axis=1)) - z[np.arange(64), y]))
    open(d + "/loss13.txt", "w").write("%.9g\n" % loss)
    return m


def seqops(d):
    """The sequence operators outside a transformer block: Softmax over the
    positions (axis 1), Transpose, Reshape to 4-D and a Transpose of that to
    NCHW (a layout change: no layer), a Conv and a LeakyRelu on it, Concat of sequences on
    the last axis, ReduceMean over an image's pixels, Flatten of a sequence."""
    i = [w("cw", 3, 6, 1, 1), w("fw", 5, 3), k("s4", [0, 2, 2, 6], np.int64), w("hw", 6 * 8 + 5, 4)]
    n = [h.make_node("Softmax", ["x"], ["sm"], name="sm_pos", axis=1),
         h.make_node("Transpose", ["sm"], ["t"], name="t", perm=[0, 2, 1]),
         h.make_node("Reshape", ["t", "s4"], ["r4"], name="r4"),
         h.make_node("Transpose", ["r4"], ["img"], name="to_nchw", perm=[0, 3, 1, 2]),
         h.make_node("Conv", ["img", "cw"], ["c"], name="conv", kernel_shape=[1, 1]),
         h.make_node("LeakyRelu", ["c"], ["cl"], name="leaky", alpha=0.1),
         h.make_node("ReduceMean", ["cl"], ["g"], name="gap", axes=[2, 3], keepdims=0),
         h.make_node("Gemm", ["g", "fw"], ["gv"], name="fc", transB=1),
         h.make_node("Concat", ["x", "sm"], ["cat"], name="cat", axis=-1),
         h.make_node("Flatten", ["cat"], ["fl"], name="flat"),
         h.make_node("Concat", ["fl", "gv"], ["both"], name="both", axis=1)]
    n.append(h.make_node("MatMul", ["both", "hw"], ["y"], name="head"))
    m = model(n, "seqops", [6, 4], "y", i, opset=13, classes=4)
    # the first loss on 64 IDX images of 6 x 4 (6 positions of 4 values), 4 classes
    x = RNG.integers(0, 256, (64, 6, 4), dtype=np.uint8)
    y = (np.arange(64) % 4).astype(np.uint8)
    os.makedirs(d + "/idx64", exist_ok=True)
    for pre in ("train", "t10k"):
        open(d + "/idx64/%s-images-idx3-ubyte" % pre, "wb").write(struct.pack(">IIII", 0x803, 64, 6, 4) + x.tobytes())
        open(d + "/idx64/%s-labels-idx1-ubyte" % pre, "wb").write(struct.pack(">II", 0x801, 64) + y.tobytes())
    W = {t.name: nh.to_array(t).astype(np.float64) for t in i}
    s = x.astype(np.float64) / 255.0
    sm = np.exp(s - s.max(1, keepdims=True))
    sm /= sm.sum(1, keepdims=True)
    img = sm.transpose(0, 2, 1).reshape(64, 2, 2, 6).transpose(0, 3, 1, 2)
    c = np.einsum("nchw,fc->nfhw", img, W["cw"][:, :, 0, 0])
    gv = np.where(c > 0, c, 0.1 * c).mean((2, 3)) @ W["fw"].T
    both = np.concatenate([np.concatenate([s, sm], -1).reshape(64, -1), gv], 1)
    z = both @ W["hw"]
    z -= z.max(axis=1, keepdims=True)
    loss = float(np.mean(np.log(np.exp(z).sum(axis=1)) - z[np.arange(64), y]))
    open(d + "/loss_seqops.txt", "w").write("%.9g\n" % loss)
    return m


def vit(d):
    """ViT's front and head as PyTorch exports them (opset 17): a Conv of
    4x4 patches, x.flatten(2).transpose(1, 2) (a Reshape to [N, C, H*W] and
    a Transpose), a [1, 4, 6] position table, LayerNormalization,
    attention (scaled by Mul after the product) and a residual Add, x[:, 0]
    (a Gather on axis 1) and the classifier; the first loss from numpy."""
    i = [w("pw", 6, 1, 4, 4), w("pb", 6), k("s3", [0, 6, -1], np.int64), w("pos", 1, 4, 6), pos("g", 6),
         w("b", 6, scale=0.1), k("zero", 0, np.int64), w("hw", 10, 6), w("hb", 10)]
    n = [h.make_node("Conv", ["x", "pw", "pb"], ["c"], name="patches", kernel_shape=[4, 4], strides=[4, 4]),
         h.make_node("Reshape", ["c", "s3"], ["r"], name="flatten2"),
         h.make_node("Transpose", ["r"], ["t"], name="to_seq", perm=[0, 2, 1]),
         h.make_node("Add", ["t", "pos"], ["e"], name="pos_add"),
         h.make_node("LayerNormalization", ["e", "g", "b"], ["l"], name="ln", epsilon=1e-6)]
    n += attention("l", "a", "attn", 6, 2, 3, i, mul_scale=True)
    n += [h.make_node("Add", ["e", "a"], ["ea"], name="res"),
          h.make_node("Gather", ["ea", "zero"], ["cls"], name="first", axis=1),
          h.make_node("Gemm", ["cls", "hw", "hb"], ["y"], name="head", transB=1)]
    m = model(n, "tiny_vit", [1, 8, 8], "y", i, opset=17)
    x = RNG.integers(0, 256, (64, 8, 8), dtype=np.uint8)
    y = (np.arange(64) % 10).astype(np.uint8)
    os.makedirs(d + "/idx88", exist_ok=True)
    for pre in ("train", "t10k"):
        open(d + "/idx88/%s-images-idx3-ubyte" % pre, "wb").write(struct.pack(">IIII", 0x803, 64, 8, 8) + x.tobytes())
        open(d + "/idx88/%s-labels-idx1-ubyte" % pre, "wb").write(struct.pack(">II", 0x801, 64) + y.tobytes())
    W = {t.name: nh.to_array(t).astype(np.float64) for t in i}
    p = (x.astype(np.float64) / 255.0).reshape(64, 2, 4, 2, 4).transpose(0, 1, 3, 2, 4)   # n, py, px, ky, kx
    c = np.einsum("nyxab,fab->nfyx", p, W["pw"][:, 0]) + W["pb"][None, :, None, None]
    e = c.reshape(64, 6, 4).transpose(0, 2, 1) + W["pos"]
    mu = e.mean(-1, keepdims=True)
    l = (e - mu) / np.sqrt(((e - mu) ** 2).mean(-1, keepdims=True) + 1e-6) * W["g"] + W["b"]
    def heads(v):
        return v.reshape(64, 4, 2, 3).transpose(0, 2, 1, 3)
    q, kk, v = (l @ W["attn_%s_w" % p] + W["attn_%s_b" % p] for p in "qkv")
    sc = heads(q) @ heads(kk).transpose(0, 1, 3, 2) * (1 / 3 ** 0.5)
    a = np.exp(sc - sc.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    e = e + (a @ heads(v)).transpose(0, 2, 1, 3).reshape(64, 4, 6) @ W["attn_w"] + W["attn_b"]
    z = e[:, 0] @ W["hw"].T + W["hb"]
    z -= z.max(axis=1, keepdims=True)
    loss = float(np.mean(np.log(np.exp(z).sum(axis=1)) - z[np.arange(64), y]))
    open(d + "/loss_vit.txt", "w").write("%.9g\n" % loss)
    return m


def refused():
    """Operator types tpusim does not read, and the decompositions'
    operators outside one: refused all at once."""
    i = [k("sqrt2", 2 ** 0.5), w("wq", 16, 16)]
    n = [h.make_node("Elu", ["x"], ["a"], name="elu"),
         h.make_node("Div", ["a", "sqrt2"], ["b"], name="div"),
         h.make_node("Erf", ["b"], ["c"], name="erf"),
         h.make_node("Where", ["c", "c", "b"], ["e"], name="where"),
         h.make_node("MatMul", ["e", "wq"], ["f"], name="q"),
         h.make_node("FusedGelu", ["f"], ["y"], name="fused", domain="com.microsoft")]
    g = h.make_graph(n, "refused", [h.make_tensor_value_info("x", T.FLOAT, ["N", 8, 16])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)], i)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17), h.make_opsetid("com.microsoft", 1)])


def conv_np(x, wt, b=None, group=1, stride=1, pad=0):
    """ONNX Conv in numpy, f64: x [N, C, H, W], wt [F, C/group, kh, kw]."""
    n, c, hh, ww = x.shape
    f, cg, kh, kw = wt.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (hh + 2 * pad - kh) // stride + 1, (ww + 2 * pad - kw) // stride + 1
    out = np.zeros((n, f, oh, ow))
    fg = f // group
    for g in range(group):
        xs = xp[:, g * cg:(g + 1) * cg]
        for ky in range(kh):
            for kx in range(kw):
                win = xs[:, :, ky:ky + stride * oh:stride, kx:kx + stride * ow:stride]
                out[:, g * fg:(g + 1) * fg] += np.einsum("nchw,fc->nfhw", win, wt[g * fg:(g + 1) * fg, :, ky, kx])
    return out if b is None else out + b[None, :, None, None]


def resnext(d):
    """A ResNeXt-style block as PyTorch exports it: a stem Conv, a 1x1
    Conv, a grouped 3x3 Conv (group 4, cardinality 4 of width 4) with bias,
    a 1x1 Conv, the residual Add; then a strided grouped Conv without bias
    (group 8: two channels a group to four filters), GlobalAveragePool,
    Gemm. Its first loss on idx88 (8x8 images, written by vit) from the
    file's weights, in numpy."""
    i = [w("sw", 16, 1, 3, 3), w("sb", 16), w("aw", 16, 16, 1, 1), w("gw", 16, 4, 3, 3), w("gb", 16),
         w("bw", 16, 16, 1, 1), w("tw", 32, 2, 3, 3), w("fw", 10, 32), w("fb", 10)]
    n = [h.make_node("Conv", ["x", "sw", "sb"], ["s"], name="stem", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
         h.make_node("Relu", ["s"], ["sr"], name="stem_relu"),
         h.make_node("Conv", ["sr", "aw"], ["a"], name="reduce", kernel_shape=[1, 1]),
         h.make_node("Relu", ["a"], ["ar"], name="reduce_relu"),
         h.make_node("Conv", ["ar", "gw", "gb"], ["g"], name="grouped", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                     group=4),
         h.make_node("Relu", ["g"], ["gr"], name="grouped_relu"),
         h.make_node("Conv", ["gr", "bw"], ["b"], name="expand", kernel_shape=[1, 1]),
         h.make_node("Add", ["b", "sr"], ["r"], name="res"),
         h.make_node("Relu", ["r"], ["rr"], name="res_relu"),
         h.make_node("Conv", ["rr", "tw"], ["t"], name="down", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                     group=8),
         h.make_node("Relu", ["t"], ["tr"], name="down_relu"),
         h.make_node("GlobalAveragePool", ["tr"], ["p"], name="gap"),
         h.make_node("Flatten", ["p"], ["f"], name="flatten"),
         h.make_node("Gemm", ["f", "fw", "fb"], ["y"], name="fc", transB=1)]
    m = model(n, "tiny_resnext", [1, 8, 8], "y", i, opset=13)
    x = np.frombuffer(open(d + "/idx88/train-images-idx3-ubyte", "rb").read()[16:], np.uint8).reshape(64, 1, 8, 8)
    y = np.frombuffer(open(d + "/idx88/train-labels-idx1-ubyte", "rb").read()[8:], np.uint8)
    W = {t.name: nh.to_array(t).astype(np.float64) for t in i}
    relu = lambda v: np.maximum(v, 0)
    sr = relu(conv_np(x.astype(np.float64) / 255.0, W["sw"], W["sb"], pad=1))
    gr = relu(conv_np(relu(conv_np(sr, W["aw"])), W["gw"], W["gb"], group=4, pad=1))
    rr = relu(conv_np(gr, W["bw"]) + sr)
    z = relu(conv_np(rr, W["tw"], group=8, stride=2, pad=1)).mean((2, 3)) @ W["fw"].T + W["fb"]
    z -= z.max(axis=1, keepdims=True)
    loss = float(np.mean(np.log(np.exp(z).sum(axis=1)) - z[np.arange(64), y]))
    open(d + "/loss_resnext.txt", "w").write("%.9g\n" % loss)
    return m


def idx_set(d):
    """64 IDX images of 4x4 with labels 0..9, as train and test split (the
    same bits), drawn once: both loss checks read it."""
    if "x" in IDX:
        return IDX["x"], IDX["y"]
    x = IDX["x"] = RNG.integers(0, 256, (64, 4, 4), dtype=np.uint8)
    y = IDX["y"] = (np.arange(64) % 10).astype(np.uint8)
    os.makedirs(d + "/idx", exist_ok=True)
    for pre in ("train", "t10k"):
        open(d + "/idx/%s-images-idx3-ubyte" % pre, "wb").write(struct.pack(">IIII", 0x803, 64, 4, 4) + x.tobytes())
        open(d + "/idx/%s-labels-idx1-ubyte" % pre, "wb").write(struct.pack(">II", 0x801, 64) + y.tobytes())
    return x, y


def loss_model(d):
    """A model and a data set whose first step's loss numpy computes from
    the file's weights: 64 IDX images of 4x4, one batch of all of them."""
    x, y = idx_set(d)
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
    for name, m in (("small_cnn", small_cnn()), ("resnet", resnet()), ("transformer", transformer(d)),
                    ("refused", refused()), ("seqops", seqops(d)), ("vit", vit(d)), ("loss", loss_model(d)), ("transformer13", transformer13(d)),
                    ("resnext", resnext(d))):
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
    def ones(name, *shape):   # not drawn: the later files keep their weights
        return nh.from_array(np.full(shape, 0.1, np.float32), name)
    save("o_group", [conv("g3", group=3)] + head, [ones("w", 3, 1, 3, 3), ones("fw", 10, 3)])
    save("o_gdiv", [conv("g2", group=2)] + head, [ones("w", 3, 2, 3, 3), ones("fw", 10, 3)])
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
         [w("w", 4, 4, 3, 3), nh.from_array(np.array([0, 2, 72], np.int64), "shp")], out="r")
    save("o_2in", [conv("c0")] + head, [w("w", 4, 4, 3, 3)] + fw, shape=(4, "H", 8))
    save("o_big", [conv("c0")] + head, [w("w", 4, 4, 3, 3)] + fw, shape=(4, 2, 2))
    open(os.path.join(d, "o_junk.onnx"), "wb").write(b"\xff\xff\xff\xff not protobuf")
    # the transformer operators: a sequence [N, 8, 16]
    seq, wq = (8, 16), [w("wq", 16, 16)]
    def node(op, ins, out, name, **kw):
        return h.make_node(op, ins, [out], name=name, **kw)
    save("o_mmact", [node("Transpose", ["x"], "t", "kt", perm=[0, 2, 1]), node("MatMul", ["x", "t"], "y", "qk")], [],
         shape=seq)
    save("o_mulk", [node("Mul", ["x", "k"], "y", "scale")], [k("k", 0.25)], shape=seq)
    save("o_erf", [node("Erf", ["x"], "y", "erf")], [], shape=seq)
    save("o_lnaxis", [node("LayerNormalization", ["x", "g"], "y", "ln", axis=1)], [w("g", 8, 16)], shape=seq,
         opset=17)
    save("o_gather", [node("Gather", ["emb", "x"], "y", "embed")], [w("emb", 10, 4)], shape=seq)
    save("o_transp", [conv("c0"), node("Transpose", ["c"], "y", "tr", perm=[0, 1, 3, 2])], [w("w", 4, 4, 3, 3)])
    save("o_smaxis", [node("Softmax", ["x"], "y", "sm", axis=1)], [], shape=seq, opset=11)
    save("o_poslen", [node("Add", ["x", "p"], "y", "pos")], [w("p", 4, 16)], shape=seq)
    save("o_reshp", [node("Reshape", ["x", "s"], "y", "rs")], [k("s", [0, 3, -1], np.int64)], shape=seq)
    am = []
    save("o_mask", attention("x", "y", "attn", 16, 2, 8, am, mask="add", length=4), am, shape=seq)
    save("o_take", [node("Gather", ["x", "z"], "y", "pick", axis=2)], [k("z", 0, np.int64)], shape=seq)
    save("o_cfirst", [conv("c0"), node("Reshape", ["c", "s"], "r", "flat2"), node("Relu", ["r"], "y", "relu")],
         [w("w", 4, 4, 3, 3), k("s", [0, 4, -1], np.int64)])


def check(path, report):
    m = onnx.load(path)
    inf = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    shapes = {}
    for v in list(inf.graph.value_info) + list(inf.graph.output):
        shapes[v.name] = [d.dim_value for d in v.type.tensor_type.shape.dim]
    used = {n for node in m.graph.node for n in node.input}
    params = sum(int(np.prod(t.dims)) for t in m.graph.initializer   # a mask is a buffer, not a parameter
                 if t.data_type == T.FLOAT and t.name in used and t.dims and not t.name.endswith("_mask"))
    r = json.load(open(report))
    assert r["parameters"] == params, "parameters: tpusim %d, ONNX initializers %d" % (r["parameters"], params)
    nodes = {n.name: n for n in m.graph.node}
    checked = 0
    for L in r["layers"]:
        n = nodes.get(L["name"])
        if n is None:
            continue   # a layer tpusim adds before a node (its zero padding)
        s = shapes[n.output[0]]
        want = s[1:] if len(s) == 4 and L["type"] in ("reshape", "permute") else \
            [s[2], s[3], s[1]] if len(s) == 4 else [1, s[1], s[2]] if len(s) == 3 else [1, 1, s[1]]
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
