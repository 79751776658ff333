"""Every StableHLO fixture (JAX's `lower(...).as_text()`, in the pretty, generic and
located printed forms) compiles for trn1 and runs to JAX's outputs; the CLI does the same
from .mlir, .stablehlo, .txt and .hlo files and with --framework XLA."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from nxcc.backend.neff import read_neff
from nxcc.backend.runtime.model import LoadedModel
from nxcc.driver.compile import compile_model
from nxcc.driver.options import CompileOptions
from tests.cli_helpers import neuronx_cc
from tests.compiler.hlo.helpers import assert_close, load_model
from tests.compiler.stablehlo.helpers import MLIR_FIXTURES, arrays_of, inputs_of, outputs_of

PROGRAMS = ("mlp", "transformer", "cnn", "convs", "loops", "conds", "indexing", "mixed", "rng",
            "wide", "scan_layers", "cond_switch", "sorting", "top_k", "called_twice", "misc",
            "sharded_megatron_mlp", "sharded_row_sum", "sharded_contraction_matmul",
            "sdy_megatron_mlp")


def test_the_fixture_set_is_complete() -> None:
    names = {p.stem for p in MLIR_FIXTURES}
    assert set(PROGRAMS) <= names
    for form in ("locs", "generic"):
        assert {f"mlp_{form}", f"scan_layers_{form}", f"sorting_{form}"} <= names
    for p in MLIR_FIXTURES:
        assert p.with_suffix(".hlo").is_file() and p.with_suffix(".npz").is_file()


def check_outputs(model: LoadedModel, path: Path) -> None:
    arrays = arrays_of(path)
    inputs = inputs_of(arrays)
    assert len(model.inputs) == len(inputs)
    results = model.execute({info.name: inputs[i] for i, info in enumerate(model.inputs)})
    expected = outputs_of(arrays)
    assert len(model.outputs) == len(expected)
    for i, (info, want) in enumerate(zip(model.outputs, expected, strict=True)):
        assert_close(results[info.name], want, f"{path.name} output{i}")


@pytest.mark.parametrize("path", MLIR_FIXTURES, ids=[p.stem for p in MLIR_FIXTURES])
def test_fixture_compiles_and_matches_jax(path: Path, tmp_path: Path) -> None:
    """A program whose shardings name 8 devices is partitioned for 8 ranks and runs as
    them (global inputs in, global outputs out)."""
    out = tmp_path / "model.neff"
    compile_model(str(path), CompileOptions(target="trn1", output=str(out)),
                  emit=lambda _: None)
    check_outputs(load_model(out), path)


def cli_compile_and_run(src: Path, fixture: Path, tmp_path: Path, *flags: str
                        ) -> list[np.ndarray]:
    """Compile `src` and run it on `fixture`'s inputs, both through the command line."""
    neff = tmp_path / "model.neff"
    r = neuronx_cc("compile", str(src), "--target", "trn1", "--output", str(neff), *flags)
    assert r.returncode == 0, r.stderr
    assert "Compiler status PASS" in r.stdout
    model = LoadedModel(read_neff(str(neff)))
    inputs = inputs_of(arrays_of(fixture))
    np.savez(tmp_path / "in.npz", **{i.name: a for i, a in zip(model.inputs, inputs,
                                                                strict=True)})
    r = neuronx_cc("run", str(neff), "--inputs", str(tmp_path / "in.npz"), "--output",
                   str(tmp_path / "out.npz"))
    assert r.returncode == 0, r.stderr
    got = np.load(tmp_path / "out.npz")
    return [got[o.name] for o in model.outputs]


@pytest.mark.parametrize(("program", "copy_as", "flags"), [
    ("scan_layers", "model.mlir", ()),
    ("sorting", "model.stablehlo", ()),
    ("called_twice", "dump.txt", ()),
    ("cond_switch_generic", "prog.hlo", ()),
    ("top_k", "model.bin", ("--framework", "XLA")),
])
def test_cli_compiles_and_runs(program: str, copy_as: str, flags: tuple[str, ...],
                               tmp_path: Path) -> None:
    """The framework comes from .mlir/.stablehlo, and for .txt/.hlo the content says the
    text is MLIR, not HLO."""
    src = next(p for p in MLIR_FIXTURES if p.stem == program)
    dst = tmp_path / copy_as
    shutil.copy(src, dst)
    outputs = cli_compile_and_run(dst, src, tmp_path, *flags)
    for i, (got, want) in enumerate(zip(outputs, outputs_of(arrays_of(src)), strict=True)):
        assert_close(got, want, f"{program} output{i}")


def test_inputs_are_the_arguments_and_sharded_program_runs_at_lnc2(tmp_path: Path) -> None:
    path = next(p for p in MLIR_FIXTURES if p.stem == "sharded_megatron_mlp")
    out = tmp_path / "m.neff"
    compile_model(str(path), CompileOptions(target="trn2", output=str(out)),
                  emit=lambda _: None)
    model = LoadedModel(read_neff(str(out)))
    assert [i.name for i in model.inputs] == ["arg0", "arg1", "arg2", "arg3", "arg4"]
    check_outputs(model, path)


def test_package_entry_point_takes_a_path_or_text() -> None:
    """`compiler.stablehlo.import_stablehlo` is what the driver's content detection calls
    with the file's path."""
    from nxcc.compiler.stablehlo import import_stablehlo
    from nxcc.ir.printer import print_module

    path = next(p for p in MLIR_FIXTURES if p.stem == "mlp")
    assert print_module(import_stablehlo(str(path))) == \
        print_module(import_stablehlo(path.read_text()))
