#!/usr/bin/env python3
"""The yardstick of docs/COMPILER.md: the least HBM traffic of one training
step, derived from the model's graph by the rules written there (each
tensor written once and read once per use at its storage precision;
weights, gradients and optimizer state once each).

    python3 docs/compiler/yardstick.py ./tpusim resnet50 16 [--dtype-policy float32]

prints the bytes per core (a shard of 16 samples) by category, and the
total; --json prints them as JSON. It reads `tpusim model NAME --batch B
--json` (the layers, their inputs and shapes) and computes nothing the
simulator computes."""
import json
import subprocess
import sys

GEMM = {"conv2d", "dense", "depthwise_conv2d", "separable_conv2d"}
EWISE = {"batch_normalization", "relu", "tanh", "sigmoid", "add", "dropout"}
STATE = {"adam": 2, "momentum": 1, "sgd": 0}


def chains(layers, users):
    """Runs of element-wise layers, each member's output read only by the
    next member: one fused kernel each (its intermediates never stored)."""
    out, j, n = [], 0, len(layers)
    while j < n:
        if layers[j]["type"] not in EWISE:
            j += 1
            continue
        k = j
        while (k + 1 < n and layers[k + 1]["type"] in EWISE and users[k] == [k + 1]):
            k += 1
        out.append((j, k))
        j = k + 1
    return out


def yardstick(model, batch, f32=False):
    layers = model["layers"]
    n = len(layers)
    act = 4 if f32 else 2

    def nbytes(i):  # tensor i at its storage precision (-1: the input; the logits f32)
        s = model["input_shape"] if i < 0 else layers[i]["output_shape"]
        return batch * s[0] * s[1] * s[2] * (4 if i < 0 or i == n - 1 else act)

    users = {i: [] for i in range(-1, n)}
    for j, l in enumerate(layers):
        for i in l["inputs"]:
            users[i].append(j)
    fwd = bwd = 0
    # consumers: a GEMM or other layer, or a chain of element-wise ones
    units = [(j, j) for j in range(n) if layers[j]["type"] not in EWISE] + chains(layers, users)
    for a, b in units:
        members = range(a, b + 1)
        ext = [i for j in members for i in layers[j]["inputs"] if i < a or i > b]
        t = layers[a]["type"]
        fwd += sum(nbytes(i) for i in ext) + nbytes(b)        # read each input once, write the output once
        grads = [i for i in ext if i >= 0]
        if t in GEMM:                                         # dW reads X and dY, dX reads dY and writes dX
            bwd += nbytes(ext[0]) + 2 * nbytes(b) + sum(nbytes(i) for i in grads)
        elif t in EWISE:                                      # dY, the saved tensors, the inputs' gradients
            saved = 0
            for j in members:
                if layers[j]["type"] == "batch_normalization":
                    saved += sum(nbytes(i) for i in layers[j]["inputs"] if i < a or i > b)
                if layers[j]["type"] in ("relu", "tanh", "sigmoid") and j == b:
                    saved += nbytes(b)
            bwd += nbytes(b) + saved + sum(nbytes(i) for i in grads)
        elif t == "maxpool":                                  # dY, the input for the mask, dX
            bwd += nbytes(b) + sum(nbytes(i) for i in ext) + sum(nbytes(i) for i in grads)
        else:                                                 # pads, pools, flatten: dY in, dX out
            bwd += nbytes(b) + sum(nbytes(i) for i in grads)
    for i in range(n):                                        # a tensor read by k layers gets k gradients
        bwd += nbytes(i) * max(0, len(users[i]) - 1)
    p = sum(l["params"] for l in layers)
    tp = sum(l["trainable_params"] for l in layers)
    w = 4 * p + 4 * tp + 4 * tp * 2                          # the forward and dX read them, the optimizer
                                                              # reads and writes them
    g = 4 * tp * 2                                            # dW written, the optimizer reads it
    o = 4 * tp * 2 * STATE[model.get("optimizer", "adam")]    # adam's m and v read and written
    return {"activations_forward": fwd, "activations_backward": bwd, "parameters": w, "gradients": g,
            "optimizer_state": o, "total": fwd + bwd + w + g + o}


def main(argv):
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    tpusim, name, batch = argv[1], argv[2], int(argv[3])
    f32 = "--dtype-policy" in argv and argv[argv.index("--dtype-policy") + 1] == "float32"
    out = subprocess.run([tpusim, "model", name, "--batch", str(batch), "--json"], check=True,
                         capture_output=True, text=True).stdout
    y = yardstick(json.loads(out), batch, f32)
    if "--json" in argv:
        print(json.dumps(y))
    else:
        for k, v in y.items():
            print(f"{k:22s} {v / 1e6:12.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
