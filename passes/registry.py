"""Every pass by name, and the pipeline run at each optimisation level (-O1..-O3)."""

from __future__ import annotations

from passes.base import Pass
from passes.common_subexpression_elimination import CommonSubexpressionElimination
from passes.constant_folding import ConstantFolding
from passes.dead_code_elimination import DeadCodeElimination

PASSES: dict[str, type] = {
    cls.name: cls
    for cls in (ConstantFolding, DeadCodeElimination, CommonSubexpressionElimination)
}

PIPELINES: dict[int, list[str]] = {
    1: ["fold", "dce"],
    2: ["fold", "cse", "dce"],
    3: ["fold", "cse", "dce", "fold", "cse", "dce"],
}


def pipeline(optlevel: int) -> list[Pass]:
    """Fresh instances of the passes run at `optlevel`."""
    if optlevel not in PIPELINES:
        raise ValueError(f"optimisation level {optlevel} is not one of 1, 2, 3")
    return [PASSES[name]() for name in PIPELINES[optlevel]]
