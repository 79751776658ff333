"""Every module has one import name, `nxcc.<layer>...`: the layer folders at the top of the
repository cannot be imported under their bare names, and nothing is written that tries."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.cli_helpers import REPO
from tests.lint.staged_tree import LAYERS

BARE_IMPORT = re.compile(rf"^\s*(from|import)\s+({'|'.join(LAYERS)})(\.|\s|$)", re.MULTILINE)


@pytest.mark.parametrize("layer", LAYERS)
def test_a_bare_layer_name_does_not_import(layer: str) -> None:
    code = f"import {layer}"
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode != 0
    assert f"import nxcc.{layer}, not {layer}" in r.stderr


@pytest.mark.parametrize("layer", LAYERS)
def test_the_nxcc_name_imports_from_the_layer_folder(layer: str) -> None:
    code = f"import nxcc.{layer} as m; print(m.__file__)"
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(REPO / layer / "__init__.py")


def test_no_source_test_or_document_uses_a_bare_layer_name() -> None:
    files = [p for pattern in ("**/*.py", "**/*.md") for p in REPO.glob(pattern)
             if not {".git", ".venv", "build"} & set(p.relative_to(REPO).parts)]
    offenders = [f"{p.relative_to(REPO)}: {m.group(0).strip()}" for p in files
                 for m in BARE_IMPORT.finditer(p.read_text(errors="replace"))]
    assert offenders == []


def test_no_symlinks_in_the_repository() -> None:
    r = subprocess.run(["git", "ls-files", "-s"], cwd=REPO, capture_output=True, text=True,
                       check=True)
    links = [line.split("\t")[1] for line in r.stdout.splitlines() if line.startswith("120000")]
    assert links == []
