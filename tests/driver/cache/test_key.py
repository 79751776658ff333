"""The compile cache's key in a checkout covers the state of nxcc's own sources."""

from __future__ import annotations

import os
from pathlib import Path

import nxcc
from nxcc.driver.cache.key import make_key, source_state, tree_state


def _tree(root: Path) -> Path:
    (root / "ir").mkdir(parents=True)
    (root / "ir" / "core.py").write_text("x = 1\n")
    (root / "passes").mkdir()
    (root / "passes" / "fold.py").write_text("y = 2\n")
    (root / "docs").mkdir()
    (root / "docs" / "page.md").write_text("text\n")
    return root


def test_tree_state_follows_an_edit_of_a_layer_source(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    before = tree_state(str(root))
    assert before == tree_state(str(root))  # the same tree, the same state
    (root / "docs" / "page.md").write_text("other text\n")  # not a layer's source
    assert tree_state(str(root)) == before
    stat = os.stat(root / "ir" / "core.py")
    os.utime(root / "ir" / "core.py", ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert tree_state(str(root)) != before


def test_a_tree_without_layers_has_no_state(tmp_path: Path) -> None:
    assert tree_state(str(tmp_path)) == ""


def test_the_checkout_running_the_tests_has_a_state_in_its_keys(tmp_path: Path) -> None:
    """The tests run from a checkout (the repository root on nxcc's path): its keys' flags
    hash covers the sources, and is the same for the same flags within one process."""
    assert len(nxcc.__path__) > 1
    assert len(source_state()) == 64
    model = tmp_path / "m.onnx"
    model.write_bytes(b"model")
    flags: dict[str, object] = {"target": "trn1"}
    assert make_key(str(model), flags) == make_key(str(model), dict(flags))
    assert make_key(str(model), flags).flags == flags
