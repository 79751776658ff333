"""Text tests of the decoder's IR: the collectives a 1-layer TP=2 stage holds (Megatron's
plan: per layer forward 2 tp_copy + 2 all_reduce, or with sequence parallelism 2 all_gather
+ 2 reduce_scatter), their gradients in the backward, the program signatures and the
refusals of plans that do not fit."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from nxcc.ir.parser import parse_module
from nxcc.ir.printer import print_module
from nxcc.ir.verifier import verify_module
from nxcc.nxd.models.decoder import DecoderError, StagePlan, build_stage, program
from tests.nxd.models.decoder.helpers import gpt, llama

KINDS = ("tp_copy", "all_reduce", "all_gather", "reduce_scatter", "all_to_all",
         "collective_permute")


def _text(sp: bool, fn: str, layers: int = 1, **kw) -> str:
    plan = StagePlan(tp_rank=1, tp_size=2, sequence_parallel=sp, last_layer=layers,
                     has_embedding=False, has_head=False, micro_batch=2, seq_length=8, **kw)
    module = program(build_stage(llama(layers=layers), plan), fn)
    verify_module(module)
    return print_module(module)


def _collectives(text: str) -> Counter:
    return Counter(m.group(1) for m in re.finditer(r"= (\w+)\(", text) if m.group(1) in KINDS)


@pytest.mark.parametrize("layers", [1, 2])
def test_forward_without_sp_has_two_all_reduces_per_layer(layers: int) -> None:
    text = _text(False, "forward", layers)
    assert _collectives(text) == {"tp_copy": 2 * layers, "all_reduce": 2 * layers}
    assert text.count("replica_groups = [[0, 1]]") == 4 * layers
    assert "reduction = sum" in text


def test_forward_with_sp_gathers_and_scatters_along_the_sequence() -> None:
    text = _text(True, "forward")
    assert _collectives(text) == {"all_gather": 2, "reduce_scatter": 2}
    # the stage's input and output are the rank's half of the sequence
    assert "%x_in: f32[2,4,16]" in text and '"x_out": f32[2,4,16]' in text
    assert text.count("dimension = 1") >= 4


def test_backward_holds_the_conjugate_collectives() -> None:
    # tp_copy's gradient is an all_reduce; the forward's all_reduces pass gradients as is.
    # The backward reads the forward's stash, and repeats the norms (and their tp_copy, an
    # identity that moves nothing) rather than keep the normed inputs: the 2 gradient
    # all_reduces are its only communication.
    assert _collectives(_text(False, "backward")) == {"tp_copy": 2, "all_reduce": 2}
    # all_gather <-> reduce_scatter, one all_reduce of the replicated norms' gradients, and
    # as Megatron does, the 2 sequence-parallel inputs gathered again rather than kept
    assert _collectives(_text(True, "backward")) == {"all_gather": 4, "reduce_scatter": 2,
                                                     "all_reduce": 1}


@pytest.mark.parametrize(("recompute", "kinds"), [
    ("full", {"tp_copy": 2, "all_reduce": 3}), ("selective", {"tp_copy": 2, "all_reduce": 2})])
def test_recomputation_is_what_the_backward_repeats(recompute: str, kinds: dict) -> None:
    # full: the layer again from its stashed input (its forward collectives but the dead
    # last all_reduce); selective: attention's inner products only, no collective
    assert _collectives(_text(False, "backward", recompute=recompute)) == kinds
    stash = _text(False, "forward", recompute=recompute).count('"stash.')
    none = _text(False, "forward").count('"stash.')
    assert stash < none


def test_kv_replicas_sum_their_gradients_in_pairs() -> None:
    plan = StagePlan(tp_rank=3, tp_size=4, kv_replicator=2, last_layer=1, micro_batch=2,
                     seq_length=8)
    text = print_module(program(build_stage(llama(layers=1), plan), "forward_backward"))
    assert "replica_groups = [[0, 1], [2, 3]]" in text


def test_signatures_and_round_trip() -> None:
    plan = StagePlan(first_layer=1, last_layer=2, has_embedding=False, has_head=True,
                     micro_batch=2, seq_length=8)
    module = build_stage(gpt(), plan)
    fb = module.functions["forward_backward"]
    assert [p.name for p in fb.params][-2:] == ["x_in", "labels"]
    assert fb.result_names[:3] == ["loss_sum", "token_count", "g_in"]
    assert fb.result_names[3] == "grad.layers.1.attn_norm.weight"
    assert fb.result_names[-1] == "grad.head"
    text = print_module(program(module, "forward_backward"))
    assert print_module(parse_module(text)) == text


@pytest.mark.parametrize("kw,message", [
    ({"tp_size": 3}, "num_attention_heads 4 does not divide by tensor parallel size 3"),
    ({"tp_size": 4}, "num_kv_heads 2 does not divide by tensor parallel size 4 (set "
                     "kv_replicator to 2)"),
    ({"tp_size": 4, "kv_replicator": 4}, "num_kv_heads 2 x kv_replicator 4 must equal"),
    ({"last_layer": 3}, "layers [0, 3) are not within the model's 2"),
    ({"seq_length": 32}, "seq_length 32 exceeds max_position_embeddings 16"),
    ({"tp_size": 2, "sequence_parallel": True, "seq_length": 7},
     "seq_length 7 does not divide by tensor parallel size 2"),
    ({"recompute": "some"}, "recompute 'some' is not one of none, selective, full"),
    ({"last_layer": 0, "has_embedding": False, "has_head": False},
     "a stage needs at least one layer, the embedding or the head"),
])
def test_plans_that_do_not_fit_are_refused(kw: dict, message: str) -> None:
    args = {"last_layer": 2, "micro_batch": 2, "seq_length": 8, **kw}
    with pytest.raises(DecoderError) as err:
        build_stage(llama(), StagePlan(**args))
    assert message in str(err.value)
