"""Shared by the Python tests (tests/python/, run by `make test` with
PYTHONPATH at the build's package and TPUSIM at its program)."""
import json
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TPUSIM = os.environ.get("TPUSIM", os.path.join(ROOT, "build", "release", "tpusim"))
# keys measured on the host, not simulated: tests/golden/golden.py's rule
VOLATILE_PREFIX = ("wall", "host_")
VOLATILE_SUFFIX = ("_fps", "wall_s")


def stable(v):
    """A report without its host-time keys (as the golden set compares them)."""
    if isinstance(v, dict):
        return {k: stable(x) for k, x in v.items()
                if not k.startswith(VOLATILE_PREFIX) and not k.endswith(VOLATILE_SUFFIX)}
    if isinstance(v, list):
        return [stable(x) for x in v]
    return v


def cli(*args, status=0, cwd=None):
    """Runs the program; its stdout parsed as JSON when it is, its stderr."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)      # the program links its own sanitizers
    p = subprocess.run([TPUSIM, *map(str, args)], capture_output=True, text=True, cwd=cwd, env=env)
    assert p.returncode == status, (args, p.returncode, p.stderr)
    try:
        out = json.loads(p.stdout)
    except ValueError:
        out = p.stdout
    return out, p.stderr


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    """The test runs in a directory of its own."""
    monkeypatch.chdir(tmp_path)
    return tmp_path
