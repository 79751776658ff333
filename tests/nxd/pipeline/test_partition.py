"""Cutting a model of the primitives into stages: what crosses a cut, what is rebuilt, what
is refused; shared weights, the entries each stage counts, and which replicated parameters'
gradients the TP ranks sum."""

from __future__ import annotations

import numpy as np
import pytest

from nxcc import nxd
from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType
from nxcc.ir.printer import print_module
from nxcc.ir.types import TensorType
from nxcc.nxd.model import ModelError, RankSpec
from nxcc.nxd.pipeline.partition import cut_stage
from nxcc.nxd.pipeline.stage import build_stage, stage_users, trace
from nxcc.nxd.pipeline.tp_partial import partial_gradients


def _two_layers(m: nxd.Model) -> tuple[Value, Value]:
    """A constant mask used on both sides of a cut, a weight both sides read."""
    b = m.b
    x = m.input("x", (4, 8), "float32")
    labels = m.input("labels", (4,), "int32")
    shape = (m.micro_batch, 4, 4)
    mask = b.broadcast_in_dim(b.constant(np.tril(np.ones((4, 4), bool))), shape=shape,
                              broadcast_dimensions=(1, 2))
    zeros = b.splat(0.0, TensorType(DType.F32, shape))
    shared = m.parameter("shared", (8, 4))
    h = b.select(mask, nxd.matmul(m, x, shared), zeros)
    nxd.pipeline_cut(m, "first")
    y = nxd.matmul(m, h, m.parameter("mid", (4, 8)))
    y = b.select(mask, nxd.matmul(m, y, shared), zeros)
    nxd.pipeline_cut(m, "second")
    logits = nxd.matmul(m, y, m.parameter("head", (4, 4)))
    return nxd.parallel_cross_entropy(m, logits, labels)


def test_a_stage_takes_what_crosses_and_rebuilds_what_is_free() -> None:
    t = trace(_two_layers, RankSpec(micro_batch=2), frozenset({1, 2}))
    assert t.pieces == 3
    middle = cut_stage(t.model, t.loss, range(1, 2), "stage")
    assert [p.name for p in middle.fn.params] == ["shared", "mid", "x_in"]
    assert middle.x_in is not None and middle.x_in.type.shape == (2, 4, 4)
    text = print_module(middle.module)
    assert "constant" in text  # the mask is rebuilt, not sent
    first = build_stage(t, range(0, 1))
    fn = first.module.functions["forward"]
    assert [p.name for p in fn.params] == ["shared", "x"]
    last = build_stage(t, range(2, 3))
    fb = last.module.functions["forward_backward"]
    assert [p.name for p in fb.params] == ["head", "x_in", "labels"]
    assert fb.result_names[:3] == ["loss_sum", "token_count", "g_in"]


def test_a_weight_two_stages_read_is_shared_and_counted_once() -> None:
    t = trace(_two_layers, RankSpec(micro_batch=2), frozenset({1, 2}))
    assert stage_users(t, (1, 2)) == {"shared": (0, 1)}
    first, middle = build_stage(t, range(0, 1)), build_stage(t, range(1, 2))
    assert first.shared == middle.shared == frozenset({"shared"})
    assert first.owned["shared"].all() and not middle.owned["shared"].any()
    assert middle.owned["mid"].all()


def test_only_floating_point_values_cross() -> None:
    def ids_cross(m: nxd.Model) -> tuple[Value, Value]:
        x = m.input("x", (4,), "float32")
        w = m.parameter("w", (4,))
        ids = m.b.convert(m.b.multiply(x, m.b.broadcast_in_dim(w, shape=x.type.shape,
                                                               broadcast_dimensions=(1,))),
                          DType.S32)
        nxd.pipeline_cut(m, "ids")
        y = m.b.convert(ids, DType.F32)
        total = nxd.reduce_sum(m, y, (0, 1))
        return total, total

    t = trace(ids_cross, RankSpec(micro_batch=1), frozenset({1}))
    with pytest.raises(ModelError, match=r"s32\[1,4\].*crosses the pipeline cut after ids"):
        build_stage(t, range(1, 2))


def _sequence_parallel_norm(m: nxd.Model, both: bool = False) -> tuple[Value, Value]:
    x = m.input("x", (4, 8), "float32")
    labels = m.input("labels", (4,), "int32")
    norm = nxd.LayerNorm(m, "norm", 8)
    h = norm(nxd.scatter_to_sequence_parallel_region(m, x))
    if both:
        h = m.b.add(h, nxd.scatter_to_sequence_parallel_region(m, norm(x)))
    h = nxd.gather_from_sequence_parallel_region(m, h)
    logits = nxd.ColumnParallelLinear(m, "head", 8, 4, gather_output=False)
    return nxd.parallel_cross_entropy(m, nxd.matmul(m, h, logits.weight), labels)


@pytest.mark.parametrize(("tp", "sp", "partial"), [
    (2, True, {"norm.weight", "norm.bias"}), (2, False, set()), (1, True, set())])
def test_replicated_weights_on_a_sequence_shard_are_summed(tp: int, sp: bool,
                                                           partial: set) -> None:
    t = trace(_sequence_parallel_norm, RankSpec(0, tp, sp, 1, 2))
    assert partial_gradients(t.model, list(t.loss)) == partial


def test_a_weight_used_both_split_and_whole_is_refused() -> None:
    t = trace(lambda m: _sequence_parallel_norm(m, both=True), RankSpec(0, 2, True, 1, 2))
    with pytest.raises(ModelError, match="'norm.bias' is used both"):
        partial_gradients(t.model, list(t.loss))


@pytest.mark.parametrize(("build", "message"), [
    (lambda m: None, "must return \\(loss_sum, count\\)"),
    (lambda m: (nxd.pipeline_cut(m, "a"), nxd.pipeline_cut(m, "a")), "placed twice"),
    (lambda m: (m.parameter("w", (4,)), m.parameter("w", (5,))), "declared twice"),
    (lambda m: m.parameter("w", (3, 4), axis=0), "3 entries along axis 0 do not divide"),
])
def test_malformed_models_are_refused_in_one_line(build, message: str) -> None:
    with pytest.raises(ModelError, match=message):
        trace(build, RankSpec(0, 2))


def test_an_unknown_checkpoint_granularity_is_refused() -> None:
    def build(m: nxd.Model) -> None:
        with nxd.checkpoint(m, "some"):
            pass

    with pytest.raises(ModelError, match="'some' is not one of full, selective"):
        trace(build, RankSpec())
