"""The sharding rules' vocabulary: `Strategy`, the `RULES` table and the `rule` decorator
the rule modules register with, and the helpers they share (see the package docstring)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from nxcc.ir.attributes import AttrValue
from nxcc.ir.core import Module, Op
from nxcc.ir.registry import OpTable
from nxcc.ir.sharding import Sharding

R = Sharding.replicated()


@dataclass(frozen=True)
class Strategy:
    """One way to run an op on n devices.

    `operands[i]` is the sharding operand i must have, `results[j]` the sharding result j
    then has; `attrs` are the per-core attributes (None: the op's own); `emit` names a
    special per-core expansion ("iota_offset", "reverse_permute") when one op is not enough.
    """

    name: str
    kind: str
    operands: tuple[Sharding, ...]
    results: tuple[Sharding, ...]
    attrs: Mapping[str, AttrValue] | None = None
    emit: str | None = None


#: rule(op, n, module) -> strategies, "replicate" first.
Rule = Callable[[Op, int, Module | None], list[Strategy]]


#: op definition -> its sharding rule; ``@rule(ops.dot_general)`` registers one.
RULES: OpTable[Rule] = OpTable("sharding rule")
rule = RULES.register


def replicate(op: Op) -> Strategy:
    """Every operand whole on every device; every device computes the whole result."""
    return Strategy("replicate", "replicate", tuple(R for _ in op.operands),
                    tuple(R for _ in op.results))


def splittable(size: int, n: int) -> bool:
    """Whether a dimension of `size` splits evenly over `n` devices."""
    return n > 1 and size >= n and size % n == 0


def split(rank: int, dim: int, n: int) -> Sharding:
    return Sharding.split(rank, dim, n)


def partial(rank: int, n: int, reduction: str = "sum") -> Sharding:
    return Sharding.partial(rank, n, reduction)


def strategies(op: Op, n: int, module: Module | None = None) -> list[Strategy]:
    """Every strategy of `op` on `n` devices, "replicate" first. `module` lets rules look at
    the computations an op calls (a reduce's reducer); without it they assume the worst."""
    fn = RULES.get(op.opcode)
    if fn is None or n == 1:
        return [replicate(op)]
    found = fn(op, n, module)
    assert found and found[0].kind == "replicate", op.opcode
    return found


def covered_opcodes() -> set[str]:
    """The names of the ops that have a rule (every core op: a test checks)."""
    return {opdef.name for opdef in RULES}
