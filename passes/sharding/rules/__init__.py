"""Sharding rules: for every core op, the ways it can run on `n` devices.

A rule maps an op (with its global types) and the device count `n` to its `Strategy` list:
what sharding each operand must have, what sharding each result then has, and the per-core
attributes. The first strategy of every list is "replicate" (every operand whole, every
device computes the whole result), which is valid for every op: an op whose rule offers
nothing else is *replicated*, and that is a documented, correct rule (see `replicate_only.py`).

Dimensions that do not divide by `n` are never split: such values stay replicated
(uneven dimensions are handled by replication, never an error).

Strategy `kind` names the family the cost model chooses among for dot_general and
convolution: "replicate", "batch" (split the batch / data dimension), "column" (split the
output features), "row" (split the contraction; the result is a partial sum), and for the
other ops "split" and "partial" (a pending reduction passed through a linear op).
"""

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


def _load() -> None:
    from nxcc.passes.sharding.rules import (  # noqa: F401  (importing registers the rules)
        elementwise,
        linalg,
        reduction,
        replicate_only,
        shape,
    )


#: op definition -> its sharding rule; ``@rule(ops.dot_general)`` registers one.
RULES: OpTable[Rule] = OpTable("sharding rule", load=_load)
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
