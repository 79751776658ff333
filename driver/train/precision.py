"""NxD Training's `precision` block, as the engine applies it.

`precision.type` names a recipe; `manual` takes its parts from the block's own keys (NxD's
"set the following only if precision type is manual"):

- `fp32`: everything f32.
- `autocast`: products in bf16 (f32 accumulation); weights, gradients, optimizer f32.
- `mixed_precision`: products in bf16; the programs read bf16 weights, rounded to nearest
  from an f32 master copy that the optimizer keeps (of its ZeRO-1 shard); gradients
  accumulated in f32; optimizer state f32.
- `mixed_precisionSR`: the same, the weights rounded stochastically from the master copy.
- `bf16SR`: products and weights in bf16 with no master copy: the update is computed in f32
  from the widened weights and rounded back stochastically; gradients accumulated in bf16;
  optimizer slots kept in bf16.
- `manual`: bf16 weights and products when `xla_use_bf16` or `xla_downcast_bf16` is set,
  a master copy with `master_weights`, f32 accumulation unless `fp32_grad_acc` is false,
  stochastic rounding with `neuron_rt_stochastic_rounding_en` (each a flag: 0/1/true/false).

"Products in bf16" means every dot_general of the stage programs takes bf16 operands and
accumulates in f32 (the matmul engine's PSUM), as `passes.autodiff.mixed_precision.autocast`
rewrites them; norms, softmax and the loss stay f32. With bf16 weights the optimizer update
is still computed in f32 (from the master copy, or from the bf16 weights widened) and
rounded back; `bf16SR` also keeps the optimizer's slots in bf16.

Stochastic rounding draws its 16 random bits per element from a counter-based hash of
(seed, step, stage, parameter index, element index), so the copies of a replicated
parameter round alike on every rank that holds one and a run is reproducible for its seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from nxcc.driver.train.errors import TrainConfigError

BF16 = np.dtype(ml_dtypes.bfloat16)
TYPES = ("fp32", "autocast", "mixed_precision", "mixed_precisionSR", "bf16SR", "manual")
#: The keys `manual` reads (NxD's names), each a flag.
MANUAL_KEYS = ("master_weights", "fp32_grad_acc", "xla_use_bf16", "xla_downcast_bf16",
               "neuron_rt_stochastic_rounding_en")


@dataclass(frozen=True)
class Precision:
    """What a precision type means to the engine (see the module docstring)."""

    name: str = "fp32"
    bf16_products: bool = False
    bf16_weights: bool = False
    master_weights: bool = False
    fp32_grad_acc: bool = True
    stochastic_rounding: bool = False

    @property
    def bf16_optimizer_state(self) -> bool:
        """Optimizer slots in bf16: bf16 weights with no f32 master copy."""
        return self.bf16_weights and not self.master_weights

    @property
    def label(self) -> str:
        """The type's name; for `manual`, with the parts it chose."""
        if self.name != "manual":
            return self.name
        parts = [k for k, on in (("bf16", self.bf16_weights), ("master", self.master_weights),
                                 ("fp32_grad_acc", self.fp32_grad_acc),
                                 ("sr", self.stochastic_rounding)) if on]
        return f"manual({','.join(parts)})"

    @property
    def weight_dtype(self) -> np.dtype:
        return BF16 if self.bf16_weights else np.dtype(np.float32)

    @property
    def grad_dtype(self) -> np.dtype:
        return np.dtype(np.float32) if self.fp32_grad_acc else BF16


RECIPES = {
    "fp32": Precision("fp32"),
    "autocast": Precision("autocast", bf16_products=True),
    "mixed_precision": Precision("mixed_precision", True, True, True, True, False),
    "mixed_precisionSR": Precision("mixed_precisionSR", True, True, True, True, True),
    "bf16SR": Precision("bf16SR", True, True, False, False, True),
}


def precision_of(name: str, flags: dict[str, bool | None]) -> Precision:
    """The recipe of `precision.type` `name`; for `manual`, from `flags` (the precision
    block's `MANUAL_KEYS`, None where not given)."""
    if name in RECIPES:
        return RECIPES[name]
    if name != "manual":
        raise TrainConfigError("precision.type", f"{name!r} is not one of {', '.join(TYPES)}")
    bf16 = bool(flags.get("xla_use_bf16") or flags.get("xla_downcast_bf16"))
    grad_acc = flags.get("fp32_grad_acc")
    return Precision("manual", bf16_products=bf16, bf16_weights=bf16,
                     master_weights=bf16 and bool(flags.get("master_weights")),
                     fp32_grad_acc=not bf16 or grad_acc is None or grad_acc,
                     stochastic_rounding=bf16 and bool(
                         flags.get("neuron_rt_stochastic_rounding_en")))


def _mix(x: np.ndarray) -> np.ndarray:
    """A 64-bit finaliser (splitmix64's) over uint64 `x`, elementwise."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def element_ids(index: int, n: int) -> np.ndarray:
    """uint64 ids of the `n` elements of parameter `index` (the rounding noise's key): the
    parameter's index in the high 24 bits, the element's below."""
    return np.arange(n, dtype=np.uint64) | (np.uint64(index) << np.uint64(40))


def rounding_key(seed: int, step: int, stage: int) -> np.uint64:
    """The part of the rounding noise's key that `seed`, `step` and `stage` give."""
    return np.uint64((seed * 0x9E3779B1 + step * 0x85EBCA77 + stage * 0xC2B2AE3D) % (1 << 64))


def to_bf16(x: np.ndarray, stochastic: bool, ids: np.ndarray | None = None, seed: int = 0,
            step: int = 0, stage: int = 0) -> np.ndarray:
    """f32 `x` rounded to bf16: to nearest, or stochastically (16 random bits added below
    bf16's last bit, then truncated: rounds up with probability equal to the distance from
    the value below, so the expected result is `x`), the bits keyed by `ids` (see
    `element_ids`), `seed`, `step` and `stage`."""
    x = np.asarray(x, np.float32)
    if not stochastic:
        return x.astype(BF16)
    assert ids is not None and ids.shape == x.shape
    key = rounding_key(seed, step, stage)
    with np.errstate(over="ignore"):
        noise = (_mix(ids ^ key) >> np.uint64(48)).astype(np.uint32)
    bits = x.view(np.uint32)
    finite = np.isfinite(x)
    rounded = np.where(finite, (bits + noise) & np.uint32(0xFFFF0000), bits)
    return rounded.view(np.float32).astype(BF16)
