"""`neuronx-cc compile`: a model file to a NEFF."""

from __future__ import annotations

import logging
from pathlib import Path

import click

from nxcc.cli.errors import user_errors
from nxcc.cli.logsetup import VERBOSE_LEVELS, setup_logging
from nxcc.driver.compile import compile_model
from nxcc.driver.options import TARGETS, CompileOptions, parse_input_shape
from nxcc.driver.training import compile_training
from nxcc.driver.training_options import training_options

log = logging.getLogger("nxcc.compiler")


@click.command("compile")
@click.argument("model", type=click.Path(dir_okay=False, path_type=str))
@click.option("--framework", type=click.Choice(["ONNX", "XLA"], case_sensitive=False),
              help="Input format; inferred from the extension (.onnx, .hlo) when omitted.")
@click.option("--target", required=True, type=click.Choice(TARGETS),
              help="Instance family to compile for.")
@click.option("--output", "-o", default="file.neff", show_default=True,
              help="Path of the NEFF to write.")
@click.option("--optlevel", "-O", type=click.Choice(["1", "2", "3"]), default="2",
              show_default=True, help="Optimisation level.")
@click.option("--logical-nc-config", "-lnc", "lnc", type=click.IntRange(1, 2),
              help="Physical cores per logical core: 1, or 2 (trn2 only, its default); at 2 "
              "the model is sharded over both.")
@click.option("--input-shape", "input_shapes", multiple=True, metavar="NAME=D0,D1,...",
              help="Size of an input with dynamic dimensions (repeatable).")
@click.option("--print-ir-after", "print_ir_after", multiple=True, metavar="PASS|all",
              help="Print the IR after the named pass (repeatable, or 'all').")
@click.option("--enable-fast-loading-neuron-binaries", "fast_loading", is_flag=True,
              help="Write the NEFF payload uncompressed.")
@click.option("--verbose", type=click.Choice(VERBOSE_LEVELS, case_sensitive=False),
              default="warning", show_default=True, help="Log level.")
@click.option("--logfile", default="log-neuron-cc.txt", show_default=True,
              help="Where the compile log is written.")
@click.option("--training", is_flag=True,
              help="Compile one training step (forward, loss, backward, optimizer update); "
              "parameters and optimizer state stay in the loaded model.")
@click.option("--loss", type=str, help="With --training: cross-entropy or mse.")
@click.option("--loss-input", "loss_input", help="The model output the loss reads.")
@click.option("--label-input", "label_input",
              help="Name of the new input holding the labels (int64 class ids for "
              "cross-entropy, -100 ignored; the output's type for mse).")
@click.option("--optimizer", type=str, help="sgd, adam or adamw.")
@click.option("--lr", type=float, help="Learning rate (the peak, with a schedule).")
@click.option("--weight-decay", "weight_decay", type=float, default=0.0, show_default=True)
@click.option("--betas", default="0.9,0.999", show_default=True, help="Adam's B1,B2.")
@click.option("--eps", type=float, default=1e-8, show_default=True, help="Adam's epsilon.")
@click.option("--momentum", type=float, default=0.0, show_default=True, help="SGD momentum.")
@click.option("--nesterov", is_flag=True, help="SGD with Nesterov momentum.")
@click.option("--clip-grad-norm", "clip_grad_norm", type=float,
              help="Scale the gradients to this global 2-norm at most.")
@click.option("--warmup-steps", "warmup_steps", type=click.IntRange(min=0), default=0,
              help="Linear learning-rate warm-up over this many steps.")
@click.option("--decay", type=str, help="After warm-up: constant, linear or cosine.")
@click.option("--max-steps", "max_steps", type=click.IntRange(min=1),
              help="The step at which linear or cosine decay reaches 0.")
@click.option("--trainable", metavar="NAME,...",
              help="Train only these initializers (default: every floating-point "
              "initializer the loss depends on differentiably).")
@click.option("--output-grad-norm", "output_grad_norm", is_flag=True,
              help="Also output the gradients' global norm (before clipping).")
@click.option("--mixed-precision", "mixed_precision", metavar="bf16",
              help="Run the matrix products (forward and backward) in bf16 on f32 master "
              "weights and f32 optimizer state.")
@click.option("--bf16-weights", "bf16_weights", is_flag=True,
              help="Keep the trained parameters in bf16 (no f32 copy); the update is "
              "computed in f32 and rounded.")
@click.option("--stochastic-rounding", "stochastic_rounding", is_flag=True,
              help="With --bf16-weights: round updated weights stochastically.")
@user_errors
def compile_cmd(model: str, framework: str | None, target: str, output: str, optlevel: str,
                lnc: int | None, input_shapes: tuple[str, ...], print_ir_after: tuple[str, ...],
                fast_loading: bool, verbose: str, logfile: str, training: bool,
                **training_flags: object) -> None:
    """Compile MODEL (ONNX, or XLA HLO text) to a NEFF."""
    setup_logging(verbose, logfile)
    shapes = dict(parse_input_shape(s) for s in input_shapes)
    options = CompileOptions(
        target=target, framework=framework, lnc=lnc, optlevel=int(optlevel), output=output,
        input_shapes=shapes, print_ir_after=frozenset(print_ir_after), fast_loading=fast_loading,
    )
    ctx = click.get_current_context()
    given = [n for n in training_flags
             if ctx.get_parameter_source(n) is click.core.ParameterSource.COMMANDLINE]
    if given and not training:
        raise click.UsageError(f"--{given[0].replace('_', '-')} needs --training")
    if training:
        step = training_options(**training_flags)  # type: ignore[arg-type]
        result = compile_training(model, options, step, emit=click.echo)
    else:
        result = compile_model(model, options, emit=click.echo)
    log.info("wrote %s (%d payload bytes)", Path(output), result.header.data_size)
    click.echo("Compiler status PASS")
