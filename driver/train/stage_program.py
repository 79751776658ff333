"""Compiling one function of a stage module into a program every rank of a job can run.

`compile_function(module, name, options)` takes function `name` (and the functions it calls)
out of `module` as a module of its own, runs the ordinary compile pipeline on it (the passes
of `options`' -O level, verification, then the per-core passes a NEFF's programs get: matrix
products reading transposed operands in place and elementwise fusion, `core_pipeline`) and
lowers it to the executable program a NEFF holds (`backend.program.lower`, the memory
plan). The result is cached by the function's IR
text, so the ranks of one process that run the same program (the DP replicas of a stage, TP
ranks whose modules differ only in their parameters' values) compile it once.

`CompiledProgram.executor(communicator)` makes a fresh `ProgramExecutor` (one per rank and
thread) whose collectives go to `communicator`.

At `-lnc N` (N > 1, `options.logical_nc_config`: a trn2 job at LNC 2) the optimised function
is then sharded over the N physical cores of the rank's logical core (`logical_core`): a
`ShardedProgram`, one program per core.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass

import numpy as np

from nxcc.backend.program.lower import WeightTable, lower_module
from nxcc.backend.runtime.executor import Communicator, ProgramExecutor
from nxcc.driver.compile import full_pipeline
from nxcc.driver.errors import CompileError
from nxcc.driver.options import CompileOptions
from nxcc.driver.train.logical_core import ShardedProgram, shard_function
from nxcc.errors import VERIFICATION_FAILED
from nxcc.ir.clone import clone_function
from nxcc.ir.core import Module
from nxcc.ir.printer import print_module
from nxcc.ir.rewrite import reachable_functions
from nxcc.passes.manager import PassFailure, PassManager
from nxcc.passes.registry import core_pipeline


@dataclass(frozen=True)
class CompiledProgram:
    """One lowered program: its JSON form, weights, and planned arena (activation) bytes."""

    name: str
    program: dict
    weights: dict[str, np.ndarray]
    param_types: tuple[tuple[tuple[int, ...], str], ...]

    @property
    def arena_bytes(self) -> int:
        """Bytes of the entry function's arena: every intermediate value its memory plan
        keeps (the activations this program holds at its peak)."""
        return int(self.program["functions"][self.program["entry"]]["arena_bytes"])

    @property
    def weight_bytes(self) -> int:
        return sum(int(a.nbytes) for a in self.weights.values())

    def executor(self, communicator: Communicator | None, rank: int = 0) -> ProgramExecutor:
        return ProgramExecutor(self.program, self.weights, communicator, partition_id=rank)


def sub_module(module: Module, name: str) -> Module:
    """A copy of function `name` of `module` and the functions it calls, `name` the entry."""
    if name not in module.functions:
        raise CompileError(VERIFICATION_FAILED, f"the stage module has no function @{name}")
    keep = reachable_functions(module, name)
    return Module(f"{module.name}.{name}",
                  {n: clone_function(module.functions[n]) for n in keep}, name)


StageProgram = CompiledProgram | ShardedProgram

_cache: dict[str, StageProgram] = {}
_lock = threading.Lock()


def compile_function(module: Module, name: str, options: CompileOptions) -> StageProgram:
    """Function `name` of `module` compiled (see the module docstring); CompileError
    (NCC_EVRF064) when a pass fails."""
    sub = sub_module(module, name)
    text = print_module(sub)
    lnc = options.logical_nc_config
    key = hashlib.sha256(f"{options.optlevel}|{options.target}|{lnc}|{text}".encode()
                         ).hexdigest()
    with _lock:
        found = _cache.get(key)
    if found is not None:
        return found
    manager = PassManager(full_pipeline(options) + core_pipeline(), emit=lambda _: None)
    try:
        manager.run(sub)
        if lnc > 1:
            sharded = shard_function(sub, lnc)
    except PassFailure as exc:
        raise CompileError(VERIFICATION_FAILED, f"@{name}: {str(exc).splitlines()[0]}") from exc
    if lnc > 1:
        with _lock:
            return _cache.setdefault(key, sharded)
    table = WeightTable()
    program = lower_module(sub, table)
    fn = sub.entry_function
    compiled = CompiledProgram(name, program, dict(table.arrays),
                               tuple((p.type.shape, p.type.dtype.value) for p in fn.params))
    with _lock:
        return _cache.setdefault(key, compiled)
