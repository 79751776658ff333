"""A NEFF loaded for execution: its manifest, weights and one executor per core program."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from nxcc.backend.neff import NeffError, NeffFile
from nxcc.backend.runtime.checked_neff import check_manifest, check_neff, read_checked_weights
from nxcc.backend.runtime.collective_binding import (
    Binder,
    CollectiveBinding,
    Placement,
    bind_manifest,
)
from nxcc.backend.runtime.executor import ExecutionError, ProgramExecutor
from nxcc.backend.runtime.multicore import Communicator, CoreBlocks, run_cores
from nxcc.backend.runtime.state import ModelState
from nxcc.backend.runtime.status import NrtError, NrtStatus
from nxcc.ir.dtypes import DType


@dataclass(frozen=True)
class TensorInfo:
    """An input or output of a model, as the manifest lists it."""

    name: str
    dtype: np.dtype
    shape: tuple[int, ...]

    @staticmethod
    def from_manifest(entry: dict) -> TensorInfo:
        return TensorInfo(entry["name"], DType.from_name(entry["dtype"]).numpy,
                          tuple(entry["shape"]))

    def to_json(self) -> dict:
        return {"name": self.name, "dtype": str(self.dtype), "shape": list(self.shape)}


def read_weights(neff: NeffFile) -> dict[str, np.ndarray]:
    """The NEFF's weights by name, as fresh arrays, after the manifest passed its checks
    and each weight's header its size checks (NeffError otherwise, `validate`)."""
    check_manifest(neff)
    return read_checked_weights(neff)


def check_inputs(infos: list[TensorInfo], inputs: Mapping[str, np.ndarray]
                 ) -> list[np.ndarray]:
    """`inputs` in the order of `infos`, exactly typed; NrtError EXEC_BAD_INPUT otherwise."""
    if len(inputs) == len(infos):  # the common case: a plain loop, no set, no generator
        found = []
        for info in infos:
            a = inputs.get(info.name)
            if type(a) is not np.ndarray or a.shape != info.shape or a.dtype != info.dtype:
                break
            found.append(a)
        else:
            return found
    expected = {i.name for i in infos}
    unknown = sorted(set(inputs) - expected)
    if unknown:
        raise NrtError(NrtStatus.EXEC_BAD_INPUT,
                       f"unknown input(s) {unknown}; the model takes {sorted(expected)}")
    out = []
    for info in infos:
        if info.name not in inputs:
            raise NrtError(NrtStatus.EXEC_BAD_INPUT, f"missing input '{info.name}' "
                           f"({info.dtype}{list(info.shape)})")
        arr = np.asarray(inputs[info.name])
        if arr.shape != info.shape:
            raise NrtError(NrtStatus.EXEC_BAD_INPUT, f"input '{info.name}' has shape "
                           f"{list(arr.shape)}, the model expects {list(info.shape)}")
        if arr.dtype != info.dtype:
            raise NrtError(NrtStatus.EXEC_BAD_INPUT, f"input '{info.name}' has dtype "
                           f"{arr.dtype}, the model expects {info.dtype}")
        out.append(arr)
    return out


class LoadedModel:
    """Executable form of a NEFF. `execute(inputs)` maps input names to output arrays."""

    def __init__(self, neff: NeffFile, weights: Mapping[str, np.ndarray] | None = None,
                 should_stop: Callable[[], bool] | None = None,
                 placement: Placement | None = None) -> None:
        """`weights` (from `read_weights(neff)`) lets several replicas share one copy;
        by default the model reads its own. `should_stop` is handed to every executor.
        `placement` (physical core of each program) binds the collectives (default: the
        programs share one logical core); `bindings` lists them, one per manifest entry."""
        source = str(neff.path)
        checked = check_neff(neff, weights)  # the one door: nothing below sees an unchecked NEFF
        m = checked.manifest
        all_inputs = [TensorInfo.from_manifest(e) for e in m["inputs"]]
        all_outputs = [TensorInfo.from_manifest(e) for e in m["outputs"]]
        self.weights = checked.weights
        try:
            self.state = ModelState(m.get("state", []), self.weights)
        except (KeyError, TypeError, ValueError) as exc:
            raise NeffError(source, f"malformed state section: {exc!r}") from None
        self.programs = checked.programs
        self.blocks = CoreBlocks(m["subgraphs"], len(all_inputs), len(all_outputs))
        # What users pass and get: everything but the state, which the model keeps.
        self.n_program_inputs = len(all_inputs)
        self.all_output_shapes = [o.shape for o in all_outputs]
        self.inputs = [t for i, t in enumerate(all_inputs) if i not in self.state.inputs]
        self.outputs = [t for i, t in enumerate(all_outputs) if i not in self.state.outputs]
        self._output_names = [t.name for t in self.outputs]
        self._stateful = bool(self.state)  # its entries are the manifest's, fixed
        # Several programs (one per physical core of an -lnc 2 NEFF) run concurrently and
        # talk through a communicator that runs each collective by its binding.
        n = len(self.programs)
        self.placement = placement or Placement.one_logical_core(n)
        self.bindings: list[CollectiveBinding] = []
        self.group: Communicator | None = None
        if n > 1:
            entries = m.get("collectives", []) or []
            try:
                self.bindings = bind_manifest(entries, self.placement)
            except (KeyError, TypeError, ValueError) as exc:
                raise NeffError(source, f"cannot bind its collectives: {exc}") from None
            self.group = Communicator(n, Binder(self.placement, self.bindings, entries))
        self.executors = [ProgramExecutor(p, self.weights, partition_id=i,
                                          communicator=self.group.endpoint(i)
                                          if self.group is not None else None,
                                          should_stop=should_stop,
                                          # the cores run side by side: one thread each
                                          threads=1 if n > 1 else None)
                          for i, p in enumerate(self.programs)]
        self.name = neff.header.name

    def check_inputs(self, inputs: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """The inputs in manifest order, exactly typed; NrtError EXEC_BAD_INPUT otherwise."""
        return check_inputs(self.inputs, inputs)

    def execute(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run the model once; outputs keyed by the manifest's output names. A model with
        state reads it as the inputs it aliases and keeps the aliased outputs as the new
        state (neither passed nor returned here)."""
        return self.run(self.check_inputs(inputs))

    def run(self, args: list[np.ndarray]) -> dict[str, np.ndarray]:
        """`execute` on inputs `check_inputs` has already given."""
        stateful = self._stateful
        if stateful:
            args = self.state.arguments(args, self.n_program_inputs)
        try:
            if self.group is None:
                results = self.executors[0].run(args)
            else:
                per_core = run_cores([self._core_work(k, args) for k in
                                      range(len(self.executors))], self.group)
                results = self.blocks.assemble(per_core, self.all_output_shapes)
        except ExecutionError as exc:
            raise NrtError(NrtStatus.FAILURE, str(exc)) from exc
        if stateful:
            results = self.state.update(results)
        return dict(zip(self._output_names, results, strict=True))

    def _core_work(self, core: int, args: list[np.ndarray]) -> Callable[[], list[np.ndarray]]:
        executor, core_args = self.executors[core], self.blocks.args(core, args)
        return lambda: executor.run(core_args)
