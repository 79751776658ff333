"""`attr_codec`: every kind of attribute value goes to JSON (strictly: no NaN or Infinity
tokens) and comes back equal; what it cannot encode or decode is refused."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from nxcc.backend.program.attr_codec import decode_attr, decode_attrs, encode_attr, encode_attrs
from nxcc.ir.attributes import Dense, Symbol
from nxcc.ir.dtypes import DType


class Weights:
    """Stores constants under names w0, w1, ... as the NEFF's weight files do."""

    def __init__(self) -> None:
        self.stored: dict[str, Dense] = {}

    def store(self, value: Dense) -> str:
        name = f"w{len(self.stored)}"
        self.stored[name] = value
        return name


VALUES = [None, True, False, 0, -7, 2**40, "sum", 1.5, -0.25, DType.BF16, DType.S64,
          Symbol("body"), (), (1, 2, 3), ((0, 1), (2, 3)), ("a", (1.5, Symbol("f")))]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_round_trip_through_strict_json(value: object) -> None:
    weights = Weights()
    text = json.dumps(encode_attr(value, weights.store), allow_nan=False)
    assert decode_attr(json.loads(text), weights.stored.__getitem__) == value


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_non_finite_floats_are_tagged(value: float) -> None:
    encoded = encode_attr(value, Weights().store)
    assert encoded == {"f": repr(value)}
    back = decode_attr(json.loads(json.dumps(encoded, allow_nan=False)), {}.__getitem__)
    assert isinstance(back, float) and (back == value or (math.isnan(back) and math.isnan(value)))


def test_a_constant_tensor_becomes_a_weight_reference() -> None:
    weights = Weights()
    dense = Dense.of(np.arange(6, dtype=np.float32).reshape(2, 3))
    encoded = encode_attr((dense, 4), weights.store)
    assert encoded == [{"weight": "w0"}, 4]
    assert weights.stored == {"w0": dense}
    assert decode_attr(encoded, weights.stored.__getitem__) == (dense, 4)


def test_tags_and_kinds() -> None:
    store = Weights().store
    assert encode_attr(DType.F32, store) == {"dtype": "f32"}
    assert encode_attr(Symbol("add_f32"), store) == {"symbol": "add_f32"}
    assert encode_attr((1, (2,)), store) == [1, [2]]


def test_what_it_cannot_encode_or_decode_is_refused() -> None:
    with pytest.raises(TypeError, match="cannot encode"):
        encode_attr(object(), Weights().store)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown attribute encoding"):
        decode_attr({"tensor": [1]}, {}.__getitem__)


def test_a_dictionary_of_attributes_drops_the_absent_ones() -> None:
    weights = Weights()
    attrs = {"dimension": 1, "comparison": None, "to": DType.F16}
    encoded = encode_attrs(attrs, weights.store)
    assert encoded == {"dimension": 1, "to": {"dtype": "f16"}}
    assert decode_attrs(encoded, weights.stored.__getitem__) == {"dimension": 1, "to": DType.F16}
