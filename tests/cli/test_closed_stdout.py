"""A stdout whose reader has gone (`neuronx-cc ... | head`) ends the command quietly with
status 141, as SIGPIPE ends cat or grep: no `ERROR: [...] Broken pipe` line, no traceback,
nothing half-written.

Each command runs with stdout a pipe whose read end is already closed, so its first write
fails at once, whatever the timing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nxcc.cli.closed_stdout import CLOSED_STDOUT, is_closed_stdout
from tests.cli_helpers import REPO, neuronx_cc

MLP = REPO / "examples" / "mlp.onnx"


def into_closed_pipe(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`neuronx-cc ARGS` writing to a pipe nobody reads any more."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([sys.executable, "-m", "nxcc", *args], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=300, cwd=cwd,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    finally:
        os.close(write_end)


@pytest.fixture(scope="module")
def mlp_neff(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("closed") / "mlp.neff"
    r = neuronx_cc("compile", str(MLP), "--target", "trn1", "--output", str(out), "--no-cache")
    assert r.returncode == 0, r.stderr
    return out


@pytest.mark.parametrize("args", [
    ("list-operators", "--framework", "onnx"),
    ("inspect-neff", "NEFF"),
    ("run", "NEFF", "--inputs", str(REPO / "examples" / "mlp_inputs.npz")),
], ids=["list-operators", "inspect-neff", "run"])
def test_a_closed_stdout_ends_the_command_quietly(args: tuple[str, ...], mlp_neff: Path,
                                                  tmp_path: Path) -> None:
    r = into_closed_pipe(*(str(mlp_neff) if a == "NEFF" else a for a in args), cwd=tmp_path)
    assert (r.returncode, r.stderr) == (CLOSED_STDOUT, "")


def test_print_ir_after_into_a_closed_pipe_stops_the_compile_and_leaves_nothing(
        tmp_path: Path) -> None:
    r = into_closed_pipe("compile", str(MLP), "--target", "trn1", "--no-cache",
                         "--print-ir-after", "fold", "--output", "out.neff", cwd=tmp_path)
    assert (r.returncode, r.stderr) == (CLOSED_STDOUT, "")
    assert not [p.name for p in tmp_path.iterdir() if p.name != "log-neuron-cc.txt"]


def test_a_replayed_compile_into_a_closed_pipe_still_writes_its_neff(tmp_path: Path) -> None:
    """The second compile is a cache hit replayed without click (the test's own cache)."""
    args = ("compile", str(MLP), "--target", "trn1", "--output", "mlp.neff")
    assert neuronx_cc(*args, cwd=tmp_path).returncode == 0
    first = (tmp_path / "mlp.neff").read_bytes()
    (tmp_path / "mlp.neff").unlink()
    r = into_closed_pipe(*args, cwd=tmp_path)
    assert (r.returncode, r.stderr) == (CLOSED_STDOUT, "")
    assert (tmp_path / "mlp.neff").read_bytes() == first


def test_a_broken_pipe_that_is_not_stdout_is_no_closed_stdout() -> None:
    assert not is_closed_stdout(BrokenPipeError(32, "Broken pipe"))
