"""An ONNX model as the engine's model, in place of the built-in decoder (`model.onnx_path`).

`onnx_builder(onnx_cfg, data, distributed)` imports the model once with its floating-point
initializers as parameters (as `compile --training` does, `driver.train.compile_step`), takes its
one input that is not an initializer as the token ids [micro_batch, seq_length] (given to
the program as s32 and converted to the model's integer type), and appends cross-entropy
of the output `model.onnx_loss_input` (logits, classes last) against the labels
`model.onnx_label_input`, summed over the positions whose label is not -100, with the count
of those positions. The differentiated stage is the engine's one program

    forward_backward(*params, tokens, labels) -> (loss_sum, token_count, *grads)

for every rank: the parameters are those the loss depends on differentiably (the other
floating-point initializers are constants again). An ONNX model trains with data
parallelism (and ZeRO-1) of any degree; tensor and pipeline parallelism need a model the
engine can cut, the built-in decoder, and are refused. `activations_checkpoint_granularity`
is not acted on for it (the warning line of ignored keys lists it).
"""

from __future__ import annotations

import math
import threading

import numpy as np
import onnx

from nxcc.backend.program.memory_plan import peak_activation_bytes
from nxcc.compiler.onnx import FrontendError
from nxcc.compiler.onnx.loader import load_model
from nxcc.driver.options import CompileOptions
from nxcc.driver.train.compile_step import import_with_parameters
from nxcc.driver.train.config import DataConfig, DistributedConfig
from nxcc.driver.train.config_checks import check_onnx_layout
from nxcc.driver.train.config_model import OnnxModelConfig
from nxcc.driver.train.errors import TrainConfigError
from nxcc.driver.train.model_stage import Pipeline
from nxcc.driver.train.stage import StageBuild, StageBuilder, StagePlan
from nxcc.ir import ops
from nxcc.ir.builder import Builder
from nxcc.ir.clone import clone_function
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.rewrite import replace_uses
from nxcc.ir.types import TensorType
from nxcc.nxd.step import StepError
from nxcc.nxd.step.loss import freeze_params, gradients
from nxcc.passes.autodiff import rules  # noqa: F401  (registers the gradient rules)
from nxcc.passes.autodiff.differentiate import differentiable_params
from nxcc.passes.autodiff.losses import LossError, cross_entropy_sum
from nxcc.passes.dead_code_elimination import DeadCodeElimination

KEY = "model.onnx_path"


def _token_input(proto: onnx.ModelProto) -> str:
    """The model's one input that is not an initializer (the token ids)."""
    inits = {t.name for t in proto.graph.initializer}
    names = [i.name for i in proto.graph.input if i.name not in inits]
    if len(names) != 1:
        raise TrainConfigError(KEY, f"the model takes {len(names)} inputs "
                               f"({', '.join(names) or 'none'}); nxcc trains a model whose "
                               "one input is the token ids")
    return names[0]


def _import(cfg: OnnxModelConfig, proto: onnx.ModelProto, tokens: str,
            shape: tuple[int, int]) -> tuple[Module, dict[str, np.ndarray]]:
    try:
        return import_with_parameters(proto, CompileOptions(target="trn1",
                                                            input_shapes={tokens: shape}))
    except FrontendError as exc:
        raise TrainConfigError(KEY, f"{cfg.path}: the token ids [micro_batch_size, "
                               f"seq_length] = {list(shape)} as input {tokens!r}: "
                               f"{str(exc).split(': ', 1)[-1]}") from None


def _tokens_as_s32(fn: Function, name: str) -> Value:
    """Replace the token input by an s32 one, converted to the model's type."""
    old = next(p for p in fn.params if p.name == name)
    if not old.type.dtype.is_integer:
        raise TrainConfigError(KEY, f"the input {name!r} is {old.type}; the token ids "
                               "need an integer input")
    new = Value(old.type.with_dtype(DType.S32), name)
    if old.type.dtype is DType.S32:
        replace_uses(fn, {old: new})
    else:
        op = Op(ops.convert, [new], [old.type], {"dtype": old.type.dtype})
        fn.body.insert(0, op)
        replace_uses(fn, {old: op.result})
    fn.params[fn.params.index(old)] = new
    return new


def _logits(fn: Function, cfg: OnnxModelConfig) -> Value:
    names = list(fn.result_names or [])
    if cfg.loss_input not in names:
        raise TrainConfigError("model.onnx_loss_input", f"{cfg.loss_input!r} is not an "
                               f"output of the model (outputs: {', '.join(names)})")
    return fn.results[names.index(cfg.loss_input)]


def _loss(b: Builder, logits: Value, labels: Value, cfg: OnnxModelConfig
          ) -> tuple[Value, Value]:
    shape = logits.type.shape
    if shape[:-1] != labels.type.shape and math.prod(shape[:-1]) == \
            math.prod(labels.type.shape):
        labels = b.reshape(labels, shape=shape[:-1])
    try:
        return cross_entropy_sum(b, logits, labels)
    except LossError as exc:
        raise TrainConfigError("model.onnx_loss_input", f"{cfg.loss_input!r}: {exc}") \
            from None


def build_onnx_stage(cfg: OnnxModelConfig, micro_batch: int, seq_length: int
                     ) -> StageBuild:
    """The stage every rank runs (see the module docstring)."""
    proto, _ = _load(cfg)
    tokens = _token_input(proto)
    module, initial = _import(cfg, proto, tokens, (micro_batch, seq_length))
    fn = module.entry_function
    if cfg.label_input in {p.name for p in fn.params} | set(initial):
        raise TrainConfigError("model.onnx_label_input", f"{cfg.label_input!r} is already "
                               "a name of the model")
    logits = _logits(fn, cfg)
    token_param = _tokens_as_s32(fn, tokens)
    labels = Value(TensorType(DType.S32, (micro_batch, seq_length)), cfg.label_input)
    b = Builder(module, fn)
    loss_sum, count = _loss(b, logits, labels, cfg)
    candidates = [p for p in fn.params if p.name in initial]
    trainable = differentiable_params(fn, loss_sum, candidates)
    if not trainable:
        raise TrainConfigError(KEY, "the loss depends differentiably on no floating-point "
                               "initializer of the model: nothing to train")
    freeze_params(fn, [p for p in candidates if p not in trainable], initial)
    try:
        grads = gradients(module, fn, trainable, loss_sum)
    except StepError as exc:
        raise TrainConfigError(KEY, str(exc)) from None
    fn.params = [*trainable, token_param, labels]
    fn.results = [loss_sum, count, *grads]
    fn.result_names = ["loss_sum", "token_count", *(f"grad.{p.name}" for p in trainable)]
    fn.name = "forward_backward"
    module.functions = {"forward_backward": fn,
                        **{k: v for k, v in module.functions.items() if v is not fn}}
    module.entry = "forward_backward"
    DeadCodeElimination().run(module)
    params = [(p.name or "", np.asarray(initial[p.name or ""], np.float32)) for p in trainable]
    return StageBuild(module, params,
                      peak_activation_bytes=peak_activation_bytes(module, "forward_backward"),
                      extra={"classes": logits.type.shape[-1]})


def _load(cfg: OnnxModelConfig) -> tuple[onnx.ModelProto, str]:
    try:
        return load_model(cfg.path)
    except FrontendError as exc:
        raise TrainConfigError(KEY, f"{cfg.path}: {exc}") from None


def onnx_builder(cfg: OnnxModelConfig, data: DataConfig, distributed: DistributedConfig
                 ) -> tuple[StageBuilder, Pipeline, int]:
    """The builder of every rank's stage (a copy of one import), the single-stage pipeline,
    and the model's vocabulary (the logits' class dimension, which bounds the token ids)."""
    check_onnx_layout(distributed)
    stage = build_onnx_stage(cfg, data.micro_batch_size, data.seq_length)
    lock = threading.Lock()

    def build(plan: StagePlan) -> StageBuild:
        with lock:
            module = Module(stage.module.name, {n: clone_function(f) for n, f in
                                                stage.module.functions.items()},
                            stage.module.entry)
        return StageBuild(module, stage.params,
                          peak_activation_bytes=stage.peak_activation_bytes,
                          extra={"slice": dict})

    return build, Pipeline((), False, None), int(stage.extra["classes"])
