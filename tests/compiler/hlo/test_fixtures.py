"""Every fixture compiles (--framework XLA, and from the .hlo extension) for trn1 and runs
to the outputs JAX (or numpy, for the hand-written legacy fixtures) computed."""

from __future__ import annotations

from pathlib import Path

import pytest

from nxcc.compiler.hlo import parse
from tests.compiler.hlo.helpers import (
    HLO_FIXTURES,
    assert_close,
    assert_same_tree,
    compile_and_load,
    fixture_arrays,
    run_fixture,
)

IDS = [p.name for p in HLO_FIXTURES]


def test_the_fixture_set_is_complete() -> None:
    names = {p.name for p in HLO_FIXTURES}
    for program in ("mlp", "transformer", "cnn", "convs", "loops", "conds", "indexing",
                    "mixed", "rng", "wide"):
        assert {f"{program}.lowered.hlo", f"{program}.compiled.hlo"} <= names
    assert {"legacy_layouts.hlo", "legacy_while.hlo"} <= names


@pytest.mark.parametrize("framework", ["XLA", None], ids=["framework-XLA", "from-extension"])
@pytest.mark.parametrize("hlo", HLO_FIXTURES, ids=IDS)
def test_fixture_compiles_and_runs(hlo: Path, framework: str | None, tmp_path: Path) -> None:
    arrays = fixture_arrays(hlo)
    model = compile_and_load(hlo, tmp_path / "model.neff", framework)
    outputs = run_fixture(model, arrays)
    expected = sorted(k for k in arrays if k.startswith("output"))
    assert len(outputs) == len(expected)
    for i, got in enumerate(outputs):
        assert_close(got, arrays[f"output{i}"], f"{hlo.name} output{i}")


@pytest.mark.parametrize("hlo", HLO_FIXTURES, ids=IDS)
def test_lark_engine_builds_the_same_tree(hlo: Path) -> None:
    text = hlo.read_text()
    assert_same_tree(parse(text, hlo.name, "fast"), parse(text, hlo.name, "lark"))


def test_inputs_are_named_after_the_parameters(tmp_path: Path) -> None:
    model = compile_and_load(Path(HLO_FIXTURES[0]).parent / "legacy_while.hlo",
                             tmp_path / "m.neff", None)
    assert [i.name for i in model.inputs] == ["p.0", "p.1", "m"]
    assert [o.name for o in model.outputs] == ["output0", "output1", "output2"]
    mlp = compile_and_load(Path(HLO_FIXTURES[0]).parent / "mlp.compiled.hlo",
                           tmp_path / "mlp.neff", "XLA")
    assert [i.name for i in mlp.inputs] == ["x.1", "w1.1", "b1.1", "w2.1", "b2.1"]


def test_txt_extension_means_xla_and_text_is_accepted_directly(tmp_path: Path) -> None:
    src = Path(HLO_FIXTURES[0]).parent / "mlp.lowered.hlo"
    txt = tmp_path / "dump.txt"
    txt.write_text(src.read_text())
    arrays = fixture_arrays(src)
    outputs = run_fixture(compile_and_load(txt, tmp_path / "m.neff", None), arrays)
    assert_close(outputs[0], arrays["output0"], "output0")
    from nxcc.compiler.hlo import import_hlo

    from_text = import_hlo(src.read_text())
    from_path = import_hlo(str(src))
    assert [p.name for p in from_text.entry_function.params] == [
        p.name for p in from_path.entry_function.params]
