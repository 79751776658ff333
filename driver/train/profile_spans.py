"""Which instructions of a lowered stage program are forward, recomputation or backward: the
labels of `train --profile`'s spans inside each micro-batch's program run.

`step_labels(program, weights, loss_results)` reads the entry function of a program as
`lower_module` writes it (slots, instructions with argument and result slots, a view's
`view_of` link to the slot it reads in place) and labels each instruction:

- "recompute": the forward ops `rematerialize` copied into a backward: the
  `optimization_barrier` each recomputed segment reads through, and every op computed only
  from such barriers' results, constants, weights and the program's first `weights`
  parameters (the stage's weights), none of its other parameters (the stash, the output
  gradient, the labels): those carry gradients or data, which a recomputed forward op never
  reads;
- "forward": in a program that also computes the loss (the last stage's
  `forward_backward`), every op the results `loss_results` depend on;
- "backward": the rest.
"""

from __future__ import annotations

from collections.abc import Sequence

from nxcc.backend.program.view_layout import view_sources

FORWARD, RECOMPUTE, BACKWARD = "forward", "recompute", "backward"
BARRIER = "optimization_barrier"


def step_labels(program: dict, weights: int, loss_results: Sequence[int] = ()) -> list[str]:
    """One label per instruction of `program`'s entry function (see the module
    docstring)."""
    fn = program["functions"][program["entry"]]
    slots = fn["slots"]

    def root(slot: int) -> int:
        return [slot, *view_sources(slots, slot)][-1]

    steady = {i for i, s in enumerate(slots) if s["kind"] in ("weight", "splat")}
    steady |= {root(p) for p in fn["params"][:weights]}
    instructions = fn["instructions"]
    recomputed: set[int] = set()
    labels = [BACKWARD] * len(instructions)
    for i, ins in enumerate(instructions):
        args = [root(a) for a in ins["args"]]
        if ins["op"] == BARRIER or (any(a in recomputed for a in args)
                                    and all(a in recomputed or a in steady for a in args)):
            labels[i] = RECOMPUTE
            recomputed.update(root(o) for o in ins["outs"])
    needed = {root(fn["results"][k]) for k in loss_results}
    for i in reversed(range(len(instructions))):
        ins = instructions[i]
        if needed.intersection(root(o) for o in ins["outs"]):
            labels[i] = FORWARD
            needed.update(root(a) for a in ins["args"])
    return labels
