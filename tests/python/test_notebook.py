"""docs/python-seed.ipynb runs from top to bottom (its cells assert what
they show), executed by Debian's jupyter-nbconvert against this build's
package, so the notebook cannot rot. Not under ASan (MODE=asan): the kernel
is a process of its own, and test_tpusim.py covers the extension there."""
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT


@pytest.mark.skipif(os.environ.get("MODE") == "asan", reason="the extension is checked under ASan by test_tpusim.py")
def test_the_seed_notebook_executes(tmp_path):
    jupyter = shutil.which("jupyter") or pytest.fail("jupyter-nbconvert is not installed (make deps)")
    env = dict(os.environ, MPLBACKEND="Agg")
    p = subprocess.run([jupyter, "nbconvert", "--to", "notebook", "--execute", "--ExecutePreprocessor.timeout=300",
                        "--ExecutePreprocessor.kernel_name=python3", "--output-dir", str(tmp_path),
                        os.path.join(ROOT, "docs", "python-seed.ipynb")],
                       capture_output=True, text=True, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    assert (tmp_path / "python-seed.ipynb").stat().st_size > 0
