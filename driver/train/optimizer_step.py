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

With float32 slots, the update is instead one run of a whole-shard program whose buffers
are the caller's arrays (`ProgramExecutor.bind_buffers`): the parameters, slots and
gradient are read where they are and the new parameters and slots written straight over
the old ones, when the program allows it (`in_place_safe`: each aliased result written by
one elementwise instruction, after which nothing reads the old value). Its fused steps go
block by block in cache (`ir.kernels.fused`) and are split between the threads
(`parallel_steps`), so the chunks' copies in and out are saved: on 16.9M parameters
(AdamW, one thread) 48-64 ms of CPU time against 62-80 chunked. The bits are the chunks'
(the same numpy calls on each element). It is bound again whenever the caller passes other
arrays.
"""

from __future__ import annotations

import numpy as np

from nxcc.backend.runtime.blas_threads import blas_thread_count
from nxcc.backend.runtime.executor import ProgramExecutor
from nxcc.backend.runtime.parallel_steps import in_runs
from nxcc.driver.options import CompileOptions
from nxcc.driver.train.logical_core import LogicalCoreExecutor
from nxcc.driver.train.stage_program import CompiledProgram, compile_function
from nxcc.ir import ops
from nxcc.ir.opdef import ElementwiseDef, get_opdef
from nxcc.nxd.step.update import build_update_module, split_scalars
from nxcc.passes.autodiff.optimizers import OptimizerConfig

#: elements of the shard updated by one run of the program
CHUNK = 1 << 16


class OptimizerStep:
    """One rank's compiled update over its `n` elements, with the slots it keeps."""

    def __init__(self, cfg: OptimizerConfig, n: int, options: CompileOptions,
                 state_dtype: np.dtype | None = None, threads: int | None = None,
                 in_place: bool = True) -> None:
        """`state_dtype`: how the slots are kept between steps (f32 by default; the update
        itself runs in f32 and a bf16 state is rounded to nearest after it). `threads`:
        how many threads share the chunks or the whole-shard program's steps (None: as
        many as the BLAS uses). `in_place` false: always by chunks (the whole-shard program
        bound to the caller's arrays is never used)."""
        self.cfg = cfg
        self.n = n
        # a logical core of several physical cores runs the whole shard, split among them
        self.chunk = n if options.logical_nc_config > 1 else max(1, min(n, CHUNK))
        self.state_dtype = np.dtype(np.float32 if state_dtype is None else state_dtype)
        whole = in_place and self.state_dtype == np.float32 and options.logical_nc_config == 1
        sizes = {self.chunk, n % self.chunk or self.chunk}
        modules = {k: build_update_module(cfg, k) for k in sizes | ({n} if whole else set())}
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
        whole_program = programs[n] if whole else None  # one physical core: CompiledProgram
        self._whole = (whole_program if isinstance(whole_program, CompiledProgram)
                       else None)
        self._in_place: ProgramExecutor | None = None  # bound to `_bound_to` (`_bind`)
        self._bound_to: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        chunks = -(-n // self.chunk)
        self.threads = max(1, min(threads or blas_thread_count() or 1, chunks))
        self.executors = [{k: p.executor(None) for k, p in programs.items() if k in sizes}
                          for _ in range(self.threads)]  # one set per thread
        for per_thread in self.executors:
            for executor in per_thread.values():
                if isinstance(executor, ProgramExecutor):
                    executor.threads = 1  # the chunks share the threads, not their ops
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
        if self._bind(param, grad, out):
            assert self._in_place is not None
            self._in_place.run([param, *self.slots, grad, *scalars], copy=False)
            return out
        starts = list(range(0, self.n, self.chunk))
        in_runs(len(starts), self.threads, lambda t, lo, hi: self._update(
            starts[lo:hi], self.executors[t], param, grad, scalars, out), "nxcc-update")
        return out

    def _bind(self, param: np.ndarray, grad: np.ndarray, out: np.ndarray) -> bool:
        """Whether the whole-shard program now runs on these very arrays, its results
        written over the parameters (into `out`) and the slots (bound now if need be:
        float32 slots, C-contiguous float32 arrays, a gradient apart from the others, a
        program that allows it); False: the chunks."""
        if self._whole is None:
            return False
        if self._bound_to is not None and all(
                a is b for a, b in zip((param, grad, out), self._bound_to, strict=True)):
            return True
        self._in_place, self._bound_to = None, None
        arrays = [param, grad, out]
        if any(type(a) is not np.ndarray or a.dtype != np.float32 or a.shape != (self.n,)
               or not a.flags.c_contiguous for a in arrays):
            return False
        if any(np.shares_memory(grad, a) for a in (param, out, *self.slots)) or (
                out is not param and np.shares_memory(out, param)):
            return False
        k = len(self.slots)
        aliased = [(i, i) for i in range(1, k + 1)] + ([(0, 0)] if out is param else [])
        if not in_place_safe(self._whole.program["functions"][self._whole.program["entry"]],
                             aliased):
            return False
        executor = self._whole.executor(None)
        executor.threads = self.threads
        try:
            placed = executor.bind_buffers(
                params={0: param, **{i + 1: s for i, s in enumerate(self.slots)}, k + 1: grad},
                results={0: out, **{i + 1: s for i, s in enumerate(self.slots)}})
        except ValueError:
            return False
        if placed != list(range(k + 1)):
            return False
        self._in_place, self._bound_to = executor, (param, grad, out)
        return True

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


def in_place_safe(function: dict, aliased: list[tuple[int, int]]) -> bool:
    """Whether `function` (a program's function: slots, params, results, instructions)
    computes the same when each (parameter i, result j) of `aliased` share one array:
    result j's slot is written by exactly one instruction, an elementwise one (which reads
    each element before it writes it, at the same place), and no instruction after it
    reads parameter i."""
    instructions = function["instructions"]
    for i, j in aliased:
        param, result = function["params"][i], function["results"][j]
        writers = [w for w, ins in enumerate(instructions) if result in ins["outs"]]
        if len(writers) != 1 or result in function["params"]:
            return False
        w = writers[0]
        opdef = get_opdef(instructions[w]["op"])
        if not (opdef is ops.fused_elementwise or isinstance(opdef, ElementwiseDef)):
            return False
        if any(param in ins["args"] for ins in instructions[w + 1:]):
            return False
    return True
