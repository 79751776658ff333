"""Packaging a compiled module as a NEFF: manifest, per-core programs, weights."""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field

import numpy as np

from nxcc.backend.neff import NeffHeader, write_neff
from nxcc.backend.neff.payload import Contents
from nxcc.backend.neff.weights import npy_parts
from nxcc.backend.program.collectives import block_entry, global_shape, manifest_collectives
from nxcc.backend.program.lower import WeightTable, lower_module
from nxcc.backend.program.spmd_manifest import spmd_section
from nxcc.backend.program.state import StateBuffer, state_manifest
from nxcc.backend.runtime.loadable import check_loadable
from nxcc.ir.core import Module, Value
from nxcc.ir.flops import module_flops
from nxcc.ir.printer import print_module

IR_TEXT_ELIDE_OVER = 16
#: Weights of more bytes than this leave the payload uncompressed (as
#: --enable-fast-loading-neuron-binaries does) unless a sample shows they compress: float
#: weights barely do (random or trained, gzip saves a few percent at the cost of seconds per
#: 100 MB), and a plain tar lets the runtime map them instead of reading and copying them.
COMPRESS_WEIGHTS_UP_TO = 4 << 20
#: Bytes sampled from the start of each weight, and the compressed share of the sample under
#: which gzip is worth it (constants such as materialised splats compress to almost nothing).
SAMPLE_BYTES, COMPRESSES_UNDER = 1 << 16, 0.5


def weights_compress(arrays: list[np.ndarray]) -> bool:
    """Whether to gzip a payload holding `arrays`: yes when they take at most
    `COMPRESS_WEIGHTS_UP_TO` bytes, or when zlib (level 1) shrinks a sample of their first
    bytes below `COMPRESSES_UNDER` of its size (deterministic: it depends on the data only)."""
    if sum(a.nbytes for a in arrays) <= COMPRESS_WEIGHTS_UP_TO:
        return True
    sample = b"".join(np.ascontiguousarray(a).reshape(-1).view(np.uint8)[:SAMPLE_BYTES].tobytes()
                      for a in arrays)
    return len(zlib.compress(sample, 1)) < COMPRESSES_UNDER * len(sample)


@dataclass(frozen=True)
class NeffSpec:
    """What the NEFF says about its origin: target, LNC, name, compiler settings."""

    target: str
    lnc: int
    name: str
    compress: bool = True
    compiler: dict = field(default_factory=dict)
    state: tuple[StateBuffer, ...] = ()
    #: per core, its estimate (peak HBM, device time: `estimate`), kept in its subgraph
    estimates: tuple[dict, ...] = ()


def result_names(module: Module) -> list[str]:
    fn = module.entry_function
    return fn.result_names or [f"output{i}" for i in range(len(fn.results))]


def io_entries(module: Module, partitioned: bool = False) -> tuple[list[dict], list[dict]]:
    """The manifest's inputs and outputs: name, dtype (IR name) and shape, in order. The
    shapes are whole: the parameters and results of a `partitioned` (per-core) program are
    blocks of them, as their shardings say (shardings mean nothing in an unpartitioned one)."""
    fn = module.entry_function

    def shape(v: Value) -> list[int]:
        return list(global_shape(v) if partitioned else v.type.shape)

    inputs = [{"name": p.name, "dtype": p.type.dtype.value, "shape": shape(p)}
              for p in fn.params]
    outputs = [{"name": n, "dtype": r.type.dtype.value, "shape": shape(r)}
               for n, r in zip(result_names(module), fn.results, strict=True)]
    return inputs, outputs


def core_blocks(module: Module, core: int) -> dict:
    """The blocks of the inputs and outputs core `core` reads and writes."""
    fn = module.entry_function
    return {"inputs": [block_entry(p.name or "", p, core) for p in fn.params],
            "outputs": [block_entry(n, r, core)
                        for n, r in zip(result_names(module), fn.results, strict=True)]}


def count_ops(program: dict) -> int:
    return sum(len(f["instructions"]) for f in program["functions"].values())


def write_program_neff(path: str, core_modules: list[Module], spec: NeffSpec) -> NeffHeader:
    """Write a NEFF with one program per physical core (`core_modules[i]` -> `sg0i/`).

    All core modules share one weight table, so weights common to several cores are stored
    once. With several cores each subgraph also lists the block of every input and output
    it reads and writes, and the manifest every collective placeholder. The payload is
    gzipped when `spec.compress` and `weights_compress` says the weights are small or
    compress. `spec.state` adds the ``input_output_alias`` and ``state`` sections
    (`program.state`). An SPMD module
    (`Module.spmd`) gets the manifest's ``spmd`` section (`spmd_manifest`). The header's
    COLLECTIVES bit is set when there are collectives, SPMD with the ``spmd`` section. The
    write is atomic, and only made when the runtime would load the result
    (`runtime.loadable.check_loadable`, else UnloadableNeff and no file).
    """
    weights = WeightTable()
    files: dict[str, Contents] = {}
    subgraphs = []
    for core, module in enumerate(core_modules):
        program = lower_module(module, weights)
        sg = f"sg{core:02d}"
        files[f"{sg}/program.json"] = json.dumps(program, separators=(",", ":")).encode()
        files[f"{sg}/program.ir"] = print_module(module, IR_TEXT_ELIDE_OVER).encode()
        entry = {"name": sg, "core": core, "program": f"{sg}/program.json",
                 "ir": f"{sg}/program.ir", "ops": count_ops(program),
                 "flops": module_flops(module)}
        if len(core_modules) > 1:
            entry.update(core_blocks(module, core))
        if spec.estimates:
            entry["estimate"] = spec.estimates[core]
        subgraphs.append(entry)
    inputs, outputs = io_entries(core_modules[0], partitioned=len(core_modules) > 1)
    aliases = state_manifest(inputs, outputs, spec.state, weights.store) if spec.state else {}
    weight_files = {}
    for name, arr in weights.arrays.items():
        files[f"weights/{name}.npy"] = npy_parts(arr)
        weight_files[name] = f"weights/{name}.npy"
    manifest = {
        "format": "nxcc-neff",
        "name": spec.name,
        "target": spec.target,
        "lnc": spec.lnc,
        "inputs": inputs,
        "outputs": outputs,
        "subgraphs": subgraphs,
        "collectives": manifest_collectives(core_modules),
        "weights": {"files": weight_files, "bytes": weights.nbytes},
        "compiler": spec.compiler,
        **aliases,
    }
    spmd = spmd_section(core_modules[0], result_names(core_modules[0]))
    if spmd is not None:
        manifest["spmd"] = spmd
    logical_cores = max(1, len(core_modules) // spec.lnc)
    check_loadable(path, manifest, files, weights.arrays)  # what run would refuse: not written
    return write_neff(path, manifest=manifest, files=files, name=spec.name,
                      num_tpb=logical_cores, lnc_size=spec.lnc,
                      compress=spec.compress and weights_compress(list(weights.arrays.values())))
