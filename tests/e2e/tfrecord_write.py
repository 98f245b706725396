"""A TFRecord writer of the e2e tests' own (no TensorFlow): records framed
with the masked CRC-32C, tf.train.Example encoded by hand in protobuf's wire
format. Imported by the tests (PYTHONPATH=tests/e2e)."""
import struct


def crc32c(b):
    c = 0xffffffff
    for x in b:
        c ^= x
        for _ in range(8):
            c = (c >> 1) ^ (0x82f63b78 if c & 1 else 0)
    return c ^ 0xffffffff


assert crc32c(b"123456789") == 0xe3069283   # the CRC-32C check value


def masked(b):
    c = crc32c(b)
    return (((c >> 15) | (c << 17)) + 0xa282ead8) & 0xffffffff


def varint(v):
    o = b""
    while v >= 0x80:
        o += bytes([v & 0x7f | 0x80])
        v >>= 7
    return o + bytes([v])


def ld(field, b):
    return varint(field << 3 | 2) + varint(len(b)) + b


def feature(key, kind, body):
    """A Features map entry: kind 1 bytes_list, 2 float_list, 3 int64_list."""
    return ld(1, ld(1, key) + ld(2, ld(kind, body)))


def example(img, label, image_key=b"image", label_key=b"label"):
    return ld(1, feature(image_key, 1, ld(1, img)) + feature(label_key, 3, varint(1 << 3) + varint(label)))


def record(data):
    n = struct.pack("<Q", len(data))
    return n + struct.pack("<I", masked(n)) + data + struct.pack("<I", masked(data))


def flowers_example(img, cls, name, size=(192, 192)):
    """The Example of the Flowers TFRecords (the seed article's data set):
    image (JPEG bytes), class (int64), label (the class name, bytes), size
    (int64 [h, w]) and one_hot_class (floats)."""
    packed = b"".join(varint(v) for v in size)
    onehot = b"".join(struct.pack("<f", 1.0 if k == cls else 0.0) for k in range(5))
    return ld(1, feature(b"image", 1, ld(1, img)) + feature(b"class", 3, varint(1 << 3) + varint(cls))
              + feature(b"label", 1, ld(1, name)) + feature(b"size", 3, ld(1, packed))
              + feature(b"one_hot_class", 2, ld(1, onehot)))
