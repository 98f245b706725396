#!/usr/bin/env python3
"""Writes a native tpusim model JSON shaped as Keras applications' ResNet50
(include_top=True): the same layers, shapes and parameter count (25,636,712
at 224x224x3 and 1000 classes). For the benchmarks only (b_step.sh), until
the zoo has resnet50. Usage: resnet50_json.py [H W C CLASSES] > r50.json"""
import json, sys

h, w, c, classes = (int(a) for a in sys.argv[1:5]) if len(sys.argv) >= 5 else (224, 224, 3, 1000)
L = []
def add(**kw):
    L.append(kw)
    return kw["name"]

def conv(name, x, filters, k, stride=1, padding="valid"):
    return add(type="conv2d", name=name, inputs=x, filters=filters, kernel=k, stride=stride, padding=padding)
def bn(name, x):
    return add(type="batch_normalization", name=name, inputs=x, epsilon=1.001e-5)
def relu(name, x):
    return add(type="relu", name=name, inputs=x)

def block(x, filters, stride, shortcut, name):
    if shortcut:
        s = bn(name + "_0_bn", conv(name + "_0_conv", x, 4 * filters, 1, stride))
    else:
        s = x
    y = relu(name + "_1_relu", bn(name + "_1_bn", conv(name + "_1_conv", x, filters, 1, stride)))
    y = relu(name + "_2_relu", bn(name + "_2_bn", conv(name + "_2_conv", y, filters, 3, 1, "same")))
    y = bn(name + "_3_bn", conv(name + "_3_conv", y, 4 * filters, 1))
    a = add(type="add", name=name + "_add", inputs=[s, y])
    return relu(name + "_out", a)

def stack(x, filters, blocks, stride, name):
    x = block(x, filters, stride, True, name + "_block1")
    for i in range(2, blocks + 1):
        x = block(x, filters, 1, False, name + "_block" + str(i))
    return x

x = add(type="zero_padding", name="conv1_pad", inputs="input", padding=3)
x = relu("conv1_relu", bn("conv1_bn", conv("conv1_conv", x, 64, 7, 2)))
x = add(type="zero_padding", name="pool1_pad", inputs=x, padding=1)
x = add(type="maxpool", name="pool1_pool", inputs=x, size=3, stride=2)
x = stack(x, 64, 3, 1, "conv2")
x = stack(x, 128, 4, 2, "conv3")
x = stack(x, 256, 6, 2, "conv4")
x = stack(x, 512, 3, 2, "conv5")
x = add(type="global_avgpool", name="avg_pool", inputs=x)
add(type="dense", name="predictions", inputs=x, units=classes)
json.dump({"name": "resnet50-shaped", "input": [h, w, c], "layers": L}, sys.stdout, indent=1)
print()
