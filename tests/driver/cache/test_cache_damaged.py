"""Damaged compile cache entries (found by the fuzz kind `cache`): an entry whose files are
missing, not JSON, or not of the form the cache writes is a miss, compiled again and
replaced, never a traceback or a wrong NEFF; `cache list`/`stats` skip it and `cache clean`
removes it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli_helpers import REPO
from tests.inprocess import assert_clean_error, run_cli

MODEL = REPO / "tests/driver/data/matmul.hlo"


def _json(name: str, value: object) -> Callable[[Path], None]:
    return lambda entry: (entry / name).write_text(json.dumps(value))


def _meta(**change: object) -> Callable[[Path], None]:
    def edit(entry: Path) -> None:
        meta = json.loads((entry / "meta.json").read_text())
        (entry / "meta.json").write_text(json.dumps({**meta, **change}))
    return edit


def _as_file(entry: Path) -> None:
    for f in entry.iterdir():
        f.unlink()
    entry.rmdir()
    entry.write_bytes(b"not a directory")


FAILED_DAMAGE = {  # a remembered failure whose error cannot be read back
    "error-not-json": lambda e: (e / "error.json").write_bytes(b"\x00{"),
    "error-a-string": _json("error.json", "NCC_EUOC002"),
    "error-a-list": _json("error.json", [1, 2]),
    "error-without-code": _json("error.json", {"message": "x"}),
    "error-code-mismatch": _json("error.json", {"code": "NCC_EVRF064", "message": "x"}),
    "error-message-a-list": _json("error.json", {"code": "NCC_EUOC002", "message": ["x"]}),
    "error-missing": lambda e: (e / "error.json").unlink(),
    "meta-code-not-a-code": _meta(error_code=""),
    "error-message-changed": _json("error.json", {"code": "NCC_EUOC002", "message": "x"}),
    "meta-sha-missing": _meta(error_sha256=None),
}
OK_DAMAGE = {  # a compiled entry
    "neff-missing": lambda e: (e / "model.neff").unlink(),
    "neff-a-directory": lambda e: ((e / "model.neff").unlink(), (e / "model.neff").mkdir()),
    "meta-created-a-string": _meta(created="yesterday"),
    "meta-created-huge": _meta(created=1e300),
    "meta-size-a-bool": _meta(neff_bytes=True),
    "meta-sha-a-number": _meta(neff_sha256=7),
    "meta-a-list": lambda e: (e / "meta.json").write_text("[]"),
    "meta-nested-deep": lambda e: (e / "meta.json").write_text("[" * 100_000),
    "entry-a-file": _as_file,
}


def _compile(model: Path, tmp: Path, cache: Path) -> object:
    return run_cli("compile", str(model), "--framework", "XLA", "--target", "trn1", "-o",
                   str(tmp / "out.neff"), "--cache-dir", str(cache), "--verbose", "info",
                   "--logfile", str(tmp / "log.txt"))


def _entry(cache: Path) -> Path:
    (entry,) = [p for p in cache.glob("neuronxcc-*/MODULE_*") if not p.name.endswith(".lock")]
    return entry


def _listing_is_clean(cache: Path) -> None:
    for argv in (["list"], ["list", "--json"], ["stats"]):
        outcome = run_cli("cache", *argv, "--cache-dir", str(cache))
        assert outcome.status == 0 and outcome.crash is None, outcome.stderr


@pytest.mark.parametrize("damage", sorted(OK_DAMAGE))
def test_damaged_compiled_entry_is_a_miss(tmp_path: Path, damage: str) -> None:
    cache = tmp_path / "cache"
    assert _compile(MODEL, tmp_path, cache).status == 0
    reference = (tmp_path / "out.neff").read_bytes()
    (tmp_path / "out.neff").unlink()
    OK_DAMAGE[damage](_entry(cache))
    _listing_is_clean(cache)
    again = _compile(MODEL, tmp_path, cache)
    assert again.status == 0 and again.crash is None, again.stderr
    assert "compile cache miss" in again.stderr
    assert (tmp_path / "out.neff").read_bytes() == reference
    assert (_entry(cache) / "model.neff").read_bytes() == reference  # replaced


@pytest.mark.parametrize("damage", sorted(FAILED_DAMAGE))
def test_damaged_failure_entry_is_compiled_again(tmp_path: Path, damage: str) -> None:
    cache = tmp_path / "cache"
    bad = tmp_path / "bad.hlo"
    bad.write_text(MODEL.read_text().replace(" dot(", " frobnicate("))
    first = _compile(bad, tmp_path, cache)
    assert_clean_error(first, "NCC_EUOC002")
    FAILED_DAMAGE[damage](_entry(cache))
    _listing_is_clean(cache)
    again = _compile(bad, tmp_path, cache)
    assert_clean_error(again, "NCC_EUOC002", "frobnicate")
    assert "compile cache miss" in again.stderr


def test_clean_removes_damaged_entries(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert _compile(MODEL, tmp_path, cache).status == 0
    (_entry(cache) / "meta.json").write_text("{")
    outcome = run_cli("cache", "clean", "--cache-dir", str(cache))
    assert outcome.status == 0, outcome.stderr
    assert list(cache.glob("neuronxcc-*/*")) == []
