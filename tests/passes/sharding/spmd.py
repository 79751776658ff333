"""Running a partitioned (SPMD) module in-process: one interpreter per core, the collectives
through the runtime's shared-memory communicator. For tests of the sharding passes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from nxcc.backend.runtime.multicore import Endpoint, SharedMemoryGroup, run_cores
from nxcc.ir.attributes import AttrValue
from nxcc.ir.core import Module
from nxcc.ir.interpreter import IRContext
from nxcc.ir.sharding import Sharding
from nxcc.passes.sharding.specialize import specialize


class CoreContext(IRContext):
    """An interpreter context whose collectives go to `endpoint`."""

    def __init__(self, module: Module, endpoint: Endpoint) -> None:
        super().__init__(module, partition_id=endpoint.rank)
        self.endpoint = endpoint

    def collective(self, opcode: str, args: Sequence[np.ndarray],
                   attrs: Mapping[str, AttrValue]) -> list[np.ndarray]:
        return self.endpoint.collective(opcode, args, attrs)


def block(arr: np.ndarray, s: Sharding | None, core: int) -> np.ndarray:
    if s is None:
        return arr
    spans = s.block(arr.shape, core)
    return arr[tuple(slice(a, b) for a, b in spans)]


def run_spmd(module: Module, inputs: Sequence[np.ndarray], n: int) -> list[np.ndarray]:
    """The global outputs of the SPMD `module` on `n` cores for the global `inputs`."""
    cores = [specialize(module, k) for k in range(n)]
    group = SharedMemoryGroup(n)

    def work(k: int):
        m = cores[k]
        fn = m.entry_function
        args = [np.require(block(x, p.sharding, k), requirements="C")
                for x, p in zip(inputs, fn.params, strict=True)]
        return lambda: CoreContext(m, group.endpoint(k)).call(m.entry, args)

    per_core = run_cores([work(k) for k in range(n)], group)
    outs = []
    fn = module.entry_function
    for i, r in enumerate(fn.results):
        s = r.sharding
        shape = s.global_shape(r.type.shape) if s is not None else r.type.shape
        full = np.empty(shape, r.type.dtype.numpy)
        for k in range(n):
            spans = s.block(shape, k) if s is not None else tuple((0, d) for d in shape)
            full[tuple(slice(a, b) for a, b in spans)] = per_core[k][i]
        outs.append(full)
    return outs
