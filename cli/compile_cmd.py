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
from nxcc.driver.cache import CompileCache, cache_root
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


def with_options(fn):  # type: ignore[no-untyped-def]
    for option in reversed(OPTIONS):
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
    cache = None if kw["no_cache"] else CompileCache(cache_root(kw["cache_dir"]))  # type: ignore[arg-type]
    with ProgressLine() as progress:
        outcome = compile_cached(model, options, cache, emit=click.echo, progress=progress.stage)
    log.info("wrote %s (%s, %.3f s)", options.output,
             f"compile cache {outcome.status}: {outcome.entry}" if outcome.entry
             else "compile cache off", outcome.seconds)
    if options.save_temps:
        click.echo(f"Intermediate files kept in {options.workdir}")
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
