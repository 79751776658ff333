"""nxcc.nxd: models built from NxD Core-style parallel primitives, for `neuronx-cc train`.

A model is a Python function that builds the forward of one tensor-parallel rank as IR
from these primitives and returns its loss; the training engine builds it for every rank,
cuts it into pipeline stages at its cut points, differentiates each stage and trains it with
TP, SP, PP (1F1B), DP and ZeRO-1 (docs/your-own-model.md)::

    from nxcc import nxd

    def build(m: nxd.Model, hidden: int = 64, classes: int = 10):
        x = m.input("features", (32,), "float32")          # [micro_batch, 32]
        labels = m.input("labels", (), "int32")             # [micro_batch]
        up = nxd.ColumnParallelLinear(m, "up", 32, hidden, gather_output=False)
        down = nxd.RowParallelLinear(m, "down", hidden, 32, input_is_parallel=True)
        nxd.pipeline_cut(m, "mlp")
        head = nxd.ColumnParallelLinear(m, "head", 32, classes, gather_output=False)
        logits = head(down(nxd.gelu(m, up(x))))               # this rank's classes
        return nxd.parallel_cross_entropy(m, logits, labels)  # (loss_sum, count)

The primitives (named after NxD Core's; each states the layout of its inputs and outputs):

- `Model`: the rank being built: `input`, `parameter`, `stop_gradient`, `b` (the IR
  builder for every other op), `tp_rank`, `tp_size`, `sequence_parallel`;
- `ColumnParallelLinear` (`gather_output`), `RowParallelLinear` (`input_is_parallel`),
  `ParallelEmbedding`, `LayerNorm`, `RMSNorm` (`layers`);
- `parallel_cross_entropy`, the vocabulary-parallel loss (`loss_functions`);
- the region helpers `copy_to_tensor_model_parallel_region`,
  `reduce_from_tensor_model_parallel_region`, `scatter_to_tensor_model_parallel_region`,
  `gather_from_tensor_model_parallel_region`, `scatter_to_sequence_parallel_region`,
  `gather_from_sequence_parallel_region`, `reduce_scatter_to_sequence_parallel_region`
  (`mappings`);
- `pipeline_cut` (a cut point), `pipeline_chunks` (cut points inside a projection) and
  `checkpoint` (a recomputation segment) (`markers`);
- `gelu`, `silu`, `softmax`, `reduce_sum`, `mean`, `matmul` (`functional`, `layers`).
The built-in decoder (`models.decoder`) is written with them, and `pipeline` cuts and
differentiates any such model.
"""

if not __name__.startswith("nxcc."):
    raise ImportError(f"import nxcc.{__name__}, not {__name__}: each layer has one import name")

from nxcc.nxd.functional import gelu, mean, reduce_sum, silu, softmax  # noqa: E402
from nxcc.nxd.layers import (  # noqa: E402
    ColumnParallelLinear,
    LayerNorm,
    ParallelEmbedding,
    RMSNorm,
    RowParallelLinear,
    matmul,
)
from nxcc.nxd.loss_functions import parallel_cross_entropy  # noqa: E402
from nxcc.nxd.mappings import (  # noqa: E402
    copy_to_tensor_model_parallel_region,
    gather_from_sequence_parallel_region,
    gather_from_tensor_model_parallel_region,
    reduce_from_tensor_model_parallel_region,
    reduce_scatter_to_sequence_parallel_region,
    scatter_to_sequence_parallel_region,
    scatter_to_tensor_model_parallel_region,
)
from nxcc.nxd.markers import checkpoint, pipeline_chunks, pipeline_cut  # noqa: E402
from nxcc.nxd.model import Model, ModelError, RankSpec  # noqa: E402
from nxcc.nxd.params import Segment  # noqa: E402

__all__ = [
    "ColumnParallelLinear", "LayerNorm", "Model", "ModelError", "ParallelEmbedding", "RMSNorm",
    "RankSpec", "RowParallelLinear", "Segment", "checkpoint",
    "copy_to_tensor_model_parallel_region", "gather_from_sequence_parallel_region",
    "gather_from_tensor_model_parallel_region", "gelu", "matmul", "mean", "parallel_cross_entropy",
    "pipeline_chunks", "pipeline_cut", "reduce_from_tensor_model_parallel_region",
    "reduce_scatter_to_sequence_parallel_region", "scatter_to_sequence_parallel_region",
    "reduce_sum", "scatter_to_tensor_model_parallel_region", "silu", "softmax",
]
