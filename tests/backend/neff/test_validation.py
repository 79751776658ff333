"""Each NEFF the fuzzer once saw end in a traceback now ends in one `ERROR: [CODE]` line,
for `neuronx-cc run` and `neuronx-cc inspect-neff` alike (issue 16's signatures)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from nxcc.backend.neff import dump_npy
from nxcc.backend.neff.limits import MAX_JSON_DEPTH
from tests.backend.neff.mutants import EXAMPLES, compile_example, edit_json, replace_member
from tests.backend.runtime.neffs import spin_neff
from tests.inprocess import assert_clean_error, run_cli

PROGRAM = "sg00/program.json"
MANIFEST = "neff.json"


@pytest.fixture(scope="module")
def mlp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_example(tmp_path_factory.mktemp("mlp") / "mlp.neff")


@pytest.fixture(scope="module")
def spin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return spin_neff(tmp_path_factory.mktemp("spin") / "spin.neff")


@pytest.fixture(autouse=True)
def own_runtime_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("NXCC_RUNTIME_DIR", str(tmp_path / "rt"))


def refused(path: Path, *fragments: str) -> None:
    """Both commands refuse `path` with one coded line holding `fragments`."""
    run = run_cli("run", str(path), "--inputs", str(EXAMPLES / "mlp_inputs.npz"), "-q")
    assert_clean_error(run, *fragments)
    assert_clean_error(run_cli("inspect-neff", str(path)), *fragments)
    assert_clean_error(run_cli("inspect-neff", str(path), "--format", "dot"), *fragments)


def fn(program: dict) -> dict:
    return program["functions"]["main"]


def mutate(edit: Callable[[dict], object]) -> Callable[[object], object]:
    """`edit` changes the parsed member in place (what it returns is ignored)."""
    def apply(value: object) -> object:
        assert isinstance(value, dict)
        edit(value)
        return value
    return apply


PROGRAM_CASES: dict[str, tuple[Callable[[dict], object], tuple[str, ...]]] = {
    "missing entry": (lambda p: p.pop("entry"),
                      ("[NRT_ENEFF002]", "missing required key 'entry'")),
    "missing outs": (lambda p: fn(p)["instructions"][0].pop("outs"),
                     ("[NRT_ENEFF002]", "instructions[0]", "'outs'")),
    "missing arena_bytes": (lambda p: fn(p).pop("arena_bytes"),
                            ("[NRT_ENEFF002]", "'arena_bytes'")),
    "entry names no function": (lambda p: p.update(entry="nope"),
                                ("[NRT_ENEFF003]", "entry function 'nope'")),
    "unknown kernel": (lambda p: fn(p)["instructions"][0].update(op="frobnicate"),
                       ("[NRT_ENEFF003]", "no kernel for op 'frobnicate'")),
    "unknown slot dtype": (lambda p: fn(p)["slots"][2].update(dtype="f33"),
                           ("[NRT_ENEFF002]", "slots[2].dtype", "'f33'")),
    "negative dimension": (lambda p: fn(p)["slots"][2].update(shape=[-4, 32]),
                           ("[NRT_ENEFF002]", "slots[2].shape[0]")),
    "absurd slot": (lambda p: fn(p)["slots"][2].update(shape=[1 << 30, 1 << 30]),
                    ("[NRT_ENEFF004]", "over the limit")),
    "buffer past arena": (lambda p: next(s for s in fn(p)["slots"] if s["kind"] == "buffer"
                                         ).update(offset=1 << 20),
                          ("[NRT_ENEFF004]", "past the")),
    "strides of another rank": (lambda p: _buffer(p).update(strides=[4, 4, 4, 4, 4]),
                                ("[NRT_ENEFF002]", "'strides' must be byte strides")),
    "negative stride": (lambda p: _buffer(p).update(view_of=0, strides=[-4, 4]),
                        ("[NRT_ENEFF002]", "strides[0]")),
    "strided view past arena": (lambda p: _buffer(p).update(view_of=0, strides=[1 << 20, 4]),
                                ("[NRT_ENEFF004]", "reaches past the")),
    "instruction writes a view": (lambda p: _buffer(p).update(view_of=0, strides=[4, 16]),
                                  ("[NRT_ENEFF003]", "which is not a buffer written once")),
    "slot index out of range": (lambda p: fn(p)["instructions"][0].update(args=[0, 999]),
                                ("[NRT_ENEFF003]", "slot 999")),
    "outputs count differs": (lambda p: fn(p)["results"].append(0),
                              ("[NRT_ENEFF003]", "2 results", "1 outputs")),
    "weight not in manifest": (lambda p: fn(p)["slots"][1].update(name="w99"),
                               ("[NRT_ENEFF003]", "weight 'w99'")),
    "instruction does not type-check": (
        lambda p: fn(p)["instructions"][0]["attrs"].update(lhs_contracting_dims=[7]),
        ("[NRT_ENEFF002]", "dot_general", "type-check")),
    "functions is a list": (lambda p: p.update(functions=[fn(p)]),
                            ("[NRT_ENEFF002]", "functions: expected an object")),
    "deep attribute": (lambda p: fn(p)["instructions"][0]["attrs"].update(
        lhs_batch_dims=[[[[[[[[[[1]]]]]]]]]]), ("[NRT_ENEFF002]", "nested deeper")),
}


def _buffer(program: dict) -> dict:
    """The first buffer slot of the entry function (an instruction's result, f32[4,32])."""
    return next(s for s in fn(program)["slots"] if s["kind"] == "buffer")


@pytest.mark.parametrize("case", sorted(PROGRAM_CASES))
def test_program_signature(mlp: Path, tmp_path: Path, case: str) -> None:
    edit, fragments = PROGRAM_CASES[case]
    refused(edit_json(mlp, tmp_path / "bad.neff", PROGRAM, mutate(edit)), *fragments)


MANIFEST_CASES: dict[str, tuple[Callable[[dict], object], tuple[str, ...]]] = {
    "subgraphs null": (lambda m: m.update(subgraphs=None),
                       ("[NRT_ENEFF002]", "subgraphs: expected a list, found None")),
    "target a list": (lambda m: m.update(target=["trn1"]),
                      ("[NRT_ENEFF002]", "target: expected a string")),
    "inputs an object": (lambda m: m.update(inputs={"x": 1}),
                         ("[NRT_ENEFF002]", "inputs: expected a list")),
    "unknown dtype": (lambda m: m["outputs"][0].update(dtype="q7"),
                      ("[NRT_ENEFF002]", "outputs[0].dtype", "'q7'")),
    "missing outputs": (lambda m: m.pop("outputs"),
                        ("[NRT_ENEFF002]", "missing required key 'outputs'")),
    "one output too many": (lambda m: m["outputs"].append(dict(m["outputs"][0], name="z")),
                            ("[NRT_ENEFF003]", "1 results", "2 outputs")),
    "output of another shape": (lambda m: m["outputs"][0].update(shape=[4, 11]),
                                ("[NRT_ENEFF003]", "result 0")),
    "program not in payload": (lambda m: m["subgraphs"][0].update(program="sg09/p.json"),
                               ("[NRT_ENEFF003]", "'sg09/p.json' is not in the payload")),
    "absurd input": (lambda m: m["inputs"][0].update(shape=[1 << 31 - 1] * 4),
                     ("[NRT_ENEFF004]", "over the limit")),
    "lnc out of range": (lambda m: m.update(lnc=7), ("[NRT_ENEFF002]", "lnc")),
}


@pytest.mark.parametrize("case", sorted(MANIFEST_CASES))
def test_manifest_signature(mlp: Path, tmp_path: Path, case: str) -> None:
    edit, fragments = MANIFEST_CASES[case]
    refused(edit_json(mlp, tmp_path / "bad.neff", MANIFEST, mutate(edit)), *fragments)


@pytest.mark.parametrize(("member", "fragment"), [
    (MANIFEST, "neff.json must hold a JSON object, got list"),
    (PROGRAM, "(top level): expected an object, found a list")])
def test_top_level_a_list(mlp: Path, tmp_path: Path, member: str, fragment: str) -> None:
    refused(edit_json(mlp, tmp_path / "list.neff", member, lambda v: [v]), fragment)


@pytest.mark.parametrize("member", [MANIFEST, PROGRAM])
def test_deeply_nested_json(mlp: Path, tmp_path: Path, member: str) -> None:
    """100,000 nested lists: refused before parsing, no RecursionError."""
    deep = b'{"entry": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    refused(replace_member(mlp, tmp_path / "deep.neff", member, deep),
            f"nested 100001 deep, the limit is {MAX_JSON_DEPTH}")


@pytest.mark.parametrize(("data", "fragment"), [
    (b'{"entry": "main", "functions": {', "is not valid JSON"),
    (b"\xff\xfe garbage \x00", "is not valid JSON"),
    (b'{"entry": "main", "functions": {"main": 1}}', "functions.main: expected an object"),
    (b"", "is not valid JSON"),
])
def test_corrupt_program_text(mlp: Path, tmp_path: Path, data: bytes, fragment: str) -> None:
    refused(replace_member(mlp, tmp_path / "corrupt.neff", PROGRAM, data), fragment)


def test_weight_size_differs_from_its_shape(mlp: Path, tmp_path: Path) -> None:
    small = dump_npy(np.zeros(3, np.float32))
    refused(replace_member(mlp, tmp_path / "w.neff", "weights/w0.npy", small),
            "[NRT_ENEFF004]", "weight 'w0' holds float32[3]")


def test_weight_header_claims_more_than_it_holds(mlp: Path, tmp_path: Path) -> None:
    raw = bytearray(dump_npy(np.zeros((32, 16), np.float32)))
    raw = raw.replace(b"(32, 16)", b"(32, 99)")
    refused(replace_member(mlp, tmp_path / "w.neff", "weights/w0.npy", bytes(raw)),
            "[NRT_ENEFF004]", "holds 2048")


def test_function_calling_itself(spin: Path, tmp_path: Path) -> None:
    def recurse(p: dict) -> None:
        ins = p["functions"]["cond"]["instructions"][0]
        ins.update(op="call", attrs={"callee": {"symbol": "cond"}})
    path = edit_json(spin, tmp_path / "rec.neff", PROGRAM, mutate(recurse))
    assert_clean_error(run_cli("inspect-neff", str(path)), "[NRT_ENEFF003]",
                       "@cond calls itself")


def test_symbol_naming_no_function(spin: Path, tmp_path: Path) -> None:
    def dangle(p: dict) -> None:
        p["functions"]["main"]["instructions"][0]["attrs"]["body"] = {"symbol": "nowhere"}
    path = edit_json(spin, tmp_path / "dangle.neff", PROGRAM, mutate(dangle))
    assert_clean_error(run_cli("inspect-neff", str(path)), "[NRT_ENEFF003]", "@nowhere")


def test_valid_neff_still_runs(mlp: Path) -> None:
    out = run_cli("run", str(mlp), "--inputs", str(EXAMPLES / "mlp_inputs.npz"), "-q")
    assert out.status == 0 and out.crash is None, out.stderr
    assert run_cli("inspect-neff", str(mlp), "--json").status == 0


def test_schema_documents_itself() -> None:
    """The schema module's docstring lists every manifest key the schema declares."""
    from nxcc.backend.neff import neff_schema

    for key in neff_schema.MANIFEST.required | neff_schema.MANIFEST.optional:
        assert f'"{key}"' in (neff_schema.__doc__ or ""), key
    assert json.loads(json.dumps(sorted(neff_schema.SLOT_REQUIRES))) == [
        "buffer", "param", "splat", "weight"]


def test_arenas_over_the_limit_together(mlp: Path, tmp_path: Path) -> None:
    """Each arena within the limit, all of them together over it."""
    from nxcc.backend.neff.limits import MAX_ARENA_BYTES

    def many(p: dict) -> None:
        for k in range(3):
            p["functions"][f"f{k}"] = dict(fn(p), arena_bytes=MAX_ARENA_BYTES // 2)
    refused(edit_json(mlp, tmp_path / "arenas.neff", PROGRAM, mutate(many)),
            "[NRT_ENEFF004]", "arenas take")


def test_gzip_bomb_stops_at_the_limit(mlp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The compressed example inflates past a (lowered) payload limit: refused while
    inflating, never held whole."""
    import nxcc.backend.neff.payload as payload

    monkeypatch.setattr(payload, "MAX_PAYLOAD_BYTES", 4096)
    assert_clean_error(run_cli("inspect-neff", str(mlp)), "[NRT_ENEFF004]",
                       "inflates past the limit of 4096")


def test_weight_header_of_giant_empty_shape(mlp: Path, tmp_path: Path) -> None:
    """(10**30, 0) holds no bytes, so its size agrees; numpy would overflow reading it."""
    raw = dump_npy(np.zeros((3, 0), np.float32)).replace(b"(3, 0)", b"(1" + b"0" * 30 + b", 0)")
    refused(replace_member(mlp, tmp_path / "w.neff", "weights/w0.npy", raw),
            "[NRT_ENEFF004]", "dimension over the limit")
