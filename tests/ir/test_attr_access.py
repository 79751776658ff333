"""The typed attribute accessors: an op's canonical attributes as they are; attributes as a
program file writes them (lists, an int for a float, a name for a function) converted as
the op definition's check converts them; anything else a TypeError naming the attribute."""

from __future__ import annotations

import pytest

from nxcc.ir.attributes import (
    Symbol,
    attr_ints,
    attr_ints2,
    attr_of,
    optional_attr,
)
from nxcc.ir.dtypes import DType


def test_canonical_values_pass_through() -> None:
    attrs = {"perm": (1, 0), "groups": ((0, 1),), "axis": 2, "eps": 1e-5, "fn": Symbol("add"),
             "dtype": DType.F32}
    assert attr_ints(attrs, "perm") is attrs["perm"]
    assert attr_ints2(attrs, "groups") is attrs["groups"]
    assert attr_of(attrs, "axis", int) == 2
    assert attr_of(attrs, "eps", float) == 1e-5
    assert attr_of(attrs, "fn", Symbol) is attrs["fn"]
    assert attr_of(attrs, "dtype", DType) is DType.F32


def test_written_forms_are_converted() -> None:
    attrs = {"perm": [1, 0], "groups": [[0, 1]], "eps": 1, "fn": "add", "dtype": "f32"}
    assert attr_ints(attrs, "perm") == (1, 0)
    assert attr_ints2(attrs, "groups") == ((0, 1),)
    assert attr_of(attrs, "eps", float) == 1.0 and isinstance(attr_of(attrs, "eps", float), float)
    assert attr_of(attrs, "fn", Symbol) == Symbol("add")
    assert attr_of(attrs, "dtype", DType) is DType.F32


def test_optional_attribute() -> None:
    assert optional_attr({"dtype": None}, "dtype", DType) is None
    assert optional_attr({}, "dtype", DType) is None
    assert optional_attr({"dtype": DType.BF16}, "dtype", DType) is DType.BF16


@pytest.mark.parametrize(("value", "getter"), [
    ("x", lambda a: attr_of(a, "v", int)),
    (3, lambda a: attr_ints(a, "v")),
    ([1, "x"], lambda a: attr_ints(a, "v")),
    (None, lambda a: attr_of(a, "v", float)),
    (2, lambda a: attr_ints2(a, "v")),
])
def test_wrong_kind_names_the_attribute(value: object, getter) -> None:
    with pytest.raises(TypeError, match="attribute 'v'"):
        getter({"v": value})
