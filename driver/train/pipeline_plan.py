"""The pipeline's split of a model into stages, as the engine and `--dry-run` use it.

A model is a run of pieces (the built-in decoder's: ten per layer, `nxd.models.decoder.
config.PIECES`; a user model's: the parts between its cut points, `nxd.pipeline_cut`).
`Pipeline.cuts` are the first piece of each stage but the first, chosen automatically
(NxD's split of whole layers for the decoder, or the cost model's balanced FLOPs) or by
`model.pipeline_cuts`, with each stage's FLOPs per micro-batch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


def _numbered(pieces: range) -> str:
    return f"pieces {pieces.start}-{pieces.stop - 1}"


#: How a pipeline's stages were chosen (`Pipeline.split`), as the dry-run names it.
SPLITS = {"balanced": "balanced by FLOPs", "nxd": "NxD's split: whole layers, any remainder "
          "on the last stages", "pipeline_cuts": "model.pipeline_cuts"}


@dataclass(frozen=True)
class Pipeline:
    """The stages' pieces (`cuts`: the first piece of each stage but the first, of `count`
    pieces), whether the cost model chose them, each stage's FLOPs per micro-batch (None with
    PP = 1), how a run of pieces is named (`label`), and, for a model of layers of
    `per_layer` pieces each (the decoder), the layers that end stages (`cut_after`).
    `split` says how the cuts were chosen (a key of `SPLITS`; by default "balanced" when
    automatic, else "pipeline_cuts")."""

    cuts: tuple[int, ...]
    automatic: bool
    flops: tuple[int, ...] | None
    count: int = 0
    label: Callable[[range], str] = field(default=_numbered, compare=False)
    per_layer: int = 0
    split: str = ""

    def __post_init__(self) -> None:
        if not self.split:
            object.__setattr__(self, "split", "balanced" if self.automatic else "pipeline_cuts")

    def pieces(self, stage: int, num_layers: int | None = None) -> range:
        """Stage `stage`'s pieces (`num_layers`: the decoder's, when `count` is not set)."""
        count = self.count or (self.per_layer * (num_layers or 0))
        bounds = [0, *self.cuts, count]
        return range(bounds[stage], bounds[stage + 1])

    @property
    def stages(self) -> int:
        return len(self.cuts) + 1

    @property
    def cut_after(self) -> tuple[int, ...] | None:
        """The last layer of each stage but the last, as `pipeline_cuts` name them; None
        when a cut falls inside a layer or the model has no layers."""
        n = self.per_layer
        if not n or any(c % n for c in self.cuts):
            return None
        return tuple(c // n - 1 for c in self.cuts)

    def stage_labels(self, num_layers: int | None = None) -> list[str]:
        return [self.label(self.pieces(s, num_layers)) for s in range(self.stages)]

    def describe(self, num_layers: int | None = None) -> str:
        text = " | ".join(self.stage_labels(num_layers))
        how = SPLITS[self.split]
        if self.flops:
            text += " (FLOPs per micro-batch " + ", ".join(f"{f:,}" for f in self.flops) + ")"
        return f"pipeline stages ({how}): {text}"
