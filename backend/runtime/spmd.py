"""Running an SPMD program: one program, N ranks in one process, one thread each.

`SpmdModel(neff, world_size, placement, output_shardings)` makes one executor per rank, all
on the NEFF's single program with its own arenas, with partition_id / replica_id set per
rank (`SpmdSpec.rank_ids`) and a communicator whose collectives are bound to the placement
(`collective_binding`: on trn1, a ring over the torus). `execute(global inputs)`:

1. splits each global input by its parameter's layout (replicated when the program gives
   none): rank r is given its block (`spmd_layout.split`);
2. runs the ranks concurrently (`multicore.run_cores`), exchanging data only through the
   bound collectives;
3. assembles each global output by the root's layout when the program carries one, else by
   the `output_shardings` given (HLO sharding text, once per output), else takes it as
   replicated: ranks that disagree are then an error saying so (`spmd_layout.assemble`).

It has the interface of `model.LoadedModel` (inputs, outputs, bindings, check_inputs,
execute), so a `ModelHandle` runs it like any model; `Runtime.load` builds it (`load_plan`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from nxcc.backend.neff import NeffError, NeffFile
from nxcc.backend.runtime.checked_neff import check_neff
from nxcc.backend.runtime.collective_binding import (
    Binder,
    CollectiveBinding,
    Placement,
    bind_manifest,
)
from nxcc.backend.runtime.executor import ExecutionError, ProgramExecutor
from nxcc.backend.runtime.model import TensorInfo, check_inputs
from nxcc.backend.runtime.multicore import Communicator, run_cores
from nxcc.backend.runtime.spmd_layout import LayoutError, OutputsDisagree, assemble, split
from nxcc.backend.runtime.spmd_spec import check_layouts, output_layouts, read_spec
from nxcc.backend.runtime.status import NrtError, NrtStatus
from nxcc.ir.dtypes import DType


class SpmdModel:
    """An SPMD NEFF loaded for `world_size` ranks (see the module docstring)."""

    def __init__(self, neff: NeffFile, world_size: int, placement: Placement,
                 output_shardings: Sequence[str] | None = None,
                 should_stop: Callable[[], bool] | None = None,
                 local_ranks: Sequence[int] | None = None,
                 communicator: Callable[[int, Binder], Any] | None = None) -> None:
        """NrtError(INVALID) when the NEFF is not one program, was partitioned for another
        world size, or a layout does not fit; NeffError when it is malformed.

        `local_ranks` are the ranks this process runs (default: all of them) and
        `communicator(world_size, binder)` makes the communicator through which they reach
        the others (default: threads sharing memory, `multicore.Communicator`); a
        multi-process job gives both (`mpi_job`)."""
        source = str(neff.path)
        m = neff.manifest
        self.name = neff.header.name
        self.world_size = world_size
        checked = check_neff(neff)  # the one door: nothing below sees an unchecked NEFF
        try:
            spec = read_spec(m)
            subgraphs = m["subgraphs"]
            dtypes_in = [DType.from_name(e["dtype"]).numpy for e in m["inputs"]]
            dtypes_out = [DType.from_name(e["dtype"]).numpy for e in m["outputs"]]
            entries = m.get("collectives", []) or []
            program = checked.programs[0]
            weights = checked.weights
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise NeffError(source, f"malformed manifest or program: {exc!r}") from None
        if len(subgraphs) != 1:
            raise NrtError(NrtStatus.INVALID, f"NEFF '{self.name}' has {len(subgraphs)} "
                           "per-core programs (compiled with -lnc 2); an SPMD program is one "
                           "program that every rank runs: compile it with -lnc 1")
        if spec.world_size is not None and spec.world_size != world_size:
            raise NrtError(NrtStatus.INVALID, f"NEFF '{self.name}' was partitioned for "
                           f"{spec.world_size} ranks (num_partitions={spec.num_partitions}, "
                           f"replica_count={spec.replica_count}); run it with --world-size "
                           f"{spec.world_size}, not {world_size}")
        try:
            self.layouts_out = output_layouts(spec, output_shardings)
            check_layouts(spec, self.layouts_out, world_size)
            out_shapes = [lay.global_shape(t.local_shape) if lay is not None else t.local_shape
                          for t, lay in zip(spec.outputs, self.layouts_out, strict=True)]
        except (LayoutError, ValueError) as exc:
            raise NrtError(NrtStatus.INVALID, str(exc)) from None
        self.spec = spec
        self.inputs = [TensorInfo(t.name, dt, t.shape)
                       for t, dt in zip(spec.inputs, dtypes_in, strict=True)]
        self.outputs = [TensorInfo(t.name, dt, tuple(shape))
                        for t, dt, shape in zip(spec.outputs, dtypes_out, out_shapes,
                                                strict=True)]
        self.placement = placement
        try:
            self.bindings: list[CollectiveBinding] = bind_manifest(entries, placement)
        except (KeyError, TypeError, ValueError) as exc:
            raise NrtError(NrtStatus.INVALID, f"NEFF '{self.name}': cannot bind its "
                           f"collectives to {world_size} ranks: {exc}") from None
        binder = Binder(placement, self.bindings, entries)
        self.group = (communicator or Communicator)(world_size, binder)
        self.local_ranks = list(range(world_size) if local_ranks is None else local_ranks)
        self.executors = []
        for r in self.local_ranks:
            partition, replica = spec.rank_ids(r, world_size)
            self.executors.append(ProgramExecutor(
                program, weights, communicator=self.group.endpoint(r), partition_id=partition,
                replica_id=replica, should_stop=should_stop,
                threads=1 if len(self.local_ranks) > 1 else None))  # side by side: one each

    def check_inputs(self, inputs: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """The global inputs in order, exactly typed; NrtError EXEC_BAD_INPUT otherwise."""
        return check_inputs(self.inputs, inputs)

    def execute_local(self, inputs: Mapping[str, np.ndarray]) -> list[list[np.ndarray]]:
        """Run this process's ranks once on their blocks of the global `inputs`; each local
        rank's outputs, in `local_ranks` order."""
        return self._run_local(self.check_inputs(inputs))

    def _run_local(self, args: list[np.ndarray]) -> list[list[np.ndarray]]:
        n = self.world_size
        blocks = [split(x, t.layout, n) for x, t in zip(args, self.spec.inputs, strict=True)]

        def work(i: int, rank: int) -> Callable[[], list[np.ndarray]]:
            executor, mine = self.executors[i], [b[rank] for b in blocks]
            return lambda: executor.run(mine)

        try:
            return run_cores([work(i, r) for i, r in enumerate(self.local_ranks)],
                             self.group)
        except ExecutionError as exc:
            raise NrtError(NrtStatus.FAILURE, str(exc)) from exc

    def assemble(self, per_rank: Sequence[Sequence[np.ndarray]]) -> dict[str, np.ndarray]:
        """The global outputs from every rank's outputs (`per_rank[r]`, all ranks)."""
        out = {}
        for i, (info, layout) in enumerate(zip(self.outputs, self.layouts_out, strict=True)):
            try:
                out[info.name] = assemble(info.name, layout, [r[i] for r in per_rank])
            except OutputsDisagree as exc:
                raise NrtError(NrtStatus.FAILURE, str(exc)) from None
        return out

    def execute(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run every rank once on its blocks of the global `inputs`; the global outputs."""
        return self.run(self.check_inputs(inputs))

    def run(self, args: list[np.ndarray]) -> dict[str, np.ndarray]:
        """`execute` on inputs `check_inputs` has already given."""
        if len(self.local_ranks) != self.world_size:
            raise NrtError(NrtStatus.INVALID, "this process runs only some of the ranks; "
                           "the job's runner assembles the outputs (mpi_job)")
        return self.assemble(self._run_local(args))
