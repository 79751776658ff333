"""Typed attribute values and the kinds an op definition declares for them.

An attribute value is one of: bool, int, float, str, `DType`, `Symbol` (a reference to a
function of the module, printed ``@name``), `Dense` (a constant tensor), or a tuple of those
(for ``INTS``, ``INTS2`` and ``SYMBOLS``). `AttrKind.check` converts a parsed or
user-supplied value to the canonical Python value for its kind, or raises ValueError.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from nxcc.ir.dtypes import DType
from nxcc.ir.types import TensorType


@dataclass(frozen=True, slots=True)
class Symbol:
    """A reference to a function of the module by name."""

    name: str

    def __str__(self) -> str:
        return f"@{self.name}"


@dataclass(frozen=True, eq=False)
class Dense:
    """A constant tensor: its `type` and a numpy array of exactly that dtype and shape.

    A splat (one value repeated) is stored as a zero-strided broadcast of a single element, so
    a huge constant of one value costs one element of memory; `is_splat` tells. The array is
    read-only. Equality is by type and bytes.
    """

    type: TensorType
    array: np.ndarray = field(repr=False)

    def __post_init__(self) -> None:
        arr = self.array
        if arr.dtype != self.type.dtype.numpy or arr.shape != self.type.shape:
            raise ValueError(
                f"dense value has {arr.dtype}{list(arr.shape)}, its type says {self.type}"
            )
        if arr.flags.writeable:
            arr = arr.view()
            arr.flags.writeable = False
            object.__setattr__(self, "array", arr)

    @staticmethod
    def of(array: np.ndarray | np.generic | float | int | bool,
           dtype: DType | None = None) -> Dense:
        """A Dense holding `array` (copied unless already read-only), as `dtype` if given."""
        arr = np.asarray(array)
        dt = dtype if dtype is not None else DType.from_numpy(arr.dtype)
        arr = arr.astype(dt.numpy, copy=False)
        if arr.size > 1 and _all_equal(arr):
            return Dense.splat(TensorType(dt, arr.shape), arr.reshape(-1)[0])
        return Dense(TensorType(dt, arr.shape), np.array(arr, copy=True) if arr.flags.writeable
                     else arr)

    @staticmethod
    def splat(type_: TensorType, value: float | int | bool | np.generic) -> Dense:
        """A constant of `type_` whose every element is `value`."""
        one = np.array(value).astype(type_.dtype.numpy)
        return Dense(type_, np.broadcast_to(one, type_.shape))

    @property
    def is_splat(self) -> bool:
        arr = self.array
        return arr.size <= 1 or all(s == 0 for s in arr.strides)

    @property
    def splat_value(self) -> np.generic:
        """The repeated element; only meaningful when `is_splat`."""
        return self.array.reshape(-1)[0] if self.array.size else self.type.dtype.numpy.type(0)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Dense) or other.type != self.type:
            return False
        return self.array.tobytes() == other.array.tobytes()

    def __hash__(self) -> int:
        data = self.array.tobytes() if self.array.size <= 64 else self.array[..., :1].tobytes()
        return hash((self.type, data))


def _all_equal(arr: np.ndarray) -> bool:
    flat = arr.reshape(-1)
    first = flat[0]
    if flat.dtype.kind == "f" or flat.dtype.name == "bfloat16":
        if np.isnan(np.float64(first)):
            return bool(np.all(np.isnan(flat.astype(np.float64))))
        bits = flat.view(f"u{flat.dtype.itemsize}")
        return bool(np.all(bits == bits[0]))
    return bool(np.all(flat == first))


AttrValue = bool | int | float | str | DType | Symbol | Dense | tuple

_Scalar = TypeVar("_Scalar", bool, int, float, str, DType, Symbol, Dense)


def attr_of(attrs: Mapping[str, AttrValue], name: str, kind: type[_Scalar]) -> _Scalar:
    """`attrs[name]` as the `kind` its op definition declares. An op's attributes are
    canonical already; attributes as a program file writes them (an int for a float, a name
    for a function reference) are converted as `AttrKind.check` would. TypeError naming the
    attribute if it is not of that kind."""
    value = attrs[name]
    if isinstance(value, kind):
        return value
    checked = _checked(name, _KIND_OF[kind].check, value)
    if not isinstance(checked, kind):  # each kind's checker returns that kind's type
        raise TypeError(f"attribute '{name}' is {value!r}, not a {kind.__name__}")
    return checked


_Checked = TypeVar("_Checked")


def _checked(name: str, check: Callable[[object], _Checked], value: object) -> _Checked:
    """`check(value)`, its ValueError raised as a TypeError naming the attribute."""
    try:
        return check(value)
    except ValueError as exc:
        raise TypeError(f"attribute '{name}': {exc}") from None


def optional_attr(attrs: Mapping[str, AttrValue], name: str,
                  kind: type[_Scalar]) -> _Scalar | None:
    """`attr_of` for an attribute whose default is None (absent or None gives None)."""
    if attrs.get(name) is None:
        return None
    return attr_of(attrs, name, kind)


def attr_ints(attrs: Mapping[str, AttrValue], name: str) -> tuple[int, ...]:
    """`attrs[name]`, an ``INTS`` attribute (a list converted); TypeError naming it if it
    is not one."""
    value = attrs[name]
    if isinstance(value, tuple):
        return value
    return _checked(name, _check_ints, value)


def attr_ints2(attrs: Mapping[str, AttrValue], name: str) -> tuple[tuple[int, ...], ...]:
    """`attrs[name]`, an ``INTS2`` attribute (lists converted); TypeError naming it if it
    is not one."""
    value = attrs[name]
    if isinstance(value, tuple):
        return value
    return _checked(name, _check_ints2, value)


class AttrKind(enum.Enum):
    """What an op definition says an attribute holds."""

    INT = "int"
    INTS = "ints"
    INTS2 = "ints2"
    FLOAT = "float"
    BOOL = "bool"
    STR = "str"
    ENUM = "enum"
    DTYPE = "dtype"
    DENSE = "dense"
    SYMBOL = "symbol"
    SYMBOLS = "symbols"

    def check(self, value: object, choices: tuple[str, ...] = ()) -> AttrValue:
        """`value` as the canonical value of this kind; ValueError saying what was expected."""
        return _CHECKERS[self](value, choices)


def _check_int(value: object, choices: tuple[str, ...] = ()) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValueError(f"expected an integer, got {value!r}")
    return int(value)


def _check_ints(value: object, choices: tuple[str, ...] = ()) -> tuple[int, ...]:
    if isinstance(value, str) or not isinstance(value, tuple | list | np.ndarray):
        raise ValueError(f"expected a list of integers, got {value!r}")
    return tuple(_check_int(v) for v in value)


def _check_ints2(value: object, choices: tuple[str, ...] = ()) -> tuple[tuple[int, ...], ...]:
    if isinstance(value, str) or not isinstance(value, tuple | list):
        raise ValueError(f"expected a list of integer lists, got {value!r}")
    return tuple(_check_ints(v) for v in value)


def _check_float(value: object, choices: tuple[str, ...] = ()) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.number):
        raise ValueError(f"expected a number, got {value!r}")
    return float(value)


def _check_bool(value: object, choices: tuple[str, ...] = ()) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"expected true or false, got {value!r}")
    return bool(value)


def _check_str(value: object, choices: tuple[str, ...] = ()) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {value!r}")
    return value


def _check_enum(value: object, choices: tuple[str, ...] = ()) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"expected one of {', '.join(choices)}, got {value!r}")
    return value


def _check_dtype(value: object, choices: tuple[str, ...] = ()) -> DType:
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        return DType.from_name(value)
    raise ValueError(f"expected an element type, got {value!r}")


def _check_dense(value: object, choices: tuple[str, ...] = ()) -> Dense:
    if not isinstance(value, Dense):
        raise ValueError(f"expected a dense constant, got {value!r}")
    return value


def _check_symbol(value: object, choices: tuple[str, ...] = ()) -> Symbol:
    if isinstance(value, str):
        return Symbol(value)
    if not isinstance(value, Symbol):
        raise ValueError(f"expected a function reference @name, got {value!r}")
    return value


def _check_symbols(value: object, choices: tuple[str, ...] = ()) -> tuple[Symbol, ...]:
    if isinstance(value, str) or not isinstance(value, tuple | list):
        raise ValueError(f"expected a list of function references, got {value!r}")
    return tuple(_check_symbol(v) for v in value)


# One checker per kind: each returns the canonical value or raises ValueError.
_CHECKERS: dict[AttrKind, Callable[[object, tuple[str, ...]], AttrValue]] = {
    AttrKind.INT: _check_int,
    AttrKind.INTS: _check_ints,
    AttrKind.INTS2: _check_ints2,
    AttrKind.FLOAT: _check_float,
    AttrKind.BOOL: _check_bool,
    AttrKind.STR: _check_str,
    AttrKind.ENUM: _check_enum,
    AttrKind.DTYPE: _check_dtype,
    AttrKind.DENSE: _check_dense,
    AttrKind.SYMBOL: _check_symbol,
    AttrKind.SYMBOLS: _check_symbols,
}

#: the kind `attr_of` converts to for each Python type it is asked for
_KIND_OF: dict[type, AttrKind] = {
    bool: AttrKind.BOOL, int: AttrKind.INT, float: AttrKind.FLOAT, str: AttrKind.STR,
    DType: AttrKind.DTYPE, Symbol: AttrKind.SYMBOL, Dense: AttrKind.DENSE,
}
