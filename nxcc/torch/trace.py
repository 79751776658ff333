"""`trace`, `save`, `load` and the moving of a loaded module (torch_neuronx's `trace`,
`torch.jit.save`/`torch.jit.load`, `experimental.set_neuron_cores`/`set_multicore`).

`trace` exports the function to ONNX (`export`), compiles it with `nxcc.compile` and loads
the NEFF with `nxcc.load`. Its `compiler_args` are neuronx-cc's flags; without `--target`
it compiles for the instance the runtime simulates (`NXCC_INSTANCE_TYPE`, else trn1), as
torch_neuronx compiles for the instance it runs on, and without `--lnc` for the logical core
size `NEURON_LOGICAL_NC_CONFIG` sets, when it is set, so the runtime takes the NEFF.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import onnx
import torch

import nxcc
from nxcc.backend.runtime.config import RuntimeConfig
from nxcc.backend.runtime.placement import multicore_context
from nxcc.backend.runtime.topology import choose_instance
from nxcc.torch import archive
from nxcc.torch.compiler_args import compiler_flags
from nxcc.torch.export import export
from nxcc.torch.module import TracedModule


def trace(func: Callable[..., Any], example_inputs: object, *,
          compiler_args: str | Sequence[str] | None = None,
          compiler_workdir: str | os.PathLike[str] | None = None) -> TracedModule:
    """Compile `func` (a module or a function of tensors) for the shapes and dtypes of
    `example_inputs` (a tensor, or a tuple of the positional arguments) and load it.

    `compiler_args`: neuronx-cc flags, a string or a list of words ("--target trn2 --lnc 1
    --auto-cast none"). `compiler_workdir`: a folder that keeps the exported `model.onnx`
    and the compiled `graph.neff`. Returns a `TracedModule` loaded on a NeuronCore (the
    placement context in force applies), to call with tensors like the example's.
    """
    flags = compiler_flags(compiler_args)
    proto, signature = export(func, example_inputs)
    proto.graph.name = _model_name(func)
    config = RuntimeConfig.from_env()
    flags.setdefault("target", choose_instance(config.instance_type, None).family)
    if "lnc" not in flags and config.logical_nc_config is not None:
        flags["lnc"] = config.logical_nc_config
    if compiler_workdir is not None:
        workdir = Path(compiler_workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        onnx.save(proto, str(workdir / "model.onnx"))
        flags.setdefault("output", str(workdir / "graph.neff"))
    neff = nxcc.compile(proto, **flags)
    return TracedModule(neff.to_bytes(), signature)


def _model_name(func: Callable[..., Any]) -> str:
    """The NEFF's name (what the runtime's log and `nxcc.inspect` show): the module's class
    or the function's name, in the characters a file name takes."""
    name = type(func).__name__ if isinstance(func, torch.nn.Module) else \
        getattr(func, "__name__", "")
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:100].strip("_.") or "model"


def save(module: TracedModule, f: archive.Target) -> None:
    """Write `module` (NEFF and signature) to `f`, a path (written atomically) or a binary
    file object; `load` reads it back."""
    if not isinstance(module, TracedModule):
        raise TypeError(f"nxcc.torch.save takes a module nxcc.torch.trace or load returned, "
                        f"not a {type(module).__name__}")
    archive.write(f, module.neff, module.signature)


def load(f: archive.Target) -> TracedModule:
    """The module saved in `f` (a path or a binary file object), loaded onto NeuronCores:
    the next least used core, or where the placement context in force says."""
    neff, signature = archive.read(f)
    return TracedModule(neff, signature)


def set_neuron_cores(module: TracedModule, start_nc: int = -1, nc_count: int = -1) -> None:
    """Move a loaded module to `start_nc` over `nc_count` cores (-1: automatic; a count that
    is a multiple of what the model needs replicates it), as `neuron_cores_context` places
    a load."""
    module.reload(start_nc=None if start_nc == -1 else start_nc,
                  nc_count=None if nc_count == -1 else nc_count)


def set_multicore(module: TracedModule) -> None:
    """Move a loaded module to every core of the process, one replica per core."""
    with multicore_context():
        module.reload()

