"""`build_stage(cfg, plan)`: one rank's programs of one pipeline stage, as a Module.

See the package docstring (`nxd/models/decoder/__init__.py`) for the functions, their inputs
and outputs. A stage without the head is built as one function, its forward followed by the
gradient `passes.autodiff` appends, and then split (`passes.autodiff.stash`): `forward`
returns its output and the stash (the forward values the backward reads), which 1F1B keeps
until the micro-batch's backward, so nothing is computed twice unless recomputation asks
for it. The backward ends with:

- with sequence parallelism, one all_reduce (sum over the TP group) of the gradients of the
  replicated parameters (norms, row-parallel biases, positions): each rank only saw its
  part of the sequence;
- with `kv_replicator` > 1, one all_reduce of the key/value columns of each layer's
  `attn.qkv` (and `qkv_bias`) gradient over the ranks holding copies of the same heads,
  so every copy gets the whole gradient and they stay equal.
Recomputation (`plan.recompute`) rewrites the backward with `passes.autodiff.recompute`
before the split, so the stash holds only what the policy keeps: with `full` each layer's
input, with `selective` everything but attention's inner products.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from nxcc.ir.builder import Builder
from nxcc.ir.clone import clone_function
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.rewrite import reachable_functions
from nxcc.ir.types import TensorType
from nxcc.nxd.models.decoder.blocks import Blocks
from nxcc.nxd.models.decoder.config import (
    MLP_FIRST,
    PIECES_PER_LAYER,
    DecoderConfig,
    DecoderError,
    StagePlan,
    check_plan,
)
from nxcc.nxd.models.decoder.handoff import pack, packed_type, unpack
from nxcc.nxd.models.decoder.model import Model
from nxcc.nxd.models.decoder.weights import ParamSpec, stage_specs
from nxcc.passes.autodiff import rules  # noqa: F401  (registers the gradient rules)
from nxcc.passes.autodiff.backprop import backpropagate
from nxcc.passes.autodiff.recompute import rematerialize
from nxcc.passes.autodiff.stash import split_forward
from nxcc.passes.dead_code_elimination import DeadCodeElimination

TOKEN_DTYPE = DType.S32


@dataclass
class _Stage:
    """A function being built: its parameters, stage input and what the forward made."""

    fn: Function
    b: Builder
    blocks: Blocks
    specs: list[ParamSpec]
    params: list[Value]
    inp: Value
    model: Model
    layers: list[list[Op]] = field(default_factory=list)


def activation_type(cfg: DecoderConfig, plan: StagePlan) -> TensorType:
    """The type of the activations between stages: [micro_batch, seq (/ TP with sequence
    parallelism), hidden]."""
    s = plan.seq_length // plan.tp_size if plan.sequence_parallel else plan.seq_length
    dtype = DType.F64 if cfg.dtype == "float64" else DType.F32
    return TensorType(dtype, (plan.micro_batch, s, cfg.hidden_size))


def token_type(plan: StagePlan) -> TensorType:
    """The type of the token and label inputs: s32 [micro_batch, seq]."""
    return TensorType(TOKEN_DTYPE, (plan.micro_batch, plan.seq_length))


def handoff_types(cfg: DecoderConfig, plan: StagePlan, piece: int) -> list[TensorType]:
    """The types of the values piece `piece` reads from the one before it on `plan`'s rank
    (`Model.run`): x alone at the start of an attention or an MLP, else found by building
    the layer's earlier pieces."""
    within = piece % PIECES_PER_LAYER
    if within in (0, MLP_FIRST):
        return [activation_type(cfg, plan)]
    start = piece - within + (MLP_FIRST if within > MLP_FIRST else 0)
    scratch = replace(plan, first_piece=start, last_piece=piece, has_embedding=False,
                      has_head=False, first_layer=0, last_layer=0)
    st = _begin(Module("handoff"), "handoff", cfg, scratch)
    st.blocks.prepare()
    state = st.model.run((st.inp,), start // PIECES_PER_LAYER,
                         range(start % PIECES_PER_LAYER, within))
    return [v.type for v in state]


def _begin(module: Module, name: str, cfg: DecoderConfig, plan: StagePlan) -> _Stage:
    specs = stage_specs(cfg, plan)
    dtype = DType.F64 if cfg.dtype == "float64" else DType.F32
    params = [Value(TensorType(dtype, s.local_shape(plan.tp_size)), s.name) for s in specs]
    inp = Value(token_type(plan), "tokens") if plan.has_embedding \
        else Value(packed_type(handoff_types(cfg, plan, plan.pieces.start)), "x_in")
    fn = module.add_function(Function(name, [*params, inp]))
    b = Builder(module, fn)
    blocks = Blocks(b, cfg, plan)
    model = Model(blocks, {p.name or "": p for p in params})
    return _Stage(fn, b, blocks, specs, params, inp, model)


def _forward(st: _Stage) -> Value:
    """The stage's forward up to what it hands the next stage (`handoff.pack`)."""
    plan = st.blocks.plan
    st.blocks.prepare()
    if plan.has_embedding:
        state: tuple[Value, ...] = (st.model.embed(st.inp),)
    else:
        state = unpack(st.b, st.inp, handoff_types(st.blocks.cfg, plan, plan.pieces.start))
    n = PIECES_PER_LAYER
    for i in plan.layers:  # one recomputation segment per layer (or its part)
        start = len(st.fn.body)
        run = range(max(plan.pieces.start - n * i, 0), min(plan.pieces.stop - n * i, n))
        state = st.model.run(state, i, run)
        st.layers.append(st.fn.body[start:])
    return pack(st.b, state)


def _wrt(st: _Stage) -> list[Value]:
    return st.params if st.blocks.plan.has_embedding else [*st.params, st.inp]


def _backward(st: _Stage, seeds: dict[Value, Value]) -> list[Value]:
    """The gradients of `_wrt(st)` (parameters' reduced as the module docstring says),
    with the recomputation the plan asks for."""
    start = len(st.fn.body)
    grads = backpropagate(st.b.module, st.fn, _wrt(st), seeds, st.blocks.stop)
    mode = st.blocks.plan.recompute
    segments = st.layers if mode == "full" else st.blocks.core_attention \
        if mode == "selective" else []
    rematerialize(st.fn, segments, start)
    return _reduce_grads(st, grads)


def _reduce_grads(st: _Stage, grads: list[Value]) -> list[Value]:
    k, b = st.blocks, st.b
    grads = list(grads)
    if k.sp:
        shared = [i for i, s in enumerate(st.specs) if s.replicated]
        if shared:
            summed = b.ops("all_reduce", [grads[i] for i in shared],
                           {"reduction": "sum", "replica_groups": k.groups})
            for i, g in zip(shared, summed, strict=True):
                grads[i] = g
    rep = k.plan.kv_replicator
    if rep > 1:
        groups = tuple(tuple(range(h * rep, (h + 1) * rep)) for h in range(k.cfg.kv_heads))
        for i, s in enumerate(st.specs):
            if s.name.endswith((".attn.qkv", ".attn.qkv_bias")):
                g = grads[i]
                width = g.type.shape[-1]
                # the key/value columns of the slice (or of the pipeline part of it held)
                q = max(k.heads * k.cfg.head_dim - (s.part[0] if s.part else 0), 0)
                if q >= width:
                    continue
                kv = b.all_reduce(k.slice_last(g, q, width), reduction="sum",
                                  replica_groups=groups)
                grads[i] = kv if q == 0 else b.concatenate(k.slice_last(g, 0, q), kv,
                                                           dimension=g.type.rank - 1)
    return grads


def _finish(st: _Stage, results: list[Value], names: list[str], grads: list[Value]) -> None:
    if not st.blocks.plan.has_embedding:
        results, names = [*results, grads[-1]], [*names, "g_in"]
        grads = grads[:-1]
    st.fn.results = [*results, *grads]
    st.fn.result_names = [*names, *(f"grad.{s.name}" for s in st.specs)]


def _build_forward_and_backward(module: Module, cfg: DecoderConfig, plan: StagePlan) -> None:
    """`backward` differentiates the stage's forward, which `split_forward` then moves into
    `forward`, returning the stash the backward reads (see the module docstring)."""
    st = _begin(module, "backward", cfg, plan)
    x = _forward(st)
    keep = len(st.fn.params)
    g_out = Value(x.type, "g_out")
    st.fn.params.append(g_out)
    start = len(st.fn.body)
    _finish(st, [], [], _backward(st, {x: g_out}))
    forward = split_forward(st.fn, start, x, keep, "forward")
    module.functions = {"forward": forward, **module.functions}


def _build_forward_backward(module: Module, cfg: DecoderConfig, plan: StagePlan) -> None:
    st = _begin(module, "forward_backward", cfg, plan)
    labels = Value(token_type(plan), "labels")
    st.fn.params.append(labels)
    x = _forward(st)
    loss_sum, count = st.model.loss(x, labels)
    seed = st.b.splat(1.0, loss_sum.type)
    _finish(st, [loss_sum, count], ["loss_sum", "token_count"],
            _backward(st, {loss_sum: seed}))


def build_stage(cfg: DecoderConfig, plan: StagePlan) -> Module:
    """The programs of `plan`'s stage on its tensor-parallel rank (DecoderError when the
    plan does not fit the model)."""
    check_plan(cfg, plan)
    module = Module(f"decoder_{cfg.family}_tp{plan.tp_rank}of{plan.tp_size}_pieces"
                    f"{plan.pieces.start}to{plan.pieces.stop}")
    if plan.has_head:
        _build_forward_backward(module, cfg, plan)
        module.entry = "forward_backward"
    else:
        _build_forward_and_backward(module, cfg, plan)
        module.entry = "backward"
    return module


def build_logits(cfg: DecoderConfig, plan: StagePlan) -> Module:
    """`logits(*P, tokens) -> logits [micro_batch, seq_length, vocab / TP]`: the forward of
    a stage holding the whole model (the embedding and the head), for inference and for
    checking weights against another implementation."""
    check_plan(cfg, plan)
    if not (plan.has_embedding and plan.has_head):
        raise DecoderError("logits are computed by a stage holding the embedding and the "
                           "head")
    module = Module(f"decoder_{cfg.family}_logits_tp{plan.tp_rank}of{plan.tp_size}")
    st = _begin(module, "logits", cfg, plan)
    st.fn.results = [st.model.logits(_forward(st))]
    st.fn.result_names = ["logits"]
    module.entry = "logits"
    return module


def program(module: Module, name: str) -> Module:
    """A module holding function `name` of a stage module as its entry (with the
    computations it calls), dead code removed: what the engine compiles and runs."""
    out = Module(f"{module.name}.{name}", entry=name)
    for fn_name in reachable_functions(module, name):
        out.add_function(clone_function(module.functions[fn_name]))
    DeadCodeElimination().run(out)
    return out
