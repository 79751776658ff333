"""bench/op_profile.py on the tiny bundled MLP (a run of the tool, not a timing test)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.paths import REPO


def test_op_profile_lists_every_kind_of_instruction(tmp_path: Path) -> None:
    neff = tmp_path / "mlp.neff"
    compiled = subprocess.run([sys.executable, "-m", "nxcc", "compile",
                               str(REPO / "examples" / "mlp.onnx"), "--target", "trn1",
                               "--output", str(neff)], capture_output=True, text=True,
                              timeout=300, cwd=REPO)
    assert compiled.returncode == 0, compiled.stderr
    done = subprocess.run([sys.executable, str(REPO / "bench" / "op_profile.py"), str(neff),
                           str(REPO / "examples" / "mlp.onnx"), "--rounds", "3",
                           "--results", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    head, *rows = done.stdout.splitlines()
    assert re.match(r".*mlp\.neff: 5 instructions, median total [\d.]+ ms over 3 rounds$", head)
    labels = sorted(re.sub(r"^\s*[\d.]+ ms  x1\s+", "", row) for row in rows)
    assert [label.split()[0] for label in labels] == [
        "add", "dot_general", "dot_general", "fused_elementwise", "softmax"]
    assert (tmp_path / "op_profile-mlp.md").read_text().count(" ms  x1 ") == 5
