"""The tpusim package against the program: the same reports bit for bit,
the errors as exceptions with the program's messages, Ctrl-C and the
training callback (docs/PYTHON.md)."""
import json
import os
import signal
import threading
import time

import numpy as np
import pytest

import tpusim
from conftest import ROOT, cli, stable

EX = os.path.join(ROOT, "docs", "examples")


def test_info_and_model_and_run_reports_equal_the_programs():
    assert tpusim.info(chip="teach") == cli("info", "--chip", "teach", "--json")[0]
    assert tpusim.model("mlp", batch=32, chip="teach") == cli("model", "mlp", "--batch", 32, "--chip", "teach",
                                                              "--json")[0]
    prog = os.path.join(EX, "train_step.json")
    assert stable(tpusim.run(chip="teach", program=prog)) == stable(
        cli("run", "--chip", "teach", "--program", prog, "--json")[0])
    pipe = os.path.join(EX, "train-prefetch.json")
    assert stable(tpusim.pipeline(pipeline=pipe, steps=8)) == stable(
        cli("pipeline", "--pipeline", pipe, "--steps", 8, "--json")[0])


def test_scalesim_report_equals_the_programs(in_tmp):
    (in_tmp / "s.cfg").write_text("[general]\nrun_name = r\n\n[architecture_presets]\nArrayHeight: 16\n"
                                  "ArrayWidth: 16\nIfmapSramSzkB: 64\nFilterSramSzkB: 64\nOfmapSramSzkB: 64\n"
                                  "IfmapOffset: 0\nFilterOffset: 10000000\nOfmapOffset: 20000000\nBandwidth : 10\nDataflow : ws\n"
                                  "MemoryBanks: 1\n\n[run_presets]\nInterfaceBandwidth: CALC\n")
    (in_tmp / "t.csv").write_text("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, "
                                  "Num Filter, Strides,\nConv1, 16, 16, 3, 3, 4, 8, 1,\n")
    py = tpusim.scalesim(config="s.cfg", topology="t.csv", logdir="py", compat="scalesim")
    sh = cli("scalesim", "--config", "s.cfg", "--topology", "t.csv", "--logdir", "sh", "--compat", "scalesim",
             "--json", cwd=in_tmp)[0]
    assert py["total_cycles"] == sh["total_cycles"] > 0
    assert py == sh
    assert sorted(os.listdir(in_tmp / "py" / py["report_dir"])) == sorted(os.listdir(in_tmp / "sh" / sh["report_dir"]))


def test_matmul_takes_and_returns_ndarrays_bit_for_bit_with_the_program(in_tmp):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((40, 70), dtype=np.float32)
    b = rng.standard_normal((70, 24), dtype=np.float32)
    c, rep = tpusim.matmul(a, b, level="pe", chip="teach")
    np.save("a.npy", a)
    np.save("b.npy", b)
    sh = cli("matmul", "--a", "a.npy", "--b", "b.npy", "--level", "pe", "--chip", "teach", "--out", "c.npy",
             "--json", cwd=in_tmp)[0]
    assert stable(rep) == stable(sh)
    assert c.dtype == np.float32 and c.shape == (40, 24)
    assert c.tobytes() == np.load("c.npy").tobytes()      # bit for bit
    # bf16 products with f32 sums: near NumPy's f32 product, not equal to it
    assert np.allclose(c, a @ b, rtol=0.05, atol=0.1)
    assert rep["cycles"] > 0


def test_train_report_equals_the_programs_bit_for_bit_and_has_a_keras_history():
    args = dict(model="mlp", batch=64, cores=2, data="synthetic", synthetic_n=256, epochs=2, threads=1)
    py = tpusim.train(**args)
    sh = cli("train", "--model", "mlp", "--batch", 64, "--cores", 2, "--data", "synthetic", "--synthetic-n", 256,
             "--epochs", 2, "--threads", 1, "--json")[0]
    assert stable(py) == stable(sh)
    assert py["params_hash"] == sh["params_hash"]
    assert py.history["loss"] == [e["loss"] for e in sh["history"]]
    assert len(py.history["val_accuracy"]) == 2


def test_sweep_gives_the_programs_results_csv_and_a_dataframe_and_resumes(in_tmp):
    pd = pytest.importorskip("pandas")
    opts = ["--model", "mlp", "--batch", "32,64", "--cores", "1,2", "--data", "synthetic", "--synthetic-n", 128,
            "--level", "timing", "--epochs", 1]
    cli("sweep", "--out", "sh", "-j", 2, "--no-plot", "train", *opts, cwd=in_tmp)
    df = tpusim.sweep("train", out="py", jobs=2, model="mlp", batch=[32, 64], cores=[1, 2], data="synthetic",
                      synthetic_n=128, level="timing", epochs=1)
    assert isinstance(df, pd.DataFrame) and len(df) == 4
    assert list(df["batch"]) == [32, 32, 64, 64] and list(df["cores"]) == [1, 2, 1, 2]
    assert (in_tmp / "py" / "results.csv").read_bytes() == (in_tmp / "sh" / "results.csv").read_bytes()
    journal = (in_tmp / "py" / "points.jsonl").read_text()
    again = tpusim.sweep("train", out="py", jobs=2, model="mlp", batch=[32, 64], cores=[1, 2], data="synthetic",
                         synthetic_n=128, level="timing", epochs=1)
    assert (in_tmp / "py" / "points.jsonl").read_text() == journal      # nothing run again
    assert again.equals(df)
    with pytest.raises(ValueError, match="another sweep|different"):
        tpusim.sweep("train", out="py", model="mlp", batch=[16, 8], data="synthetic", synthetic_n=128, level="timing")
    shard = tpusim.sweep("train", out="s2", shard=(2, 2), model="mlp", batch=[32, 64], cores=[1, 2],
                         data="synthetic", synthetic_n=128, level="timing", epochs=1)
    assert list(shard["point"]) == [1, 3]


def test_bad_input_raises_value_error_with_the_programs_message():
    _, err = cli("train", "--model", "mlp", "--batch", 0, "--json", status=2)
    with pytest.raises(ValueError) as e:
        tpusim.train(model="mlp", batch=0)
    assert str(e.value) == err.strip()
    _, err = cli("matmul", "--m", 8, "--n", 8, "--k", 8, "--levle", "pe", "--json", status=2)
    with pytest.raises(ValueError) as e:
        tpusim.matmul(m=8, n=8, k=8, levle="pe")
    assert str(e.value) == err.strip()
    with pytest.raises(ValueError, match="tpusim info: "):
        tpusim.info(chip="no-such-chip")
    assert tpusim.info()["chip"]["name"] == "tpu-v2-8"      # still alive, and the next call is fresh


def test_runtime_failure_raises_runtime_error_with_the_programs_message(in_tmp):
    os.mkdir("dir")
    _, err = cli("train", "--model", "mlp", "--data", "synthetic", "--synthetic-n", 256, "--level", "timing",
                 "--trace", "dir", "--json", status=1, cwd=in_tmp)
    with pytest.raises(RuntimeError) as e:
        tpusim.train(model="mlp", data="synthetic", synthetic_n=256, level="timing", trace="dir")
    assert str(e.value) == err.strip()


def test_the_callback_sees_every_step_and_an_exception_stops_the_run(in_tmp):
    steps = []
    tpusim.train(model="mlp", batch=32, data="synthetic", synthetic_n=128, epochs=2, callback=steps.append)
    assert [(s["epoch"], s["step"]) for s in steps] == [(1, 1), (1, 2), (1, 3), (1, 4), (2, 1), (2, 2), (2, 3), (2, 4)]
    assert steps[3]["epoch_end"] and "val_loss" in steps[3] and steps[-1]["global_step"] == 8

    class Stop(Exception):
        pass

    def stop(s):
        if s["global_step"] == 2:
            raise Stop("enough")
    with pytest.raises(Stop, match="enough"):
        tpusim.train(model="mlp", batch=32, data="synthetic", synthetic_n=128, epochs=2, csv="steps.csv",
                     callback=stop)
    assert not os.path.exists("steps.csv")


def test_the_callback_sees_each_outputs_loss_of_a_model_with_several(in_tmp):
    with open("two.json", "w") as f:
        json.dump({"name": "two", "input": [8], "layers": [
            {"type": "dense", "units": 10, "name": "policy"},
            {"type": "dense", "units": 1, "activation": "tanh", "inputs": "input", "name": "value"}],
            "outputs": [{"layer": "policy"}, {"layer": "value", "weight": 0.5}]}, f)
    steps = []
    tpusim.train(model="two.json", batch=32, data="synthetic", synthetic_n=128, callback=steps.append)
    for s in steps:
        o = s["output_losses"]
        assert sorted(o) == ["policy_loss", "value_loss"]
        assert s["loss"] == pytest.approx(o["policy_loss"] + 0.5 * o["value_loss"], rel=1e-6)
    assert sorted(steps[-1]["val_output_losses"]) == ["policy_loss", "value_loss"]
    assert "output_losses" not in tpusim.train(model="mlp", batch=32, data="synthetic", synthetic_n=128,
                                               callback=steps.append)["history"][0]


def _interrupt_after(seconds):
    main = threading.main_thread().ident
    t = threading.Timer(seconds, lambda: signal.pthread_kill(main, signal.SIGINT))
    t.start()
    return t


def test_ctrl_c_stops_a_long_train_with_keyboard_interrupt_and_no_outputs(in_tmp):
    t0 = time.monotonic()
    _interrupt_after(0.5)
    with pytest.raises(KeyboardInterrupt):
        tpusim.train(model="mlp", batch=64, data="synthetic", synthetic_n=64000, epochs=3, csv="steps.csv",
                     trace="trace.json", checkpoint="ckpt")
    assert time.monotonic() - t0 < 10
    assert not os.path.exists("steps.csv") and not os.path.exists("trace.json")
    assert not os.path.exists("ckpt") or not os.listdir("ckpt")
    assert tpusim.info(chip="teach")["chip"]["name"] == "teach"      # the next call runs


def test_ctrl_c_stops_a_sweep_between_points_and_a_rerun_resumes(in_tmp):
    args = dict(model="mlp", batch=64, data="synthetic", synthetic_n=3200, epochs=1, level="tile",
                seed=[1, 2, 3, 4, 5, 6, 7, 8])
    _interrupt_after(0.3)
    with pytest.raises(KeyboardInterrupt):
        tpusim.sweep("train", out="sw", jobs=1, **args)
    assert not os.path.exists("sw/results.csv")
    lines = open("sw/points.jsonl").read().splitlines()
    assert len(lines) < 8
    assert all(json.loads(x)["status"] == "ok" for x in lines)      # the interrupted point is not journaled
    rows = tpusim.sweep("train", out="sw", jobs=2, **args)
    assert len(rows) == 8 and set(rows["status"]) == {"ok"}


def test_a_sweep_without_pandas_is_a_list_of_dicts(in_tmp, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "pandas", None)      # import pandas raises ImportError
    rows = tpusim.sweep("matmul", out="mm", m=[8, 16], n=8, k=8, level="timing")
    assert [(r["point"], r["m"], r["status"]) for r in rows] == [(0, 8, "ok"), (1, 16, "ok")]
    assert all(isinstance(r["cycles"], int) for r in rows)


def test_calls_print_nothing_and_threads_may_call_at_once(capfd):
    results, errors = [], []

    def one(i):
        try:
            results.append(tpusim.model("mlp", batch=i + 1)["batch"])
        except Exception as e:      # pragma: no cover - reported below
            errors.append(e)
    threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and sorted(results) == [1, 2, 3, 4]
    with pytest.raises(ValueError):
        tpusim.call("model", "no-such-model")
    out, err = capfd.readouterr()
    assert out == "" and err == ""
