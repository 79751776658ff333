"""A loss on an imported model's output, its trainable parameters and their gradients.

An imported model (ONNX, with its floating-point initializers as parameters) gets a loss on
one of its outputs against a new labels input (`add_loss`); the parameters it trains are
those the loss depends on differentiably, or the ones named (`trainable_params`); the other
candidates become constants again (`freeze_params`); `gradients` appends the backward. A
problem is a `StepError` whose message names the output, label, parameter or op.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import Dense
from nxcc.ir.builder import Builder
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.ir.rewrite import replace_uses
from nxcc.passes.autodiff.differentiate import GradientError, differentiable_params, differentiate
from nxcc.passes.autodiff.losses import LOSSES, LossError, label_type


class StepError(ValueError):
    """The training step cannot be built as asked (the message names what and why);
    `unsupported`: an op of the model has no gradient rule (rather than a wrong option)."""

    def __init__(self, message: str, unsupported: bool = False) -> None:
        super().__init__(message)
        self.unsupported = unsupported


def output_named(fn: Function, name: str, option: str) -> Value:
    """The result of `fn` named `name` (StepError naming `option` and the outputs)."""
    names = fn.result_names or [f"output{i}" for i in range(len(fn.results))]
    if name not in names:
        raise StepError(f"{option} {name!r} is not an output of the model (outputs: "
                        f"{', '.join(names)})")
    return fn.results[names.index(name)]


def add_loss(b: Builder, output: Value, loss: str, label_name: str, output_name: str
             ) -> tuple[Value, Value]:
    """Loss `loss` (one of `passes.autodiff.losses.LOSSES`) of `output` against a new
    labels value named `label_name`: (the scalar loss, the labels value)."""
    if any(p.name == label_name for p in b.function.params):
        raise StepError(f"--label-input {label_name!r} is already an input of the model")
    try:
        labels = Value(label_type(loss, output.type), label_name)
        return LOSSES[loss](b, output, labels), labels
    except LossError as exc:
        raise StepError(f"--loss {loss} on output {output_name!r}: {exc}") from None


def trainable_params(fn: Function, loss: Value, candidates: Sequence[Value],
                     names: Sequence[str] = ()) -> list[Value]:
    """The parameters to train: those of `names`, else every candidate the loss depends
    on differentiably; StepError when there is none or a name is not one."""
    found = differentiable_params(fn, loss, candidates)
    if not names:
        if not found:
            raise StepError("no trainable parameter: the loss depends differentiably on no "
                            "floating-point initializer of the model")
        return found
    by_name = {v.name: v for v in candidates}
    for n in names:
        if n not in by_name:
            raise StepError(f"--trainable {n!r} is not a floating-point initializer of the "
                            "model")
        if by_name[n] not in found:
            raise StepError(f"--trainable {n!r}: the loss does not depend on it "
                            "differentiably")
    return [by_name[n] for n in names]


def freeze_params(fn: Function, params: Sequence[Value], initial: dict[str, np.ndarray]
                  ) -> None:
    """Turn `params` back into constants holding their initial values."""
    mapping: dict[Value, Value] = {}
    consts = []
    for p in params:
        op = Op(ops.constant, [], [p.type], {"value": Dense.of(initial[p.name or ""],
                                                              p.type.dtype)})
        op.result.name = p.name
        consts.append(op)
        mapping[p] = op.result
    fn.body[:0] = consts
    replace_uses(fn, mapping)
    fn.params = [p for p in fn.params if p not in mapping]


def gradients(module: Module, fn: Function, wrt: Sequence[Value], loss: Value) -> list[Value]:
    """The gradients of `loss` for `wrt`, appended to `fn` (StepError, unsupported, when an
    op has no gradient rule)."""
    try:
        return differentiate(module, fn, wrt, loss)
    except GradientError as exc:
        raise StepError(f"cannot differentiate the loss: {exc}", unsupported=True) from None
