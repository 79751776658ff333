"""The nesting of a traced module's inputs and outputs, as JSON, with its tensors taken out.

A structure is a JSON value built of these nodes:

    {"tensor": i}                 the i-th tensor leaf (0, 1, ... in depth-first order)
    {"tuple": [node, ...]}        a tuple (a namedtuple is kept as a plain tuple)
    {"list": [node, ...]}         a list
    {"dict": [[key, node], ...]}  a dict with str or int keys, in insertion order
    {"const": value}              None, a bool, an int, a float or a str, baked in at trace

`flatten` takes a Python value apart, `unflatten` builds it again around new tensors, and
`check` validates a structure read from a file before anything uses it.
"""

from __future__ import annotations

from typing import Any

import torch

Structure = dict[str, Any]

#: Nesting deeper than this is refused (a file read from disk is bounded before it is used).
MAX_DEPTH = 64
CONSTANTS = (type(None), bool, int, float, str)


class StructureError(ValueError):
    """A value or a stored structure nxcc.torch cannot represent; the message names where."""


def flatten(value: object, where: str) -> tuple[list[torch.Tensor], Structure]:
    """(the tensor leaves of `value` in order, its structure); `where` names `value` in
    errors (`input 0`, `output`)."""
    leaves: list[torch.Tensor] = []
    return leaves, _flatten(value, where, leaves, 0)


def _flatten(value: object, where: str, leaves: list[torch.Tensor], depth: int) -> Structure:
    if depth > MAX_DEPTH:
        raise StructureError(f"{where} is nested more than {MAX_DEPTH} levels deep")
    if isinstance(value, torch.Tensor):
        leaves.append(value)
        return {"tensor": len(leaves) - 1}
    if isinstance(value, tuple):
        return {"tuple": [_flatten(v, f"{where}[{i}]", leaves, depth + 1)
                          for i, v in enumerate(value)]}
    if isinstance(value, list):
        return {"list": [_flatten(v, f"{where}[{i}]", leaves, depth + 1)
                         for i, v in enumerate(value)]}
    if isinstance(value, dict):
        items = []
        for key, v in value.items():
            if isinstance(key, bool) or not isinstance(key, str | int):
                raise StructureError(f"{where} has the key {key!r}: dict keys must be str "
                                     "or int")
            items.append([key, _flatten(v, f"{where}[{key!r}]", leaves, depth + 1)])
        return {"dict": items}
    if isinstance(value, CONSTANTS):
        return {"const": value}
    raise StructureError(f"{where} is a {type(value).__name__}: a traced module takes and "
                         "returns tensors, tuples, lists, dicts and None/bool/int/float/str "
                         "constants")


def unflatten(structure: Structure, leaves: list[Any]) -> object:
    """The value `structure` describes, with `leaves[i]` for its i-th tensor."""
    kind, body = next(iter(structure.items()))
    if kind == "tensor":
        return leaves[body]
    if kind == "tuple":
        return tuple(unflatten(s, leaves) for s in body)
    if kind == "list":
        return [unflatten(s, leaves) for s in body]
    if kind == "dict":
        return {key: unflatten(s, leaves) for key, s in body}
    return body


def check(structure: object, tensors: int, where: str) -> Structure:
    """`structure` (as read from JSON) if it is one with exactly `tensors` tensor leaves
    numbered 0..tensors-1 in order; else StructureError naming `where`."""
    seen: list[int] = []
    _check(structure, where, seen, 0)
    if seen != list(range(tensors)):
        raise StructureError(f"{where}: tensor leaves {seen} do not number the {tensors} "
                             "tensors in order")
    return structure  # type: ignore[return-value]


def _check(node: object, where: str, seen: list[int], depth: int) -> None:
    if depth > MAX_DEPTH:
        raise StructureError(f"{where} is nested more than {MAX_DEPTH} levels deep")
    if not isinstance(node, dict) or len(node) != 1:
        raise StructureError(f"{where}: expected a one-key object, found {node!r:.60}")
    kind, body = next(iter(node.items()))
    if kind == "tensor" and type(body) is int:
        seen.append(body)
    elif kind in ("tuple", "list") and isinstance(body, list):
        for i, child in enumerate(body):
            _check(child, f"{where}[{i}]", seen, depth + 1)
    elif kind == "dict" and isinstance(body, list):
        for item in body:
            if (not isinstance(item, list) or len(item) != 2 or isinstance(item[0], bool)
                    or not isinstance(item[0], str | int)):
                raise StructureError(f"{where}: a dict item must be [str or int key, node], "
                                     f"found {item!r:.60}")
            _check(item[1], f"{where}[{item[0]!r}]", seen, depth + 1)
    elif kind == "const" and isinstance(body, CONSTANTS):
        pass
    else:
        raise StructureError(f"{where}: {kind!r} node with {body!r:.60} is not a structure "
                             "node")

