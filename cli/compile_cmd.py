"""`neuronx-cc compile`: a model file to a NEFF, through the compile cache (`nxcc.compile`).

Every flag of the real `neuronx-cc compile` is accepted; docs/command-line.md says what each
does here. The command parses them, passes them on in `nxcc.compile`'s spelling, and prints;
the NEFF comes from the compile cache when the same module was compiled with the same
output-changing flags before (`driver.cached_compile`).
"""

from __future__ import annotations

import logging

import click

from nxcc.cli.compile_args import PIPELINE_META, RECORDED_META, CompileCommand
from nxcc.cli.errors import user_errors
from nxcc.cli.logsetup import VerboseLevel, setup_logging
from nxcc.cli.progress import ProgressLine
from nxcc.cli.replay import PASS_LINE, remember, wrote_message
from nxcc.driver.api.compile import compile_model
from nxcc.driver.options import (
    AUTO_CAST,
    AUTO_CAST_TYPES,
    DISTRIBUTION_STRATEGIES,
    MODEL_TYPES,
    NATIVE_INT64,
    TARGETS,
)

log = logging.getLogger("nxcc.compiler")


def _choice(values: tuple[str, ...]) -> click.Choice:
    return click.Choice(values, case_sensitive=False)


OPTIONS = [
    click.option("--framework", type=_choice(("ONNX", "XLA")),
                 help="Input format; told from the content (then the extension) when omitted."),
    click.option("--target", required=True, type=_choice(TARGETS),
                 help="Instance family to compile for."),
    click.option("--output", "-o", default="file.neff", show_default=True,
                 help="Path of the NEFF to write."),
    click.option("--optlevel", "-O", type=click.Choice(["1", "2", "3"]), default="2",
                 show_default=True, help="Optimisation level."),
    click.option("--enable-experimental-O1", "experimental_o1", is_flag=True,
                 help="The deprecated spelling of -O1 (an -O/--optlevel given too wins)."),
    click.option("--logical-nc-config", "-lnc", "--lnc", "lnc", type=click.IntRange(1, 2),
                 help="Physical cores per logical core: 1, or 2 (trn2 and trn3, their default); at "
                 "2 the model is sharded over both."),
    click.option("--auto-cast", type=_choice(AUTO_CAST), default="none", show_default=True,
                 help="Compute f32 matmuls/convolutions (matmult) or all f32 arithmetic (all) "
                 "in --auto-cast-type."),
    click.option("--auto-cast-type", type=_choice(AUTO_CAST_TYPES), default="bf16",
                 show_default=True, help="The type --auto-cast computes in."),
    click.option("--enable-mixed-precision-accumulation/--disable-mixed-precision-accumulation",
                 "mixed_precision", default=True, show_default=True,
                 help="Accumulate low-precision contractions in f32."),
    click.option("--enable-saturate-infinity", "saturate", is_flag=True,
                 help="Overflowing matmul results and narrowing casts give the largest finite "
                 "value instead of inf."),
    click.option("--model-type", type=_choice(MODEL_TYPES), default="generic",
                 show_default=True, help="Recorded (no model-specific optimisation here)."),
    click.option("--distribution-strategy", type=_choice(DISTRIBUTION_STRATEGIES),
                 help="Recorded (no sharded optimizer states on a simulated core)."),
    click.option("--native-int64", type=_choice(NATIVE_INT64), default="default",
                 show_default=True, help="Recorded (int64 always runs natively here)."),
    click.option("--implicit-integer-downcast", default="default", show_default=True,
                 help="Recorded (no integer op is downcast here)."),
    click.option("--enable-fast-context-switch", "fast_context_switch", is_flag=True,
                 help="Recorded (weights are always loaded with the model here)."),
    click.option("--enable-fast-loading-neuron-binaries", "fast_loading", is_flag=True,
                 help="Write the NEFF payload uncompressed."),
    click.option("--input-shape", "input_shapes", multiple=True, metavar="NAME=D0,D1,...",
                 help="Size of an input with dynamic dimensions (repeatable)."),
    click.option("--print-ir-after", "print_ir_after", multiple=True, metavar="PASS|all",
                 help="Print the IR after the named pass (repeatable, or 'all')."),
    click.option("--workdir", "--temp-dir", "workdir",
                 help="Where --pipeline compile SaveTemps keeps the intermediate "
                 "files (default: a new temporary directory)."),
    click.option("--dump", metavar="DIR",
                 help="Keep the IR after every pass and the manifest in DIR (as --pipeline "
                 "compile SaveTemps --workdir DIR)."),
    click.option("--execute-repetition", "execute_repetition", type=click.IntRange(min=1),
                 default=1, show_default=True,
                 help="How many times in a row the caller executes the NEFF (transformers-"
                 "neuronx's layer unrolling); recorded, the program is the same."),
    click.option("--retry_failed_compilation", "--retry-failed-compilation", "retry_failed",
                 is_flag=True, help="Compile again a module the compile cache remembers "
                 "failing (torch-neuronx's NEURON_CC_FLAGS spelling)."),
    click.option("--cache-dir", "--cache_dir", "cache_dir",
                 help="Compile cache root (default: NEURON_COMPILE_CACHE_URL, "
                 "else /var/tmp/neuron-compile-cache); a remote URL (s3://...) is warned "
                 "about and the local default used."),
    click.option("--no-cache", is_flag=True, help="Neither read nor fill the compile cache."),
    click.option("--jobs", "--num-parallel-jobs", "jobs", type=click.IntRange(min=1),
                 help="Accepted; nxcc compiles on one thread."),
    click.option("--verbose", type=VerboseLevel(), default="warning", show_default=True,
                 help="Log level: a name or a number (Python logging levels)."),
    click.option("--logfile", default="log-neuron-cc.txt", show_default=True,
                 help="Where the compile log is written (always at debug level)."),
]


TRAINING_OPTIONS = [
    click.option("--training", is_flag=True,
                 help="Compile one training step (forward, loss, backward, optimizer update); "
                 "parameters and optimizer state stay in the loaded model."),
    click.option("--loss", type=str, help="With --training: cross-entropy or mse."),
    click.option("--loss-input", "loss_input", help="The model output the loss reads."),
    click.option("--label-input", "label_input",
                 help="Name of the new input holding the labels (int64 class ids for "
                 "cross-entropy, -100 ignored; the output's type for mse)."),
    click.option("--optimizer", type=str, help="sgd, adam or adamw."),
    click.option("--lr", type=float, help="Learning rate (the peak, with a schedule)."),
    click.option("--weight-decay", "weight_decay", type=float, default=0.0, show_default=True),
    click.option("--betas", default="0.9,0.999", show_default=True, help="Adam's B1,B2."),
    click.option("--eps", type=float, default=1e-8, show_default=True, help="Adam's epsilon."),
    click.option("--momentum", type=float, default=0.0, show_default=True,
                 help="SGD momentum."),
    click.option("--nesterov", is_flag=True, help="SGD with Nesterov momentum."),
    click.option("--clip-grad-norm", "clip_grad_norm", type=float,
                 help="Scale the gradients to this global 2-norm at most."),
    click.option("--warmup-steps", "warmup_steps", type=click.IntRange(min=0), default=0,
                 help="Linear learning-rate warm-up over this many steps."),
    click.option("--decay", type=str, help="After warm-up: constant, linear or cosine."),
    click.option("--max-steps", "max_steps", type=click.IntRange(min=1),
                 help="The step at which linear or cosine decay reaches 0."),
    click.option("--trainable", metavar="NAME,...",
                 help="Train only these initializers (default: every floating-point "
                 "initializer the loss depends on differentiably)."),
    click.option("--output-grad-norm", "output_grad_norm", is_flag=True,
                 help="Also output the gradients' global norm (before clipping)."),
    click.option("--mixed-precision", "training_mixed_precision", metavar="bf16",
                 help="Run the matrix products (forward and backward) in bf16 on f32 master "
                 "weights and f32 optimizer state."),
    click.option("--bf16-weights", "bf16_weights", is_flag=True,
                 help="Keep the trained parameters in bf16 (no f32 copy); the update is "
                 "computed in f32 and rounded."),
    click.option("--stochastic-rounding", "stochastic_rounding", is_flag=True,
                 help="With --bf16-weights: round updated weights stochastically."),
]
TRAINING_FLAGS = ("loss", "loss_input", "label_input", "optimizer", "lr", "weight_decay",
                  "betas", "eps", "momentum", "nesterov", "clip_grad_norm", "warmup_steps",
                  "decay", "max_steps", "trainable", "output_grad_norm",
                  "training_mixed_precision", "bf16_weights", "stochastic_rounding")


def with_options(fn):
    for option in reversed(OPTIONS + TRAINING_OPTIONS):
        fn = option(fn)
    return fn


@click.command("compile", cls=CompileCommand)
@click.argument("model", type=click.Path(dir_okay=False, path_type=str))
@with_options
@click.pass_context
@user_errors
def compile_cmd(ctx: click.Context, model: str, **kw: object) -> None:
    """Compile MODEL (ONNX; XLA as HLO text, HloModuleProto or StableHLO) to a NEFF.

    Also accepted: --pipeline compile SaveTemps (keep the IR of every step in --workdir) and
    the tool's internal flags (--internal-*, --tensorizer-options...), which are recorded.
    """
    setup_logging(kw["verbose"], kw["logfile"])  # type: ignore[arg-type]
    training = bool(kw["training"])
    given = [n for n in TRAINING_FLAGS
             if ctx.get_parameter_source(n) is click.core.ParameterSource.COMMANDLINE]
    if given and not training:
        flag = "--mixed-precision" if given[0] == "training_mixed_precision" else \
            f"--{given[0].replace('_', '-')}"
        raise click.UsageError(f"{flag} needs --training")
    stages = ctx.meta[PIPELINE_META]
    if kw["dump"]:
        stages, kw["workdir"] = [*stages, "SaveTemps"], kw["dump"]
    if kw["experimental_o1"] and \
            ctx.get_parameter_source("optlevel") is not click.core.ParameterSource.COMMANDLINE:
        kw["optlevel"] = "1"
    flags = api_flags(kw, stages, training)
    if training:  # one training step: not cached
        compiled = compile_model(model, target=str(kw["target"]), lnc=kw["lnc"],  # type: ignore[arg-type]
                                 output=str(kw["output"]), flags=flags,
                                 recorded=ctx.meta[RECORDED_META], emit=click.echo)
        log.info("wrote %s (%d payload bytes)", compiled.options.output,
                 compiled.neff.header.data_size)
        click.echo(PASS_LINE)
        return
    with ProgressLine() as progress:
        compiled = compile_model(model, target=str(kw["target"]), lnc=kw["lnc"],  # type: ignore[arg-type]
                                 output=str(kw["output"]), flags=flags,
                                 recorded=ctx.meta[RECORDED_META], emit=click.echo,
                                 progress=progress.stage)
    outcome, options = compiled.cached, compiled.options
    assert outcome is not None
    log.info("%s", wrote_message(options.output, outcome.status, outcome.entry,
                                 outcome.seconds))
    if outcome.key is not None:
        argv = (ctx.find_root().obj or {}).get("argv")
        if argv is not None:
            remember(argv, model, options.output, outcome.key,
                     VerboseLevel().convert(kw["verbose"], None, None), kw["logfile"])  # type: ignore[arg-type]
    if options.save_temps:
        click.echo(f"Intermediate files kept in {options.workdir}")
    click.echo(PASS_LINE)


def api_flags(kw: dict[str, object], stages: list[str], training: bool) -> dict[str, object]:
    """The parsed command line as `nxcc.compile`'s flags (Python spelling)."""
    flags: dict[str, object] = {
        "optlevel": int(kw["optlevel"]),  # type: ignore[call-overload]
        "auto_cast": kw["auto_cast"], "auto_cast_type": kw["auto_cast_type"],
        "enable_mixed_precision_accumulation": bool(kw["mixed_precision"]),
        "enable_saturate_infinity": bool(kw["saturate"]),
        "model_type": kw["model_type"], "native_int64": kw["native_int64"],
        "implicit_integer_downcast": str(kw["implicit_integer_downcast"]),
        "enable_fast_context_switch": bool(kw["fast_context_switch"]),
        "enable_fast_loading_neuron_binaries": bool(kw["fast_loading"]),
        "input_shape": list(kw["input_shapes"]),  # type: ignore[call-overload]
        "print_ir_after": list(kw["print_ir_after"]),  # type: ignore[call-overload]
        "pipeline": stages, "no_cache": bool(kw["no_cache"]),
        "execute_repetition": int(kw["execute_repetition"]),  # type: ignore[call-overload]
        "retry_failed_compilation": bool(kw["retry_failed"]),
    }
    for name in ("framework", "distribution_strategy", "workdir", "cache_dir"):
        if kw[name] is not None:
            flags[name] = kw[name]
    if training:
        flags["training"] = True
        flags.update({n: kw[n] for n in TRAINING_FLAGS if n != "training_mixed_precision"})
        flags["mixed_precision"] = kw["training_mixed_precision"]
    return {k: v for k, v in flags.items() if v is not None}
