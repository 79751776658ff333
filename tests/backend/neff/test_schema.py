"""The schema kit (`backend.neff.json_schema`) on its own: each node kind, the paths its errors
name, and the JSON depth measured without parsing."""

from __future__ import annotations

import json

import pytest

from nxcc.backend.neff import NeffError
from nxcc.backend.neff.json_schema import (
    Int,
    ListOf,
    MapOf,
    Nullable,
    Obj,
    SchemaError,
    Str,
    json_depth,
    load_json,
)
from nxcc.backend.neff.limits import MAX_JSON_DEPTH
from nxcc.backend.neff.neff_schema import ATTR, MANIFEST, SHAPE

POINT = Obj({"x": Int(0, 10)}, {"tag": Str(["a", "b"])})


@pytest.mark.parametrize(("spec", "value", "message"), [
    (Int(0, 10), True, "expected an integer >= 0 and <= 10, found True"),
    (Int(0, 10), 11, "found 11"),
    (Int(0), 1.0, "found 1.0"),
    (Str(["a"]), "b", "expected one of a, found 'b'"),
    (ListOf(Int(), 1, 2), [], "expected 1 to 2 entries, found 0"),
    (ListOf(Int()), {"0": 1}, "expected a list, found an object"),
    (MapOf(Int()), [1], "expected an object, found a list"),
    (POINT, {}, "(top level): missing required key 'x'"),
    (POINT, {"x": 1, "tag": "c"}, "tag: expected one of a, b, found 'c'"),
    (ListOf(POINT), [{"x": 1}, {"x": -1}], "[1].x: expected an integer"),
    (SHAPE, [2, -1], "[1]: expected an integer >= 0"),
    (SHAPE, [1] * 17, "expected 0 to 16 entries"),
])
def test_refusals_name_the_path(spec, value, message: str) -> None:
    with pytest.raises(SchemaError) as err:
        spec.check(value, "")
    assert message in str(err.value)


@pytest.mark.parametrize(("spec", "value"), [
    (Nullable(Int()), None), (POINT, {"x": 3, "extra": [1, 2]}), (SHAPE, []),
    (ATTR, [1, [2.5, {"f": "-inf"}], {"symbol": "f"}, {"dtype": "bf16"}, None, "s"]),
])
def test_conforming_values_pass(spec, value) -> None:
    spec.check(value, "")


def test_attributes_refuse_unknown_tags_and_deep_lists() -> None:
    with pytest.raises(SchemaError, match="expected an attribute value"):
        ATTR.check({"weights": "w0"}, "a")
    with pytest.raises(SchemaError, match="nested deeper"):
        ATTR.check([[[[[[[[[[0]]]]]]]]]], "a")
    with pytest.raises(SchemaError, match="a float's text"):
        ATTR.check({"f": "lots"}, "a")


def test_manifest_schema_accepts_what_the_writer_writes() -> None:
    MANIFEST.check({"inputs": [], "outputs": [{"name": "y", "dtype": "f32", "shape": [2]}],
                    "subgraphs": [{"name": "sg00", "program": "sg00/program.json"}],
                    "weights": {"files": {}}, "collectives": []}, "")


@pytest.mark.parametrize(("text", "depth"), [
    (b"1", 0), (b"[]", 1), (b'{"a": [[1], {"b": []}]}', 4),
    (b'["[[[[[[", "]]]", "\\"[["]', 1),  # brackets inside strings do not count
])
def test_json_depth(text: bytes, depth: int) -> None:
    assert json_depth(text) == depth


def test_load_json_refuses_depth_before_parsing() -> None:
    deep = b"[" * 200_000 + b"]" * 200_000
    with pytest.raises(NeffError) as err:
        load_json(deep, "x.neff", "neff.json")
    assert err.value.code == "NRT_ENEFF002"
    assert f"nested 200000 deep, the limit is {MAX_JSON_DEPTH}" in str(err.value)
    assert load_json(json.dumps([[1]]).encode(), "x.neff", "neff.json") == [[1]]


def test_collective_kinds_are_those_the_packager_writes() -> None:
    from nxcc.backend.neff.neff_schema import COLLECTIVE_KINDS, PAIRED_KINDS
    from nxcc.backend.program.collectives import KINDS, PAIRED_OPS

    assert set(COLLECTIVE_KINDS) == set(KINDS)
    assert set(PAIRED_KINDS) == set(PAIRED_OPS)
