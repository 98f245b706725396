"""Images for the e2e tests, without PIL: PNG files written with zlib (every
pixel known), PPM files for cjpeg to encode and djpeg's output read back, and
what Keras and TensorFlow do with them written out from their sources:
image_dataset_from_directory's file order (keras.src.utils.dataset_utils
index_directory and get_training_or_validation_split) and tf.image.resize's
bilinear resize (resize_bilinear_op.cc, half-pixel centers), both with numpy.
Imported by the tests (PYTHONPATH=tests/e2e)."""
import os
import struct
import zlib

import numpy as np


def png(path, pixels):
    """pixels: a uint8 array H x W x C (C 1, 2, 3 or 4)."""
    h, w, c = pixels.shape
    ctype = {1: 0, 2: 4, 3: 2, 4: 6}[c]
    raw = b"".join(b"\x00" + pixels[y].tobytes() for y in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, ctype, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def ppm(path, pixels):
    """A binary PPM (3 channels) or PGM (1) of a uint8 H x W x C array, for cjpeg."""
    h, w, c = pixels.shape
    with open(path, "wb") as f:
        f.write(b"P%d %d %d 255\n" % (6 if c == 3 else 5, w, h) + pixels.tobytes())


def read_pnm(path):
    """djpeg's output (P5 or P6, maxval 255) as a uint8 H x W x C array."""
    data = open(path, "rb").read()
    fields, pos = [], 0
    while len(fields) < 4:
        while data[pos:pos + 1].isspace():
            pos += 1
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    pos += 1
    w, h, c = int(fields[1]), int(fields[2]), 3 if fields[0] == b"P6" else 1
    return np.frombuffer(data[pos:pos + w * h * c], np.uint8).reshape(h, w, c)


def keras_index(directory, seed=None, validation_split=None, subset=None, shuffle=True,
                formats=(".bmp", ".gif", ".jpeg", ".jpg", ".png")):
    """The (path, label) list image_dataset_from_directory reads, in its order."""
    classes = [d for d in sorted(os.listdir(directory))
               if os.path.isdir(os.path.join(directory, d)) and not d.startswith(".")]
    paths, labels = [], []
    for i, c in enumerate(classes):
        for root, _, files in sorted(os.walk(os.path.join(directory, c)), key=lambda x: x[0]):
            for f in sorted(files):
                if f.lower().endswith(formats):
                    paths.append(os.path.join(root, f))
                    labels.append(i)
    if shuffle:
        np.random.RandomState(seed).shuffle(paths)
        np.random.RandomState(seed).shuffle(labels)
    if validation_split:
        n = int(validation_split * len(paths))
        paths, labels = (paths[:-n], labels[:-n]) if subset == "training" else (paths[-n:], labels[-n:])
    return paths, labels, classes


def tf_resize_bilinear(img, oh, ow):
    """tf.image.resize(img, (oh, ow)): bilinear, half-pixel centers, float32."""
    ih, iw, _ = img.shape
    if (ih, iw) == (oh, ow):
        return img.astype(np.float32)

    def weights(out, inn):
        scale = np.float32(inn) / np.float32(out)
        v = (np.arange(out, dtype=np.float32) + np.float32(0.5)) * scale - np.float32(0.5)
        f = np.floor(v)
        return np.maximum(f, 0).astype(int), np.minimum(np.ceil(v), inn - 1).astype(int), (v - f).astype(np.float32)
    ylo, yhi, yt = weights(oh, ih)
    xlo, xhi, xt = weights(ow, iw)
    x = img.astype(np.float32)
    tl, tr = x[ylo][:, xlo], x[ylo][:, xhi]
    bl, br = x[yhi][:, xlo], x[yhi][:, xhi]
    xt3 = xt[None, :, None]
    top = tl + (tr - tl) * xt3
    bot = bl + (br - bl) * xt3
    return top + (bot - top) * yt[:, None, None]


def to_u8(x):
    """How datafeed holds a resized image: rounded to nearest, halves up."""
    return np.floor(np.clip(x, 0, 255) + np.float32(0.5)).astype(np.uint8)
