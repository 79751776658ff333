"""`import nxcc` (and compiling and running with it) never imports torch or JAX; the adapters
import their framework, and say how to install it when it is missing."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.cli_helpers import REPO

FRAMEWORKS = ("torch", "jax", "jaxlib", "onnxscript")


def python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})


def test_nxcc_imports_no_framework() -> None:
    done = python("import json, sys, nxcc\n"
                  "nxcc.load(nxcc.compile('examples/mlp.onnx', target='trn1'))\n"
                  f"print(json.dumps(sorted(m for m in sys.modules "
                  f"if m.split('.')[0] in {FRAMEWORKS!r})))")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


@pytest.mark.parametrize("adapter,framework,extra", [("nxcc.torch", "torch", "torch"),
                                                     ("nxcc.jax", "jax", "jax")])
def test_an_adapter_without_its_framework_says_how_to_install_it(adapter: str, framework: str,
                                                                 extra: str) -> None:
    done = python(f"import sys\nsys.modules[{framework!r}] = None  # as if not installed\n"
                  f"import {adapter}")
    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[-1] == (
        f"ImportError: {adapter} needs {'PyTorch' if extra == 'torch' else 'JAX'}: "
        f"pip install 'nxcc[{extra}]'")
