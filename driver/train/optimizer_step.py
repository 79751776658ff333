"""The optimizer update as a compiled program over a flat shard of parameters.

The program is `nxd.step.update.build_update_module`'s (the gradient scaled by 1 / tokens
of the global batch times the clipping factor, the learning rate an input computed per step
with NxD's schedules, `lr_schedule`). `OptimizerStep` compiles it once through the ordinary
pipeline and keeps the slots (state of the update, updated in place each step). It runs the
program over CHUNK elements at a time (one more program for the remainder): each chunk's
parameters, slots and gradient are read once into buffers that stay in cache, the
program's passes run there, and its results are written straight into the slots and the
update's output array (a whole-shard program would stream every array through memory once
per pass and return fresh copies). The chunks are shared by as many threads as the BLAS
uses, each with executors of its own. The scalars of the step (bias corrections, step
sizes: functions of the learning rate and step number only) are computed once per step by
a program of their own and given to every chunk (`nxd.step.update.split_scalars`).
"""

from __future__ import annotations

import numpy as np

from nxcc.backend.runtime.blas_threads import blas_thread_count
from nxcc.backend.runtime.executor import ProgramExecutor
from nxcc.backend.runtime.parallel_steps import in_runs
from nxcc.driver.options import CompileOptions
from nxcc.driver.train.logical_core import LogicalCoreExecutor
from nxcc.driver.train.stage_program import CompiledProgram, compile_function
from nxcc.nxd.step.update import build_update_module, split_scalars
from nxcc.passes.autodiff.optimizers import OptimizerConfig

#: elements of the shard updated by one run of the program
CHUNK = 1 << 16


class OptimizerStep:
    """One rank's compiled update over its `n` elements, with the slots it keeps."""

    def __init__(self, cfg: OptimizerConfig, n: int, options: CompileOptions,
                 state_dtype: np.dtype | None = None, threads: int | None = None) -> None:
        """`state_dtype`: how the slots are kept between steps (f32 by default; the update
        itself runs in f32 and a bf16 state is rounded to nearest after it). `threads`:
        how many threads share the chunks (None: as many as the BLAS uses)."""
        self.cfg = cfg
        self.n = n
        # a logical core of several physical cores runs the whole shard, split among them
        self.chunk = n if options.logical_nc_config > 1 else max(1, min(n, CHUNK))
        sizes = {self.chunk, n % self.chunk or self.chunk}
        modules = {k: build_update_module(cfg, k) for k in sizes}
        self.scalars: ProgramExecutor | None = None
        if options.logical_nc_config == 1:  # the step's scalars once, not per chunk
            split = {k: split_scalars(m) for k, m in modules.items()}
            scalars = next(iter(split.values()))[0]  # the same for every size
            if scalars is not None:
                program = compile_function(scalars, "scalars", options)
                assert isinstance(program, CompiledProgram)
                self.scalars = program.executor(None)
                modules = {k: m for k, (_, m) in split.items()}
        programs = {k: compile_function(m, "update", options) for k, m in modules.items()}
        chunks = -(-n // self.chunk)
        self.threads = max(1, min(threads or blas_thread_count() or 1, chunks))
        self.executors = [{k: p.executor(None) for k, p in programs.items()}
                          for _ in range(self.threads)]  # one set per thread
        for per_thread in self.executors:
            for executor in per_thread.values():
                if isinstance(executor, ProgramExecutor):
                    executor.threads = 1  # the chunks share the threads, not their ops
        self.state_dtype = np.dtype(np.float32 if state_dtype is None else state_dtype)
        self.slots = [np.zeros(n, self.state_dtype) for _ in cfg.slots]
        self._out: np.ndarray | None = None  # made at the first call that needs it

    @property
    def state_bytes(self) -> int:
        """Bytes of optimizer state this rank keeps."""
        return sum(int(s.nbytes) for s in self.slots)

    def __call__(self, param: np.ndarray, grad: np.ndarray, grad_scale: float, lr: float,
                 step: int, out: np.ndarray | None = None) -> np.ndarray:
        """The updated parameters after step `step` (0 for the first); the slots are
        updated. They are written into `out` and returned: `out` may be `param` itself
        (each chunk is read before it is written: the parameters are updated in place,
        with no copy of the whole vector); by default an array of this object's, which
        the next call overwrites (and may take as `param`). With several threads, each
        updates a run of consecutive chunks (the same bits: each element's update is the
        same numpy calls)."""
        if out is None:
            if self._out is None:
                self._out = np.empty(self.n, np.float32)
            out = self._out
        if out.shape != (self.n,) or out.dtype != np.float32:
            raise ValueError(f"the update writes f32[{self.n}], not {out.dtype}{list(out.shape)}")
        scalars = [np.array(grad_scale, np.float32), np.array(lr, np.float32),
                   np.array(step, np.int32)]
        if self.scalars is not None:
            scalars += self.scalars.run(scalars)
        starts = list(range(0, self.n, self.chunk))
        in_runs(len(starts), self.threads, lambda t, lo, hi: self._update(
            starts[lo:hi], self.executors[t], param, grad, scalars, out), "nxcc-update")
        return out

    def _update(self, starts: list[int],
                executors: dict[int, ProgramExecutor | LogicalCoreExecutor],
                param: np.ndarray, grad: np.ndarray, scalars: list[np.ndarray],
                out: np.ndarray) -> None:
        """The chunks beginning at `starts`, with this thread's `executors`, the new
        parameters into `out`."""
        f32 = self.state_dtype == np.float32
        for start in starts:
            stop = min(self.n, start + self.chunk)
            slots = [s[start:stop] for s in self.slots]
            args: list[np.ndarray] = [
                param[start:stop], *(s if f32 else s.astype(np.float32) for s in slots),
                grad[start:stop], *scalars]
            executor = executors[stop - start]
            new_param, *new_slots = (executor.run(args, copy=False)  # views: copied below
                                     if isinstance(executor, ProgramExecutor)
                                     else executor.run(args))
            np.copyto(out[start:stop], new_param)
            for s, new in zip(slots, new_slots, strict=True):
                np.copyto(s, new, casting="unsafe")  # bf16 state: rounded to nearest
