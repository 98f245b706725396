"""tpusim from Python: one call per command, its options as keyword
arguments, its report as the return value (docs/PYTHON.md).

    import tpusim
    r = tpusim.train(model="mlp", batch=64, cores=2, data="synthetic", epochs=1)
    r["images_per_s"], r.history["loss"]

Each call is `tpusim COMMAND --OPTION VALUE ... --json` run in this process
by the engine's own code (the extension tpusim._tpusim over the command
line's parser and reports), so its report is the dict `--json` prints, to
the last bit. Keyword arguments become options: `cores=2` is `--cores 2`,
`dtype_policy="float32"` is `--dtype-policy float32`, True is a bare flag,
False and None leave the option out, a list or tuple is a comma list (an
axis of a sweep), and `set={"mxu.rows": 8}` (or a list of "KEY=VALUE") is
one `--set` per key.

Errors: what the command refuses with exit status 2 (bad input) raises
ValueError, a runtime failure (exit status 1) RuntimeError, each with the
message the command prints on stderr. Ctrl-C stops a training run before
its next step (a sweep before its next point) and raises KeyboardInterrupt;
no output is left half-written. No call ends the Python process.
"""
import csv
import json
import os
import tempfile
import warnings

from . import _tpusim

__version__ = _tpusim.version
__all__ = ["info", "matmul", "model", "pipeline", "run", "scalesim", "sweep", "train", "Report", "call"]


class Report(dict):
    """A command's report: exactly the dict `tpusim COMMAND --json` prints.
    For train, `history` is Keras' History.history: a list per figure
    ("loss", "accuracy", "val_loss", "val_accuracy", "sim_s", ...), an
    entry per epoch, from the report's "history" (a list of epochs)."""

    @property
    def history(self):
        epochs = self.get("history")
        if not isinstance(epochs, list):
            raise AttributeError("this report has no history (only train's has)")
        out = {}
        for e in epochs:
            for k, v in e.items():
                if k != "epoch" and not isinstance(v, (dict, list)):
                    out.setdefault(k, []).append(v)
        return out


def _value(v):
    if isinstance(v, (list, tuple)):
        return ",".join(_value(x) for x in v)
    return os.fspath(v) if isinstance(v, os.PathLike) else str(v)


def _options(kwargs):
    """The command line's options for keyword arguments (module docstring)."""
    argv = []
    for k, v in kwargs.items():
        if v is None or v is False:
            continue
        if k == "set":
            sets = v.items() if isinstance(v, dict) else ((s, None) for s in ([v] if isinstance(v, str) else v))
            for key, val in sets:
                argv += ["--set", key if val is None else "%s=%s" % (key, _value(val))]
            continue
        flag = "--" + k.replace("_", "-")
        argv += [flag] if v is True else [flag, _value(v)]
    return argv


def _run(argv, on_step=None, allow_failed=False):
    """(status, report dict or None) of `tpusim ARGV...`; raises on failure."""
    rc, text, msg = _tpusim.run([str(a) for a in argv], on_step)
    if rc == 2:
        raise ValueError(msg or "tpusim %s: bad input" % argv[0])
    if rc and not (allow_failed and text):
        raise RuntimeError(msg or "tpusim %s: failed (exit status %d)" % (argv[0], rc))
    return rc, (Report(json.loads(text)) if text else None)


def call(command, *args, **kwargs):
    """`tpusim COMMAND ARGS... --OPTIONS --json`: its report. The functions
    below are this with the command's name."""
    return _run([command, *map(_value, args), *_options(kwargs), "--json"])[1]


def info(**kwargs):
    """`tpusim info --json`: the chip configuration and its peaks."""
    return call("info", **kwargs)


def model(name, **kwargs):
    """`tpusim model NAME --json`: layers, GEMMs, FLOPs; with chip=, the
    step's per-layer table (report["step"]["layers"])."""
    return call("model", name, **kwargs)


def run(**kwargs):
    """`tpusim run --json`: a JSON program (program=) or a topology on the chip."""
    return call("run", **kwargs)


def pipeline(**kwargs):
    """`tpusim pipeline --json`: an input pipeline's host time."""
    return call("pipeline", **kwargs)


def scalesim(**kwargs):
    """`tpusim scalesim --json` (config=, topology=, logdir=, ...); it writes
    SCALE-Sim's CSV reports under logdir as the command does."""
    return call("scalesim", **kwargs)


def train(callback=None, **kwargs):
    """`tpusim train --json`. callback(step), if given, is called after each
    step with a dict (epoch, step, global_step, loss, accuracy, sim_step_s,
    sim_time_s, epoch_end, ...; docs/PYTHON.md); an exception it raises stops
    the run (no output written) and is raised here. The report's `history`
    attribute is Keras' History.history."""
    on_step = None
    if callback is not None:
        def on_step(text):
            callback(json.loads(text))
    return _run(["train", *_options(kwargs), "--json"], on_step)[1]


def _is_array(x):
    return x is not None and not isinstance(x, (str, bytes, os.PathLike))


def matmul(a=None, b=None, **kwargs):
    """`tpusim matmul --json`. With NumPy arrays a and b (2-D, taken as
    float32, C order) returns (C, report), C the product as the MXU computes
    it at the level asked (level="pe", "tile"); with .npy paths, or m=, n=,
    k= (seeded operands), the report alone."""
    if not (_is_array(a) or _is_array(b)):
        return call("matmul", a=a, b=b, **kwargs)
    import numpy as np
    with tempfile.TemporaryDirectory(prefix="tpusim-matmul-") as d:
        paths = []
        for name, x in (("a", a), ("b", b)):
            if _is_array(x):
                p = os.path.join(d, name + ".npy")
                np.save(p, np.ascontiguousarray(np.asarray(x, dtype=np.float32)))
                x = p
            paths.append(x)
        out = kwargs.pop("out", None) or os.path.join(d, "c.npy")
        report = call("matmul", a=paths[0], b=paths[1], out=out, **kwargs)
        return np.load(out), report


def _numbers(row):
    """A CSV row's strings as int, float or str (empty: None)."""
    out = {}
    for k, v in row.items():
        if v == "":
            out[k] = None
            continue
        for conv in (int, float):
            try:
                out[k] = conv(v)
                break
            except ValueError:
                pass
        else:
            out[k] = v
    return out


def sweep(command=None, out="sweep-out", jobs=None, shard=None, file=None, plot=False, **kwargs):
    """`tpusim sweep --out OUT [-j JOBS] [--shard I/N] COMMAND OPTIONS`: the
    command over the grid of its comma-list options (list values), resumable
    in OUT as the command is (finished points are not run again). Returns
    OUT/results.csv as a pandas DataFrame when pandas is installed, else a
    list of dicts. Failed points are rows with status "failed" (and a
    warning); shard=(I, N) or "I/N" runs that shard only."""
    argv = ["sweep", "--out", out]
    if jobs is not None:
        argv += ["-j", str(jobs)]
    if shard is not None:
        argv += ["--shard", shard if isinstance(shard, str) else "%d/%d" % tuple(shard)]
    if file is not None:
        argv += ["--file", _value(file)]
    if not plot:
        argv.append("--no-plot")
    if command is not None:
        argv += [command, *_options(kwargs)]
    elif kwargs:
        raise ValueError("tpusim sweep: options %s need a command" % sorted(kwargs))
    rc, summary = _run(argv, allow_failed=True)
    if rc:
        warnings.warn("tpusim sweep: %d of %d points failed (see the status and error columns)"
                      % (summary["failed"], summary["run"]), RuntimeWarning, stacklevel=2)
    path = summary["results_csv"]
    try:
        import pandas
    except ImportError:
        with open(path, newline="") as f:
            return [_numbers(r) for r in csv.DictReader(f)]
    return pandas.read_csv(path)
