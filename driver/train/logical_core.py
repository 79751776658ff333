"""A stage function compiled at `-lnc N` (N > 1): one program per physical core of the rank's
logical core, as the compiler shards any model at `-lnc 2` (`driver.sharding_stage`).

`shard_function(sub, options)` takes a stage function the ordinary pipeline has optimised,
runs the sharding passes over the N physical cores (`core_programs`: the cost model chooses
how each op is split, collective placeholders join the cores' blocks), fuses each core's
program and lowers it. The stage's own collectives (the tensor-parallel all-reduces,
all-gathers and reduce-scatters between ranks) stay in every core's program, replicated;
the ones the sharding inserted carry a `channel_id` of 1 and up, the stage's own the default
0 (the function is refused otherwise).

`LogicalCoreExecutor` runs a rank's step on its logical core: each physical core's program
on a thread of its own (`multicore.run_cores`), reading its blocks of the arguments; the
inserted collectives run between the cores in shared memory (one address space at LNC 2,
as the LNC seed says), the stage's own ones on physical core k's endpoint of the rank's
group (core k of every rank of the group together); the outputs are assembled from the
cores' blocks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from nxcc.backend.program.lower import WeightTable, lower_module
from nxcc.backend.program.package import core_blocks, io_entries
from nxcc.backend.runtime.async_comm import DONES, STARTS
from nxcc.backend.runtime.executor import Communicator, ProgramExecutor
from nxcc.backend.runtime.multicore import Communicator as CoreCommunicator
from nxcc.backend.runtime.multicore import CoreBlocks, run_cores
from nxcc.driver.errors import CompileError
from nxcc.driver.sharding_stage import core_programs
from nxcc.errors import BAD_ARGUMENT
from nxcc.ir.attributes import AttrValue
from nxcc.ir.core import Module
from nxcc.ir.ops.collective import ASYNC_OPS
from nxcc.passes.manager import PassManager
from nxcc.passes.registry import core_pipeline

INSERTED = "channel_id"
"""The attribute that marks a collective the -lnc sharding inserted (between the cores): a
channel id above 0 (the sharding numbers its collectives 1, 2, ...)."""
COLLECTIVES = frozenset({"all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                         "collective_permute", *(op.name for op in ASYNC_OPS)})


@dataclass(frozen=True)
class CoreProgram:
    """One physical core's lowered program and the weights it reads."""

    program: dict
    weights: Mapping[str, np.ndarray]

    @property
    def arena_bytes(self) -> int:
        return int(self.program["functions"][self.program["entry"]]["arena_bytes"])


class ShardedProgram:
    """A stage function as one program per physical core (see the module docstring)."""

    def __init__(self, name: str, cores: Sequence[CoreProgram], blocks: CoreBlocks,
                 output_shapes: Sequence[tuple[int, ...]]) -> None:
        self.name = name
        self.cores = tuple(cores)
        self.blocks = blocks
        self.output_shapes = list(output_shapes)

    @property
    def arena_bytes(self) -> int:
        """Every core's planned arena: the activations the logical core holds at its peak."""
        return sum(c.arena_bytes for c in self.cores)

    def executor(self, endpoints: Sequence[Communicator | None] | None = None
                 ) -> LogicalCoreExecutor:
        """A fresh executor whose core k sends the stage's own collectives to
        `endpoints[k]` (None: a program with no collectives of its own)."""
        return LogicalCoreExecutor(self, endpoints or [None] * len(self.cores))


def _check_own_collectives(sub: Module) -> None:
    for fn in sub.functions.values():
        for op in fn.body:
            if op.opcode in COLLECTIVES and _inserted(op.attrs):
                raise CompileError(BAD_ARGUMENT, f"@{fn.name}: its {op.opcode} carries "
                                   f"{INSERTED} {op.attrs[INSERTED]}; a stage sharded over the "
                                   "physical cores of a logical core keeps channel ids for "
                                   "the collectives the sharding inserts")


def _inserted(attrs: Mapping[str, AttrValue]) -> bool:
    value = attrs.get(INSERTED, 0)
    return isinstance(value, int) and value > 0


def shard_function(sub: Module, lnc: int) -> ShardedProgram:
    """The optimised stage function `sub` as `lnc` core programs (see the module
    docstring); PassFailure when a sharding pass fails."""
    _check_own_collectives(sub)
    modules, _ = core_programs(sub, lnc, frozenset(), lambda _: None)
    table = WeightTable()
    cores = []
    for module in modules:
        PassManager(core_pipeline(), emit=lambda _: None).run(module)
        program = lower_module(module, table)
        cores.append(program)
    weights = dict(table.arrays)
    inputs, outputs = io_entries(modules[0], partitioned=True)
    blocks = CoreBlocks([core_blocks(m, k) for k, m in enumerate(modules)], len(inputs),
                        len(outputs))
    shapes = [tuple(o["shape"]) for o in outputs]
    return ShardedProgram(sub.name, [CoreProgram(p, weights) for p in cores], blocks, shapes)


class RoutedEndpoint:
    """Physical core k's communicator: collectives the sharding inserted go to the logical
    core's `cores` endpoint, the stage's own to `group` (the rank's group, core k's side).
    A start's context is this endpoint's own number, so a done finds the endpoint its
    start went to."""

    def __init__(self, cores: Communicator, group: Communicator | None) -> None:
        self.cores = cores
        self.group = group
        self._started: dict[int, tuple[Communicator, np.ndarray]] = {}
        self._next = 0

    def collective(self, opcode: str, args: Sequence[np.ndarray],
                   attrs: Mapping[str, AttrValue]) -> list[np.ndarray]:
        if opcode in DONES:
            target, context = self._started.pop(int(args[0]))
            return target.collective(opcode, [context, *args[1:]], attrs)
        target = self.cores if _inserted(attrs) or self.group is None else self.group
        result = target.collective(opcode, args, attrs)
        if opcode not in STARTS:
            return result
        handle, self._next = self._next, self._next + 1
        self._started[handle] = (target, result[0])
        return [np.array(handle, np.uint32)]


class LogicalCoreExecutor:
    """Runs a `ShardedProgram` on the physical cores of one logical core; `run(args)` takes
    and returns whole arrays. Results are not reported one by one (`reports_results`)."""

    reports_results = False

    def __init__(self, program: ShardedProgram, endpoints: Sequence[Communicator | None]
                 ) -> None:
        n = len(program.cores)
        self.program = program
        self.group = CoreCommunicator(n)
        self.executors = [ProgramExecutor(c.program, c.weights,
                                          RoutedEndpoint(self.group.endpoint(k), endpoints[k]),
                                          partition_id=k, threads=1)  # side by side
                          for k, c in enumerate(program.cores)]

    def run(self, args: Sequence[np.ndarray],
            on_result: Callable[[int, np.ndarray], None] | None = None) -> list[np.ndarray]:
        if on_result is not None:
            raise ValueError("a logical core's programs do not report results one by one")
        blocks = self.program.blocks
        work = [self._work(k, blocks.args(k, list(args))) for k in range(len(self.executors))]
        per_core = run_cores(work, self.group)
        return blocks.assemble(per_core, self.program.output_shapes)

    def _work(self, k: int, args: list[np.ndarray]) -> Callable[[], list[np.ndarray]]:
        executor = self.executors[k]
        return lambda: executor.run(args)
