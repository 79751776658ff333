"""Checking a configuration value against its `Spec` and giving it its Python type.

PyYAML reads `1e-5` (no dot) as a string, as YAML 1.1 says; NxD's configs write numbers
that way (`lr: 3e-4`), so a float key takes a string that Python reads as a number.
"""

from __future__ import annotations

from nxcc.driver.train.config_keys import Spec
from nxcc.driver.train.errors import TrainConfigError


def convert(path: str, spec: Spec, value: object) -> object:
    """`value` of key `path` as `spec` wants it (None for null where that is allowed);
    TrainConfigError naming the key, what was expected and what was found otherwise."""
    if value is None:
        if spec.nullable:
            return None
        raise TrainConfigError(path, f"needs a value ({_expected(spec)}), got null")
    out = _CONVERTERS[spec.kind](path, spec, value)
    if spec.minimum is not None and isinstance(out, int | float) and out < spec.minimum:
        bound = int(spec.minimum) if spec.kind == "int" else spec.minimum
        raise TrainConfigError(path, f"must be >= {bound}, got {out}")
    return out


def _expected(spec: Spec) -> str:
    if spec.kind == "enum":
        return "one of " + ", ".join(spec.choices)
    return {"int": "an integer", "float": "a number", "bool": "true or false",
            "flag": "0, 1, true or false",
            "str": "a string", "path": "a path", "floats2": "a list of two numbers",
            "strs": "a list of strings", "any": "a value", "mapping": "a block of keys",
            "batches": "a number of batches or a fraction in [0, 1]"}[spec.kind]


def _wrong(path: str, spec: Spec, value: object) -> TrainConfigError:
    shown = f"a list {value!r}" if isinstance(value, list) else \
        f"{type(value).__name__} {value!r}"
    return TrainConfigError(path, f"expected {_expected(spec)}, got {shown}")


def _int(path: str, spec: Spec, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _wrong(path, spec, value)
    return value


def _float(path: str, spec: Spec, value: object) -> float:
    if isinstance(value, bool):
        raise _wrong(path, spec, value)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise _wrong(path, spec, value)


def _bool(path: str, spec: Spec, value: object) -> bool:
    if not isinstance(value, bool):
        raise _wrong(path, spec, value)
    return value


def _flag(path: str, spec: Spec, value: object) -> bool:
    """NxD's flags are written true/false, 0/1 or '0'/'1' (environment-variable style)."""
    text = str(value).strip().lower()
    if isinstance(value, list | dict) or text not in ("0", "1", "true", "false"):
        raise _wrong(path, spec, value)
    return text in ("1", "true")


def _str(path: str, spec: Spec, value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise _wrong(path, spec, value)
    return str(value)


def _path(path: str, spec: Spec, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise _wrong(path, spec, value)
    return value


def _enum(path: str, spec: Spec, value: object) -> str:
    if not isinstance(value, str) or value not in spec.choices:
        raise _wrong(path, spec, value)
    return value


def _any(path: str, spec: Spec, value: object) -> object:
    """A value whose several forms its own reader checks (`data.data_prefix`)."""
    return value


def _mapping(path: str, spec: Spec, value: object) -> dict[str, object]:
    """A block of keys taken whole (a user model's arguments): names to YAML values."""
    if not isinstance(value, dict) or not all(isinstance(k, str) and k.isidentifier()
                                              for k in value):
        raise TrainConfigError(path, f"expected a block of argument names, got {value!r}")
    return dict(value)


def _batches(path: str, spec: Spec, value: object) -> int | float:
    """Lightning's batch limits: a count (an integer) or a fraction of the batches (a
    number in [0, 1])."""
    if isinstance(value, bool):
        raise _wrong(path, spec, value)
    if isinstance(value, int):
        return value
    number = _float(path, spec, value)
    if not 0.0 <= number <= 1.0:
        raise TrainConfigError(path, f"a fraction of the batches must lie in [0, 1], got "
                                     f"{number} (a count of batches is an integer)")
    return number


def _floats2(path: str, spec: Spec, value: object) -> tuple[float, float]:
    if not isinstance(value, list) or len(value) != 2:
        raise _wrong(path, spec, value)
    first, second = (_float(path, spec, v) for v in value)
    return first, second


def _strs(path: str, spec: Spec, value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _wrong(path, spec, value)
    return tuple(value)


_CONVERTERS = {"int": _int, "float": _float, "bool": _bool, "flag": _flag, "str": _str,
               "path": _path,
               "enum": _enum, "floats2": _floats2, "strs": _strs, "any": _any,
               "batches": _batches, "mapping": _mapping}
