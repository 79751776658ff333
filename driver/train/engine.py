"""One rank's training steps: 1F1B over the micro-batches, gradient sync, optimizer update.

`RankTrainer(rank, settings, channels, build)` compiles its stage's programs (through the
ordinary pipeline, `stage_program`) and binds their collectives to its TP group; each
`step(k, batch)` then

1. takes its DP rank's micro-batches of the global batch (`data.micro_batches`: DP rank d
   takes rows d*M*mb .. (d+1)*M*mb - 1 of every array of the batch, M micro-batches of mb
   rows each);
2. runs its stage's 1F1B order (`schedule.stage_ops`): a forward receives the stage input
   from the previous stage (the first stage has none), takes the batch arrays its programs
   read (`StageBuild.data`: the tokens on the first stage, the labels on the last),
   runs the forward program, keeps its inputs and the stash it returns (what the backward
   reads; see `passes.autodiff.stash`) and sends its output on; a backward receives the
   output gradient, runs the backward program on the stash and sends the input gradient
   back. The last stage runs `forward_backward` at each forward;
3. sums the gradients over the micro-batches (in micro-batch order) into the flat gradient
   vector; during the last micro-batch's backward each gradient is added as soon as the
   program has computed it and each DP bucket whose gradients are all final starts its
   reduction on the communication thread (`grad_sync`), overlapping the rest of the
   backward; then the `tp_partial` ones are summed over the TP group (in one collective)
   and the remaining buckets started;
4. reduces (loss sum, token count, squared gradient norm) over the whole job in rank order,
   so every rank knows the mean loss over all tokens of the global batch and the global
   norm; the gradient is scaled by clip_factor / tokens;
5. runs the compiled optimizer update on its shard at the step's learning rate
   (`settings.lr_at(k)`), then (ZeRO-1) all-gathers the parameters.

Where the rank runs (`cores`, a `job_cores.JobCores`: its instance, LNC and logical core) binds
its groups' collectives to the instance's links; at LNC N > 1 its stage programs are
compiled as one program per physical core (`logical_core`) and physical core k of each TP
member runs the TP collectives with the others' core k.

`settings.precision` (NxD's `precision` block, `precision.py`) decides the dtypes: products
in bf16 (the stage programs' dot_generals rewritten by `autocast`), the weights the programs
read in bf16 (`keep_in`: the flat parameter vector is bf16), an f32 master copy of the
optimizer's shard from which the bf16 weights are rounded after each update, gradient
accumulation in f32 or bf16, and optimizer slots in bf16 when there is no master copy.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field

import numpy as np

from nxcc.backend.runtime.channel_comm import Channels
from nxcc.backend.runtime.executor import ProgramExecutor
from nxcc.backend.runtime.job_cores import JobCores
from nxcc.backend.runtime.profile import Profiler
from nxcc.driver.options import CompileOptions
from nxcc.driver.train.checkpoint_io import CheckpointError, Expected, check_arrays
from nxcc.driver.train.data import micro_batch_rows
from nxcc.driver.train.flat import FlatLayout
from nxcc.driver.train.grad_sync import GradSync, norm_contribution
from nxcc.driver.train.groups import (
    DP_STREAMS,
    EMBED_STREAMS,
    PIPE_STREAMS,
    TP_CORE_STREAMS,
    TP_STREAMS,
    WORLD_STREAMS,
    Group,
)
from nxcc.driver.train.layout import RankLayout
from nxcc.driver.train.logical_core import LogicalCoreExecutor, ShardedProgram
from nxcc.driver.train.memory import activation_bytes, in_flight, stash_bytes, state_bytes
from nxcc.driver.train.optimizer_step import OptimizerStep
from nxcc.driver.train.precision import BF16, Precision, element_ids, rounding_key, to_bf16
from nxcc.driver.train.profile_spans import BACKWARD, step_labels
from nxcc.driver.train.schedule import stage_ops
from nxcc.driver.train.stage import StageBuilder, StagePlan
from nxcc.driver.train.stage_program import StageProgram, compile_function
from nxcc.ir.core import Module
from nxcc.ir.dtypes import DType
from nxcc.passes.autodiff.mixed_precision import autocast, keep_in
from nxcc.passes.autodiff.optimizers import OptimizerConfig

BF16_IR = DType.BF16
#: The tracks of a rank in `train --profile`'s trace.
COMPUTE_TRACK, TP_TRACK, DP_TRACK, JOB_TRACK, PIPELINE_TRACK = 0, 1, 2, 3, 4
TRACKS = {COMPUTE_TRACK: "compute", TP_TRACK: "tensor-parallel collectives",
          DP_TRACK: "data-parallel collectives", JOB_TRACK: "job collectives",
          PIPELINE_TRACK: "pipeline send/recv"}


@dataclass(frozen=True)
class EngineSettings:
    """What the engine needs of the training configuration."""

    layout: RankLayout
    micro_batch: int
    global_batch: int
    seq_length: int
    optimizer: OptimizerConfig
    lr_at: Callable[[int], float]
    zero1: bool = False
    sequence_parallel: bool = False
    clip: float | None = None
    bucket_bytes: int = 1 << 20
    options: CompileOptions = field(default_factory=lambda: CompileOptions(target="trn1"))
    precision: Precision = field(default_factory=Precision)
    seed: int = 0
    threads: int | None = None
    """Threads a rank's large elementwise instructions and optimizer update may use (None:
    as many as the BLAS uses; 1 when a process runs several ranks, which share its cores)."""

    @property
    def world(self) -> int:
        return self.layout.world_size

    @property
    def micro_batches(self) -> int:
        """Micro-batches each DP rank runs per step."""
        return self.global_batch // (self.micro_batch * self.layout.dp)


@dataclass(frozen=True)
class StepStats:
    loss: float
    grad_norm: float
    lr: float
    tokens: int
    seconds: float


class RankTrainer:
    """One rank of a training job (see the module docstring)."""

    def __init__(self, rank: int, settings: EngineSettings, channels: Channels,
                 build: StageBuilder, cores: JobCores | None = None) -> None:
        s = self.settings = settings
        lay = s.layout
        self.rank, self.channels, self.cores = rank, channels, cores
        c = lay.coords(rank)
        self.tp_rank, self.dp_rank, self.stage = c.tp, c.dp, c.pp
        self.tp_group = self._group(lay.tp_group(rank), TP_STREAMS, "tp")
        self.dp_group = self._group(lay.dp_group(rank), DP_STREAMS, "dp")
        self.world_group = self._group(range(s.world), WORLD_STREAMS, "world")
        # physical core k > 0 of a logical core: its own side of the TP group
        self.tp_cores = [self.tp_group] + [
            self._group(lay.tp_group(rank), TP_CORE_STREAMS + k, f"tp{k}.", k)
            for k in range(1, s.options.logical_nc_config)]
        self.plan = StagePlan(self.tp_rank, lay.tp, self.stage, lay.pp, s.micro_batch,
                              s.seq_length, s.sequence_parallel)
        self.build = build(self.plan)
        self._compile()
        names = [n for n, _ in self.build.params]
        self.layout = FlatLayout([a.shape for _, a in self.build.params], lay.dp,
                                 s.bucket_bytes)
        initial = np.zeros(self.layout.size, np.float32)
        for view, (_, a) in zip(self.layout.views(initial), self.build.params, strict=True):
            view[...] = a
        self.flat = initial.astype(s.precision.weight_dtype)
        self.params = self.layout.views(self.flat)
        counted = np.zeros(self.layout.size, np.float32)
        masks = self.build.norm_masks
        for view, n in zip(self.layout.views(counted), names, strict=True):
            view[...] = masks[n] if n in masks else (
                0.0 if (n in self.build.replicated and self.tp_rank) else 1.0)
        self.sync = GradSync(self.layout, self.dp_group, s.zero1)
        # the flat gradient, reused by every step (its padding stays zero)
        self._grads = np.zeros(self.layout.size, s.precision.grad_dtype)
        self._bind_buffers()
        self.mask = self.sync.count_mask(counted)  # None: every element counts
        self.partial = [i for i, n in enumerate(names) if n in self.build.tp_partial]
        self.shared = [i for i, n in enumerate(names) if n in self.build.pipeline_shared]
        self.embed_group = self._embedding_group(rank) if self.shared else None
        self.optimizer = OptimizerStep(s.optimizer, self.sync.shard_size, s.options,
                                       BF16 if s.precision.bf16_optimizer_state else None,
                                       s.threads)
        d = self.dp_group.index
        self.master = self.layout.shard(initial, d, self.sync.zero1).copy() \
            if s.precision.master_weights else None
        self.element_ids = self._element_ids() if s.precision.stochastic_rounding else None
        self.next_rank = lay.stage_peer(rank, 1)
        self.prev_rank = lay.stage_peer(rank, -1)
        self.profiler: Profiler | None = None

    def _group(self, members: Sequence[int], base: int, name: str, core: int = 0) -> Group:
        """This rank's side of the group `members`, bound to where they run."""
        placement = self.cores.placement(members, core) if self.cores is not None else None
        return Group(self.channels, members, self.rank, base, name, placement)

    @property
    def shared_stages(self) -> tuple[int, ...]:
        """The stages holding copies of the `pipeline_shared` parameters (by default the
        first and the last)."""
        return self.build.pipeline_shared_stages or (0, self.settings.layout.pp - 1)

    def _embedding_group(self, rank: int) -> Group:
        """The ranks of this rank's (TP, DP) position in the stages that hold copies of
        the `pipeline_shared` parameters (Megatron's embedding group: the first and the
        last stage)."""
        lay = self.settings.layout
        c = lay.coords(rank)
        ranks = [lay.rank(c.tp, p, c.dp) for p in self.shared_stages]
        return self._group(ranks, EMBED_STREAMS, "embed")

    def _compile(self) -> None:
        module, opts = self.build.module, self.settings.options
        names = ["forward_backward"] if self.plan.last else ["forward", "backward"]
        apply_precision(module, names, len(self.build.params), self.settings.precision)
        self.programs = {n: compile_function(module, n, opts) for n in names}
        self.executors = {n: self._executor(p) for n, p in self.programs.items()}
        for executor in self.executors.values():
            if isinstance(executor, ProgramExecutor):
                executor.threads = self.settings.threads

    def _executor(self, program: StageProgram) -> ProgramExecutor | LogicalCoreExecutor:
        """A fresh executor of `program` whose own collectives go to the TP group (at LNC N,
        physical core k's to that core's side of it)."""
        if isinstance(program, ShardedProgram):
            return program.executor([g.endpoint for g in self.tp_cores])
        return program.executor(self.tp_group.endpoint, self.tp_group.index)

    def _bind_buffers(self) -> None:
        """The programs read the parameters where they are (no copy per run); with one
        micro-batch per step, a program's gradient results are written straight into the
        flat gradient vector (no copy into it, `ProgramExecutor.bind_buffers`). Not for a
        logical core's programs, which take and return whole arrays."""
        for name, executor in self.executors.items():
            if not isinstance(executor, ProgramExecutor):
                continue
            params = dict(enumerate(self.params))
            results = {}
            if name != "forward" and self.settings.micro_batches == 1:
                offset = (0 if self.plan.first else 1) + (2 if name == "forward_backward" else 0)
                results = {offset + i: g for i, g in enumerate(self.layout.views(self._grads))}
            for attempt in ({"params": params, "results": results}, {"params": params}):
                try:  # a dtype of other precision settings: the arguments are copied
                    executor.bind_buffers(**attempt)
                    break
                except ValueError:
                    continue

    # one step

    def _micro_batches(self, arrays: tuple[np.ndarray, ...]) -> list[tuple[np.ndarray, ...]]:
        """This rank's micro-batches of the global batch `arrays`, each array as the
        model's input takes it (int32 token ids unless the model says otherwise)."""
        cut = micro_batch_rows(arrays, self.dp_rank, self.settings.layout.dp,
                               self.settings.micro_batch)
        dtypes = self.build.input_dtypes or (np.dtype(np.int32),) * len(arrays)
        return [tuple(np.ascontiguousarray(a, t) for a, t in zip(mb, dtypes, strict=True))
                for mb in cut]

    def _data(self, batch: tuple[np.ndarray, ...]) -> list[np.ndarray]:
        """The arrays of one micro-batch this rank's stage programs read, in their order."""
        index = self.build.data
        if index is None:  # the tokens on the first stage, the labels on the last
            index = (() if not self.plan.first else (0,)) + ((1,) if self.plan.last else ())
        return [batch[i] for i in index]

    def _accumulate(self, grads: list[np.ndarray], acc: list[np.ndarray], first: bool) -> None:
        for view, g in zip(acc, grads, strict=True):
            if first:
                if g.ctypes.data != view.ctypes.data:  # else written there in place
                    view[...] = g
            else:
                np.add(view, g, out=view, casting="unsafe")  # rounds to a bf16 accumulator

    def _gradients_hook(self, grads_flat: np.ndarray, acc: list[np.ndarray], offset: int,
                        first: bool) -> Callable[[int, np.ndarray], None] | None:
        """For the stage's last micro-batch: a program-result callback that accumulates each
        gradient (result `offset + i` is parameter i's) as soon as it is final and starts
        the DP reduction of each bucket whose gradients are all final, so the buckets
        overlap the rest of the backward pass. None where the reduction must wait for the
        whole gradient (bf16 accumulation; programs split over a logical core's physical
        cores, which report no result early; TP-partial parameters' buckets wait anyway)."""
        if grads_flat.dtype != np.float32 or not getattr(
                self.executors["forward_backward" if self.plan.last else "backward"],
                "reports_results", True):
            return None
        members = self.layout.bucket_params
        remaining = [len(m) for m in members]
        bucket_of = {i: b for b, m in enumerate(members) for i in m}
        waiting = set(self.partial) | set(self.shared)  # summed before their DP reduction
        blocked = {b for b, m in enumerate(members) if waiting.intersection(m)}

        def on_result(k: int, array: np.ndarray) -> None:
            i = k - offset
            if i < 0:
                return
            self._accumulate([array], [acc[i]], first)
            b = bucket_of[i]
            remaining[b] -= 1
            if remaining[b] == 0 and b not in blocked:
                self.sync.start_bucket(b, grads_flat)

        return on_result

    def _run(self, name: str, args: list[np.ndarray],
             hook: Callable[[int, np.ndarray], None] | None) -> list[np.ndarray]:
        """Program `name` on `args`: a core's results as read-only views of its buffers,
        valid until its next run (what is kept is copied), a logical core's as arrays."""
        executor = self.executors[name]
        if isinstance(executor, ProgramExecutor):
            return executor.run(args, on_result=hook, copy=False)
        return executor.run(args, on_result=hook)

    def _run_pipeline(self, micro: list[tuple[np.ndarray, ...]],
                      grads_flat: np.ndarray) -> tuple[float, float]:
        """The stage's 1F1B order; (loss sum, token count) on the last stage, else zeros."""
        plan = self.plan
        acc = self.layout.views(grads_flat)
        stash: dict[int, list[np.ndarray]] = {}
        pending_g_in: dict[int, np.ndarray] = {}
        loss_sum = count = 0.0
        done = 0
        for kind, m in stage_ops(plan.stage, plan.stages, len(micro)):
            data = self._data(micro[m])
            hook = self._gradients_hook(grads_flat, acc, (0 if plan.first else 1) + (
                2 if plan.last else 0), done == 0) if done == len(micro) - 1 else None
            if kind == "F":
                inputs = data if plan.first else [self._recv(-1, "activation", m), *data]
                if plan.last:  # results as views: what is kept is copied here
                    with self._span(f"forward+backward mb {m}", m):
                        out = self._run("forward_backward", [*self.params, *inputs], hook)
                    loss_sum += float(out[0])
                    count += float(out[1])
                    rest = out[2:]
                    if not plan.first:
                        pending_g_in[m], rest = rest[0].copy(), rest[1:]
                    if hook is None:
                        self._accumulate(rest, acc, done == 0)
                    done += 1
                    continue
                with self._span(f"forward mb {m}", m):
                    x_out, *kept = self.executors["forward"].run([*self.params, *inputs])
                stash[m] = [*inputs, *kept]
                self._send(1, x_out, "activation", m)
                continue
            if plan.last:
                if not plan.first:
                    self._send(-1, pending_g_in.pop(m), "gradient", m)
                continue
            g_out = self._recv(1, "gradient", m)
            with self._span(f"backward mb {m}", m):
                out = self._run("backward", [*self.params, *stash.pop(m), g_out], hook)
            if not plan.first:
                self._send(-1, out[0].copy(), "gradient", m)
                out = out[1:]
            if hook is None:
                self._accumulate(out, acc, done == 0)
            done += 1
        return loss_sum, count

    # the stage's transfers and the profile

    def _send(self, direction: int, x: np.ndarray, what: str, m: int) -> None:
        """Send `x` to the next (+1: an activation) or previous stage (-1: a gradient)."""
        peer = self.next_rank if direction > 0 else self.prev_rank
        assert peer is not None  # a stage sends only to a stage that exists
        with self._span(f"send {what} mb {m} to rank {peer}", m, PIPELINE_TRACK):
            self.channels.send(self.rank, peer, x, PIPE_STREAMS + (direction < 0))

    def _recv(self, direction: int, what: str, m: int) -> np.ndarray:
        """Receive from the previous (-1: an activation) or next stage (+1: a gradient)."""
        peer = self.prev_rank if direction < 0 else self.next_rank
        assert peer is not None  # a stage receives only from a stage that exists
        with self._span(f"recv {what} mb {m} from rank {peer}", m, PIPELINE_TRACK):
            got = self.channels.recv(peer, self.rank, PIPE_STREAMS + (direction > 0))
        assert isinstance(got, np.ndarray)
        return got

    def _span(self, name: str, micro_batch: int | None = None,
              track: int = COMPUTE_TRACK) -> AbstractContextManager[None]:
        """A profile span of this rank (nothing without a profiler)."""
        if self.profiler is None:
            return nullcontext()
        args = {} if micro_batch is None else {"micro_batch": micro_batch}
        return self.profiler.span(name, self.rank, track, args)

    def core_programs(self) -> dict[str, int]:
        """How many physical-core programs each stage program of this rank has (the LNC
        it was compiled at)."""
        return {n: len(p.cores) if isinstance(p, ShardedProgram) else 1
                for n, p in self.programs.items()}

    def attach_profiler(self, profiler: Profiler) -> None:
        """Record this rank's steps in `profiler` (see `TRACKS`): each micro-batch's
        forward and backward (their recomputation and, on the last stage, their forward,
        recomputation and backward phases inside), the optimizer update, the transfers
        between stages and every collective. At LNC N the programs' inside is physical
        core 0's."""
        self.profiler = profiler
        c = self.settings.layout.coords(self.rank)
        profiler.rank_names[self.rank] = f"rank {self.rank} (tp {c.tp} pp {c.pp} dp {c.dp})"
        for group, track in ((self.tp_group, TP_TRACK), (self.dp_group, DP_TRACK),
                             (self.world_group, JOB_TRACK), (self.embed_group, JOB_TRACK)):
            if group is not None:
                group.profile(profiler, track)
        for name, executor in self.executors.items():
            core = executor.executors[0] if isinstance(executor, LogicalCoreExecutor) \
                else executor
            program = self.programs[name]
            code = program.cores[0].program if isinstance(program, ShardedProgram) \
                else program.program
            spans: dict[str, list[str | None]] = {}  # a forward program: its span is all
            if name != "forward":
                loss = (0, 1) if name == "forward_backward" else ()
                spans[code["entry"]] = [None if name == "backward" and x == BACKWARD else x
                                        for x in step_labels(code, len(self.params), loss)]
            core.profiler, core.rank, core.spans = profiler, self.rank, spans

    def evaluate(self, *arrays: np.ndarray) -> tuple[float, float]:
        """(loss sum, token count) of one global batch over the whole job, the parameters
        left as they are: each micro-batch's forward through the stages (the last stage's
        one program computes its loss; its gradients are not used)."""
        plan = self.plan
        loss_sum = count = 0.0
        for m, batch in enumerate(self._micro_batches(arrays)):
            data = self._data(batch)
            inputs = data if plan.first else [self._recv(-1, "activation", m), *data]
            if plan.last:
                out = self.executors["forward_backward"].run([*self.params, *inputs])
                loss_sum += float(out[0])
                count += float(out[1])
            else:
                x_out = self.executors["forward"].run([*self.params, *inputs])[0]
                self._send(1, x_out, "activation", m)
        counts = plan.last and self.tp_rank == 0
        total = self.world_group.all_reduce(np.array(
            [loss_sum if counts else 0.0, count if counts else 0.0], np.float64))
        return float(total[0]), float(total[1])

    def step(self, k: int, *arrays: np.ndarray) -> StepStats:
        """Train step k (0-based: the optimizer steps taken before it) on the global batch
        `arrays` (each [global_batch, ...], in the model's input order: for a language
        model the inputs and the labels, [global_batch, seq_length] token ids)."""
        with self._span(f"step {k + 1}"):
            return self._step(k, *arrays)

    def _step(self, k: int, *arrays: np.ndarray) -> StepStats:
        start = time.perf_counter()
        grads_flat = self._grads  # every gradient is written before it is read
        loss_sum, count = self._run_pipeline(self._micro_batches(arrays), grads_flat)
        grads_flat = grads_flat.astype(np.float32, copy=False)  # reduced in f32
        acc = self.layout.views(grads_flat)
        self.tp_group.all_reduce_in_place([acc[i] for i in self.partial])
        if self.embed_group is not None:  # the tied copies' gradients summed over the pair
            self.embed_group.all_reduce_in_place([acc[i] for i in self.shared])
        self.sync.start(grads_flat)
        shard = self.sync.finish()
        counts_loss = self.plan.last and self.tp_rank == 0
        local = np.array([loss_sum if counts_loss else 0.0, count if counts_loss else 0.0,
                          norm_contribution(shard, self.mask, self.optimizer.threads)],
                         np.float64)
        total_loss, tokens, squares = self.world_group.all_reduce(local)
        norm = float(np.sqrt(squares)) / tokens
        clip = self.settings.clip
        factor = min(1.0, clip / (norm + 1e-6)) if clip else 1.0
        lr = float(np.float32(self.settings.lr_at(k)))
        with self._span("optimizer update"):
            param = self._param_shard()  # updated in place: no copy of the whole vector
            new_shard = self.optimizer(param, shard, factor / tokens, lr, k, out=param)
        self.sync.gather_params(self.flat, self._stored(new_shard, k))
        return StepStats(total_loss / tokens, norm, lr, int(tokens),
                         time.perf_counter() - start)

    def _element_ids(self) -> np.ndarray:
        """The rounding-noise key of each element of this rank's shard (`element_ids`):
        the same for the copies of a replicated parameter wherever they sit (a tied
        embedding's copy on the last stage takes the ids of the first stage's table,
        parameter 0 there)."""
        ids = np.zeros(self.layout.size, np.uint64)
        shared = np.zeros(self.layout.size, bool)
        names = [n for n, _ in self.build.params]
        owner = self.stage == self.shared_stages[0]
        for i, view in enumerate(self.layout.views(ids)):
            copy = i in self.shared and not owner
            index = self.build.pipeline_shared_index.get(names[i], 0) if copy else i
            view.reshape(-1)[...] = element_ids(index, view.size)
        for i, view in enumerate(self.layout.views(shared)):
            view[...] = i in self.shared
        self._shared_mask = self.layout.shard(shared, self.dp_group.index, self.sync.zero1)
        return self.layout.shard(ids, self.dp_group.index, self.sync.zero1)

    def _param_shard(self) -> np.ndarray:
        """The f32 parameters the update starts from: the master copy, else this rank's
        shard of the weights (widened from bf16)."""
        if self.master is not None:
            return self.master
        shard = self.layout.shard(self.flat, self.dp_group.index, self.sync.zero1)
        return shard.astype(np.float32, copy=False)

    def _stored(self, new_shard: np.ndarray, k: int) -> np.ndarray:
        """The updated shard as the weights keep it (the master copy kept first), in f32
        for the all-gather (bf16 values widen exactly)."""
        p = self.settings.precision
        if self.master is not None:
            self.master = new_shard
        if not p.bf16_weights:
            return new_shard
        ids = self.element_ids
        first = self.shared_stages[0]
        if ids is not None and self.embed_group is not None and self.stage != first:
            # a later stage's copy of a shared weight rounds with the first holder's
            # noise, so the copies stay equal: its ids undo this stage's key and apply that
            # stage's
            seed = self.settings.seed
            ids = ids ^ np.where(self._shared_mask, rounding_key(seed, k, first) ^
                                 rounding_key(seed, k, self.stage), np.uint64(0))
        low = to_bf16(new_shard, p.stochastic_rounding, ids, self.settings.seed, k, self.stage)
        return low.astype(np.float32)

    # figures and state

    def memory(self) -> dict[str, int]:
        """Bytes this rank holds (`memory`): parameters, gradients, optimizer state, peak
        activations (the model's own figure when it has one, else the stage programs'
        planned arenas, plus the stage inputs and stashes 1F1B keeps in flight)."""
        s, plan = self.settings, self.plan
        held = in_flight(plan.stage, plan.stages, s.micro_batches)
        stash = 0 if plan.last else stash_bytes(self.build.module.functions["forward"],
                                                len(self.params))
        arenas = max(p.arena_bytes for p in self.programs.values())
        peak = self.build.peak_activation_bytes
        figures = state_bytes(s.precision, self.layout.used, self.sync.shard_size,
                              len(self.optimizer.slots))
        return {**figures, "activation_bytes": activation_bytes(
            arenas if peak is None else peak, stash, held, plan.last)}

    def param_arrays(self) -> dict[str, np.ndarray]:
        """The weights by name, in f32 (bf16 weights widen exactly)."""
        return {n: v.astype(np.float32) for (n, _), v in
                zip(self.build.params, self.params, strict=True)}

    def param_spec(self) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
        """Name -> (shape, dtype) of each array `param_arrays` gives (and a checkpoint's
        parameter shard of this rank must hold)."""
        return {n: (tuple(a.shape), np.dtype(np.float32)) for n, a in self.build.params}

    def load_params(self, arrays: dict[str, np.ndarray]) -> None:
        for (n, _), v in zip(self.build.params, self.params, strict=True):
            v[...] = arrays[n]

    def optimizer_state(self) -> dict[str, np.ndarray]:
        """The optimizer's slots (f32; bf16 ones widened) and the f32 master weights."""
        out = {f"slot{i}": s.astype(np.float32) for i, s in enumerate(self.optimizer.slots)}
        if self.master is not None:
            out["master"] = self.master.copy()
        return out

    def optimizer_spec(self) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
        """Key -> (shape, dtype) of each array `optimizer_state` gives (and a checkpoint's
        optimizer shard of this rank must hold)."""
        f32 = np.dtype(np.float32)
        out = {f"slot{i}": (tuple(s.shape), f32) for i, s in enumerate(self.optimizer.slots)}
        if self.master is not None:
            out["master"] = (tuple(self.master.shape), f32)
        return out

    def load_optimizer_state(self, arrays: dict[str, np.ndarray]) -> None:
        self.optimizer.slots = [np.array(arrays[f"slot{i}"], self.optimizer.slots[i].dtype)
                                for i in range(len(self.optimizer.slots))]
        if self.master is not None:
            self.master = np.array(arrays["master"], np.float32)

    def load_whole(self, params: dict[str, np.ndarray],
                   state: dict[str, dict[str, np.ndarray]], where: str = "checkpoint") -> None:
        """Take this rank's slices of whole parameters and optimizer state (a checkpoint
        of another layout, `reshard`), through the model's `StageBuild.extra["slice"]`;
        CheckpointError naming `where` when a slice is missing, extra, or of another shape
        or dtype than this rank keeps (nothing is loaded then)."""
        spec = self.param_spec()
        mine = self._slices(params, spec, where)
        arrays = {}
        for key, whole in state.items():
            part = self._slices(whole, spec, f"{where} ({key})")
            flat = np.zeros(self.layout.size, np.float32)
            for view, (n, _) in zip(self.layout.views(flat), self.build.params, strict=True):
                view[...] = part[n]
            arrays[key] = self.layout.shard(flat, self.dp_group.index, self.sync.zero1)
        check_arrays(where, arrays, self.optimizer_spec())
        self.load_params(mine)
        self.load_optimizer_state(arrays)

    def _slices(self, whole: dict[str, np.ndarray], spec: Expected, where: str
                ) -> dict[str, np.ndarray]:
        try:
            mine = self.build.extra["slice"](whole)
        except (KeyError, ValueError, IndexError) as exc:
            raise CheckpointError(where, f"does not hold this model's tensors "
                                         f"({type(exc).__name__}: {str(exc)[:120]})") from None
        check_arrays(where, mine, spec)
        return mine

    def close(self) -> None:
        for g in (*self.tp_cores, self.dp_group, self.world_group, self.embed_group):
            if g is not None:
                g.close()


def apply_precision(module: Module, names: list[str], n_params: int, p: Precision) -> None:
    """Rewrite the stage programs `names` of `module` for `p`: bf16 weights (the first
    `n_params` parameters of each), then every f32 product with bf16 operands."""
    for name in names:
        fn = module.functions[name]
        if p.bf16_weights:
            keep_in(fn, fn.params[:n_params], BF16_IR)
    if p.bf16_products:
        for fn in module.functions.values():
            autocast(module, fn, BF16_IR)
