"""`neuronx-cc compile`: a model file to a NEFF, through the compile cache.

Every flag of the real `neuronx-cc compile` is accepted; README's flag table says what each
does here. The NEFF comes from the compile cache when the same module was compiled with the
same output-changing flags before (`driver.cached_compile`).
"""

from __future__ import annotations

import logging
import tempfile

import click

from nxcc.cli.compile_args import PIPELINE_META, RECORDED_META, CompileCommand
from nxcc.cli.errors import user_errors
from nxcc.cli.logsetup import VerboseLevel, setup_logging
from nxcc.cli.progress import ProgressLine
from nxcc.cli.replay import PASS_LINE, remember, wrote_message
from nxcc.driver.cache.store import CompileCache, cache_root
from nxcc.driver.cached_compile import compile_cached
from nxcc.driver.options import (
    AUTO_CAST,
    AUTO_CAST_TYPES,
    DISTRIBUTION_STRATEGIES,
    MODEL_TYPES,
    NATIVE_INT64,
    TARGETS,
    CompileOptions,
    parse_input_shape,
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
    click.option("--logical-nc-config", "-lnc", "--lnc", "lnc", type=click.IntRange(1, 2),
                 help="Physical cores per logical core: 1, or 2 (trn2 only, its default); at "
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
    click.option("--workdir", help="Where --pipeline compile SaveTemps keeps the intermediate "
                 "files (default: a new temporary directory)."),
    click.option("--cache-dir", help="Compile cache root (default: NEURON_COMPILE_CACHE_URL, "
                 "else /var/tmp/neuron-compile-cache)."),
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


def with_options(fn):  # type: ignore[no-untyped-def]
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
    stages = ctx.meta[PIPELINE_META]
    if "SaveTemps" in stages and not kw["workdir"]:
        kw["workdir"] = tempfile.mkdtemp(prefix="neuroncc_compile_workdir_")
    options = build_options(model, kw, stages, ctx.meta[RECORDED_META])
    if kw["training"] or any_training_flag(ctx):
        compile_training_step(ctx, model, options, kw)
        return
    cache = None if kw["no_cache"] else CompileCache(cache_root(kw["cache_dir"]))  # type: ignore[arg-type]
    with ProgressLine() as progress:
        outcome = compile_cached(model, options, cache, emit=click.echo, progress=progress.stage)
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


def any_training_flag(ctx: click.Context) -> bool:
    """Whether a training flag was given on the command line."""
    return any(ctx.get_parameter_source(n) is click.core.ParameterSource.COMMANDLINE
               for n in TRAINING_FLAGS)


def compile_training_step(ctx: click.Context, model: str, options: CompileOptions,
                          kw: dict[str, object]) -> None:
    """`--training`: one training step (not cached); training flags need it."""
    from nxcc.driver.train.compile_step import compile_training
    from nxcc.driver.train.step_options import training_options

    given = [n for n in TRAINING_FLAGS
             if ctx.get_parameter_source(n) is click.core.ParameterSource.COMMANDLINE]
    if not kw["training"]:
        flag = "--mixed-precision" if given[0] == "training_mixed_precision" else \
            f"--{given[0].replace('_', '-')}"
        raise click.UsageError(f"{flag} needs --training")
    flags = {n: kw[n] for n in TRAINING_FLAGS}
    flags["mixed_precision"] = flags.pop("training_mixed_precision")
    step = training_options(**flags)  # type: ignore[arg-type]
    result = compile_training(model, options, step, emit=click.echo)
    log.info("wrote %s (%d payload bytes)", options.output, result.header.data_size)
    click.echo("Compiler status PASS")


def build_options(model: str, kw: dict[str, object], stages: list[str],
                  recorded: list[tuple[str, str | None]]) -> CompileOptions:
    """The driver's options from the parsed command line."""
    shapes = dict(parse_input_shape(s) for s in kw["input_shapes"])  # type: ignore[attr-defined]
    return CompileOptions(
        target=str(kw["target"]).lower(), framework=kw["framework"],  # type: ignore[arg-type]
        lnc=kw["lnc"], optlevel=int(kw["optlevel"]),  # type: ignore[arg-type,call-overload]
        output=str(kw["output"]), input_shapes=shapes,
        print_ir_after=frozenset(kw["print_ir_after"]),  # type: ignore[arg-type]
        fast_loading=bool(kw["fast_loading"]),
        auto_cast=str(kw["auto_cast"]).lower(), auto_cast_type=str(kw["auto_cast_type"]).lower(),
        mixed_precision_accumulation=bool(kw["mixed_precision"]),
        saturate_infinity=bool(kw["saturate"]), model_type=str(kw["model_type"]).lower(),
        distribution_strategy=(str(kw["distribution_strategy"]).lower()
                               if kw["distribution_strategy"] else None),
        fast_context_switch=bool(kw["fast_context_switch"]),
        native_int64=str(kw["native_int64"]).lower(),
        implicit_integer_downcast=str(kw["implicit_integer_downcast"]),
        recorded_flags=tuple(recorded), save_temps="SaveTemps" in stages,
        workdir=kw["workdir"],  # type: ignore[arg-type]
    )
