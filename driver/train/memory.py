"""What one rank holds, by kind: one definition for the engine's figures (`metrics.jsonl`,
`RankTrainer.memory`) and for the plan of a layout at full size (`driver.plan`).

- parameters: the weights the programs read, in the precision's weight dtype;
- gradients: the flat gradient accumulator, in the precision's accumulation dtype;
- optimizer state: the optimizer's slots over the rank's shard (ZeRO-1: its chunk of every
  bucket, padding included; else the whole flat vector), in f32 (bf16 without a master
  copy), plus the f32 master copy of the shard when the precision keeps one;
- activations: the stage programs' peak intermediate bytes, plus what 1F1B keeps per
  micro-batch in flight (the stage input and the stash its backward reads) times the
  micro-batches the stage holds at once (none on the last stage, which runs each
  backward right after its forward).
"""

from __future__ import annotations

import math

import numpy as np

from nxcc.driver.train.precision import Precision
from nxcc.driver.train.schedule import max_in_flight, stage_ops
from nxcc.ir.core import Function
from nxcc.ir.types import TensorType

MEMORY_KEYS = ("parameter_bytes", "gradient_bytes", "optimizer_state_bytes",
               "activation_bytes")


def state_bytes(precision: Precision, used: int, shard: int, slots: int) -> dict[str, int]:
    """Parameter, gradient and optimizer-state bytes of a rank whose flat vector holds
    `used` parameter elements and whose optimizer updates `shard` elements with `slots`
    slots each."""
    state = np.dtype(np.float32) if not precision.bf16_optimizer_state else \
        precision.weight_dtype
    master = 4 * shard if precision.master_weights else 0
    return {"parameter_bytes": precision.weight_dtype.itemsize * used,
            "gradient_bytes": precision.grad_dtype.itemsize * used,
            "optimizer_state_bytes": slots * shard * state.itemsize + master}


def tensor_bytes(t: TensorType) -> int:
    return math.prod(t.shape) * np.dtype(t.dtype.numpy).itemsize


def stash_bytes(forward: Function, n_params: int) -> int:
    """Bytes 1F1B keeps per micro-batch in flight on a stage whose `forward` program takes
    `n_params` parameters: its stage inputs (every input after the parameters: the
    activation handed over, and the data inputs a model's stage reads) and the stash it
    returns after its output."""
    kept = [*(v.type for v in forward.params[n_params:]),
            *(v.type for v in forward.results[1:])]
    return sum(tensor_bytes(t) for t in kept)


def in_flight(stage: int, stages: int, micro_batches: int) -> int:
    """The most micro-batches stage `stage` holds at once under 1F1B."""
    return max_in_flight(stage_ops(stage, stages, micro_batches))


def activation_bytes(peak: int, stash: int, held: int, last: bool) -> int:
    """A rank's activation figure: the programs' `peak` plus `stash` bytes per micro-batch
    times the `held` in flight (nothing kept on the last stage)."""
    return peak + (0 if last else stash * held)
