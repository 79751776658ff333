"""Binary HloModuleProto fixtures (`make_proto_fixtures.py`, written by JAX): each gives the
IR its HLO text twin gives, and compiles and runs through the CLI to JAX's outputs; the
command lines of the build pipelines that hand neuronx-cc a `.hlo.pb` work as written."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from click.testing import CliRunner

from nxcc.backend.neff import read_neff
from nxcc.backend.runtime.model import LoadedModel
from nxcc.cli.compile_cmd import compile_cmd
from nxcc.cli.run_cmd import run_cmd
from nxcc.compiler.hlo import import_hlo, parse
from nxcc.compiler.hlo.nodes import HloModule, Instruction
from nxcc.compiler.hlo.proto import load_hlo_proto
from nxcc.driver.compile import compile_model
from nxcc.driver.options import CompileOptions
from nxcc.ir.printer import print_module
from tests.cli_helpers import REPO, neuronx_cc
from tests.compiler.hlo.helpers import TREE_SKIP, assert_close, assert_same_tree

PROTO = REPO / "tests/compiler/hlo/fixtures/proto"
PROTOS = sorted(PROTO.glob("*.hlo.pb"))
SPMD = ("megatron_mlp", "row_sum", "contraction_matmul")
PROGRAMS = ("mlp", "transformer", "cnn", "convs", "loops", "conds", "indexing", "mixed", "rng",
            "wide", "softmax", "layer_norm", "attention", "scan", "topk", "pool_grad",
            "literals", *SPMD)
PARTITIONED = [PROTO / f"{n}.compiled.hlo.pb" for n in SPMD]
SINGLE = [p for p in PROTOS if p not in PARTITIONED]


def program(pb: Path) -> str:
    return pb.name.split(".")[0]


def arrays(name: str) -> dict[str, np.ndarray]:
    """JAX's inputs input0.. and outputs output0.. of program `name`."""
    with np.load(PROTO / f"{name}.npz") as data:
        return {k.removeprefix("bf16:"): data[k].view(ml_dtypes.bfloat16)
                if k.startswith("bf16:") else data[k] for k in data.files}


def named_inputs(neff: Path, data: dict[str, np.ndarray], path: Path) -> Path:
    """An .npz of `data`'s inputs keyed by the NEFF's input names (in parameter order)."""
    names = [e["name"] for e in read_neff(str(neff)).manifest["inputs"]]
    np.savez(path, **{n: data[f"input{i}"] for i, n in enumerate(names)})
    return path


def run_outputs(neff: Path, data: dict[str, np.ndarray], tmp_path: Path) -> list[np.ndarray]:
    """The NEFF's outputs on `data`'s inputs, through `neuronx-cc run` (as its ranks when
    it is an SPMD program); in process when an
    input is bfloat16, which an .npz cannot hold as such (`run` would refuse its 2-byte
    voids)."""
    names = [e["name"] for e in read_neff(str(neff)).manifest["outputs"]]
    if any(a.dtype == ml_dtypes.bfloat16 for k, a in data.items() if k.startswith("input")):
        model = LoadedModel(read_neff(str(neff)))
        feed = {info.name: data[f"input{i}"] for i, info in enumerate(model.inputs)}
        results = model.execute(feed)
        return [results[n] for n in names]
    inputs = named_inputs(neff, data, tmp_path / "in.npz")
    spmd = read_neff(str(neff)).manifest.get("spmd")  # shardings over N devices: N ranks
    ranks = ["--world-size", str(spmd["world_size"])] if spmd else []
    r = CliRunner().invoke(run_cmd, [str(neff), "--inputs", str(inputs), "--output",
                                     str(tmp_path / "out.npz"), "-q", *ranks])
    assert r.exit_code == 0, r.output
    with np.load(tmp_path / "out.npz") as out:
        return [out[n] for n in names]


def test_the_fixture_set_is_complete() -> None:
    for name in PROGRAMS:
        assert (PROTO / f"{name}.lowered.hlo.pb").is_file(), name
        assert (PROTO / f"{name}.lowered.hlo").is_file(), name
        assert (PROTO / f"{name}.npz").is_file(), name
        if name != "rng":
            assert (PROTO / f"{name}.compiled.hlo.pb").is_file(), name
    assert len(PROTOS) == 2 * len(PROGRAMS) - 1


@pytest.mark.parametrize("pb", PROTOS, ids=[p.name for p in PROTOS])
def test_proto_and_text_give_the_same_ir(pb: Path) -> None:
    from_proto = import_hlo(str(pb))
    from_text = import_hlo(str(pb.with_suffix("")))
    assert print_module(from_proto) == print_module(from_text)
    assert from_proto.spmd == from_text.spmd
    shardings = [(p.name, p.sharding) for p in from_proto.entry_function.params]
    assert shardings == [(p.name, p.sharding) for p in from_text.entry_function.params]


@pytest.mark.parametrize("pb", PROTOS, ids=[p.name for p in PROTOS])
def test_proto_and_text_give_the_same_tree(pb: Path) -> None:
    """Instruction by instruction, attribute by attribute (their text aside, and the
    metadata the converter does not read; computations and instructions by name, as the
    optimised text orders them otherwise, and without the signatures it prints); the header
    as far as the proto holds it."""
    from_proto = load_hlo_proto(str(pb))
    from_text = parse(pb.with_suffix("").read_text())
    assert from_proto is not None and from_proto.name == from_text.name
    assert from_proto.entry.name == from_text.entry.name

    def by_name(tree: HloModule) -> dict[str, dict[str, Instruction]]:
        return {c.name: {i.name: i for i in c.instructions} for c in tree.computations}

    assert_same_tree(by_name(from_proto), by_name(from_text), "computations", TREE_SKIP)
    for key in ("num_partitions", "replica_count", "frontend_attributes"):
        text_attr = from_text.attrs.get(key)
        proto_attr = from_proto.attrs.get(key)
        assert (text_attr and text_attr.value) == (proto_attr and proto_attr.value), key


@pytest.mark.parametrize("pb", SINGLE, ids=[p.name for p in SINGLE])
def test_proto_compiles_and_runs_through_the_cli(pb: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    neff = tmp_path / "model.neff"
    r = runner.invoke(compile_cmd, [str(pb), "--framework", "XLA", "--target", "trn1",
                                    "--output", str(neff)])
    assert r.exit_code == 0, r.output
    assert "Compiler status PASS" in r.output
    data = arrays(program(pb))
    got = run_outputs(neff, data, tmp_path)
    expected = sorted(k for k in data if k.startswith("output"))
    assert len(got) == len(expected)
    for i, g in enumerate(got):
        want = data[f"output{i}"]
        if want.dtype == ml_dtypes.bfloat16 and g.dtype.kind == "V":  # as .npz keeps it
            g = g.view(ml_dtypes.bfloat16)
        assert_close(g, want, f"{pb.name} output{i}")


@pytest.mark.parametrize("pb", PARTITIONED, ids=[p.name for p in PARTITIONED])
def test_partitioned_proto_runs_as_8_ranks(pb: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    neff = tmp_path / "spmd.neff"
    r = runner.invoke(compile_cmd, [str(pb), "--target", "trn1", "--output", str(neff)])
    assert r.exit_code == 0, r.output
    spmd = read_neff(str(neff)).manifest["spmd"]
    assert (spmd["world_size"], spmd["num_partitions"]) == (8, 8)
    data = arrays(program(pb))
    inputs = named_inputs(neff, data, tmp_path / "in.npz")
    specs = json.loads((PROTO / f"{program(pb)}.json").read_text())["output_shardings"]
    args = [str(neff), "--world-size", "8", "--inputs", str(inputs), "--output",
            str(tmp_path / "out.npz"), "-q"]
    for spec in specs:
        args += ["--output-sharding", spec]
    r = runner.invoke(run_cmd, args)
    assert r.exit_code == 0, r.output
    with np.load(tmp_path / "out.npz") as out:
        np.testing.assert_allclose(out["output0"], data["output0"], rtol=1e-5, atol=1e-6)


def _run_mlp(neff: Path, tmp_path: Path) -> None:
    data = arrays("mlp")
    inputs = named_inputs(neff, data, tmp_path / "in.npz")
    r = neuronx_cc("run", str(neff), "--inputs", str(inputs), "--output",
                   str(tmp_path / "out.npz"), "-q")
    assert r.returncode == 0, r.stderr
    with np.load(tmp_path / "out.npz") as out:
        assert_close(out["output0"], data["output0"], "output0")
        assert_close(out["output1"], data["output1"], "output1")


def test_the_libneuronxla_command_line(tmp_path: Path) -> None:
    """`neuronx-cc compile --framework XLA model.MODULE_123.hlo.pb --target trn1 --output
    model.neff`, run where the file is, as the pipelines do."""
    shutil.copy(PROTO / "mlp.lowered.hlo.pb", tmp_path / "model.MODULE_123.hlo.pb")
    r = neuronx_cc("compile", "--framework", "XLA", "model.MODULE_123.hlo.pb", "--target",
                   "trn1", "--output", "model.neff", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Compiler status PASS" in r.stdout
    _run_mlp(tmp_path / "model.neff", tmp_path)


@pytest.mark.parametrize("name", ["model.hlo_module.pb", "model.pb", "model.hlo"])
def test_the_form_is_found_from_the_content(name: str, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """No --framework: `.pb` means XLA, and proto or text is told by the content (a proto
    named .hlo, HLO text named .pb)."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(PROTO / "mlp.lowered.hlo.pb", tmp_path / name)
    shutil.copy(PROTO / "mlp.lowered.hlo", tmp_path / f"text.{name}")
    data = arrays("mlp")
    for model in (name, f"text.{name}"):
        r = CliRunner().invoke(compile_cmd, [model, "--target", "trn1", "--output", "m.neff"])
        assert r.exit_code == 0, r.output
        got = run_outputs(tmp_path / "m.neff", data, tmp_path)
        assert_close(got[0], data["output0"], f"{model} output0")


def test_import_hlo_takes_the_bytes_too() -> None:
    data = (PROTO / "softmax.lowered.hlo.pb").read_bytes()
    text = (PROTO / "softmax.lowered.hlo").read_text()
    assert print_module(import_hlo(data)) == print_module(import_hlo(text))


@pytest.mark.parametrize("pb", [PROTO / "transformer.compiled.hlo.pb",
                                PROTO / "megatron_mlp.compiled.hlo.pb",
                                PROTO / "megatron_mlp.lowered.hlo.pb",
                                PROTO / "rng.lowered.hlo.pb"], ids=lambda p: p.name)
def test_proto_and_text_give_the_same_neff(pb: Path, tmp_path: Path) -> None:
    """Byte for byte but the NEFF's uuid: the same payload hash, manifest and files (both
    copied under one name, which the NEFF header records)."""
    shutil.copy(pb, tmp_path / "m.pb")
    shutil.copy(pb.with_suffix(""), tmp_path / "m.hlo")
    neffs = []
    for name in ("m.pb", "m.hlo"):
        out = tmp_path / f"{name}.neff"
        compile_model(str(tmp_path / name), CompileOptions(target="trn1", output=str(out)),
                      emit=lambda line: None)
        neffs.append(read_neff(str(out)))
    a, b = neffs
    assert dataclasses.replace(a.header, uuid=b.header.uuid) == b.header
    assert a.manifest == b.manifest and a.files == b.files
