"""`neuronx-cc run`: execute a NEFF on inputs from an .npz, write the outputs to an .npz."""

from __future__ import annotations

import os
import tempfile
import textwrap
import zipfile

import click
import numpy as np

from backend.neff import read_neff
from backend.runtime.config import RuntimeConfig
from backend.runtime.nrt import Runtime
from cli.errors import fail, user_errors


def load_inputs(path: str) -> dict[str, np.ndarray]:
    """The arrays of an .npz file (never unpickled)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise OSError(f"cannot read inputs {path!r}: {exc}") from None


def save_outputs(path: str, outputs: dict[str, np.ndarray]) -> None:
    """Write `outputs` to `path` atomically (a temp file renamed over it)."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(suffix=".npz", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **outputs)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def show(outputs: dict[str, np.ndarray]) -> None:
    with np.printoptions(precision=6, threshold=64, edgeitems=3, suppress=True):
        for name, arr in outputs.items():
            click.echo(f"{name}: {arr.dtype}{list(arr.shape)}")
            click.echo(textwrap.indent(np.array2string(arr), "  "))


@click.command("run")
@click.argument("neff", type=click.Path(dir_okay=False))
@click.option("--inputs", "inputs_path", type=click.Path(dir_okay=False),
              help="An .npz whose arrays are keyed by the NEFF's input names.")
@click.option("--output", "output_path", type=click.Path(dir_okay=False),
              help="Where to write the outputs (.npz keyed by the NEFF's output names).")
@click.option("--quiet", "-q", is_flag=True, help="Do not print the outputs.")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True,
              help="Execute N times, keeping the NeuronCores the whole time.")
@user_errors
def run_cmd(neff: str, inputs_path: str | None, output_path: str | None, quiet: bool,
            repeat: int) -> None:
    """Run NEFF on the bundled runtime.

    The runtime honours every NEURON_RT_* variable; the instance simulated is
    NXCC_INSTANCE_TYPE, else the default instance of the NEFF's target family.
    """
    config = RuntimeConfig.from_env()
    neff_file = read_neff(neff, validate_hash=config.validate_hash)
    runtime = Runtime(config=config)
    runtime.init(target=neff_file.manifest.get("target"))
    with runtime:
        model = runtime.load(neff_file)
        if inputs_path is None and model.inputs:
            names = ", ".join(i.name for i in model.inputs)
            fail(f"{neff} takes inputs ({names}); give them with --inputs FILE.npz")
        inputs = load_inputs(inputs_path) if inputs_path else {}
        for _ in range(repeat):
            outputs = runtime.execute(model, inputs)
    if output_path:
        save_outputs(output_path, outputs)
    if not quiet:
        show(outputs)
