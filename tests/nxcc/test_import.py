"""`import nxcc` is cheap and names the API; the layers still load only as `nxcc.<layer>`."""

from __future__ import annotations

import subprocess
import sys

import nxcc
from tests.cli_helpers import REPO

LAYERS = "{'backend','compiler','cli','driver','ir','nxd','passes'}"


def python(code: str) -> str:
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_the_acceptance_command_imports_no_layer_by_a_second_name() -> None:
    code = ("import nxcc, sys; nxcc.load(nxcc.compile('examples/cnn.onnx', target='trn2')); "
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {LAYERS}))")
    assert python(code) == "[]"


def test_import_nxcc_loads_no_layer_and_nxcc_ir_no_more_than_the_ir() -> None:
    loaded = python("import nxcc, sys; print(sorted(m for m in sys.modules "
                    "if m.startswith('nxcc') or m in ('numpy', 'onnx', 'click')))")
    assert loaded == "['nxcc']"
    ir = python("import nxcc.ir.core, sys; print(sorted({m.split('.')[1] for m in sys.modules "
                "if m.startswith('nxcc.') and m.count('.') >= 1}))")
    assert ir == "['ir']"


def test_the_api_names() -> None:
    for name in nxcc.__all__:
        assert getattr(nxcc, name) is not None and name in dir(nxcc)
        assert getattr(nxcc, name).__doc__, name
    try:
        nxcc.nothing  # noqa: B018
    except AttributeError as exc:
        assert "no attribute 'nothing'" in str(exc)
    else:
        raise AssertionError("nxcc.nothing exists")
