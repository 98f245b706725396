# The bad-input corpus: malformed and extreme inputs to every parser and
# option, each with its exit status and the message that names the file
# and the field (lib.sh's corpus). Generated parts: both ends of every chip
# key's physical range, read from docs/CHIPS.md's table, and of every
# pipeline cost, read from docs/DATAFEED.md's, so the docs, the code and
# this test cannot drift apart. The sweep's own findings have their tests in
# t_hardening.sh; more cases of each parser live with its command's test
# (bad_inputs in t_config.sh, t_run.sh, t_pipeline.sh, ...).
PY=/usr/bin/python3
# the shipped examples, at the paths the cases name
mkdir -p docs datafeed
cp -r "$TPU_ROOT/docs/examples" "$TPU_ROOT/docs/scalesim" docs/
cp -r "$TPU_ROOT/datafeed/examples" datafeed/

# {== Chip keys: both ends of every range (docs/CHIPS.md), by --set and by file
# every key sim/config.c knows has its row in docs/CHIPS.md's table
if "$TPUSIM" info --set nope=1 2> keys.txt; then die "--set nope=1 was accepted"; fi
$PY - "$TPU_ROOT/docs/CHIPS.md" keys.txt <<'PY' || die "docs/CHIPS.md's table lacks keys of sim/config.c"
import sys
doc, msg = open(sys.argv[1]).read(), open(sys.argv[2]).read()
known = msg.split("known keys: ")[1].strip().split(", ")
missing = [k for k in known if "`%s`" % k not in doc]
assert len(known) >= 24 and not missing, (len(known), missing)
PY
$PY - "$TPU_ROOT/docs/CHIPS.md" > chip.cases <<'PY'
import re, sys
n = 0
for line in open(sys.argv[1]):
    m = re.match(r"\| `([a-z_.]+)`(?:, `([a-z_.]+)`)? \| (integer|number) \| (.*?) \|", line)
    if not m:
        continue
    keys = [k for k in m.group(1, 2) if k]
    kind, allowed = m.group(3), m.group(4)
    if kind == "integer":
        r = re.match(r"(\d+)\.\.(\d+)", allowed)
        lo, hi = int(r.group(1)), int(r.group(2))
        below, above, inside = str(lo - 1), str(hi + 1), [str(lo), str(hi)]
        shown = "an integer in %d..%d" % (lo, hi)
    else:
        r = re.match(r"\[([0-9.e+-]+), ([0-9.e+-]+)\]", allowed)
        lo, hi = float(r.group(1)), float(r.group(2))
        below, above, inside = repr(lo / 2 if lo > 0 else -1.0), repr(hi * 2), [r.group(1), r.group(2)]
        shown = "a number in [%s, %s]" % (r.group(1), r.group(2))
    for k in keys:
        n += 1
        base = "teach" if k not in ("cores", "cores_per_chip") else "tpu-v2-8"
        for v in (below, above, "12abc", "nan"):
            print("2|info --chip %s --set %s=%s|--set %s: expected %s" % (base, k, v, k, shown))
        # the same in a file: the key at its line:column
        path = k.split(".")
        obj = v = "%s"
        for p in reversed(path[:-1]):
            pass
        js = '{ "base": "%s", ' % base
        inner = '"%s": %s' % (path[-1], "%s")
        for p in reversed(path[:-1]):
            inner = '"%s": { %s }' % (p, inner)
        for v in (below, above):
            f = "k_%s_%s.json" % (k.replace(".", "_"), "lo" if v == below else "hi")
            print(">%s %s%s }" % (f, js, inner % v))
            print("2|info --chip %s|%s:1:|key '%s': expected %s" % (f, f, k, shown))
        # these must also agree with each other (a divisor, the chips' layout, a host per chip at most)
        if k not in ("cores", "cores_per_chip", "ici.torus_x", "ici.torus_y", "hosts"):
            for v in inside:
                print("0|info --chip %s --set %s=%s --json|" % (base, k, v))
assert n >= 19, n     # every numeric key of the table was found
PY
corpus "$TPUSIM" < chip.cases
# a run at the extreme ends of the ranges gives finite reports
corpus "$TPUSIM" <<'CASES'
0|matmul --cores 4 --chip teach --m 64 --n 64 --k 64 --level timing --set hbm.bandwidth_gb_per_s=0.01 --set clock_mhz=10000 --json|
0|matmul --cores 4 --chip teach --m 64 --n 64 --k 64 --level timing --set ici.link_gbit_per_s=0.01 --set ici.latency_ns=1000000 --json|
0|run --chip teach --program docs/examples/train_step.json --level timing --set hbm.latency_ns=1000000 --set vpu.cycles.divide=100000 --json|
0|train --model mlp --data synthetic --synthetic-n 128 --batch 64 --level timing --chip teach --set hbm.bandwidth_gb_per_s=0.01|
CASES
# HBM a GEMM needs is decided from its shape, before any program is built
# (it took 8.9 s and 1.9 GB to find out; #33)
printf 'Layer name, M, N, K,\ng, 8, 8, 16777216,\n' > hbm_g.csv
for cmd in "matmul --chip teach --cores 4 --m 8 --n 8 --k 16777216 --level timing" \
           "run --topology hbm_g.csv --input-type gemm --chip teach --cores 4"; do
  # shellcheck disable=SC2086
  expect_status 2 timeout 5 "$TPUSIM" $cmd
  expect_err_contains "the GEMM's HBM buffers (A's rows, B and C's rows of each core) need 2684354816 bytes on chip 0, more than its capacity of 1073741824 bytes (hbm.capacity_gib 1)"
done
# a layer past the MXU's counters names the file, the line and the limit (it said "layer 'g': capacity exceeded")
printf 'Layer name, M, N, K,\ng, 2147483648, 2147483648, 2147483648,\n' > big_g.csv
expect_status 2 "$TPUSIM" scalesim -c "$TPU_ROOT/docs/scalesim/tpu_128.cfg" -t big_g.csv -i gemm -p ssbig
expect_err_contains "big_g.csv:2: layer 'g' (GEMM 2147483648 x 2147483648 x 2147483648): its 9.904e+27 multiply-adds or its cycles on a 128x128 array pass what tpusim's MXU counts (2^62)"
# }==

# {== Pipeline costs: both ends of every range (docs/DATAFEED.md), in place
$PY - "$TPU_ROOT/docs/DATAFEED.md" > cost.cases <<'PY'
import re, sys
where = {  # a pipeline with the field at its place, and the field's path
    "source": ('{ "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2, "%s": %s }, "stages": [ { "op": "batch", "batch_size": 2 } ] }', "source.%s"),
    "map, batch, shuffle": ('{ "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [ { "op": "map", "fn": "none", "%s": %s }, { "op": "batch", "batch_size": 2 } ] }', "stages[0].%s"),
    "cache": ('{ "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [ { "op": "cache", "%s": %s }, { "op": "batch", "batch_size": 2 } ] }', "stages[0].%s"),
    "workers": ('{ "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [ { "op": "batch", "batch_size": 2 }, { "op": "workers", "kind": "process", "count": 2, "%s": %s } ] }', "stages[1].%s"),
    "consumer": ('{ "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [ { "op": "batch", "batch_size": 2 } ], "consumer": { "%s": %s } }', "consumer.%s"),
    "host": ('{ "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [ { "op": "batch", "batch_size": 2 } ], "host": { "%s": %s } }', "host.%s"),
}
n = 0
for line in open(sys.argv[1]):
    m = re.match(r"\| ([a-z, ]+) \| (`[a-z_]+`(?:, `[a-z_]+`)*) \| \[([0-9.e+-]+), ([0-9.e+-]+)\] ", line)
    if not m or m.group(1) not in where:
        continue
    tmpl, fpath = where[m.group(1)]
    lo, hi = m.group(3), m.group(4)
    for k in re.findall(r"`([a-z_]+)`", m.group(2)):
        n += 1
        for tag, v in (("neg", "-1"), ("big", repr(float(hi) * 2)), ("str", '"fast"')):
            f = "c_%s_%s_%s.json" % (m.group(1).split(",")[0], k, tag)
            print(">%s %s" % (f, tmpl % (k, v)))
            print("2|pipeline --pipeline %s|%s:1:|field '%s': expected a number in [%s, %s]" % (f, f, fpath % k, lo, hi))
        f = "c_%s_%s_ok.json" % (m.group(1).split(",")[0], k)
        print(">%s %s" % (f, tmpl % (k, hi)))
        print("0|pipeline --pipeline %s --json|" % f)
assert n >= 12, n
PY
corpus "$TPUSIM" < cost.cases
corpus "$TPUSIM" <<'CASES'
>bw.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2, "read_bandwidth_bytes_per_s": 0.5 }, "stages": [ { "op": "batch", "batch_size": 2 } ] }
2|pipeline --pipeline bw.json|bw.json:1:|field 'source.read_bandwidth_bytes_per_s': expected 0 (no limit) or a number in [1, 1e+13] bytes/s, got 0.5
>bw2.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2, "read_bandwidth_bytes_per_s": 1e14 }, "stages": [ { "op": "batch", "batch_size": 2 } ] }
2|pipeline --pipeline bw2.json|field 'source.read_bandwidth_bytes_per_s': expected a number in [0, 1e+13]
>std.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [ { "op": "map", "fn": "normalize", "std": 1e-300 }, { "op": "batch", "batch_size": 2 } ] }
2|pipeline --pipeline std.json|std.json:1:|field 'stages[0].std': expected a number in [-1e+06, -1e-06] or [1e-06, 1e+06], got 1e-300
>mean.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [ { "op": "map", "fn": "normalize", "mean": 1e300 }, { "op": "batch", "batch_size": 2 } ] }
2|pipeline --pipeline mean.json|field 'stages[0].mean': expected a number in [-1e+06, 1e+06], got 1e+300
>kf.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [ { "op": "filter", "label_in": [0], "keep_fraction": 2 }, { "op": "batch", "batch_size": 2 } ] }
2|pipeline --pipeline kf.json|field 'stages[0].keep_fraction': expected a share 0..1
>tok_norm.json { "source": { "kind": "synthetic", "n": 8, "shape": [4], "classes": 2, "vocab": 100 }, "stages": [ { "op": "map", "fn": "normalize" }, { "op": "batch", "batch_size": 2 } ] }
2|pipeline --pipeline tok_norm.json|tok_norm.json:1:|field 'stages[0]': map normalize would scale the source's token ids (source.vocab 100) into fractions
>tok_v0.json { "source": { "kind": "synthetic", "n": 8, "shape": [4], "classes": 2, "vocab": 0 }, "stages": [ { "op": "batch", "batch_size": 2 } ] }
2|pipeline --pipeline tok_v0.json|tok_v0.json:1:|field 'source.vocab': expected an integer in 1..16777216, got 0
>tok_vbig.json { "source": { "kind": "synthetic", "n": 8, "shape": [4], "classes": 2, "vocab": 16777217 }, "stages": [ { "op": "batch", "batch_size": 2 } ] }
2|pipeline --pipeline tok_vbig.json|tok_vbig.json:1:|field 'source.vocab': expected an integer in 1..16777216, got 16777217
>tok_kind.json { "source": { "kind": "fashion-mnist", "vocab": 10 }, "stages": [ { "op": "batch", "batch_size": 2 } ] }
2|pipeline --pipeline tok_kind.json|tok_kind.json:1:|field 'source.vocab': is for a synthetic source
>tok_ok.json { "source": { "kind": "synthetic", "n": 8, "shape": [4], "classes": 2, "vocab": 16777216 }, "stages": [ { "op": "batch", "batch_size": 2 } ] }
0|pipeline --pipeline tok_ok.json|
CASES
# }==

# {== Pipelines: structure, types and values
corpus "$TPUSIM" pipeline --pipeline <<'CASES'
>p_nul.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [] }\0x
2|p_nul.json|p_nul.json:1:|contains a NUL byte
>p_cmt.json { "comment": 5, "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [] }
2|p_cmt.json|p_cmt.json:1:14: field 'comment': expected a string, got an integer
>p_src.json { "stages": [] }
2|p_src.json|p_src.json:1:|field 'source': missing
>p_srct.json { "source": 3, "stages": [] }
2|p_srct.json|field 'source': expected an object, got an integer
>p_kind.json { "source": { "n": 8 }, "stages": [] }
2|p_kind.json|field 'source.kind': missing
>p_kind2.json { "source": { "kind": 7 }, "stages": [] }
2|p_kind2.json|field 'source.kind': expected a string, got an integer
>p_split.json { "source": { "kind": "fashion-mnist", "split": "val" }, "stages": [] }
2|p_split.json|field 'source.split': expected "train" or "test", got 'val'
>p_shape.json { "source": { "kind": "synthetic", "n": 8, "shape": [0, 2], "classes": 2 }, "stages": [] }
2|p_shape.json|field 'source.shape[0]': expected an integer in 1..65536
>p_shape2.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2, 2, 2], "classes": 2 }, "stages": [] }
2|p_shape2.json|field 'source.shape': expected [height, width, channels]
>p_n.json { "source": { "kind": "synthetic", "n": 0, "shape": [2, 2], "classes": 2 }, "stages": [] }
2|p_n.json|field 'source.n': expected an integer in 1..2147483648, got 0
>p_cls.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 1 }, "stages": [] }
2|p_cls.json|field 'source.classes': expected an integer in 2..65536, got 1
>p_cls2.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 70000 }, "stages": [] }
2|p_cls2.json|field 'source.classes': expected an integer in 2..65536, got 70000
>p_seed.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2, "seed": -1 }, "stages": [] }
2|p_seed.json|field 'source.seed': expected an integer in 0..
>p_files.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2, "files": 0 }, "stages": [] }
2|p_files.json|field 'source.files': expected an integer in 1..1000000, got 0
>p_el.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2, "elements": 1e3 }, "stages": [] }
2|p_el.json|field 'source.elements': expected an integer in 1..1000000000, got a real number
>p_idx.json { "source": { "kind": "idx", "images": "i" }, "stages": [] }
2|p_idx.json|field 'source.labels': missing; expected a file path
>p_mn.json { "source": { "kind": "mnist" }, "stages": [] }
2|p_mn.json|field 'source.dir': missing
>p_tfr.json { "source": { "kind": "tfrecord", "files": [] }, "stages": [] }
2|p_tfr.json|field 'source.files': expected a list of 1 to 256 TFRecord file paths
>p_stg.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": {} }
2|p_stg.json|field 'stages': expected an array of stages, got an object
>p_op.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [ { "batch_size": 2 } ] }
2|p_op.json|field 'stages[0]': missing key 'op'
>p_op2.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [ 5 ] }
2|p_op2.json|field 'stages[0]': expected an object like
>p_shuf.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [ { "op": "shuffle" }, { "op": "batch", "batch_size": 2 } ] }
2|p_shuf.json|field 'stages[0].buffer_size': missing
>p_map.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [ { "op": "map", "fn": "rotate" }, { "op": "batch", "batch_size": 2 } ] }
2|p_map.json|field 'stages[0].fn': expected one of normalize, one_hot, random_flip, random_crop, none, got 'rotate'
>p_npc.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [ { "op": "map", "fn": "none", "num_parallel_calls": 0 }, { "op": "batch", "batch_size": 2 } ] }
2|p_npc.json|field 'stages[0].num_parallel_calls': expected an integer in 1..256 or "autotune", got 0
>p_crop.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [ { "op": "map", "fn": "random_crop" }, { "op": "batch", "batch_size": 2 } ] }
2|p_crop.json|field 'stages[0].padding': missing
>p_drop.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [ { "op": "batch", "batch_size": 2, "drop_remainder": "yes" } ] }
2|p_drop.json|field 'stages[0].drop_remainder': expected true or false, got a string
>p_big.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [ { "op": "batch", "batch_size": 9, "drop_remainder": true } ] }
2|p_big.json|leaves no batch
>p_pf.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [ { "op": "batch", "batch_size": 2 }, { "op": "prefetch", "buffer_size": 300 } ] }
2|p_pf.json|field 'stages[1].buffer_size': expected an integer in 1..256
>p_il.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [ { "op": "interleave", "cycle_length": 0 }, { "op": "batch", "batch_size": 2 } ] }
2|p_il.json|field 'stages[0].cycle_length': expected an integer in 1..4096, got 0
>p_sh.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [ { "op": "shard", "num_shards": 2, "index": 2 }, { "op": "batch", "batch_size": 2 } ] }
2|p_sh.json|field 'stages[0].index': expected an integer in 0..1, got 2
>p_rep.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [ { "op": "batch", "batch_size": 2 }, { "op": "repeat", "count": 0 } ] }
2|p_rep.json|field 'stages[1].count': expected -1 (forever) or >= 1, got 0
>p_take.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [ { "op": "take", "count": -2 }, { "op": "batch", "batch_size": 2 } ] }
2|p_take.json|field 'stages[0].count': expected an integer in -1..
>p_skip.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [ { "op": "skip", "count": 8 }, { "op": "batch", "batch_size": 2 } ] }
2|p_skip.json|leaves no elements
>p_flt.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [ { "op": "filter", "label_in": [0], "label_not_in": [1] }, { "op": "batch", "batch_size": 2 } ] }
2|p_flt.json|field 'stages[0]': expected exactly one predicate
>p_wk.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [ { "op": "batch", "batch_size": 2 }, { "op": "workers", "kind": "process", "count": 2, "gil": true } ] }
2|p_wk.json|field 'stages[1]': gil applies to thread workers only
>p_wk2.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [ { "op": "batch", "batch_size": 2 }, { "op": "workers", "kind": "thread", "count": 0 } ] }
2|p_wk2.json|field 'stages[1].count': expected an integer in 1..256
>p_ord.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [ { "op": "batch", "batch_size": 2 }, { "op": "shard", "num_shards": 2, "index": 0 } ] }
2|p_ord.json|field 'stages[1]'
>p_two.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [ { "op": "batch", "batch_size": 2 }, { "op": "batch", "batch_size": 2 } ] }
2|p_two.json|field 'stages[1]'
>p_cons.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [ { "op": "batch", "batch_size": 2 } ], "consumer": { "steps": 0 } }
2|p_cons.json|field 'consumer.steps': expected an integer in 1..10000000, got 0
>p_cons2.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [ { "op": "batch", "batch_size": 2 } ], "consumer": { "epochs": 2000000 } }
2|p_cons2.json|field 'consumer.epochs': expected an integer in 1..1000000
>p_cons3.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [ { "op": "batch", "batch_size": 2 } ], "consumer": { "speed": 1 } }
2|p_cons3.json|field 'consumer.speed': unknown key
>p_host.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [ { "op": "batch", "batch_size": 2 } ], "host": { "cores": 0 } }
2|p_host.json|field 'host.cores': expected an integer in 1..1024, got 0
>p_dup.json { "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 }, "stages": [], "stages": [] }
2|p_dup.json|p_dup.json:1:|malformed JSON|duplicate
>p_arr.json [ { "source": 1 } ]
2|p_arr.json|p_arr.json:1:1: expected a JSON object
>p_empty.json 
2|p_empty.json|p_empty.json:1:|malformed JSON
CASES
# }==

# {== Pipeline options of tpusim pipeline and train
corpus "$TPUSIM" <<'CASES'
2|pipeline --pipeline datafeed/examples/naive.json --steps 0|--steps
2|pipeline --pipeline datafeed/examples/naive.json --step-time -1|--step-time
2|pipeline --pipeline datafeed/examples/naive.json --host-cores 0|--host-cores
2|pipeline --pipeline datafeed/examples/naive.json --epochs 0|--epochs
2|pipeline --pipeline datafeed/examples/naive.json --width 5|--width
2|pipeline --pipeline datafeed/examples/naive.json --set hbm.latency_ns=1|--set: the pipeline runs on the host and simulates no chip
2|pipeline --chip teach --pipeline datafeed/examples/naive.json|--chip: the pipeline runs on the host
2|pipeline --pipeline datafeed/examples/naive.json --step-time nan|--step-time
2|pipeline --pipeline datafeed/examples/naive.json --step-time 1e308|--step-time
CASES
# }==

# {== Programs (tpusim run)
corpus "$TPUSIM" run --chip teach --program <<'CASES'
>r_desc.json { "description": ["a"], "ops": [] }
2|r_desc.json|r_desc.json:1:18: field 'description': expected a string, got an array
>r_nul.json { "ops": [] }\0\0
2|r_nul.json|r_nul.json:1:14: contains a NUL byte
>r_nul2.json { "ops": [\0] }
2|r_nul2.json|r_nul2.json:1:11: contains a NUL byte
>r_rep.json { "repeat": 0, "ops": [] }
2|r_rep.json|field 'repeat': expected an integer in 1..1000000, got 0
>r_rep2.json { "repeat": 2000000, "ops": [] }
2|r_rep2.json|field 'repeat': expected an integer in 1..1000000, got 2000000
>r_both.json { "ops": [], "per_core": [ {}, {}, {}, {} ] }
2|r_both.json|give either "ops"
>r_none.json { "buffers": [] }
2|r_none.json|give either "ops"
>r_inf.json { "ops": [], "infeed": { "ready_cycles": [0], "first": 5 } }
2|r_inf.json|field 'infeed.first': give either "ready_cycles"
>r_inf2.json { "ops": [], "infeed": { "ready_cycles": [10, 5] } }
2|r_inf2.json|field 'infeed.ready_cycles[1]': expected a cycle count in 0..2^53
>r_inf3.json { "ops": [], "infeed": { "ready_cycles": [-1] } }
2|r_inf3.json|field 'infeed.ready_cycles[0]': expected a cycle count in 0..2^53
>r_inf4.json { "ops": [], "infeed": { "ready_cycles": 5 } }
2|r_inf4.json|field 'infeed.ready_cycles': expected an array of cycles
>r_inf5.json { "ops": [], "infeed": { "batches": -1 } }
2|r_inf5.json|field 'infeed.batches': expected an integer in 0..100000000, got -1
>r_inf6.json { "ops": [], "infeed": { "batches": 2, "first": 1125899906842625 } }
2|r_inf6.json|field 'infeed.first': expected an integer in 0..1125899906842624
>r_inf7.json { "ops": [], "infeed": [ 1 ] }
2|r_inf7.json|field 'infeed': expected an object
>r_inf8.json { "ops": [], "infeed": { "batches": 1, "ready": 1 } }
2|r_inf8.json|field 'infeed.ready': unknown field; allowed here: ready_cycles, first, interval, batches
>r_buf.json { "buffers": [ { "name": "a", "space": "vmem", "shape": [0, 4] } ], "ops": [] }
2|r_buf.json|field 'buffers[0].shape[0]': expected an integer in 1..2147483648 (2^31)
>r_buf2.json { "buffers": [ { "name": "a", "space": "vmem", "shape": [4] } ], "ops": [] }
2|r_buf2.json|field 'buffers[0].shape': expected [rows, cols]
>r_buf3.json { "buffers": [ { "space": "vmem", "shape": [4, 4] } ], "ops": [] }
2|r_buf3.json|field 'buffers[0].name': missing; expected a string
>r_buf4.json { "buffers": [ { "name": "a", "space": "vmem", "shape": [4, 4] }, { "name": "a", "space": "vmem", "shape": [4, 4] } ], "ops": [] }
2|r_buf4.json|field 'buffers[1]': core 0: buffer 'a' is defined twice
>r_buf5.json { "buffers": [ { "name": "a", "space": "vmem", "shape": [4, 4], "dtype": "f64" } ], "ops": [] }
2|r_buf5.json|field 'buffers[0].dtype': expected "f32" or "bf16", got "f64"
>r_op.json { "buffers": [ { "name": "a", "space": "vmem", "shape": [4, 4] } ], "ops": [ { "op": "matmul", "a": "a", "b": "a" } ] }
2|r_op.json|field 'ops[0].dst': missing; expected a string
>r_op2.json { "buffers": [ { "name": "a", "space": "vmem", "shape": [4, 4] } ], "ops": [ { "op": "vpu", "fn": "frobnicate", "in": ["a"], "out": ["a"] } ] }
2|r_op2.json|field 'ops[0].fn': unknown VPU op "frobnicate"
>r_op3.json { "buffers": [ { "name": "a", "space": "vmem", "shape": [4, 4] } ], "ops": [ { "op": "all_reduce", "src": "a", "dst": "a", "bytes": -5 } ] }
2|r_op3.json|field 'ops[0].bytes': unknown field; allowed here: op, name
>r_op4.json { "ops": [ "dma" ] }
2|r_op4.json|field 'ops[0]': expected an object
>r_pc.json { "per_core": [ { "ops": [] }, { "ops": [] }, { "ops": [] }, { "opz": [] } ] }
2|r_pc.json|field 'per_core[3].opz': unknown field; allowed here: buffers, ops, infeed
>r_cores.json { "cores": 0, "ops": [] }
2|r_cores.json|field 'cores': expected an integer in 1..2048, got 0
CASES
# }==

# {== Models (tpusim model and train)
corpus "$TPUSIM" model <<'CASES'
# Keras inbound node indices: a layer is called once, so its node is 0
>k_node5.json {"class_name": "Functional", "keras_version": "2.15.0", "config": {"name": "m", "input_layers": [["in", 0, 0]], "output_layers": [["d", 0, 0]], "layers": [{"class_name": "InputLayer", "name": "in", "config": {"name": "in", "batch_input_shape": [null, 8, 8, 2]}, "inbound_nodes": []}, {"class_name": "Conv2D", "name": "conv", "config": {"name": "conv", "filters": 4, "kernel_size": [3, 3]}, "inbound_nodes": [[["in", 0, 0, {}]]]}, {"class_name": "Flatten", "name": "f", "config": {"name": "f"}, "inbound_nodes": [[["conv", 5, 0, {}]]]}, {"class_name": "Dense", "name": "d", "config": {"name": "d", "units": 3}, "inbound_nodes": [[["f", 0, 0, {}]]]}]}}
2|k_node5.json|k_node5.json:1:|layer 'f' (Flatten): takes node 5 of layer 'conv'; node index out of range 0..0
>k_nodem1.json {"class_name": "Functional", "keras_version": "2.15.0", "config": {"name": "m", "input_layers": [["in", 0, 0]], "output_layers": [["d", 0, 0]], "layers": [{"class_name": "InputLayer", "name": "in", "config": {"name": "in", "batch_input_shape": [null, 8, 8, 2]}, "inbound_nodes": []}, {"class_name": "Conv2D", "name": "conv", "config": {"name": "conv", "filters": 4, "kernel_size": [3, 3]}, "inbound_nodes": [[["in", 0, 0, {}]]]}, {"class_name": "Flatten", "name": "f", "config": {"name": "f"}, "inbound_nodes": [[["conv", -1, 0, {}]]]}, {"class_name": "Dense", "name": "d", "config": {"name": "d", "units": 3}, "inbound_nodes": [[["f", 0, 0, {}]]]}]}}
2|k_nodem1.json|layer 'f' (Flatten): takes node -1 of layer 'conv'; node index out of range 0..0
>k_nodes.json {"class_name": "Functional", "keras_version": "2.15.0", "config": {"name": "m", "input_layers": [["in", 0, 0]], "output_layers": [["d", 0, 0]], "layers": [{"class_name": "InputLayer", "name": "in", "config": {"name": "in", "batch_input_shape": [null, 8, 8, 2]}, "inbound_nodes": []}, {"class_name": "Conv2D", "name": "conv", "config": {"name": "conv", "filters": 4, "kernel_size": [3, 3]}, "inbound_nodes": [[["in", 0, 0, {}]]]}, {"class_name": "Flatten", "name": "f", "config": {"name": "f"}, "inbound_nodes": [[["conv", "0", 0, {}]]]}, {"class_name": "Dense", "name": "d", "config": {"name": "d", "units": 3}, "inbound_nodes": [[["f", 0, 0, {}]]]}]}}
2|k_nodes.json|layer 'f' (Flatten): expected [layer name, node index, tensor index]
>k_nodeout.json {"class_name": "Functional", "keras_version": "2.15.0", "config": {"name": "m", "input_layers": [["in", 0, 0]], "output_layers": [["d", 1, 0]], "layers": [{"class_name": "InputLayer", "name": "in", "config": {"name": "in", "batch_input_shape": [null, 8, 8, 2]}, "inbound_nodes": []}, {"class_name": "Conv2D", "name": "conv", "config": {"name": "conv", "filters": 4, "kernel_size": [3, 3]}, "inbound_nodes": [[["in", 0, 0, {}]]]}, {"class_name": "Flatten", "name": "f", "config": {"name": "f"}, "inbound_nodes": [[["conv", 0, 0, {}]]]}, {"class_name": "Dense", "name": "d", "config": {"name": "d", "units": 3}, "inbound_nodes": [[["f", 0, 0, {}]]]}]}}
2|k_nodeout.json|layer 'd' (Dense): takes node 1 of layer 'd'; node index out of range 0..0
>k_groups.json {"class_name": "Functional", "keras_version": "2.15.0", "config": {"name": "m", "input_layers": [["in", 0, 0]], "output_layers": [["d", 0, 0]], "layers": [{"class_name": "InputLayer", "name": "in", "config": {"name": "in", "batch_input_shape": [null, 8, 8, 2]}, "inbound_nodes": []}, {"class_name": "Conv2D", "name": "conv", "config": {"name": "conv", "filters": 4, "kernel_size": [3, 3], "groups": 0}, "inbound_nodes": [[["in", 0, 0, {}]]]}, {"class_name": "Flatten", "name": "f", "config": {"name": "f"}, "inbound_nodes": [[["conv", 0, 0, {}]]]}, {"class_name": "Dense", "name": "d", "config": {"name": "d", "units": 3}, "inbound_nodes": [[["f", 0, 0, {}]]]}]}}
2|k_groups.json|layer 'conv' (Conv2D): field 'groups': expected an integer in 1..65536
>k_groups3.json {"class_name": "Functional", "keras_version": "2.15.0", "config": {"name": "m", "input_layers": [["in", 0, 0]], "output_layers": [["d", 0, 0]], "layers": [{"class_name": "InputLayer", "name": "in", "config": {"name": "in", "batch_input_shape": [null, 8, 8, 2]}, "inbound_nodes": []}, {"class_name": "Conv2D", "name": "conv", "config": {"name": "conv", "filters": 4, "kernel_size": [3, 3], "groups": 3}, "inbound_nodes": [[["in", 0, 0, {}]]]}, {"class_name": "Flatten", "name": "f", "config": {"name": "f"}, "inbound_nodes": [[["conv", 0, 0, {}]]]}, {"class_name": "Dense", "name": "d", "config": {"name": "d", "units": 3}, "inbound_nodes": [[["f", 0, 0, {}]]]}]}}
2|k_groups3.json|field 'groups': 3 does not divide the 2 input channels and the 4 filters
>k_groupsdw.json {"class_name": "Functional", "keras_version": "2.15.0", "config": {"name": "m", "input_layers": [["in", 0, 0]], "output_layers": [["d", 0, 0]], "layers": [{"class_name": "InputLayer", "name": "in", "config": {"name": "in", "batch_input_shape": [null, 8, 8, 2]}, "inbound_nodes": []}, {"class_name": "DepthwiseConv2D", "name": "conv", "config": {"name": "conv", "kernel_size": [3, 3], "groups": 2}, "inbound_nodes": [[["in", 0, 0, {}]]]}, {"class_name": "Flatten", "name": "f", "config": {"name": "f"}, "inbound_nodes": [[["conv", 0, 0, {}]]]}, {"class_name": "Dense", "name": "d", "config": {"name": "d", "units": 3}, "inbound_nodes": [[["f", 0, 0, {}]]]}]}}
2|k_groupsdw.json|layer 'conv' (DepthwiseConv2D): field 'groups': DepthwiseConv2D takes groups 1 only
>m_nul.json { "input": [4], "layers": [ { "type": "dense", "units": 2 } ] }\0
2|m_nul.json|m_nul.json:1:64: contains a NUL byte
>m_in.json { "input": [4, 4, 1, 1], "layers": [ { "type": "dense", "units": 2 } ] }
2|m_in.json|m_in.json:1:|field 'input': expected [height, width, channels], [length, channels] or [size]
>m_in2.json { "input": [0], "layers": [ { "type": "dense", "units": 2 } ] }
2|m_in2.json|field 'input'
>m_in3.json { "layers": [ { "type": "dense", "units": 2 } ] }
2|m_in3.json|field 'input': missing
>m_ly.json { "input": [4], "layers": [] }
2|m_ly.json|field 'layers': bad value; expected an array of 1..1024 layer objects
>m_ly2.json { "input": [4], "layers": {} }
2|m_ly2.json|field 'layers'
>m_units.json { "input": [4], "layers": [ { "type": "dense", "units": 0 } ] }
2|m_units.json|layers[0] (dense): field 'units'
>m_units2.json { "input": [4], "layers": [ { "type": "dense", "units": 2.5 } ] }
2|m_units2.json|layers[0] (dense): field 'units'
>m_act.json { "input": [4], "layers": [ { "type": "dense", "units": 2, "activation": "gelu" } ] }
2|m_act.json|layers[0] (dense): field 'activation'
>m_bias.json { "input": [4], "layers": [ { "type": "dense", "units": 2, "use_bias": 1 } ] }
2|m_bias.json|layers[0] (dense): field 'use_bias'
>m_k.json { "input": [8, 8, 1], "layers": [ { "type": "conv2d", "filters": 2, "kernel": 9 }, { "type": "flatten" } ] }
2|m_k.json|layers[0] (conv2d): field 'kernel'
>m_k2.json { "input": [8, 8, 1], "layers": [ { "type": "conv2d", "filters": 2, "kernel": 0 }, { "type": "flatten" } ] }
2|m_k2.json|layers[0] (conv2d): field 'kernel'
>m_kwrap.json { "input": [8, 8, 1], "layers": [ { "type": "conv2d", "filters": 2, "kernel": 4294967299 }, { "type": "flatten" } ] }
2|m_kwrap.json|m_kwrap.json:1:79: layers[0] (conv2d): field 'kernel': expected an integer or [height, width] in 1..64, got 4294967299
>m_kwrap2.json { "input": [8, 8, 1], "layers": [ { "type": "conv2d", "filters": 2, "kernel": [3, -4294967293] }, { "type": "flatten" } ] }
2|m_kwrap2.json|layers[0] (conv2d): field 'kernel': expected an integer or [height, width] in 1..64, got -4294967293
>m_zpwrap.json { "input": [8, 8, 1], "layers": [ { "type": "zero_padding", "padding": 4294967297 }, { "type": "flatten" } ] }
2|m_zpwrap.json|layers[0] (zero_padding): field 'padding': expected p, [h, w] or [[top, bottom], [left, right]], integers in 0..1024, got 4294967297
>m_zpwrap2.json { "input": [8, 8, 1], "layers": [ { "type": "zero_padding", "padding": [[1, 4294967297], 2] }, { "type": "flatten" } ] }
2|m_zpwrap2.json|got 4294967297
>m_pad.json { "input": [8, 8, 1], "layers": [ { "type": "conv2d", "filters": 2, "kernel": 3, "padding": "full" }, { "type": "flatten" } ] }
2|m_pad.json|layers[0] (conv2d): field 'padding'
>m_st.json { "input": [8, 8, 1], "layers": [ { "type": "conv2d", "filters": 2, "kernel": 3, "stride": 0 }, { "type": "flatten" } ] }
2|m_st.json|layers[0] (conv2d): field 'stride'
>m_drop.json { "input": [4], "layers": [ { "type": "dropout", "rate": 1 }, { "type": "dense", "units": 2 } ] }
2|m_drop.json|layers[0] (dropout): field 'rate'
>m_bn.json { "input": [4], "layers": [ { "type": "batch_normalization", "momentum": 1 }, { "type": "dense", "units": 2 } ] }
2|m_bn.json|layers[0] (batch_normalization): field 'momentum'
>m_bn2.json { "input": [4], "layers": [ { "type": "batch_normalization", "epsilon": 0 }, { "type": "dense", "units": 2 } ] }
2|m_bn2.json|layers[0] (batch_normalization): field 'epsilon'
>m_add.json { "input": [4], "layers": [ { "type": "dense", "units": 2, "name": "a" }, { "type": "add", "inputs": ["a", "zz"] } ] }
2|m_add.json|layers[1] (add): field 'inputs'
>m_name.json { "input": [4], "layers": [ { "type": "dense", "units": 2, "name": "input" } ] }
2|m_name.json|layers[0] (dense): field 'name'
>m_loss.json { "input": [4], "layers": [ { "type": "dense", "units": 2 } ], "loss": "mse" }
2|m_loss.json|field 'loss': expected "softmax_cross_entropy", "binary_cross_entropy" or "next_token_softmax_cross_entropy"
>m_tie1.json { "input": [4], "layers": [ { "type": "embedding", "name": "e", "input_dim": 9, "output_dim": 3 }, { "type": "dense", "tied_to": "zz" }, { "type": "flatten" } ] }
2|m_tie1.json|layers[1] (dense): field 'tied_to': expected the name of an embedding layer before this one, got 'zz'
>m_tie2.json { "input": [4], "layers": [ { "type": "dense", "name": "d", "units": 3 }, { "type": "dense", "tied_to": "d" }, { "type": "flatten" } ] }
2|m_tie2.json|layers[1] (dense): field 'tied_to': expected the name of an embedding layer before this one, got 'd'
>m_tie3.json { "input": [4], "layers": [ { "type": "embedding", "name": "e", "input_dim": 9, "output_dim": 3 }, { "type": "dense", "tied_to": 5 }, { "type": "flatten" } ] }
2|m_tie3.json|field 'tied_to': expected the name of an embedding layer before this one, got a value that is not a string
>m_tie4.json { "input": [4], "layers": [ { "type": "embedding", "name": "e", "input_dim": 9, "output_dim": 3 }, { "type": "dense", "tied_to": "e", "use_bias": true }, { "type": "flatten" } ] }
2|m_tie4.json|layers[1] (dense): field 'use_bias': a dense tied to an embedding's table has no bias
>m_tie5.json { "input": [4], "layers": [ { "type": "embedding", "name": "e", "input_dim": 9, "output_dim": 3 }, { "type": "dense", "tied_to": "e", "units": 8 }, { "type": "flatten" } ] }
2|m_tie5.json|field 'units': 8, but the table of 'e' has 9 rows (its input_dim)
>m_tie6.json { "input": [4], "layers": [ { "type": "embedding", "name": "e", "input_dim": 9, "output_dim": 3 }, { "type": "dense", "units": 5 }, { "type": "dense", "tied_to": "e" }, { "type": "flatten" } ] }
2|m_tie6.json|layers[2] (dense): field 'tied_to': the table of 'e' is 9 x 3; its transpose takes inputs of 3 channels, not the input shape 1x4x5
>m_ntl1.json { "input": [4], "layers": [ { "type": "dense", "units": 2 } ], "loss": "next_token_softmax_cross_entropy" }
2|m_ntl1.json|next_token_softmax_cross_entropy scores each position against the next token id of the input
>m_ntl2.json { "input": [4], "layers": [ { "type": "embedding", "name": "e", "input_dim": 9, "output_dim": 3 }, { "type": "flatten" }, { "type": "dense", "units": 9 } ], "loss": "next_token_softmax_cross_entropy" }
2|m_ntl2.json|next_token_softmax_cross_entropy needs the last layer's output to be the logits of each of the 4 positions over the 9 token ids (1 x 4 x V, V >= 9), not 9
>m_ntl3.json { "input": [4], "layers": [ { "type": "embedding", "name": "e", "input_dim": 9, "output_dim": 3 }, { "type": "dense", "units": 8 } ], "loss": "next_token_softmax_cross_entropy" }
2|m_ntl3.json|not 1x4x8
>m_ntl_ok.json { "input": [4], "layers": [ { "type": "embedding", "name": "e", "input_dim": 9, "output_dim": 3 }, { "type": "dense", "tied_to": "e" } ], "loss": "next_token_softmax_cross_entropy" }
0|m_ntl_ok.json|
>m_bce.json { "input": [4], "layers": [ { "type": "dense", "units": 2, "name": "out", "activation": "sigmoid" } ], "loss": "binary_cross_entropy" }
2|m_bce.json|field 'loss': binary_cross_entropy takes one sigmoid unit at the output; the last layer 'out' (dense) gives 2 values
>m_bce2.json { "input": [4], "layers": [ { "type": "dense", "units": 1, "activation": "tanh" } ], "loss": "binary_cross_entropy" }
2|m_bce2.json|field 'loss': binary_cross_entropy takes one sigmoid unit at the output; the last layer (dense) gives 1 value, not under a sigmoid
>m_out1.json { "input": [4], "layers": [ { "type": "dense", "units": 2 } ], "outputs": 5 }
2|m_out1.json|field 'outputs': expected an array of 1..4 objects
>m_out2.json { "input": [4], "layers": [ { "type": "dense", "units": 2, "name": "p" } ], "outputs": [ { "layer": "zz" } ] }
2|m_out2.json|outputs[0]: field 'layer': unknown layer 'zz'
>m_out3.json { "input": [4], "layers": [ { "type": "dense", "units": 2, "name": "p" } ], "outputs": [ { "layer": "p", "loss": "hinge" } ] }
2|m_out3.json|outputs[0]: field 'loss': expected "softmax_cross_entropy", "binary_cross_entropy" or "mean_squared_error"
>m_out4.json { "input": [4], "layers": [ { "type": "dense", "units": 2, "name": "p" } ], "outputs": [ { "layer": "p", "weight": -1 } ] }
2|m_out4.json|outputs[0]: field 'weight'
>m_out5.json { "input": [4], "layers": [ { "type": "dense", "units": 2, "name": "p" } ], "outputs": [ { "layer": "p" }, { "layer": "p" } ] }
2|m_out5.json|outputs[1]: field 'layer': 'p' is already outputs[0]
>m_out6.json { "input": [4], "loss": "softmax_cross_entropy", "layers": [ { "type": "dense", "units": 2, "name": "p" } ], "outputs": [ { "layer": "p" } ] }
2|m_out6.json|field 'loss': with "outputs", each output names its loss
>m_out7.json { "input": [4], "layers": [ { "type": "dense", "units": 1, "name": "v", "activation": "tanh" } ], "outputs": [ { "layer": "v" } ] }
2|m_out7.json|outputs[0]: layers[0] (dense 'v') gives 1 value under mean_squared_error: outputs[0] takes the data's labels
>m_out8.json { "input": [4], "layers": [ { "type": "dense", "units": 2, "name": "p" }, { "type": "dense", "units": 3, "name": "v", "inputs": "input" } ], "outputs": [ { "layer": "p" }, { "layer": "v", "loss": "mean_squared_error" } ] }
2|m_out8.json|outputs[1]: layers[1] (dense 'v') gives 3 values under mean_squared_error: mean_squared_error takes one value
>m_out9.json { "input": [4], "layers": [ { "type": "dense", "units": 2, "name": "p" }, { "type": "dense", "units": 3, "name": "u", "inputs": "input" }, { "type": "dense", "units": 1, "name": "v", "inputs": "input" } ], "outputs": [ { "layer": "p" }, { "layer": "v" } ] }
2|m_out9.json|layers[1] (dense 'u'): an unused branch: no later layer takes its output 3 as an input, and it is not one of the model's "outputs"
>m_out10.json { "input": [4], "layers": [ { "type": "dense", "units": 2, "name": "p" }, { "type": "dense", "units": 1, "name": "v", "inputs": "input", "activation": "softmax" } ], "outputs": [ { "layer": "p" }, { "layer": "v", "loss": "mean_squared_error" } ] }
2|m_out10.json|outputs[1]: layers[1] (dense 'v') ends in a softmax, which is folded into softmax_cross_entropy; mean_squared_error needs the head without it
>m_out11.json { "input": [4], "layers": [ { "type": "dense", "units": 3, "name": "p", "activation": "softmax" }, { "type": "dense", "units": 1, "name": "v", "activation": "tanh" } ], "outputs": [ { "layer": "p" }, { "layer": "v" } ] }
2|m_out11.json|outputs[0]: layers[0] (dense 'p')'s softmax is folded into the loss, so its values are logits; layers[1] (dense 'v') reads them
>m_ntl_out.json { "input": [4], "layers": [ { "type": "embedding", "name": "e", "input_dim": 9, "output_dim": 3 }, { "type": "dense", "tied_to": "e", "name": "lm" } ], "loss": "next_token_softmax_cross_entropy", "outputs": [ { "layer": "lm" } ] }
2|m_ntl_out.json|field 'outputs': a model with "loss": "next_token_softmax_cross_entropy" has one output (its last layer); leave out "outputs"
>m_opt.json { "input": [4], "layers": [ { "type": "dense", "units": 2 } ], "optimizer": { "type": "rmsprop" } }
2|m_opt.json|optimizer
>m_lr.json { "input": [4], "layers": [ { "type": "dense", "units": 2 } ], "optimizer": { "type": "sgd", "learning_rate": 1e300 } }
2|m_lr.json|learning_rate
>m_lr2.json { "input": [4], "layers": [ { "type": "dense", "units": 2 } ], "optimizer": { "type": "sgd", "learning_rate": -1 } }
2|m_lr2.json|learning_rate
>m_b1.json { "input": [4], "layers": [ { "type": "dense", "units": 2 } ], "optimizer": { "type": "adam", "beta1": 1 } }
2|m_b1.json|beta1
>m_seed.json { "input": [4], "layers": [ { "type": "dense", "units": 2 } ], "seed": -3 }
2|m_seed.json|field 'seed': expected a non-negative integer
>m_name2.json { "name": 5, "input": [4], "layers": [ { "type": "dense", "units": 2 } ] }
2|m_name2.json|field 'name': expected a string, got an integer
>m_sm.json { "input": [4], "layers": [ { "type": "dense", "units": 3, "activation": "softmax" }, { "type": "dense", "units": 2 } ] }
2|m_sm.json|layers[0] (dense): an "activation": "softmax" is supported only at the model's output
>m_perm.json { "input": [3, 4], "layers": [ { "type": "permute", "dims": [1, 1] }, { "type": "flatten" }, { "type": "dense", "units": 2 } ] }
2|m_perm.json|layers[0] (permute): field 'dims': expected a permutation of [1, 2] (a sequence) or [1, 2, 3] (an image)
>m_perm2.json { "input": [2, 3, 4], "layers": [ { "type": "permute", "dims": [2, 1] }, { "type": "flatten" }, { "type": "dense", "units": 2 } ] }
2|m_perm2.json|layers[0] (permute): field 'dims': two dims permute a sequence (1 x length x channels), not the input shape 2x3x4
>m_rs.json { "input": [4], "layers": [ { "type": "reshape", "target_shape": [3, -1] }, { "type": "dense", "units": 2 } ] }
2|m_rs.json|layers[0] (reshape): field 'target_shape': it does not hold the input shape 4 (4 values)
>m_rs2.json { "input": [4], "layers": [ { "type": "reshape", "target_shape": [-1, -1] }, { "type": "dense", "units": 2 } ] }
2|m_rs2.json|layers[0] (reshape): field 'target_shape': expected [n], [length, channels] or [h, w, c]
>m_flat.json { "input": [4, 4, 1], "layers": [ { "type": "dense", "units": 2 } ] }
2|m_flat.json|m_flat.json:1:33: the last layer's output 4x4x2 is not flat
>m_ln.json { "input": [6, 4], "layers": [ { "type": "layer_normalization", "epsilon": 0 }, { "type": "flatten" }, { "type": "dense", "units": 2 } ] }
2|m_ln.json|m_ln.json:1:76: layers[0] (layer_normalization): field 'epsilon'
>m_ln2.json { "input": [6, 4], "layers": [ { "type": "layer_normalization", "axis": 1 }, { "type": "flatten" }, { "type": "dense", "units": 2 } ] }
2|m_ln2.json|layers[0] (layer_normalization): field 'axis'
>m_gelu.json { "input": [4], "layers": [ { "type": "gelu", "approximate": "tanh" }, { "type": "dense", "units": 2 } ] }
2|m_gelu.json|layers[0] (gelu): field 'approximate': expected true or false
>m_leaky.json { "input": [4], "layers": [ { "type": "leaky_relu", "negative_slope": -0.1 }, { "type": "dense", "units": 2 } ] }
2|m_leaky.json|layers[0] (leaky_relu): field 'negative_slope'
>m_mul.json { "input": [4], "layers": [ { "type": "dense", "units": 4, "name": "a" }, { "type": "multiply", "inputs": ["a", "input", "a"] }, { "type": "dense", "units": 2 } ] }
2|m_mul.json|layers[1] (multiply): field 'inputs': expected an array of 2 layer names
>m_mul2.json { "input": [4], "layers": [ { "type": "dense", "units": 3, "name": "a" }, { "type": "multiply", "inputs": ["a", "input"] }, { "type": "dense", "units": 2 } ] }
2|m_mul2.json|multiply needs equal shapes, or a 1x1xC gate and an HxWxC map of the same channels
>m_resc.json { "input": [4, 4, 3], "layers": [ { "type": "rescaling" }, { "type": "flatten" }, { "type": "dense", "units": 2 } ] }
2|m_resc.json|m_resc.json:1:35: layers[0] (rescaling): field 'scale': missing
>m_resc2.json { "input": [4, 4, 3], "layers": [ { "type": "rescaling", "scale": [1, 2] }, { "type": "flatten" }, { "type": "dense", "units": 2 } ] }
2|m_resc2.json|layers[0] (rescaling): field 'scale': 2 values for the 3 channels of the input shape 4x4x3
>m_resc3.json { "input": [4, 4, 3], "layers": [ { "type": "rescaling", "scale": [1, 2, 3, 4, 5] }, { "type": "flatten" }, { "type": "dense", "units": 2 } ] }
2|m_resc3.json|layers[0] (rescaling): field 'scale': expected a number or an array of 1..4 numbers
>m_norm.json { "input": [4, 4, 3], "layers": [ { "type": "normalization", "mean": 0.5 }, { "type": "flatten" }, { "type": "dense", "units": 2 } ] }
2|m_norm.json|layers[0] (normalization): field 'variance': missing
>m_norm2.json { "input": [4, 4, 3], "layers": [ { "type": "normalization", "mean": 0.5, "variance": -1 }, { "type": "flatten" }, { "type": "dense", "units": 2 } ] }
2|m_norm2.json|layers[0] (normalization): field 'variance': expected a number or an array of 1..4 numbers (one per channel, as many as the first field's), each >= 0
>m_mha.json { "input": [6, 4], "layers": [ { "type": "multi_head_attention", "key_dim": 2 }, { "type": "flatten" }, { "type": "dense", "units": 2 } ] }
2|m_mha.json|m_mha.json:1:32: layers[0] (multi_head_attention): field 'num_heads': missing
>m_mha2.json { "input": [6, 4], "layers": [ { "type": "multi_head_attention", "num_heads": 2, "key_dim": 2, "dropout": 1 }, { "type": "flatten" }, { "type": "dense", "units": 2 } ] }
2|m_mha2.json|layers[0] (multi_head_attention): field 'dropout'
>m_mha3.json { "input": [6, 4], "layers": [ { "type": "multi_head_attention", "num_heads": 2, "key_dim": 2, "causal": 1 }, { "type": "flatten" }, { "type": "dense", "units": 2 } ] }
2|m_mha3.json|layers[0] (multi_head_attention): field 'causal': expected true or false
>m_mha4.json { "input": [4096, 4], "layers": [ { "type": "multi_head_attention", "num_heads": 128, "key_dim": 2 }, { "type": "flatten" }, { "type": "dense", "units": 2 } ] }
2|m_mha4.json|make the attention too large
>m_emb.json { "input": [6], "layers": [ { "type": "embedding", "input_dim": 0, "output_dim": 4 }, { "type": "flatten" }, { "type": "dense", "units": 2 } ] }
2|m_emb.json|m_emb.json:1:65: layers[0] (embedding): field 'input_dim'
>m_emb2.json { "input": [6, 2], "layers": [ { "type": "embedding", "input_dim": 9, "output_dim": 4 }, { "type": "flatten" }, { "type": "dense", "units": 2 } ] }
2|m_emb2.json|layers[0] (embedding): its input must be the model's input, given as [length] (the token ids)
>m_pos.json { "input": [6, 4], "layers": [ { "type": "position_embedding", "max_length": 5 }, { "type": "flatten" }, { "type": "dense", "units": 2 } ] }
2|m_pos.json|layers[0] (position_embedding): field 'max_length': 5 positions cannot take the input shape 1x6x4 (6 positions: height x width)
>m_take.json { "input": [6, 4], "layers": [ { "type": "take", "position": 6 }, { "type": "dense", "units": 2 } ] }
2|m_take.json|layers[0] (take): field 'position': 6 is not a position of the input shape 1x6x4
>m_seq.json { "input": [6, 0], "layers": [ { "type": "dense", "units": 2 } ] }
2|m_seq.json|field 'input': expected [height, width, channels], [length, channels] or [size]
>m_groups.json { "input": [8, 8, 6], "layers": [ { "type": "conv2d", "filters": 8, "kernel": 3, "groups": 4 }, { "type": "flatten" }, { "type": "dense", "units": 2 } ] }
2|m_groups.json|layers[0] (conv2d): field 'groups': 4 does not divide the 6 input channels and the 8 filters
CASES
# ONNX files (tests/e2e/onnx_write.py bad: built with python3-onnx's helper API)
$PY "$TPU_ROOT/tests/e2e/onnx_write.py" bad .
corpus "$TPUSIM" model <<'CASES'
=o_junk.onnx o_group.onnx o_gdiv.onnx o_dil.onnx o_opset.onnx o_stride.onnx o_addk.onnx o_wshape.onnx o_pool.onnx o_reshape.onnx o_2in.onnx o_big.onnx o_mmact.onnx o_mulk.onnx o_erf.onnx o_lnaxis.onnx o_gather.onnx o_transp.onnx o_smaxis.onnx o_poslen.onnx o_reshp.onnx o_take.onnx o_cfirst.onnx o_mask.onnx
2|o_junk.onnx|not an ONNX model: protobuf-c cannot read it as onnx.ModelProto
2|o_group.onnx|node 0 'g3' (Conv): group 3 with 4 input channels and a weight of 3 x 1: the group must divide the input channels and F
2|o_gdiv.onnx|node 0 'g2' (Conv): group 2 with 4 input channels and a weight of 3 x 2: the group must divide|1 < group < channels: conv2d with groups
2|o_dil.onnx|node 0 'dil' (Conv): attribute 'dilations' must be [1, 1]
2|o_opset.onnx|field 'opset_import': the default domain's opset is 9; expected 11..17
2|o_stride.onnx|node 0 'st' (Conv): attribute 'strides' must be [s, s]
2|o_addk.onnx|node 1 'addk' (Add): adds a constant tensor
2|o_wshape.onnx|node 3 'fc' (Gemm): input 1 (the weight) must be a 2-D constant [4, units] transposed (transB)
2|o_pool.onnx|node 1 'mp' (MaxPool): pads [1, 1, 1, 1] differ from 'same' ones
2|o_reshape.onnx|node 1 'rs' (Reshape): reshapes an N x C x H x W image other than flattening it, to [N, -1] or [N, 144]
2|o_mmact.onnx|node 1 'qk' (MatMul): a MatMul of two computed tensors; tpusim reads one inside attention only
2|o_mulk.onnx|node 0 'scale' (Mul): multiplies by a constant
2|o_erf.onnx|1 operator type is not supported: Erf (first: node 0 'erf')|only inside a Gelu, a LayerNormalization decomposition
2|o_lnaxis.onnx|node 0 'ln' (LayerNormalization): axis 1; tpusim normalizes over the last axis only
2|o_gather.onnx|node 0 'embed' (Gather): tpusim reads a Gather of the model's token ids
2|o_transp.onnx|node 1 'tr' (Transpose): transposes an N x C x H x W image other than to N x H x W x C
2|o_smaxis.onnx|node 0 'sm' (Softmax): axis 1 of a 3-D tensor
2|o_poslen.onnx|node 0 'pos' (Add): the position table must be float32 [L, 16] with L >= the 8 positions
2|o_reshp.onnx|node 0 'rs' (Reshape): shape [batch, ...] does not hold the input's 128 values per sample
2|o_take.onnx|node 0 'pick' (Gather): tpusim reads a Gather of a computed tensor as one position of a sequence
2|o_cfirst.onnx|node 2 'relu' (Relu): reads 'r', an image reshaped to [N, C, H*W]; only a Transpose [0, 2, 1] reads it
2|o_mask.onnx|node 20 'attn' (Add): attention's causal mask is 4 x 4; the sequence has 8 positions
2|o_2in.onnx|input 'x': dimension 2 must be a number in 1..65536
2|o_big.onnx|node 0 'c0' (Conv): layers[0] (conv2d): field 'kernel': 3x3 does not fit the input shape 2x2x4
2|nosuch.onnx|nosuch.onnx: cannot read: No such file or directory
CASES
corpus "$TPUSIM" <<'CASES'
2|model bert_base@0|bert_base@0: bert_base is bert_base[@SEQ][:CLASSES]
2|model bert_base:1|bert_base:1: bert_base is bert_base[@SEQ][:CLASSES]
2|model nosuch.json|nosuch.json: not a built-in model
2|model vgg16@0x0x3|vgg16@0x0x3: a zoo model is NAME[@HxWxC][:CLASSES]
2|model vgg16:0|vgg16:0: a zoo model is NAME[@HxWxC][:CLASSES]
# a zoo model's errors name the spec, without the line:col of tpusim's own
# text of it (vgg19@...:5:5 read like a class count)
2|model vgg19@65536x65536x3|vgg19@65536x65536x3: layers[0] (conv2d): output shape 65536x65536x64 is too large
2|model vgg19@65536x65536x3:5|vgg19@65536x65536x3:5: layers[0] (conv2d): output shape
2|model vgg16@32x32x3:1000000|vgg16@32x32x3:1000000: the model has 4130597248 parameters; at most 2^30 are supported
2|model mlp --batch 0|--batch: expected an integer in 1..4096, got '0'
# a binary head (one sigmoid unit) takes data of two classes; one linear
# unit is a regression, not trained
>bin_head.json { "input": [28, 28, 1], "layers": [ { "type": "flatten" }, { "type": "dense", "units": 1, "activation": "sigmoid" } ] }
2|train --model bin_head.json --batch 64 --steps-per-epoch 1|the training split has 10 classes; the model's binary head (one sigmoid unit, binary_cross_entropy) takes 2, labels 0 and 1
2|train --model bin_head.json --batch 64 --steps-per-epoch 1 --level timing|the training split has 10 classes; the model's binary head
>lin_head.json { "input": [4], "layers": [ { "type": "dense", "units": 1, "name": "v" } ] }
2|train --model lin_head.json --data synthetic --batch 8 --steps-per-epoch 1|--model lin_head.json: the last layer 'v' (dense) gives 1 value: softmax_cross_entropy needs one score per class|a linear or tanh unit (a regression, Keras' mean_squared_error) is not trained
CASES
# a Keras chain of 100k layers is refused from the layer count, before the
# walk (which was quadratic in the layers: over 60 s), as fast as a native
# model of that size is (both are the parse of the 14 MB file); two Keras
# layers of one name in one model are refused, still, at the second
$PY - <<'PY'
import json
def func(n, path, dup=False):
    layers = [{"class_name": "InputLayer", "name": "in", "config": {"name": "in", "batch_input_shape": [None, 8]}, "inbound_nodes": []}]
    prev = "in"
    for i in range(n):
        nm = "a0" if dup and i == n - 1 else "a%d" % i
        layers.append({"class_name": "Activation", "name": nm, "config": {"name": nm, "activation": "relu"}, "inbound_nodes": [[[prev, 0, 0, {}]]]})
        prev = nm
    json.dump({"class_name": "Functional", "keras_version": "2.15.0", "config": {"name": "m", "layers": layers,
               "input_layers": [["in", 0, 0]], "output_layers": [[prev, 0, 0]]}}, open(path, "w"))
func(100000, "k_chain.json")
func(3, "k_dupname.json", dup=True)
PY
t0=$(date +%s%N)
expect_status 2 "$TPUSIM" model k_chain.json
t1=$(date +%s%N)
expect_err_contains "k_chain.json:1:570182: layer 'a4095' (Activation): the model has more than 4096 layers (nested models' included); the native model it becomes holds at most 1024"
[ $(( (t1 - t0) / 1000000 )) -lt 5000 ] || die "a 100k-layer Keras chain took $(( (t1 - t0) / 1000000 )) ms to refuse"
expect_status 2 "$TPUSIM" model k_dupname.json
expect_err_contains "k_dupname.json:1:"
expect_err_contains "layer 'a0' (Activation): its name is already that of layer 1 of the model"
# }==

# {== Sweep files
corpus "$TPUSIM" sweep --no-plot --out sw --file <<'CASES'
>s_cmd.json { "command": "viz", "axes": [] }
2|s_cmd.json|s_cmd.json:1:|field 'command'
>s_cmd2.json { "axes": [] }
2|s_cmd2.json|field 'command'
>s_ax.json { "command": "matmul", "axes": {} }
2|s_ax.json|field 'axes': expected an array, got an object
>s_ax2.json { "command": "matmul", "axes": [ { "option": "m" } ] }
2|s_ax2.json|field 'axes[0].values'
>s_ax3.json { "command": "matmul", "axes": [ { "option": "m", "values": [] } ] }
2|s_ax3.json|field 'axes[0].values'
>s_opt.json { "command": "matmul", "options": [ "m" ] }
2|s_opt.json|field 'options'
>s_arr.json [ "matmul" ]
2|s_arr.json|s_arr.json:1:1: expected a JSON object
>s_m.json { "command": "matmul", "options": { "m": 0, "n": 4, "k": 4 }, "axes": [] }
2|s_m.json|s_m.json: matmul, point 0: --m: expected an integer in 1..2147483648, got '0'
>s_p.json { "command": "matmul", "options": { "m": 4, "n": 4, "k": 4 }, "axes": [ { "option": "precision", "values": ["bf16", "fp8"] } ] }
2|s_p.json|s_p.json: matmul, point 1: --precision: expected bf16, bf16x3 or bf16x6, got 'fp8'
>s_o.json { "command": "matmul", "options": { "mm": 4 } }
2|s_o.json|s_o.json: matmul, point 0: unknown option '--mm'
>s_set.json { "command": "matmul", "options": { "m": 4, "n": 4, "k": 4, "set": { "hbm.bandwidth_gb_per_s": "abc" } }, "axes": [ { "option": "m", "values": [4, 8] } ] }
2|s_set.json|s_set.json: matmul, point 0: --set hbm.bandwidth_gb_per_s: expected a number in [0.01, 1000000] GB/s, got 'abc'|found before any point ran
>s_setax.json { "command": "run", "options": { "program": "prog.json", "chip": "teach" }, "axes": [ { "set": "ici.latency_ns", "values": [100, -5] } ] }
2|s_setax.json|s_setax.json: run, point 1: --set ici.latency_ns:|got '-5'
>s_chip.json { "command": "train", "options": { "model": "mlp", "chip": "nosuch-chip" }, "axes": [ { "option": "batch", "values": [8, 16] } ] }
2|s_chip.json|s_chip.json: train, point 0: nosuch-chip: not a preset
# an axis given twice: the file, line:column and field, not a bare "given
# twice" (or, when the second has one value, the first silently winning)
>s_dup.json { "command": "matmul", "options": { "n": 8, "k": 8 }, "axes": [ { "option": "m", "values": [8, 16] }, { "option": "m", "values": [4, 5] } ] }
2|s_dup.json|s_dup.json:1:115: field 'axes[1].option': 'm' is already axes[0]; one axis per option
>s_dup1.json { "command": "matmul", "options": { "n": 8, "k": 8 }, "axes": [ { "option": "m", "values": [8, 16] }, { "option": "m", "values": [4] } ] }
2|s_dup1.json|s_dup1.json:1:115: field 'axes[1].option': 'm' is already axes[0]
>s_dup3.json { "command": "matmul", "options": { "m": 8, "n": 8, "k": 8 }, "axes": [ { "set": "mxu.rows", "values": [4, 8] }, { "set": "mxu.rows", "values": [16] } ] }
2|s_dup3.json|s_dup3.json:1:123: field 'axes[1].set': 'mxu.rows' is already axes[0]
>s_dup4.json { "command": "matmul", "options": { "n": 8, "k": 8 }, "axes": [ { "option": "m", "values": [8, 16] }, { "set": "m", "values": [4, 5] } ] }
2|s_dup4.json|s_dup4.json: axis 'm' is given twice
CASES
corpus "$TPUSIM" <<'CASES'
2|sweep --out sw6 matmul --m 8,16 --n 8 --k 8 --set hbm.bandwidth_gb_per_s=abc|matmul, point 0: --set hbm.bandwidth_gb_per_s: expected a number in [0.01, 1000000] GB/s, got 'abc'
2|sweep --out sw7 --no-plot matmul --m 8 --n 8 --k 8 --set hbm.bandwidth_gb_per_s=100,1e-300|matmul, point 1: --set hbm.bandwidth_gb_per_s: expected a number in [0.01, 1000000] GB/s, got '1e-300'
2|sweep --out sw8 --no-plot train --model mlp --batch 8,16 --set cores=4099|train, point 0: --set cores: expected an integer in 1..2048, got '4099'
2|sweep --out sw9 --no-plot pipeline --pipeline datafeed/examples/naive.json --steps 5,10 --set hbm.latency_ns=1|pipeline, point 0: --set: the pipeline runs on the host
2|sweep --out sw2 matmul --m 0,8 --n 8 --k 8|matmul, point 0: --m: expected an integer in 1..2147483648, got '0'
2|sweep --out sw3 -j 0 matmul --m 8 --n 8 --k 8|-j: expected a whole number in 1..1024, got '0'
2|sweep --out sw4 --shard 3/2 matmul --m 8 --n 8 --k 8|--shard 3/2: expected I/N with 1 <= I <= N
2|sweep --out sw5 nosuch --m 8|'nosuch': expected the command to sweep, train, matmul, run or pipeline
# --out naming a regular file is an output that cannot be written: exit 1,
# as for every command's outputs (a shard directory merge cannot read is input: 2)
>afile.txt x
1|sweep --out afile.txt -j 1 --no-plot matmul --m 8 --n 8 --k 8|--out afile.txt: cannot be the results directory: Not a directory
1|sweep --out afile.txt/res -j 1 --no-plot matmul --m 8 --n 8 --k 8|--out afile.txt/res: cannot create: Not a directory
1|sweep --emit slurm --out afile.txt matmul --m 8,16 --n 8 --k 8|--out afile.txt: cannot be the results directory
0|sweep --out swok -j 1 --no-plot matmul --m 8 --n 8 --k 8
1|sweep merge --no-plot --out afile.txt swok|--out afile.txt: cannot be the results directory: Not a directory
2|sweep merge --no-plot --out swm nosuchdir|nosuchdir/sweep.json: cannot read
# --emit checks every point as the plain sweep does, before it writes a script
2|sweep --emit slurm --out em1 matmul --m 8,abc --n 8 --k 8|matmul, point 1: --m: expected an integer in 1..2147483648, got 'abc'
2|sweep --emit parallel --shards 2 --out em2 matmul --m 8,16,24 --n 8 --k 8 --set hbm.bandwidth_gb_per_s=100,1e-300|matmul, point 1: --set hbm.bandwidth_gb_per_s: expected a number in [0.01, 1000000] GB/s, got '1e-300'
CASES
[ ! -e em1 ] && [ ! -e em2 ] || die "--emit with a bad point wrote $(ls em1 em2 2>&1)"
# a journal line that is not an entry as the sweep writes them (an "ok"
# without its report, ...) is refused naming the journal and the line, by
# the sweep that resumes it and by merge
SW="matmul --m 8,16 --n 8 --k 8"
expect_status 0 "$TPUSIM" sweep --out jr0 -j 1 --no-plot $SW
while IFS='|' read -r line msg; do
  rm -rf jr && cp -r jr0 jr && printf '%s\n' "$line" >> jr/points.jsonl
  expect_status 2 "$TPUSIM" sweep --out jr -j 1 --no-plot $SW
  expect_err_contains "jr/points.jsonl:3: not a journal entry of this sweep ($msg"
  expect_status 2 "$TPUSIM" sweep merge --no-plot --out jrm jr
  expect_err_contains "jr/points.jsonl:3: not a journal entry of this sweep ($msg"
done <<'LINES'
{"point":0,"axes":{"m":"8"},"status":"ok"}|field 'report': expected the point's report (an object) with status "ok")
{"point":0,"axes":{"m":"8"},"status":"ok","report":[],"row":{}}|field 'report'
{"point":0,"axes":{"m":"8"},"status":"done","report":{}}|field 'status': expected "ok" or "failed")
{"point":1,"axes":{"m":"16"},"status":"failed","exit":1}|field 'error'
{"point":1,"axes":{"m":"16"},"status":"failed","exit":0,"error":"x"}|field 'exit': expected the failed point's exit status, 1..255)
{"point":1,"axes":{"m":"16"},"status":"ok","report":{},"row":3}|field 'row'
{"point":0,"status":"ok","report":{}}|field 'axes': expected an object)
LINES
# }==

# {== .npy operands (tpusim matmul --a/--b)
$PY - <<'PY'
import struct
def npy(name, header, data=struct.pack("<4f", 1, 2, 3, 4), ver=b"\x01\x00"):
    h = header + b" " * ((64 - (10 + len(header) + 1) % 64) % 64) + b"\n"
    open(name, "wb").write(b"\x93NUMPY" + ver + struct.pack("<H", len(h)) + h + data)
ok = b"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }"
npy("b.npy", ok)
npy("n_ok.npy", ok)
npy("n_lab.npy", b"{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }", bytes([0, 1]))
npy("n_flab.npy", b"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", struct.pack("<2f", 0, 1))
npy("n_nul.npy", ok + b"\0garbage")
npy("n_key.npy", b"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), 'extra': 1}")
npy("n_dup.npy", b"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 2)}")
npy("n_f8.npy", b"{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2), }")
npy("n_fo.npy", b"{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }")
npy("n_sh.npy", b"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }")
npy("n_tr.npy", ok + b" junk")
npy("n_miss.npy", b"{'descr': '<f4', 'shape': (2, 2), }")
npy("n_be.npy", b"{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }")
npy("n_neg.npy", b"{'descr': '<f4', 'fortran_order': False, 'shape': (2, -2), }")
npy("n_1d.npy", b"{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }")
npy("n_ver.npy", ok, ver=b"\x09\x00")
open("n_magic.npy", "wb").write(b"\x93NUMPX\x01\x00\x10\x00{}")
open("n_hl.npy", "wb").write(b"\x93NUMPY\x01\x00\xff\x7f{}")
PY
corpus "$TPUSIM" matmul --b b.npy --a <<'CASES'
=b.npy n_ok.npy n_nul.npy n_key.npy n_dup.npy n_f8.npy n_fo.npy n_sh.npy n_tr.npy n_miss.npy n_be.npy n_neg.npy n_1d.npy n_ver.npy n_magic.npy n_hl.npy
0|n_ok.npy|
2|n_nul.npy|n_nul.npy: header byte 59 is a NUL byte
2|n_key.npy|n_key.npy: header has a key 'extra'
2|n_dup.npy|n_dup.npy: header field 'descr' given twice
2|n_f8.npy|n_f8.npy: header field 'descr' is '<f8'; expected '<f4'
2|n_fo.npy|n_fo.npy: header field 'fortran_order' must be False
2|n_sh.npy|n_sh.npy: truncated: shape says 24 bytes of data, the file holds 16
2|n_tr.npy|n_tr.npy: header byte 60 is 'j'
2|n_miss.npy|n_miss.npy: header field 'fortran_order' missing
2|n_be.npy|n_be.npy: header field 'descr' is '>f4'
2|n_neg.npy|n_neg.npy: header field 'shape' has a bad dimension
2|n_1d.npy|n_1d.npy: expected 2-D arrays, got 1-D
2|n_ver.npy|n_ver.npy: .npy version 9.0
2|n_magic.npy|n_magic.npy: not a .npy file (bad magic)
2|n_hl.npy|n_hl.npy: truncated header
CASES
# }==

# {== Data sets: IDX directories, CSV and npy sources (tpusim train)
$PY - <<'PY'
import gzip, os, struct
def idx(d, n=64, h=4, w=4, nl=None, magic=0x803, labels=None, tail=b""):
    os.makedirs(d, exist_ok=True)
    for pre in ("train", "t10k"):
        img = struct.pack(">IIII", magic, n, h, w) + bytes(n * h * w) + tail
        lab = struct.pack(">II", 0x801, nl if nl is not None else n) + (labels or bytes(i % 10 for i in range(n)))
        open(d + "/%s-images-idx3-ubyte" % pre, "wb").write(img)
        open(d + "/%s-labels-idx1-ubyte" % pre, "wb").write(lab)
idx("i_magic", magic=0x903)
idx("i_count", nl=63, labels=bytes(63))
idx("i_label", labels=bytes([12] + [0] * 63))
idx("i_trunc", tail=b"")
os.truncate("i_trunc/train-images-idx3-ubyte", 100)
idx("i_tail", tail=b"xx")
idx("i_zero", h=0)
# gzip size fields beyond what the file can inflate to (deflate: at most
# 1032:1), refused before anything is allocated for them
def gz(path, data, isize=None):
    z = gzip.compress(data, mtime=0)
    if isize is not None: z = z[:-4] + struct.pack("<I", isize % 2**32)
    open(path, "wb").write(z)
for d in ("i_gzl", "i_gzi"): idx(d)
gz("i_gzl/train-labels-idx1-ubyte.gz", struct.pack(">II", 0x801, 64) + bytes(64), isize=100_000_000)
gz("i_gzi/train-images-idx3-ubyte.gz", struct.pack(">IIII", 0x803, 64, 4096, 4096), isize=16 + 64 * 4096 * 4096)
open("bad.csv", "w").write("label,a,b\n1,0.5,x\n")
open("ragged.csv", "w").write("1,0.5,0.25\n2,0.5\n")
open("neg.csv", "w").write("-1,0.5,0.25\n")
PY
corpus "$TPUSIM" train --model mlp --level timing --batch 16 --steps-per-epoch 1 --data <<'CASES'
2|i_magic|i_magic/train-images-idx3-ubyte: bad magic number
2|i_count|i_count/train-images-idx3-ubyte: 64 images but i_count/train-labels-idx1-ubyte has 63 labels
2|i_label|i_label/train-labels-idx1-ubyte: label 12 of element 0 is out of range; allowed 0..9
2|i_trunc|i_trunc/train-images-idx3-ubyte: truncated: 64 images of 4x4x1 need 1040 bytes, file has 100
2|i_tail|i_tail/train-images-idx3-ubyte: trailing data
2|i_zero|i_zero/train-images-idx3-ubyte: element shape 0x4x1 out of range
2|i_gzl|i_gzl/train-labels-idx1-ubyte.gz: truncated or corrupt gzip file (size field 100000000;|compressed bytes hold 8..
2|i_gzi|i_gzi/train-images-idx3-ubyte.gz: corrupt gzip file: 64 images of 4096x4096x1 need 1073741840 bytes, more than its|(deflate expands at most 1032:1)
2|cifar10:nodir|nodir/data_batch_1.bin: cannot open
2|cifar10:|--data cifar10:: expected cifar10:DIR, got nothing after the colon
2|images:|--data images:: expected images:DIR, got nothing after the colon
2|tfrecord:|--data tfrecord:: expected tfrecord:FILE, got nothing after the colon
2|nodir|nodir/train-
CASES
# a CIFAR-10 batch file whose size is not whole records is refused from its
# size, before it is read: a sparse 9.2 GB one (read whole before, then "out
# of memory", exit 1) in well under a second; the address space is bounded
# so that a reader that reads it first fails at once instead of taking the
# machine's memory (not under ASan, which maps terabytes)
mkdir -p c_small c_big
head -c $((2 * 3073 + 17)) /dev/zero > c_small/data_batch_1.bin
truncate -s 9219000017 c_big/data_batch_1.bin
expect_status 2 "$TPUSIM" train --model mlp --level timing --batch 16 --steps-per-epoch 1 --data cifar10:c_small
expect_err_contains "c_small/data_batch_1.bin: record 2: truncated (17 of 3073 bytes)"
ulimit_v=""
[ "${MODE:-}" = asan ] || ulimit_v="ulimit -v 4000000;"
t0=$(date +%s%N)
expect_status 2 bash -c "$ulimit_v exec \"\$@\"" - "$TPUSIM" train --model mlp --level timing --batch 16 --steps-per-epoch 1 --data cifar10:c_big
t1=$(date +%s%N)
expect_err_contains "c_big/data_batch_1.bin: record 3000000: truncated (17 of 3073 bytes); a CIFAR-10 file holds records of 1 label byte and 3072 pixel bytes"
[ $(( (t1 - t0) / 1000000 )) -lt 3000 ] || die "the 9.2 GB CIFAR-10 file took $(( (t1 - t0) / 1000000 )) ms to refuse"
# image class folders: what is not a regular file is skipped (a FIFO named
# x.png blocked the run forever; a dangling link named y.png stopped it),
# and a class count the model does not give names the folder, not a
# "synthetic source"
mkdir -p im/a im/b
PYTHONPATH=$TPU_ROOT/tests/e2e $PY - <<'PY'
import numpy as np
from image_write import png
for i in range(10):
    png("im/%s/p%d.png" % ("ab"[i % 2], i), (np.arange(64).reshape(8, 8, 1) * (i + 1) % 256).astype(np.uint8))
PY
mkfifo im/a/x.png && ln -s nowhere.png im/b/y.png
printf '{ "input": [8, 8, 1], "layers": [ { "type": "flatten" }, { "type": "dense", "units": 2 } ] }' > m_im2.json
expect_status 0 timeout 60 "$TPUSIM" train --model m_im2.json --data images:im --cores 1 --batch 2 --epochs 1 --steps-per-epoch 1
expect_status 2 "$TPUSIM" train --model mlp --data images:im --cores 1 --batch 2 --epochs 1 --steps-per-epoch 1
expect_err_contains "--data images:im: im: the training split has samples of 28x28x1 and 2 classes; the model takes input 28x28x1 and gives 10 classes"
! grep -q "synthetic" "$T/err.txt" || die "images:DIR called a synthetic source: $ERR"
$PY - <<'PY'
# pipelines over the bad data files (the messages name the data file)
open('csv1.json', 'w').write('{ "source": { "kind": "csv", "path": "bad.csv", "elements": 1 }, "stages": [ { "op": "batch", "batch_size": 1 } ] }')
open('csv2.json', 'w').write('{ "source": { "kind": "csv", "path": "ragged.csv", "elements": 2 }, "stages": [ { "op": "batch", "batch_size": 1 } ] }')
open('csv3.json', 'w').write('{ "source": { "kind": "csv", "path": "neg.csv", "elements": 1 }, "stages": [ { "op": "batch", "batch_size": 1 } ] }')
open('npy1.json', 'w').write('{ "source": { "kind": "npy", "images": "n_nul.npy", "labels": "n_lab.npy", "elements": 2 }, "stages": [ { "op": "batch", "batch_size": 1 } ] }')
open('npy2.json', 'w').write('{ "source": { "kind": "npy", "images": "b.npy", "labels": "n_flab.npy", "elements": 2 }, "stages": [ { "op": "batch", "batch_size": 1 } ] }')
PY
corpus "$TPUSIM" pipeline --real --pipeline <<'CASES'
2|csv1.json|bad.csv:2: column 3: expected a number
2|csv2.json|ragged.csv:2: expected 2 features, got 1
2|csv3.json|neg.csv:1: label -1 is not an integer >= 0
2|npy1.json|n_nul.npy: header byte 59 is a NUL byte
2|npy2.json|n_flab.npy: dtype '<f4' not supported; labels must be an integer type
CASES
# }==

# {== SCALE-Sim inputs
printf 'Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\nC1, 10, 10, 3, 3, 4, 8, 1,\n' > ss.csv
printf '[general]\nrun_name = x\n[architecture_presets]\nArrayHeight: 8\nArrayWidth: 8\nDataflow : ws\n' > ss.cfg
corpus "$TPUSIM" scalesim -t ss.csv -c <<'CASES'
>ss_h.cfg [general]\nrun_name = x\n[architecture_presets]\nArrayHeight: 2000\nArrayWidth: 8\n
2|ss_h.cfg|ss_h.cfg:4:14: field 'ArrayHeight': expected an integer in 1..1024, got '2000'
>ss_w.cfg [general]\nrun_name = x\n[architecture_presets]\nArrayHeight: 8\nArrayWidth: eight\n
2|ss_w.cfg|ss_w.cfg:5:13: field 'ArrayWidth'
>ss_nul.cfg [general]\nrun_name = x\0\n[architecture_presets]\nArrayHeight: 8\nArrayWidth: 8\n
2|ss_nul.cfg|ss_nul.cfg:2:
# a key or a section given twice: refused, as configparser refuses it
# (DuplicateOptionError, DuplicateSectionError), not the last one taken
>ss_dk.cfg [general]\nrun_name = x\n[architecture_presets]\nArrayHeight: 8\nArrayWidth: 8\narraywidth = 16\nDataflow : ws\nFilterSramSzkB: 1\nIfmapSramSzkB: 1\nOfmapSramSzkB: 1\nIfmapOffset: 0\nFilterOffset: 100\nOfmapOffset: 200\n[run_presets]\nInterfaceBandwidth: CALC\n
2|ss_dk.cfg|ss_dk.cfg:6:1: option 'arraywidth' in section [architecture_presets] already exists (line 5); a key is given once per section
>ss_dr.cfg [general]\nrun_name = x\nRun_Name = y\n
2|ss_dr.cfg|ss_dr.cfg:3:1: option 'run_name' in section [general] already exists (line 2)
>ss_dd.cfg [general]\nrun_name = x\n[architecture_presets]\nDataflow : ws\nDataflow : os\n
2|ss_dd.cfg|ss_dd.cfg:5:1: option 'dataflow' in section [architecture_presets] already exists (line 4)
>ss_ds.cfg [general]\nrun_name = x\n[architecture_presets]\nArrayHeight: 8\n[general]\n
2|ss_ds.cfg|ss_ds.cfg:5:2: section [general] already exists (line 1); a section is given once
CASES
corpus "$TPUSIM" scalesim -c docs/scalesim/tpu_128.cfg -t <<'CASES'
>ss_s.csv h\nC1, 10, 10, 3, 3, 4, 8, 0,\n
2|ss_s.csv|ss_s.csv:2:|field 'Strides'
>ss_c.csv h\nC1, 10, 10, 3, 3, 0, 8, 1,\n
2|ss_c.csv|ss_c.csv:2:|field 'Channels'
>ss_f.csv h\nC1, 10, 10, 3, 3, 4, 99999999999, 1,\n
2|ss_f.csv|ss_f.csv:2:|field 'Num Filter'
# the layers a topology expands to are capped, from the text, before any is
# made (one depthwise line of 2^24 channels was 2^24 layers, 2.8 GB, then a
# bare "out of memory", exit 1)
>ss_dp65.csv h\nconv1, 8, 8, 3, 3, 3, 4, 1,\nconvDP, 3, 3, 3, 3, 65536, 1, 1,\n
2|ss_dp65.csv|ss_dp65.csv:3:21: field 'Channels': a depthwise layer is a layer per channel: 65536 layers after the 1 before make more than the 65536 a topology may have
CASES
printf 'h\nconv1, 8, 8, 3, 3, 3, 4, 1,\nconvDP, 3, 3, 3, 3, 16777216, 1, 1,\n' > ss_dp24.csv
ulimit_v=""
[ "${MODE:-}" = asan ] || ulimit_v="ulimit -v 4000000;"
for cmd in "scalesim -c docs/scalesim/tpu_128.cfg -p ss_out -t" "run --chip teach --topology"; do
  # shellcheck disable=SC2086
  expect_status 2 bash -c "$ulimit_v exec \"\$@\"" - "$TPUSIM" $cmd ss_dp24.csv
  expect_err_contains "ss_dp24.csv:3:21: field 'Channels': a depthwise layer is a layer per channel: 16777216 layers after the 1 before make more than the 65536 a topology may have"
done
$PY -c 'import sys; sys.stdout.write("h\n" + "c, 4, 4, 3, 3, 1, 1, 1,\n" * 65537)' > ss_many.csv
expect_status 2 "$TPUSIM" scalesim -c docs/scalesim/tpu_128.cfg -p ss_out -t ss_many.csv
expect_err_contains "ss_many.csv:65538:1: layer 65537: a topology may have at most 65536 layers"
# }==

# {== Command-line options of every command
corpus "$TPUSIM" <<'CASES'
2|info --chip nosuch|nosuch: not a preset
2|info --set|--set
2|info --set =5|--set '=5': expected KEY=VALUE
2|info --set mxu.rows|--set 'mxu.rows': expected KEY=VALUE
2|info --set mxu.double_buffer=1|--set mxu.double_buffer: expected true or false, got '1'
2|info --set compiler.fusion=yes|--set compiler.fusion: expected true or false, got 'yes'
2|info --set compiler.implicit_conv=0|--set compiler.implicit_conv: expected true or false, got '0'
2|info --set compiler.memory_planning=|--set compiler.memory_planning: expected true or false, got ''
2|train --model mlp --dtype-policy mixed_float16|--dtype-policy: expected mixed_bfloat16 or float32 (Keras' policy names), got 'mixed_float16'
2|model resnet50 --chip tpu-v2-8 --dtype-policy bf16|--dtype-policy: expected mixed_bfloat16 or float32 (Keras' policy names), got 'bf16'
2|model resnet50 --roofline r.png|--roofline needs --chip
2|model resnet50 --chip tpu-v2-8 --roofline r.svg|--roofline r.svg: expected a file name ending in .png
2|model resnet50 --chip tpu-v2-8 --batch 100|--batch 100 does not divide across 8 cores
2|info --set ici.topology=hypercube|--set ici.topology: expected "auto", "ring" or "torus", got 'hypercube'
2|info --set ici.torus_x=3|--set ici.torus_x: keys 'ici.torus_x' and 'ici.torus_y': 3 x 0 chips; expected both 0 (chosen from the chips) or a layout of all 4 chips (cores / cores_per_chip)
2|info --chip tpu-v3-32 --set ici.torus_y=5|--set ici.torus_y: keys 'ici.torus_x' and 'ici.torus_y': 4 x 5 chips; expected both 0 (chosen from the chips) or a layout of all 16 chips (cores / cores_per_chip)
2|info --chip tpu-v3-32 --set ici.topology=ring|--set ici.topology: key 'ici.torus_y': 4 with ici.topology "ring"; a ring is one row (torus_y 1) or give ici.topology "torus"
2|info --chip tpu-v3-32 --set hosts=17|--set hosts: key 'hosts': 17 hosts for 16 chips; expected 1..16 (each host feeds at least one chip)
>slice_bad.json { "base": "tpu-v3-8", "cores": 96, "ici": { "torus_x": 12, "torus_y": 5 } }
2|info --chip slice_bad.json|slice_bad.json: keys 'ici.torus_x' and 'ici.torus_y': 12 x 5 chips; expected both 0 (chosen from the chips) or a layout of all 48 chips (cores / cores_per_chip)
>slice_ok.json { "base": "tpu-v3-8", "cores": 96, "ici": { "topology": "torus", "torus_x": 12, "torus_y": 4, "wrap_x": false, "wrap_y": false }, "hosts": 12 }
0|info --chip slice_ok.json --json|
2|train --model mlp --batch 64 --batch-per-core 8|--batch 64 and --batch-per-core 8: give one
2|viz --chip tpu-v3-32 --headless --png x.png|the chip 'tpu-v3-32' has 32 cores; the visualizer shows at most 16 (a board)
2|matmul --chip tpu-v3-32 --cores 32 --m 64 --n 64 --k 64|--cores: expected an integer in 1..16
2|train --model cnn --chip tpu-v3-2048 --batch 1048576 --data synthetic --synthetic-n 1048576 --level tile|computes every core's values on this host
2|info --set cores=3|key 'cores_per_chip': 2 does not divide cores (3)
2|matmul --m 0 --n 4 --k 4|--m
2|matmul --m 4 --n 3000000000 --k 4|--n
2|matmul --m 4 --n 4 --k -1|--k
2|matmul --m 4 --n 4 --k 4x|--k
2|matmul --m 4 --n 4 --k 4 --precision fp8|--precision
2|matmul --m 4 --n 4 --k 4 --level gate|--level
2|matmul --m 4 --n 4 --k 4 --cores 0|--cores
2|matmul --m 4 --n 4 --k 4 --cores 4 --level pe|--level pe
2|matmul --m 4 --n 4 --k 4 --seed -1|--seed
2|matmul --m 4 --n 4 --k 4 --threads 0|--threads
2|matmul --a a_missing.npy --b a_missing.npy|a_missing.npy: cannot read
2|matmul --m 4 --n 4|--k
2|run --chip teach --program docs/examples/train_step.json --level pe|--level
2|run --chip teach --program docs/examples/train_step.json --threads 2000|--threads: expected an integer in 1..1024, got '2000'
2|run --chip teach --program docs/examples/train_step.json --print nosuchbuffer|--print nosuchbuffer: no buffer of that name on core 0 of docs/examples/train_step.json
2|train --model mlp --epochs 0|--epochs
2|train --model mlp --batch 0|--batch
2|train --model mlp --batch 7|--batch 7 does not divide across 8 cores
2|train --model mlp --cores 17|--cores
2|train --model mlp --cores 8 --chip teach|--cores 8: the chip teach has 4 cores
2|train --model mlp --backend gpu|--backend: expected sim or reference, got 'gpu'
2|train --model mlp --level pe|--level: expected tile or timing, got 'pe'
2|train --model mlp --level timing --backend reference|--level timing runs only the simulation
2|train --model mlp --resume|--resume needs --checkpoint DIR
2|train --model mlp --checkpoint ck0 --level timing|--checkpoint ck0: --level timing computes no weights
2|train --model mlp --steps-per-epoch 0|--steps-per-epoch
2|train --model mlp --synthetic-n 0 --data synthetic|--synthetic-n
2|train --model mlp --seed -5|--seed
2|train --model mlp --precision bf32|--precision
2|train --model mlp --data synthetic --batch 4096 --synthetic-n 100|--data synthetic: --batch 4096 is larger than the training set (100 samples)
2|train --model mlp --steps-per-execution 0|--steps-per-execution
2|train --model mlp --host nowhere|--host: expected tpu-vm or colab, got 'nowhere'
2|train --model mlp --set host.infeed_gb_per_s=0|host.infeed_gb_per_s
2|train --model mlp --data mnist:x|--data mnist:x
2|train --model mlp --epochs 3 --checkpoint no_ck --resume --data synthetic|--resume: no_ck/checkpoint.bin: cannot read
2|viz --headless --m 0|--m: expected an integer in 1..65536, got '0'
2|viz --chip teach --cores 3 --headless --png x.png|--cores 3: the default workload on teach (the class workload, docs/TEACHING.md) is a batch of 32, which does not split evenly over 3 cores
2|viz --headless --scale 9|--scale: expected a number in 0.5..4, got '9'
2|viz --headless --size 10x10|--size: expected WIDTHxHEIGHT with 640..8192 x 480..8192, got '10x10'
2|viz --headless --core 99|--core: expected an integer in 1..16, got '99'
2|viz --headless --png v.png --model mlp --batch 7|--batch
2|viz --headless --png v.png --program nosuch.json|nosuch.json: cannot read
2|plot nosuch.csv|nosuch.csv: cannot read
2|model docs|docs: not a built-in model|Is a directory
2|run --chip teach --program docs|docs: cannot read: Is a directory
2|info --chip docs|cannot open it as a file: Is a directory
>hdr.csv point,model,status,images_per_s\n
2|plot hdr.csv|hdr.csv: no points (only the header); nothing to plot
>txt.csv point,m,status,cycles\n0,8,ok,150\n1,16,ok,abc\n
2|plot txt.csv|txt.csv:3: column 'cycles' of point 1: 'abc' is not a number
>one.csv point,status,cycles\n0,ok,150\n
2|plot one.csv|one.csv: the sweep has no axis (a single point); nothing to plot against
2|trian|unknown command 'trian' (did you mean 'train'?)
2|--values bogus|tpusim --values: expected one of backend, chip, data, dataflow, dtype-policy, emit, host, level, model, precision; got 'bogus'
2|--values|tpusim --values: expected one of
2|scalesim -c docs/scalesim/alexnet.csv -t docs/scalesim/tpu_128.cfg -p ssw|a key before any [section]; -c and -t look swapped: the -c file looks like a topology CSV and the -t file like a .cfg
2|scalesim -c docs/scalesim/tpu_128.cfg -t docs/scalesim/tpu_128.cfg -p ssw|the -t file looks like a SCALE-Sim .cfg: give it with -c, and the topology with -t
2|train --model mlp --epoch 2|unknown option '--epoch'; did you mean '--epochs'?
2|viz --heedless|unknown option '--heedless'; did you mean '--headless'?
2|info --chip tpuv2-8|tpuv2-8: not a preset (did you mean tpu-v2-8? the presets are tpu-v2-8, tpu-v3-8, teach, tpu-v2-32,
2|info --set mxu.row=8|--set: unknown key 'mxu.row' (did you mean 'mxu.rows'?)
2|model resnet5|resnet5: not a built-in model (did you mean resnet50? the models are mlp
2|model vgg91@192x192x3:5|not a built-in model (did you mean vgg19?
2|sweep --out swo train --model mlp --batch 32,64 --out X|unknown option '--out' (tpusim train --help); it is an option of tpusim sweep: give it before the command
2|sweep --out swj train --model mlp --batch 32,64 -j 2|it is an option of tpusim sweep: give it before the command
2|scalesim -c docs/scalesim/tpu_128.cfg -t docs/scalesim/alexnet.csv --compat yes|--compat
2|nosuchcommand|nosuchcommand
2|info --bogus|--bogus
CASES
# }==

# at least 200 cases in this file (lib.sh counts them)
[ "$CORPUS_CASES" -ge 200 ] || die "the corpus has only $CORPUS_CASES cases"
