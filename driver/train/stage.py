"""What the engine needs from a model: each rank's stage module and its parameters.

A model provider (any model of `nxcc.nxd`'s primitives through `model_build.stage_build`:
the built-in decoder, a user's `model.module`; an ONNX model; a hand-built module in the
tests) is a function `build(plan: StagePlan) -> StageBuild`. The stage module holds:

- `forward(params..., x_in?, data...) -> (x_out, stash...)` and
  `backward(params..., x_in?, data..., stash..., g_out) -> (g_in?, grads...)` on every
  stage but the last (`x_in` and `g_in` absent on the first stage);
- `forward_backward(params..., x_in?, data...) -> (loss_sum, token_count, g_in?,
  grads...)` on the last stage (the only stage with PP = 1).

`params` are the function's first parameters, in `StageBuild.params` order; `grads` follow
the same order; `data` are the arrays of the batch the stage reads (`StageBuild.data`: for
a language model the tokens on the first stage and the labels on the last). Collectives in
the module use group-local replica groups ([[0..TP-1]]).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from nxcc.ir.core import Module


@dataclass(frozen=True)
class StagePlan:
    """Which part of the model one rank holds, and the micro-batch shape."""

    tp_rank: int
    tp_size: int
    stage: int
    stages: int
    micro_batch: int
    seq_length: int
    sequence_parallel: bool = False

    @property
    def first(self) -> bool:
        return self.stage == 0

    @property
    def last(self) -> bool:
        return self.stage == self.stages - 1


@dataclass
class StageBuild:
    """A rank's stage module and its parameters' initial values (see the module docstring).

    `replicated`: parameters every rank of the TP group holds whole (counted once in the
    global gradient norm, on TP rank 0); `norm_masks`: per parameter, 1.0 for each element
    this rank counts in the norm and 0.0 for the others (overrides `replicated`, for slices
    that hold repeated parts, such as replicated key/value heads); `tp_partial`: parameters
    whose gradient each TP rank holds only a part of (summed over the TP group by the engine;
    the decoder sums its own);
    `peak_activation_bytes`: the model's own figure of the activations a rank holds at its
    peak, when it has one (else the engine reports its programs' planned arenas);
    `pipeline_shared`: parameters several pipeline stages each hold a copy of (tied
    embeddings), whose gradients the engine sums over those ranks, as Megatron's embedding
    group does, so the copies stay equal: `pipeline_shared_stages` says which stages (by
    default the first and the last), `pipeline_shared_index` the index of each among the
    first holder's parameters (whose rounding noise the copies use);
    `data`: the indices of the batch arrays the stage programs read after their
    parameters and stage input, in their order (by default the tokens, 0, on the first
    stage and the labels, 1, on the last); `input_dtypes`: each batch array's dtype as the
    programs take it (by default int32)."""

    module: Module
    params: list[tuple[str, np.ndarray]]
    replicated: frozenset[str] = frozenset()
    tp_partial: frozenset[str] = frozenset()
    peak_activation_bytes: int | None = None
    pipeline_shared: frozenset[str] = frozenset()
    norm_masks: dict[str, np.ndarray] = field(default_factory=dict)
    extra: dict = field(default_factory=dict)
    data: tuple[int, ...] | None = None
    input_dtypes: tuple[np.dtype, ...] | None = None
    pipeline_shared_stages: tuple[int, ...] = ()
    pipeline_shared_index: dict[str, int] = field(default_factory=dict)


StageBuilder = Callable[[StagePlan], StageBuild]
