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

from nxcc.passes.sharding.rules import (  # noqa: F401  (importing registers the rules)
    elementwise,
    linalg,
    reduction,
    replicate_only,
    shape,
)
from nxcc.passes.sharding.rules.strategy import (
    RULES,
    R,
    Rule,
    Strategy,
    covered_opcodes,
    partial,
    replicate,
    rule,
    split,
    splittable,
    strategies,
)

__all__ = ["RULES", "R", "Rule", "Strategy", "covered_opcodes", "partial", "replicate", "rule",
           "split", "splittable", "strategies"]
