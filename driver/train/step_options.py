"""The flags of `neuronx-cc compile --training ...` as the step's options (`nxd.step.program.
StepOptions`), validated in one place."""

from __future__ import annotations

from nxcc.driver.errors import CompileError
from nxcc.errors import BAD_ARGUMENT
from nxcc.nxd.step.program import StepOptions
from nxcc.passes.autodiff.losses import LOSSES
from nxcc.passes.autodiff.optimizers import OPTIMIZERS, OptimizerConfig
from nxcc.passes.autodiff.schedules import DECAYS, Schedule


def _bad(message: str) -> CompileError:
    return CompileError(BAD_ARGUMENT, message)


def parse_betas(text: str) -> tuple[float, float]:
    """`B1,B2` -> (b1, b2)."""
    try:
        b1, b2 = (float(v) for v in text.split(","))
    except ValueError:
        raise _bad(f"--betas {text!r} is not two numbers B1,B2") from None
    return b1, b2


def training_options(*, loss: str | None, loss_input: str | None, label_input: str | None,
                     optimizer: str | None, lr: float | None, weight_decay: float = 0.0,
                     betas: str = "0.9,0.999", eps: float = 1e-8, momentum: float = 0.0,
                     nesterov: bool = False, clip_grad_norm: float | None = None,
                     warmup_steps: int = 0, decay: str | None = None,
                     max_steps: int | None = None, trainable: str | None = None,
                     output_grad_norm: bool = False, mixed_precision: str | None = None,
                     bf16_weights: bool = False, stochastic_rounding: bool = False
                     ) -> StepOptions:
    """The options the flags give; CompileError NCC_EARG001 naming the first bad one."""
    for flag, value in (("--loss", loss), ("--loss-input", loss_input),
                        ("--label-input", label_input), ("--optimizer", optimizer),
                        ("--lr", lr)):
        if value is None:
            raise _bad(f"--training needs {flag}")
    assert loss and loss_input and label_input and optimizer and lr is not None
    if loss not in LOSSES:
        raise _bad(f"--loss {loss!r} is not one of {', '.join(LOSSES)}")
    if optimizer not in OPTIMIZERS:
        raise _bad(f"--optimizer {optimizer!r} is not one of {', '.join(sorted(OPTIMIZERS))}")
    if momentum and optimizer != "sgd":
        raise _bad(f"--momentum applies to --optimizer sgd, not {optimizer}")
    if lr <= 0:
        raise _bad(f"--lr must be > 0, got {lr}")
    if clip_grad_norm is not None and clip_grad_norm <= 0:
        raise _bad(f"--clip-grad-norm must be > 0, got {clip_grad_norm}")
    if mixed_precision not in (None, "bf16"):
        raise _bad(f"--mixed-precision {mixed_precision!r} is not bf16")
    if stochastic_rounding and not bf16_weights:
        raise _bad("--stochastic-rounding applies to --bf16-weights")
    if decay is not None and decay not in DECAYS:
        raise _bad(f"--decay {decay!r} is not one of {', '.join(DECAYS)}")
    if decay not in (None, "constant") and max_steps is None:
        raise _bad(f"--decay {decay} needs --max-steps")
    try:
        cfg = OptimizerConfig(optimizer, weight_decay=weight_decay, betas=parse_betas(betas),
                              eps=eps, momentum=momentum, nesterov=nesterov)
        schedule = Schedule(lr, warmup_steps, decay or "constant", max_steps or 0)
    except ValueError as exc:
        raise _bad(str(exc)) from None
    names = tuple(n.strip() for n in (trainable or "").split(",") if n.strip())
    return StepOptions(loss, loss_input, label_input, cfg, schedule, clip_grad_norm,
                           names, output_grad_norm, mixed_precision, bf16_weights,
                           stochastic_rounding)
