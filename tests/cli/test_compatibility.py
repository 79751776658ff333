"""Every row of docs/command-line-compatibility.md compiles, on an HLO module proto and on an
ONNX model, and the page lists every flag `compile` accepts (so it cannot drift)."""

from __future__ import annotations

import json
import re
import shlex
import tempfile
from pathlib import Path

import pytest

from nxcc.cli.compile_cmd import TRAINING_FLAGS, compile_cmd
from nxcc.driver.cache import layout
from nxcc.driver.recorded_flags import RECORDED_SWITCHES, RECORDED_WITH_VALUE, RECORDED_WITH_WORDS
from tests.inprocess import run_cli
from tests.paths import REPO

PAGE = REPO / "docs" / "command-line-compatibility.md"
MODELS = {"XLA": REPO / "tests/driver/data/matmul.hlo.pb", "ONNX": REPO / "tests/e2e/models/mlp_ts17.onnx"}
_CODE = re.compile(r"`([^`]+)`")


def _table(heading: str) -> list[list[str]]:
    """The rows of the first table after `heading`, as cells."""
    text = PAGE.read_text().split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.strip().strip("|").split(" | ") for line in text.splitlines()
            if line.startswith("| ")]
    return [[cell.strip() for cell in row] for row in rows[2:]]  # skip the header


FLAG_ROWS = [_CODE.match(row[0]).group(1) for row in _table("Flags")]  # type: ignore[union-attr]
CALLER_ROWS = {row[0]: _CODE.search(row[1]).group(1)  # type: ignore[union-attr]
               for row in _table("Callers' command lines")}


def _args(text: str, framework: str, work: Path) -> list[str]:
    """`text`'s words with the placeholders filled in and --framework matching the model."""
    fill = {"MODEL": str(MODELS[framework]), "OUT": str(work / "out.neff"),
            "LOG": str(work / "log.txt"), "FILE": str(work / "file.out"), "DIR": str(work / "d")}
    words = []
    for word in shlex.split(text):
        for name, value in fill.items():
            word = re.sub(rf"\b{name}\b", value, word)
        if word in ("--framework=XLA", "--framework=ONNX"):
            word = f"--framework={framework}"
        elif words and words[-1] == "--framework":
            word = framework
        words.append(word)
    return words


def _compile(args: list[str], work: Path) -> None:
    outcome = run_cli(*args)
    assert outcome.crash is None, repr(outcome.crash)
    assert outcome.status == 0, (args, outcome.stderr)
    assert "Compiler status PASS" in outcome.stdout, outcome.stdout


@pytest.fixture(autouse=True)
def _temporary_files_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # SaveTemps' default workdir


@pytest.mark.parametrize("framework", sorted(MODELS))
@pytest.mark.parametrize("flag", FLAG_ROWS)
def test_flag_row_compiles(flag: str, framework: str, tmp_path: Path) -> None:
    extra = _args(flag, framework, tmp_path)
    target = [] if any(w.startswith("--target") for w in extra) else ["--target", "trn1"]
    _compile(["compile", str(MODELS[framework]), "--output", str(tmp_path / "m.neff"),
              "--logfile", str(tmp_path / "log.txt"), *target, *extra], tmp_path)


@pytest.mark.parametrize("framework", sorted(MODELS))
@pytest.mark.parametrize("caller", sorted(CALLER_ROWS))
def test_caller_command_line_compiles(caller: str, framework: str, tmp_path: Path) -> None:
    words = _args(CALLER_ROWS[caller], framework, tmp_path)
    assert words[0] == "neuronx-cc"
    _compile(words[1:], tmp_path)
    assert (tmp_path / "out.neff").stat().st_size > 1024


def test_every_flag_of_compile_is_listed() -> None:
    listed = " ".join(FLAG_ROWS)
    training = {*TRAINING_FLAGS, "training"}  # nxcc's own (docs/distributed-training.md)
    missing = [p.opts[0] for p in compile_cmd.params
               if p.name not in training and p.opts[0].startswith("-")
               and not any(re.search(rf"(^|\s){re.escape(o)}([=\s]|$)", listed)
                           for o in p.opts + p.secondary_opts)]
    missing += [f for f in sorted(RECORDED_WITH_VALUE | RECORDED_WITH_WORDS | RECORDED_SWITCHES)
                if f not in listed]
    assert missing == [], f"flags missing from {PAGE.name}: {missing}"


def test_dge_levels_take_every_word_and_execute_repetition_is_recorded(tmp_path: Path
                                                                       ) -> None:
    out = tmp_path / "m.neff"
    _compile(["compile", str(MODELS["XLA"]), "--target", "trn1", "--output", str(out),
              "--internal-enable-dge-levels", "vector_dynamic_offsets", "spill_reload",
              "scalar_dynamic_offset", "io", "--execute-repetition=3",
              "--model-type=cnn-training", "--logfile", str(tmp_path / "l")], tmp_path)
    shown = run_cli("inspect-neff", "--json", str(out))
    flags = json.loads(shown.stdout)["compiler"]["flags"]
    assert flags["recorded"] == [["--internal-enable-dge-levels",
                                  "vector_dynamic_offsets spill_reload scalar_dynamic_offset io"]]
    assert (flags["execute_repetition"], flags["model_type"]) == (3, "cnn-training")


def test_bad_values_are_still_refused(tmp_path: Path) -> None:
    for args, fragment in ((["--execute-repetition=0"], "execute-repetition"),
                           (["--model-type=rnn"], "model-type"),
                           (["--target=trn9"], "target"),
                           (["--target=inf2", "--lnc=2"], "trn2 or trn3")):
        outcome = run_cli("compile", str(MODELS["XLA"]), *args, "--output",
                          str(tmp_path / "m.neff"), *([] if "--target" in args[0]
                                                       else ["--target", "trn1"]))
        assert outcome.status == 2 and fragment in outcome.stderr, outcome.stderr


def test_remote_cache_url_warns_once_and_uses_the_local_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    local = tmp_path / "local-cache"
    monkeypatch.setattr(layout, "DEFAULT_ROOT", str(local))
    monkeypatch.setenv("NEURON_COMPILE_CACHE_URL", "s3://bucket/prefix")
    args = ["compile", str(MODELS["ONNX"]), "--target", "trn1", "--output",
            str(tmp_path / "m.neff"), "--logfile", str(tmp_path / "l")]
    for _ in range(2):  # a miss, then a hit from the local cache
        outcome = run_cli(*args)
        assert outcome.status == 0 and "Compiler status PASS" in outcome.stdout
        warnings = [ln for ln in outcome.stderr.splitlines() if ln.startswith("WARNING")]
        assert len(warnings) == 1, outcome.stderr
        assert "s3://bucket/prefix" in warnings[0] and str(local) in warnings[0]
    stats = run_cli("cache", "stats")
    assert stats.status == 0 and f"cache: {local}" in stats.stdout
    assert "entries: 1 (1 compiled" in stats.stdout and "s3://bucket/prefix" in stats.stderr
    listed = run_cli("cache", "list")
    assert listed.status == 0 and listed.stdout.count("MODULE_") == 1
    assert "s3://bucket/prefix" in listed.stderr


def test_retry_failed_compilation_compiles_a_remembered_failure_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nxcc.driver import cached_compile

    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n"
                   "  ROOT r = f32[2] custom-call(p), custom_call_target=\"NoSuchTarget\"\n}\n")
    args = ["compile", str(bad), "--target", "trn1", "--output", str(tmp_path / "m.neff"),
            "--logfile", str(tmp_path / "l")]
    first = run_cli(*args)
    assert first.status == 1
    calls = []
    real = cached_compile._compile
    monkeypatch.setattr(cached_compile, "_compile", lambda *a: (calls.append(1), real(*a)))
    assert run_cli(*args).status == 1 and calls == []  # the failure is remembered
    assert run_cli(*args, "--retry_failed_compilation").status == 1 and calls == [1]
