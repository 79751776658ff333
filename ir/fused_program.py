"""The program of a `fused_elementwise` op: a chain of elementwise steps, as text.

    "a0[0,1,2] a1[2] a2[]; t0 = add(a0, a1); t1 = erf(t0); t2 = compare.LT(t1, a2)"

The first part maps each operand `aK` to the result dimensions its dimensions stand for
(as `broadcast_in_dim`'s `broadcast_dimensions`, strictly increasing): an operand of the
result's shape lists every dimension, a broadcast bias `[2]`, a scalar `[]`. Then one step
per elementwise op, in order: `tN = OPCODE(REF, ...)`, where a reference is an operand `aK`
or an earlier step `tM`; `compare.DIR` carries the comparison direction and `convert.DTYPE`
the target type. Every step is computed at the result's shape (operands broadcast as
mapped); the last step is the result.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from nxcc.ir.attributes import AttrKind, AttrValue
from nxcc.ir.dtypes import DType
from nxcc.ir.opdef import OpDef, get_opdef
from nxcc.ir.types import TensorType

_STEP = re.compile(r"t(\d+) = ([a-z_0-9]+)(?:\.([A-Za-z0-9_]+))?\(([^)]*)\)$")
_OPERAND = re.compile(r"a(\d+)\[([0-9,]*)\]$")


class FusedProgramError(ValueError):
    """A fused program's text is malformed."""


@dataclass(frozen=True)
class Step:
    """One step: the op's definition, its qualifier (direction or dtype name, or ''), and its
    arguments as (is_operand, index) pairs."""

    opdef: OpDef
    qualifier: str
    args: tuple[tuple[bool, int], ...]

    @property
    def opcode(self) -> str:
        """The op's text name (as the program text writes it)."""
        return self.opdef.name

    def attrs(self) -> dict[str, AttrValue]:
        """The step's op attributes: the qualifier is the value of the op's one attribute
        (compare's direction, convert's dtype); an op without attributes has none."""
        if not self.opdef.attrs:
            return {}
        ((key, spec),) = self.opdef.attrs.items()
        if spec.kind is AttrKind.DTYPE:
            return {key: DType.from_name(self.qualifier)}
        return {key: self.qualifier}


@dataclass(frozen=True)
class FusedProgram:
    """A parsed program: the result dimensions of each operand and the steps."""

    operand_dims: tuple[tuple[int, ...], ...]
    steps: tuple[Step, ...]

    def step_dtypes(self, operand_dtypes: list[DType]) -> list[DType]:
        """The element type of each step's result, given the operands' types: what its op's
        type rule gives on scalars of those types (TypeRuleError if it refuses them)."""
        out: list[DType] = []
        for s in self.steps:
            arg = tuple(operand_dtypes[i] if is_op else out[i] for is_op, i in s.args)
            out.append(_result_dtype(s.opdef, s.qualifier, arg))
        return out

    def last_uses(self) -> list[int]:
        """For each step, the index of the last step that reads it (itself if none)."""
        last = list(range(len(self.steps)))
        for j, s in enumerate(self.steps):
            for is_op, i in s.args:
                if not is_op:
                    last[i] = j
        return last


@functools.lru_cache(maxsize=4096)
def _result_dtype(opdef: OpDef, qualifier: str, arg_dtypes: tuple[DType, ...]) -> DType:
    """The element type `opdef` (its attribute given by `qualifier`) gives on scalars of
    `arg_dtypes`: what a step computes (ops, qualifiers and types are few: remembered)."""
    step = Step(opdef, qualifier, ())
    (result,) = opdef.infer([TensorType(d, ()) for d in arg_dtypes],
                            opdef.check_attrs(step.attrs()), None)
    return result.dtype


#: a program's steps as `format_program` writes them: (opcode, qualifier, arguments)
StepText = tuple[str, str, list[tuple[bool, int]]]


def after_first_step(steps: list[StepText]) -> list[StepText]:
    """The steps after the first, reading the first step's result as operand a0 (a value
    that already holds it: a product with the bias or scale folded in) and the later
    steps' results renumbered; a0 itself must be read by the first step only."""
    return [(op, q, [(True, 0) if (not is_op and i == 0) else (is_op, i - (not is_op))
                     for is_op, i in args]) for op, q, args in steps[1:]]


def step_texts(program: FusedProgram) -> list[StepText]:
    """The steps of `program` as `format_program` takes them."""
    return [(s.opcode, s.qualifier, list(s.args)) for s in program.steps]


def format_program(operand_dims: list[tuple[int, ...]],
                   steps: list[StepText]) -> str:
    """The text of a program (the inverse of `parse_program`)."""
    head = " ".join(f"a{k}[{','.join(map(str, d))}]" for k, d in enumerate(operand_dims))
    lines = [head]
    for n, (opcode, qualifier, args) in enumerate(steps):
        refs = ", ".join(f"{'a' if is_op else 't'}{i}" for is_op, i in args)
        lines.append(f"t{n} = {opcode}{'.' + qualifier if qualifier else ''}({refs})")
    return "; ".join(lines)


@functools.lru_cache(maxsize=4096)
def parse_program(text: str) -> FusedProgram:
    """The program `text` stands for; FusedProgramError saying what is wrong."""
    parts = [p.strip() for p in text.split(";")]
    if len(parts) < 2:
        raise FusedProgramError(f"fused program {text!r} has no step")
    dims: list[tuple[int, ...]] = []
    for k, word in enumerate(parts[0].split()):
        m = _OPERAND.match(word)
        if m is None or int(m.group(1)) != k:
            raise FusedProgramError(f"operand map {word!r} should be a{k}[DIMS]")
        d = tuple(int(x) for x in m.group(2).split(",") if x)
        if any(b <= a for a, b in zip(d, d[1:], strict=False)):
            raise FusedProgramError(f"operand map {word!r} is not strictly increasing")
        dims.append(d)
    steps = [_parse_step(n, line, len(dims)) for n, line in enumerate(parts[1:])]
    return FusedProgram(tuple(dims), tuple(steps))


def _parse_step(n: int, line: str, n_operands: int) -> Step:
    m = _STEP.match(line)
    if m is None or int(m.group(1)) != n:
        raise FusedProgramError(f"step {line!r} should be t{n} = OPCODE(REFS)")
    args = []
    for ref in (r.strip() for r in m.group(4).split(",") if r.strip()):
        kind, index = ref[:1], ref[1:]
        if kind not in "at" or not index.isdigit():
            raise FusedProgramError(f"step {line!r}: {ref!r} is not aK or tN")
        i = int(index)
        if (kind == "a" and i >= n_operands) or (kind == "t" and i >= n):
            raise FusedProgramError(f"step {line!r}: {ref!r} is not defined before it")
        args.append((kind == "a", i))
    try:
        opdef = get_opdef(m.group(2))
    except KeyError:
        raise FusedProgramError(f"step {line!r}: unknown op '{m.group(2)}'") from None
    qualifier = m.group(3) or ""
    if len(opdef.attrs) > 1 or bool(qualifier) != bool(opdef.attrs):
        raise FusedProgramError(f"step {line!r}: a step names the value of its op's one "
                                f"attribute (compare.LT, convert.f16) and {opdef.name} has "
                                f"{len(opdef.attrs)}")
    return Step(opdef, qualifier, tuple(args))
