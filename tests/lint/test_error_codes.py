"""Each error code is defined once, in `nxcc/errors.py`: no other source file spells one out
in code, and docs/error-codes.md is the catalogue as `python -m nxcc.errors` prints it."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

from nxcc import errors
from tests.cli_helpers import REPO

SOURCE_DIRS = ("backend", "cli", "compiler", "driver", "ir", "nxd", "passes", "nxcc")
CODE = re.compile(r"\b(?:NCC|NRT)_[A-Z][A-Z_]*\d*\b")


def _code_literals(path: Path) -> list[tuple[int, str]]:
    """(line, code) of every code spelled in a string of `path`'s code: documentation (a
    string standing alone as a statement, as docstrings do) does not count."""
    tree = ast.parse(path.read_text(), str(path))
    prose = {id(node.value) for node in ast.walk(tree)
             if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in prose:
            found += [(node.lineno, m) for m in CODE.findall(node.value)]
    return found


def test_no_code_is_spelled_outside_the_catalogue() -> None:
    stray = [f"{path.relative_to(REPO)}:{line}: {code}"
             for folder in SOURCE_DIRS for path in sorted((REPO / folder).rglob("*.py"))
             if path != REPO / "nxcc" / "errors.py"
             for line, code in _code_literals(path)]
    assert stray == [], "use the constant of nxcc.errors instead:\n" + "\n".join(stray)


def test_the_scan_finds_a_stray_literal(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text('"""Mentions NCC_EARG001 in prose."""\n'
                      'x = ("NCC_EARG001", f"[NRT_TIMEOUT] {1}")\n')
    assert _code_literals(sample) == [(2, "NCC_EARG001"), (2, "NRT_TIMEOUT")]


def test_each_code_is_written_once_in_the_catalogue() -> None:
    text = (REPO / "nxcc" / "errors.py").read_text()
    for code, entry in errors.CATALOGUE.items():
        assert entry.meaning, code
        if entry.status is None:  # the statuses are spelled by their enum names
            assert text.count(f'"{code}"') == 1, code
    assert {s.code for s in errors.NrtStatus} <= set(errors.CATALOGUE)


def test_the_page_is_the_catalogue() -> None:
    page = (REPO / "docs" / "error-codes.md").read_text()
    assert page == errors.catalogue_page(), \
        "regenerate it: python -m nxcc.errors > docs/error-codes.md"
    printed = subprocess.run([sys.executable, "-m", "nxcc.errors"], cwd=REPO,
                             capture_output=True, text=True, check=True, timeout=60)
    assert printed.stdout == page
    for code in errors.CATALOGUE:
        assert f"`{code}`" in page or code == errors.NrtStatus.SUCCESS.code


def test_codes_and_exit_statuses() -> None:
    assert errors.exit_status(errors.BAD_ARGUMENT) == 2
    assert errors.exit_status(errors.TRAIN_CONFIG) == 2
    assert errors.exit_status(errors.DYNAMIC_SHAPE) == 1
    assert errors.exit_status(errors.NrtStatus.TIMEOUT.code) == 1
    err = errors.CompileError(errors.DYNAMIC_SHAPE, "x needs a size", value="x")
    assert (str(err), err.report(), err.value) == (
        "[NCC_EMOD025] x needs a size", "[NCC_EMOD025] x needs a size", "x")
    nrt = errors.NrtError(errors.NrtStatus.TIMEOUT, "too slow")
    assert (nrt.code, nrt.report(), str(nrt)) == (
        "NRT_TIMEOUT", "[NRT_TIMEOUT] too slow", "NRT_TIMEOUT (5): too slow")
    neff = errors.NeffError("m.neff", "bad\nsize", errors.NEFF_SIZE)
    try:
        raise errors.NrtError(errors.NrtStatus.INVALID, str(neff)) from neff
    except errors.NrtError as refused:  # a NEFF the runtime refused keeps the NEFF's code
        assert refused.report() == "[NRT_ENEFF004] m.neff: bad size"
