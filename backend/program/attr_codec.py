"""Attributes to JSON and back, for the NEFF's instruction lists.

JSON keeps ints, bools and strings; the other kinds are tagged objects:
``{"f": "inf"}`` for non-finite floats, ``{"dtype": "f32"}``, ``{"symbol": "add_f32"}``,
``{"weight": "w3"}`` for a constant tensor stored as a weight file. Lists become tuples.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from nxcc.ir.attributes import AttrValue, Dense, Symbol
from nxcc.ir.dtypes import DType


def encode_attr(value: AttrValue, store_weight: Callable[[Dense], str]) -> object:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"f": repr(value)}
    if isinstance(value, DType):
        return {"dtype": value.value}
    if isinstance(value, Symbol):
        return {"symbol": value.name}
    if isinstance(value, Dense):
        return {"weight": store_weight(value)}
    if isinstance(value, tuple):
        return [encode_attr(v, store_weight) for v in value]
    raise TypeError(f"cannot encode attribute value {value!r}")


def decode_attr(value: object, load_weight: Callable[[str], Dense]) -> AttrValue:
    if isinstance(value, list):
        return tuple(decode_attr(v, load_weight) for v in value)
    if isinstance(value, dict):
        if "f" in value:
            return float(value["f"])
        if "dtype" in value:
            return DType.from_name(value["dtype"])
        if "symbol" in value:
            return Symbol(value["symbol"])
        if "weight" in value:
            return load_weight(value["weight"])
        raise ValueError(f"unknown attribute encoding {value!r}")
    return value  # type: ignore[return-value]


def encode_attrs(attrs: Mapping[str, AttrValue], store_weight: Callable[[Dense], str]
                 ) -> dict[str, object]:
    return {k: encode_attr(v, store_weight) for k, v in attrs.items() if v is not None}


def decode_attrs(attrs: Mapping[str, object], load_weight: Callable[[str], Dense]
                 ) -> dict[str, AttrValue]:
    return {k: decode_attr(v, load_weight) for k, v in attrs.items()}
