"""Sizes of a run checked against each other; each refusal names both numbers.

Ranks: `devices x num_nodes` by `TP x PP` (in `config.load_config`, which needs DP).
Here: heads by TP, key/value heads (times `kv_replicator`) by TP, heads by key/value heads,
hidden size by heads, FFN and vocabulary by TP (column-parallel and vocabulary-parallel
splits), the sequence by TP under sequence parallelism, the global batch by micro batch x DP,
at least a layer per pipeline stage under NxD's split (`cuts.nxd_layer_split`), the
sequence against the position table.
"""

from __future__ import annotations

import re

from nxcc.driver.train.config_model import ModelConfig
from nxcc.driver.train.config_types import DistributedConfig, TrainConfig
from nxcc.driver.train.errors import TrainConfigError
from nxcc.nxd.models.decoder.config import PIECES_PER_LAYER

_LAYER_NAME = re.compile(r"(?:^|\.)layers\.(\d+)$")
TP_KEY = "distributed_strategy.tensor_model_parallel_size"


def _divides(key: str, what: str, value: int, by_what: str, by: int) -> None:
    if value % by:
        raise TrainConfigError(key, f"{what} {value} is not divisible by {by_what} {by}")


def check_onnx_layout(d: DistributedConfig) -> None:
    """An ONNX model (`model.onnx_path`) trains with data parallelism only: TP and PP need a
    model the engine can cut, the built-in decoder."""
    for key, size in (("tensor_model_parallel_size", d.tensor_model_parallel_size),
                      ("pipeline_model_parallel_size", d.pipeline_model_parallel_size)):
        if size != 1:
            raise TrainConfigError(f"distributed_strategy.{key}", f"{size}: an ONNX model "
                                   "(model.onnx_path) trains with data parallelism only; "
                                   "set it to 1")


def check_sizes(config: TrainConfig) -> None:
    """TrainConfigError for the first pair of sizes that do not fit together."""
    d = config.distributed
    data = config.data
    if config.onnx is not None:
        check_onnx_layout(d)
    dp_micro = data.micro_batch_size * d.data_parallel_size
    if data.global_batch_size % dp_micro:
        raise TrainConfigError(
            "data.global_batch_size",
            f"global_batch_size {data.global_batch_size} is not divisible by "
            f"micro_batch_size x data-parallel size = {data.micro_batch_size} x "
            f"{d.data_parallel_size} = {dp_micro}")
    if d.sequence_parallel:
        _divides("distributed_strategy.sequence_parallel", "seq_length", data.seq_length,
                 "tensor_model_parallel_size", d.tensor_model_parallel_size)
    if config.model is not None:
        check_model(config.model, d.tensor_model_parallel_size, d.kv_replicator,
                    d.pipeline_model_parallel_size, data.seq_length)


def check_model(m: ModelConfig, tp: int, kv_replicator: int, pp: int, seq: int) -> None:
    """The decoder's sizes against TP, PP and the sequence."""
    _divides("model.num_attention_heads", "num_attention_heads", m.num_attention_heads,
             "tensor_model_parallel_size", tp)
    _divides("model.hidden_size", "hidden_size", m.hidden_size, "num_attention_heads",
             m.num_attention_heads)
    _divides("model.num_attention_heads", "num_attention_heads", m.num_attention_heads,
             "num_kv_heads", m.num_kv_heads)
    replicated = m.num_kv_heads * kv_replicator
    if replicated % tp:
        raise TrainConfigError(
            "distributed_strategy.kv_replicator",
            f"num_kv_heads x kv_replicator = {m.num_kv_heads} x {kv_replicator} = "
            f"{replicated} is not divisible by tensor_model_parallel_size {tp}")
    _divides("model.ffn_hidden_size", "ffn_hidden_size", m.ffn_hidden_size,
             "tensor_model_parallel_size", tp)
    _divides("model.vocab_size", "vocab_size", m.vocab_size, "tensor_model_parallel_size", tp)
    pieces = PIECES_PER_LAYER if m.pipeline_split == "flops" else 1
    if not m.pipeline_cuts and m.num_layers * pieces < pp:
        what = "a layer" if pieces == 1 else f"one of a layer's {pieces} pieces"
        raise TrainConfigError("model.num_layers", f"num_layers {m.num_layers} is too few for "
                               f"pipeline_model_parallel_size {pp}: every stage needs {what}")
    if seq > m.max_position_embeddings:
        raise TrainConfigError("data.seq_length", f"seq_length {seq} exceeds "
                                                  f"max_position_embeddings "
                                                  f"{m.max_position_embeddings}")


def parse_cuts(cuts: tuple[str, ...], num_layers: object, pp: int) -> tuple[int, ...]:
    """The last layer index of each stage but the last, from NxD's `pipeline_cuts`
    (`model.layers.N` ends a stage with layer N); their count must be PP - 1."""
    key = "model.pipeline_cuts"
    if not cuts:
        return ()
    if len(cuts) != pp - 1:
        raise TrainConfigError(key, f"{len(cuts)} cut(s) for pipeline_model_parallel_size "
                                    f"{pp}: PP stages need PP - 1 = {pp - 1}")
    assert isinstance(num_layers, int)
    out: list[int] = []
    for name in cuts:
        match = _LAYER_NAME.search(name)
        if not match:
            raise TrainConfigError(key, f"{name!r} does not name a layer "
                                        "(model.layers.N)")
        index = int(match.group(1))
        if not (out[-1] if out else -1) < index < num_layers - 1:
            raise TrainConfigError(key, f"{name!r}: cuts must rise and leave every stage "
                                        f"a layer of the {num_layers} (0..{num_layers - 1})")
        out.append(index)
    return tuple(out)
