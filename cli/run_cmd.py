"""`neuronx-cc run`: execute a NEFF on inputs from an .npz, write the outputs to an .npz.

The command reads its files, checks its arguments and prints; loading and running are
`nxcc.load`'s (`backend.runtime.api`): a model, an `-lnc 2` NEFF, or with `--world-size N`
an SPMD NEFF as N ranks in this process, or under mpiexec as the job's ranks.
`--show-bindings` prints how the loaded model's collectives were bound.
"""

from __future__ import annotations

import textwrap

import click
import numpy as np

from nxcc.backend.neff import NeffFile
from nxcc.backend.neff.atomic import atomic_file
from nxcc.backend.runtime.api import Model, join_job, load_model
from nxcc.backend.runtime.config import RuntimeConfig
from nxcc.backend.runtime.cores import format_cores
from nxcc.backend.runtime.mpi_job import launched_processes
from nxcc.backend.runtime.npz import read_npz
from nxcc.backend.runtime.nrt import read_source
from nxcc.backend.userfiles.npz import write_npz
from nxcc.cli.errors import user_errors
from nxcc.cli.rank_process import joined, run_rank, split_off_rank


def load_inputs(path: str, names: list[str] | None = None, what: str = "inputs"
                ) -> dict[str, np.ndarray]:
    """The arrays of an .npz file (never unpickled), by name. Positional arrays
    (`arr_0`, `arr_1`... as `np.savez(f, a, b)` writes them) are taken as the inputs `names`
    in order when there are as many and none is named after an input."""
    arrays = read_npz(path, what)  # sizes bounded before numpy allocates
    positional = [f"arr_{i}" for i in range(len(arrays))]
    if names and sorted(arrays) == sorted(positional) and len(names) == len(arrays) \
            and not set(names) & set(arrays):
        return {name: arrays[key] for name, key in zip(names, positional, strict=True)}
    return arrays


def save_outputs(path: str, outputs: dict[str, np.ndarray]) -> None:
    """Write `outputs` to `path` atomically (nothing left behind if interrupted)."""
    with atomic_file(path) as f:
        write_npz(f, outputs)


def show(outputs: dict[str, np.ndarray]) -> None:
    with np.printoptions(precision=6, threshold=64, edgeitems=3, suppress=True):
        for name, arr in outputs.items():
            click.echo(f"{name}: {arr.dtype}{list(arr.shape)}")
            click.echo(textwrap.indent(np.array2string(arr), "  "))


def show_bindings_of(model: Model) -> None:
    """The collectives of `model` as the runtime bound them, one line each."""
    cores = model.replicas[0]
    click.echo(f"bindings of '{model.name}' ({len(cores)} logical core(s) "
               f"{format_cores(cores)} on {model.instance}, LNC={model.lnc}):")
    bindings = model.bindings
    if not bindings:
        click.echo("  no collectives")
    for b in bindings:
        click.echo(f"  {b.describe()}")


def run_job(neff: str, world_size: int | None, inputs_path: str | None,
            output_path: str | None, output_shardings: tuple[str, ...], repeat: int,
            quiet: bool, show_bindings: bool = False) -> None:
    """This process's part of a multi-process run (`mpiexec -n P neuronx-cc run ...`):
    process 0 writes and prints the global outputs.

    A refusal in any process ends every process (`nxcc.backend.runtime.api.join_job`): the
    NEFF and the inputs are read and checked before the job is joined, and after joining
    every process takes the same steps, decided from the command line alone, so that a
    failure in one is met by the others at the next step they take together."""
    inputs: dict[str, np.ndarray] = {}

    def prepare(config: RuntimeConfig) -> NeffFile:
        nonlocal inputs
        neff_file = read_source(neff, config.validate_hash)
        if neff_file.manifest.get("spmd") is None:
            raise click.UsageError(f"{neff} is not an SPMD program; mpiexec runs one program "
                                   "as ranks (compile XLA's partitioned HLO)")
        takes = [str(i.get("name")) for i in neff_file.manifest.get("inputs") or []]
        if inputs_path is None and takes and not show_bindings:
            raise click.UsageError(f"{neff} takes inputs ({', '.join(takes)}); give them "
                                   "with --inputs FILE.npz")
        inputs = load_inputs(inputs_path, takes) if inputs_path else {}
        return neff_file

    model = join_job(neff, prepare, world_size=world_size, output_shardings=output_shardings,
                     on_joined=joined)
    if show_bindings and model.is_root:
        show_bindings_of(model)
    outputs: dict[str, np.ndarray] = {}
    if not (show_bindings and inputs_path is None):
        for _ in range(repeat):
            outputs = model(**inputs)
    model.close()
    if not model.is_root or not outputs:
        return
    if output_path:
        save_outputs(output_path, outputs)
    if not quiet:
        show(outputs)


def check_world_size_args(neff: str, spmd: dict | None, world_size: int | None,
                          output_shardings: tuple[str, ...]) -> None:
    """UsageError for --output-sharding without --world-size, or an SPMD NEFF without it."""
    if output_shardings and world_size is None:
        raise click.UsageError("--output-sharding needs --world-size")
    if spmd is not None and world_size is None:
        ranks = spmd.get("world_size")
        raise click.UsageError(
            f"{neff} is an SPMD program" + (f" partitioned for {ranks} ranks" if ranks else "")
            + f"; run it with --world-size {ranks or 'N'} and global --inputs")


@click.command("run")
@click.argument("neff", type=click.Path(dir_okay=False))
@click.option("--inputs", "inputs_path", type=click.Path(dir_okay=False),
              help="An .npz whose arrays are keyed by the NEFF's input names (global tensors "
              "with --world-size), or positional (arr_0, arr_1... from np.savez(f, a, b)) in "
              "input order.")
@click.option("--output", "output_path", type=click.Path(dir_okay=False),
              help="Where to write the outputs (.npz keyed by the NEFF's output names).")
@click.option("--quiet", "-q", is_flag=True, help="Do not print the outputs.")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True,
              help="Execute N times, keeping the NeuronCores the whole time.")
@click.option("--world-size", "world_size", type=click.IntRange(min=1),
              help="Run an SPMD program (e.g. XLA's partitioned HLO) as N ranks, one "
              "NeuronCore each: split each global input by its parameter's sharding, assemble "
              "each global output. N counts ranks, not processes: under mpiexec -n P the P "
              "processes run N/P ranks each (default: one per process).")
@click.option("--output-sharding", "output_shardings", multiple=True, metavar="SPEC",
              help="With --world-size: how an output is laid out over the ranks, in HLO "
              "sharding syntax (e.g. '{devices=[2,1,4]<=[8] last_tile_dim_replicate}'); once "
              "per output, in order. Used where the program gives none; without either an "
              "output is taken as replicated.")
@click.option("--show-bindings", is_flag=True,
              help="Print how each collective was bound at load (algorithm, ring of "
              "NeuronCores, steps, bytes per step); without --inputs for a model that takes "
              "inputs, only that.")
@click.option("--steps", type=click.IntRange(min=1),
              help="Run N steps on the same inputs (a training step updates its state each "
              "time); the outputs are stacked along a new first axis.")
@click.option("--load-state", "load_state", type=click.Path(dir_okay=False),
              help="An .npz of the model's state (parameters, optimizer slots) to start from.")
@click.option("--save-state", "save_state", type=click.Path(dir_okay=False),
              help="Write the model's state after the last execution to this .npz.")
@click.option("--profile", "profile_path", type=click.Path(dir_okay=False),
              help="Write a Chrome/Perfetto trace (JSON trace events) of the executions: per "
              "rank, compute ops and collectives on separate tracks.")
@user_errors(family="NRT")
def run_cmd(neff: str, inputs_path: str | None, output_path: str | None, quiet: bool,
            repeat: int, world_size: int | None, output_shardings: tuple[str, ...],
            show_bindings: bool, steps: int | None, load_state: str | None,
            save_state: str | None, profile_path: str | None) -> None:
    """Run NEFF on the bundled runtime.

    The runtime honours every NEURON_RT_* variable; the instance simulated is
    NXCC_INSTANCE_TYPE, else the default instance of the NEFF's target family.
    """
    if launched_processes() > 1:
        if profile_path:
            raise click.UsageError("--profile traces the ranks of one process; run without "
                                   "mpiexec (--world-size N) to profile")
        split_off_rank()
        run_rank(lambda: run_job(neff, world_size, inputs_path, output_path,
                                 output_shardings, repeat, quiet, show_bindings))
        return
    neff_file = read_source(neff, RuntimeConfig.from_env().validate_hash)
    spmd = neff_file.manifest.get("spmd")
    check_world_size_args(neff, spmd, world_size, output_shardings)
    with load_model(neff_file, world_size=world_size, output_shardings=output_shardings
                    ) as model:
        if show_bindings:
            show_bindings_of(model)
        if inputs_path is None and model.inputs:
            if show_bindings:
                return
            names = ", ".join(i.name for i in model.inputs)
            raise click.UsageError(f"{neff} takes inputs ({names}); give them with --inputs "
                                   "FILE.npz")
        inputs = load_inputs(inputs_path, [i.name for i in model.inputs]) if inputs_path else {}
        profiler = model.profile() if profile_path else None
        if load_state:
            model.load_state(load_inputs(load_state, what="state"))
        if steps is not None:
            outputs = model.run_steps(steps, **inputs)
        for _ in range(repeat if steps is None else 0):
            outputs = model(**inputs)
        state = model.state() if save_state else {}
        if save_state and not state:
            raise click.UsageError(f"{neff} keeps no state to save (compile it with "
                                   "--training)")
    if save_state:
        save_outputs(save_state, state)
    if profiler is not None and profile_path:
        profiler.write(profile_path)
    if output_path:
        save_outputs(output_path, outputs)
    if not quiet:
        show(outputs)
