"""Checking one per-core program (`sgNN/program.json`) against its NEFF before it runs.

After the declared schema (`backend.neff.neff_schema.PROGRAM`) passes, `check_program`
checks what needs two values at once, raising NeffError with a code:

- references (NRT_ENEFF003): the entry function exists; every slot index (params, results,
  args, outs) is inside its function; every op has a kernel; every `{"symbol": f}` names a
  function of the program and no function reaches itself through them; every weight a slot
  or attribute names is in the manifest; an instruction reads only slots defined before it
  and writes only buffer slots, each once; the entry takes and gives as many values as
  the manifest's inputs and outputs, of their dtypes;
- sizes (NRT_ENEFF004): each slot's shape x dtype within MAX_TENSOR_BYTES, each buffer
  inside its arena, each weight's bytes equal to its slot's shape x dtype;
- types (NRT_ENEFF002): a splat's value is a scalar of its dtype; every instruction's
  attributes and operand types satisfy its op's type rule and give its outs' types.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from nxcc.backend.neff.errors import REFERENCE, SCHEMA, SIZE, NeffError
from nxcc.backend.neff.limits import MAX_TENSOR_BYTES
from nxcc.backend.neff.neff_schema import SLOT_REQUIRES
from nxcc.backend.program.attr_codec import decode_attr, decode_attrs
from nxcc.backend.program.view_layout import view_sources
from nxcc.ir.attributes import Dense, Symbol
from nxcc.ir.dtypes import DType
from nxcc.ir.kernels import KERNELS
from nxcc.ir.opdef import get_opdef
from nxcc.ir.types import TensorType


class ProgramProblem(Exception):
    """One problem of a program: its code and where (raised as NeffError by the caller)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def check_program(program: dict, weights: Mapping[str, np.ndarray],
                  io: tuple[list[dict], list[dict]], source: str, member: str) -> None:
    """Check `program` (schema-checked) against the NEFF's `weights` and the entry's
    expected `io` (input and output entries: dtype and per-core shape); NeffError naming
    `member` at the first problem."""
    try:
        functions = program["functions"]
        if program["entry"] not in functions:
            raise ProgramProblem(REFERENCE, f"entry function '{program['entry']}' is not "
                                 f"among the functions ({', '.join(sorted(functions)[:8])})")
        types = {name: [_slot_type(name, i, s, fn["arena_bytes"], weights)
                        for i, s in enumerate(fn["slots"])] for name, fn in functions.items()}
        signatures = _Signatures(functions, types)
        calls = {name: _check_function(name, fn, types[name], signatures, weights)
                 for name, fn in functions.items()}
        _check_acyclic(calls)
        _check_entry(program["entry"], functions[program["entry"]], io)
    except ProgramProblem as exc:
        raise NeffError(source, f"{member}: {exc}", code=exc.code) from None


@dataclass(frozen=True)
class _Signature:
    """What an op's type rule asks of a function it refers to."""

    name: str
    param_types: list[TensorType]
    result_types: list[TensorType]


class _Signatures:
    """The program's functions as the type rules look them up (`module.functions.get`)."""

    def __init__(self, functions: Mapping[str, dict], types: Mapping[str, list[TensorType]]
                 ) -> None:
        self.functions = {
            name: _Signature(name, [types[name][i] for i in _in_range(fn["params"], types[name])],
                             [types[name][i] for i in _in_range(fn["results"], types[name])])
            for name, fn in functions.items()}


def _in_range(indices: list[int], types: list[TensorType]) -> list[int]:
    return [i for i in indices if i < len(types)]


def _view_written(slots: list[dict], i: int, defined: set[int]) -> bool:
    """Slot i is a view (a reshape or slice the memory plan made one) of a slot already
    written."""
    return any(source in defined for source in view_sources(slots, i))


def _check_function(name: str, fn: dict, types: list[TensorType], signatures: _Signatures,
                    weights: Mapping[str, np.ndarray]) -> set[str]:
    """Check function `name` (its slots' `types`); the functions its instructions name."""
    slots = fn["slots"]
    functions = signatures.functions
    defined = {i for i, s in enumerate(slots) if s["kind"] != "buffer"}
    for role in ("params", "results"):
        for i in fn[role]:
            _index(name, role, i, len(slots))
    calls: set[str] = set()
    for k, ins in enumerate(fn["instructions"]):
        where = f"@{name} instruction {k} ({ins['op']})"
        if ins["op"] not in KERNELS:
            raise ProgramProblem(REFERENCE, f"{where}: no kernel for op '{ins['op']}'")
        for i in ins["args"]:
            _index(where, "args", i, len(slots))
            if i not in defined and not _view_written(slots, i, defined):
                raise ProgramProblem(REFERENCE, f"{where} reads slot {i} before any "
                                     "instruction writes it")
        for i in ins["outs"]:
            _index(where, "outs", i, len(slots))
            if slots[i]["kind"] != "buffer" or i in defined or "view_of" in slots[i]:
                raise ProgramProblem(REFERENCE, f"{where} writes slot {i}, which is not a "
                                     "buffer written once")
            defined.add(i)
        attrs = _decode(where, ins["attrs"], weights)
        refs = _symbols(attrs.values())
        for ref in refs:
            if ref not in functions:
                raise ProgramProblem(REFERENCE, f"{where} refers to @{ref}, which is not a "
                                     "function of the program")
        calls |= refs
        _type_check(where, ins, attrs, types, signatures)
    for i in fn["results"]:
        if i not in defined and not _view_written(slots, i, defined):
            raise ProgramProblem(REFERENCE, f"@{name} returns slot {i}, which nothing writes")
    return calls


def _slot_type(fn: str, i: int, slot: dict, arena: int,
               weights: Mapping[str, np.ndarray]) -> TensorType:
    where = f"@{fn} slot {i}"
    kind = slot["kind"]
    if SLOT_REQUIRES[kind] not in slot:
        raise ProgramProblem(SCHEMA, f"{where}: a {kind} slot needs '{SLOT_REQUIRES[kind]}'")
    t = TensorType(DType.from_name(slot["dtype"]), tuple(slot["shape"]))
    nbytes = t.size * t.dtype.itemsize
    if nbytes > MAX_TENSOR_BYTES:
        raise ProgramProblem(SIZE, f"{where}: {t} is {nbytes} bytes, over the limit of "
                             f"{MAX_TENSOR_BYTES}")
    if kind == "buffer" and "strides" in slot:
        _check_strides(where, slot, t, arena)
    elif kind == "buffer" and slot["offset"] + nbytes > arena:
        raise ProgramProblem(SIZE, f"{where}: buffer {t} at offset {slot['offset']} ends "
                             f"past the {arena}-byte arena")
    if kind == "weight":
        _check_weight(where, slot["name"], t, weights)
    if kind == "splat":
        _check_splat(where, slot["value"], t)
    return t


def _check_strides(where: str, slot: dict, t: TensorType, arena: int) -> None:
    """A strided buffer (a view of another slot, or a slice of a concatenation written in
    place): one stride (bytes, >= 0) per dimension, every element it reaches inside the
    arena."""
    strides = slot["strides"]
    if (not isinstance(strides, list) or len(strides) != t.rank
            or not all(isinstance(st, int) and not isinstance(st, bool) and st >= 0
                       for st in strides)):
        raise ProgramProblem(SCHEMA, f"{where}: 'strides' must be byte strides, one "
                             f"int >= 0 per dimension of {t}, got {strides!r}")
    if t.size == 0:
        return
    end = slot["offset"] + sum((n - 1) * st for n, st in zip(t.shape, strides, strict=True))
    if end + t.dtype.itemsize > arena:
        raise ProgramProblem(SIZE, f"{where}: strided view {t} at offset {slot['offset']} "
                             f"reaches past the {arena}-byte arena")


def _check_weight(where: str, name: str, t: TensorType,
                  weights: Mapping[str, np.ndarray]) -> None:
    arr = weights.get(name)
    if arr is None:
        raise ProgramProblem(REFERENCE, f"{where}: weight '{name}' is not in the manifest")
    if arr.dtype.itemsize != t.dtype.numpy.itemsize or arr.size != t.size:
        raise ProgramProblem(SIZE, f"{where}: weight '{name}' holds {arr.dtype}"
                             f"{list(arr.shape)} ({arr.nbytes} bytes), the slot declares {t}")


def _check_splat(where: str, value: object, t: TensorType) -> None:
    try:
        scalar = decode_attr(value, _no_weight)
        if isinstance(scalar, tuple | str) or scalar is None:
            raise ValueError(f"a splat holds a number, found {value!r}")
        np.array(scalar).astype(t.dtype.numpy)
    except (ValueError, TypeError, OverflowError) as exc:
        raise ProgramProblem(SCHEMA, f"{where}: bad splat value for {t}: {exc}") from None


def _decode(where: str, attrs: dict, weights: Mapping[str, np.ndarray]) -> dict:
    def load_weight(name: str) -> Dense:
        arr = weights.get(name)
        if arr is None:
            raise ProgramProblem(REFERENCE, f"{where}: attribute weight '{name}' is not in "
                                 "the manifest")
        return Dense(TensorType(DType.from_numpy(arr.dtype), arr.shape), arr)

    try:
        return decode_attrs(attrs, load_weight)
    except ValueError as exc:
        raise ProgramProblem(SCHEMA, f"{where}: {exc}") from None


def _type_check(where: str, ins: dict, attrs: dict, types: list[TensorType],
                signatures: _Signatures) -> None:
    """The op's type rule on the argument slots' types must give the out slots' types."""
    try:
        opdef = get_opdef(ins["op"])
        opdef.check_operand_count(len(ins["args"]))
        checked = opdef.check_attrs(attrs)
        inferred = opdef.infer([types[i] for i in ins["args"]], checked,
                               signatures)  # type: ignore[arg-type]
    except Exception as exc:  # a type rule given hostile attributes may fail in any way
        raise ProgramProblem(SCHEMA, f"{where} does not type-check: "
                             f"{type(exc).__name__}: {exc}") from None
    missing = sorted(k for k in set(checked) - set(attrs) if checked[k] is not None)
    if missing:  # kernels read attributes as written; the writer omits only None values
        raise ProgramProblem(SCHEMA, f"{where} lacks attribute {', '.join(missing)}")
    declared = [types[i] for i in ins["outs"]]
    if list(inferred) != declared:
        raise ProgramProblem(SCHEMA, f"{where} writes ({', '.join(map(str, declared))}), its "
                             f"type rule gives ({', '.join(map(str, inferred))})")


def _check_acyclic(calls: Mapping[str, set[str]]) -> None:
    """No function reaches itself through the functions its instructions refer to."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    for root in calls:
        stack = [(root, iter(sorted(calls[root])))]
        state[root] = state.get(root, 0) or 1
        if state[root] == 2:
            continue
        while stack:
            name, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[name] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                raise ProgramProblem(REFERENCE, f"@{nxt} calls itself (through "
                                     f"{' -> '.join('@' + n for n, _ in stack)})")
            elif state.get(nxt) is None:
                state[nxt] = 1
                stack.append((nxt, iter(sorted(calls[nxt]))))


def _check_entry(name: str, fn: dict, io: tuple[list[dict], list[dict]]) -> None:
    slots = fn["slots"]
    for role, entries in zip(("params", "results"), io, strict=True):
        what = "inputs" if role == "params" else "outputs"
        if len(fn[role]) != len(entries):
            raise ProgramProblem(REFERENCE, f"entry @{name} has {len(fn[role])} {role}, the "
                                 f"manifest lists {len(entries)} {what}")
        for i, (s, e) in enumerate(zip(fn[role], entries, strict=True)):
            slot = slots[s]
            if slot["dtype"] != e["dtype"] or list(slot["shape"]) != list(e["shape"]):
                raise ProgramProblem(REFERENCE, f"entry @{name} {role[:-1]} {i} is "
                                     f"{slot['dtype']}{slot['shape']}, the manifest's "
                                     f"{what[:-1]} '{e['name']}' is {e['dtype']}{e['shape']}")
    for i, s in enumerate(fn["params"]):
        if slots[s]["kind"] != "param" or slots[s]["index"] != i:
            raise ProgramProblem(REFERENCE, f"entry @{name} param {i} is slot {s}, not "
                                 f"param slot {i}")


def _index(where: str, role: str, i: int, n: int) -> None:
    if i >= n:
        raise ProgramProblem(REFERENCE, f"{where}: {role} names slot {i}, the function has "
                             f"{n} slots")


def _symbols(values: object) -> set[str]:
    found: set[str] = set()
    stack = list(values)  # type: ignore[call-overload]
    while stack:
        v = stack.pop()
        if isinstance(v, Symbol):
            found.add(v.name)
        elif isinstance(v, tuple):
            stack.extend(v)
    return found


def _no_weight(name: str) -> Dense:
    raise ValueError("a splat holds a number, not a weight")
