"""`run_training(config) -> summary`: a whole training run, as `neuronx-cc train` starts it.

The job has `trainer.devices x num_nodes` ranks laid out TP x PP x DP (`layout`). Without an
MPI launcher every rank is a thread of this process; under `mpiexec -n P` (`mpi_job`'s
detection) each of the P processes runs its block of world / P ranks as threads
(`MpiChannels` between processes, which name a peer whose process ended at once), so
`-n 8` is one rank per process and `-n 2` four.

Each rank (`_rank_main`): builds and compiles its stage (`model_stage`, `engine`), loads the
latest checkpoint when `resume_if_exists` finds one (its parameters, optimizer shard, and
the step, from which the data position follows), then runs the steps. Rank 0 writes
`exp_dir/metrics.jsonl` (each record with the largest rank's memory figures, the run's first
record with every rank's) and one log line per `log_every_n_steps`; every
`every_n_train_steps` each rank writes its own shards (parameters from DP rank 0 of each
(TP, PP) pair, optimizer state from every DP rank with ZeRO-1, else from DP rank 0) and,
when all have, rank 0 commits the checkpoint (`checkpoint_io`). A failing rank stops the
job: in one process every rank stops at once (`ranks.run_rank_threads`) and the error is
one line naming the rank. Under MPI the failing process prints that line and leaves a note
(`peer_liveness`) so that its peers stop without another line; a process killed outright
is named by the peers that find it gone (with the command line's rank children,
`cli.rank_process`; a caller of its own gets `MPI_Abort` instead).

The summary (and the log's first lines) gives each rank's memory: parameter, gradient and
optimizer-state bytes and peak activation bytes.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from nxcc.backend.runtime.channels import LocalChannels, MpiChannels
from nxcc.backend.runtime.config import default_runtime_dir
from nxcc.backend.runtime.mpi_job import launched_processes, world_communicator
from nxcc.backend.runtime.peer_liveness import PeerProcesses, this_process
from nxcc.driver.errors import CompileError
from nxcc.driver.options import CompileOptions
from nxcc.driver.train import checkpoint_io as ckpt
from nxcc.driver.train import reshard
from nxcc.driver.train.config import TrainConfig
from nxcc.driver.train.data import Batches, load_tokens
from nxcc.driver.train.engine import EngineSettings, RankTrainer, StepStats
from nxcc.driver.train.errors import TrainConfigError
from nxcc.driver.train.memory import MEMORY_KEYS
from nxcc.driver.train.metrics import MetricsWriter, format_line, should_log
from nxcc.driver.train.model_stage import Pipeline, decoder_builder, decoder_unshard
from nxcc.driver.train.onnx_stage import onnx_builder
from nxcc.driver.train.ranks import RankFailed, run_rank_threads
from nxcc.driver.train.stage import StageBuilder

#: A rank of the job failed (the message names it).
RANK_FAILED = "NCC_ETRN003"
DEFAULT_TIMEOUT = 600.0


@dataclass
class Job:
    """What every rank of this process shares."""

    config: TrainConfig
    settings: EngineSettings
    batches: Batches
    build: StageBuilder
    emit: Callable[[str], None]
    resume: ckpt.Checkpoint | None
    pipeline: Pipeline
    losses: list[float] = field(default_factory=list)
    grad_norms: list[float] = field(default_factory=list)
    memory: list[dict[str, int]] = field(default_factory=list)
    speeds: list[float] = field(default_factory=list)
    logged: bool = False
    unshard: reshard.Unshard | None = None
    _whole: list = field(default_factory=list)
    _whole_lock: threading.Lock = field(default_factory=threading.Lock)

    def whole_state(self) -> tuple[dict, dict]:
        """The resumed checkpoint made whole (read once per process, `reshard`)."""
        with self._whole_lock:
            if not self._whole:
                assert self.resume is not None and self.unshard is not None
                self._whole.append(reshard.whole_state(self.resume, self.unshard,
                                                       self.settings.bucket_bytes))
            return self._whole[0]

    @property
    def start(self) -> int:
        return self.resume.step if self.resume is not None else 0

    def layout_record(self) -> dict[str, object]:
        """What a checkpoint's shards depend on: the layout and the precision's dtypes."""
        lay, p = self.settings.layout, self.settings.precision
        return {"tp": lay.tp, "pp": lay.pp, "dp": lay.dp, "zero1": int(self.settings.zero1),
                "kv_replicator": self.config.distributed.kv_replicator, "precision": p.label}


def engine_settings(config: TrainConfig) -> EngineSettings:
    opt, sched = config.optim, config.optim.sched
    clip = config.trainer.gradient_clip_val or None
    return EngineSettings(
        config.distributed.layout, config.data.micro_batch_size,
        config.data.global_batch_size, config.data.seq_length, opt.optimizer_config(),
        lambda k: sched.lr_at(opt.lr, k), zero1=config.distributed.zero1,
        sequence_parallel=config.distributed.sequence_parallel, clip=clip,
        options=CompileOptions(target="trn1"), precision=config.recipe, seed=config.seed)


def _shard_names(job: Job, trainer: RankTrainer) -> list[str]:
    """The checkpoint files this rank writes."""
    names = []
    if trainer.dp_rank == 0:
        names.append(ckpt.params_name(trainer.tp_rank, trainer.stage))
    if trainer.sync.zero1 or trainer.dp_rank == 0:
        names.append(ckpt.optim_name(trainer.dp_rank if trainer.sync.zero1 else 0,
                                     trainer.tp_rank, trainer.stage))
    return names


def all_shard_names(job: Job) -> list[str]:
    lay, zero1 = job.settings.layout, job.settings.zero1 and job.settings.layout.dp > 1
    names = [ckpt.params_name(t, p) for p in range(lay.pp) for t in range(lay.tp)]
    dps = range(lay.dp) if zero1 else range(1)
    return names + [ckpt.optim_name(d, t, p) for p in range(lay.pp) for t in range(lay.tp)
                    for d in dps]


def _save(job: Job, trainer: RankTrainer, step: int) -> None:
    exp = job.config.exp_manager.exp_dir
    for name in _shard_names(job, trainer):
        arrays = (trainer.param_arrays() if name.startswith("params")
                  else trainer.optimizer_state())
        ckpt.write_shard(exp, step, name, arrays)
    trainer.world_group.all_reduce(np.zeros(1))  # every shard is written
    if trainer.rank == 0:
        ckpt.commit(exp, step, all_shard_names(job), job.layout_record(),
                    job.batches.position(step))


def _restore(job: Job, trainer: RankTrainer) -> None:
    found = job.resume
    if found is None:
        return
    written = {"precision": "fp32", "kv_replicator": 1, **found.layout}
    now = job.layout_record()
    if written["precision"] != now["precision"]:
        raise TrainConfigError(found.path, f"was written with precision.type "
                               f"{written['precision']}, this run is {now['precision']}: "
                               "resume with the precision it was written with")
    if written != now:  # another layout: its shards made whole, then cut for this rank
        trainer.load_whole(*job.whole_state())
        return
    trainer.load_params(found.params(trainer.tp_rank, trainer.stage))
    d = trainer.dp_rank if trainer.sync.zero1 else 0
    trainer.load_optimizer_state(found.optim(d, trainer.tp_rank, trainer.stage))


def _memory_table(trainer: RankTrainer) -> list[dict[str, int]]:
    """Every rank's memory figures (gathered over the job)."""
    mine = trainer.memory()
    flat = trainer.world_group.all_gather(np.array([mine[k] for k in MEMORY_KEYS], np.int64))
    rows = flat.reshape(-1, len(MEMORY_KEYS))
    return [{k: int(v) for k, v in zip(MEMORY_KEYS, row, strict=True)} for row in rows]


def memory_lines(table: list[dict[str, int]], job: Job) -> list[str]:
    lay = job.settings.layout
    out = []
    for rank, row in enumerate(table):
        c = lay.coords(rank)
        figures = ", ".join(f"{k.removesuffix('_bytes').replace('_', ' ')} {v / 2**20:.3f} MiB"
                            for k, v in row.items())
        out.append(f"memory rank {rank} (tp {c.tp} pp {c.pp} dp {c.dp}): {figures}")
    return out


def _log_step(job: Job, writer: MetricsWriter, done: int, stats: StepStats) -> None:
    job.losses.append(stats.loss)
    job.grad_norms.append(stats.grad_norm)
    speed = stats.tokens / stats.seconds if stats.seconds > 0 else float("nan")
    job.speeds.append(speed)
    max_steps = job.config.trainer.max_steps
    if not should_log(done, job.config.trainer.log_every_n_steps, max_steps):
        return
    extra: dict[str, object] = {f"max_{k}": max(row[k] for row in job.memory)
                                for k in MEMORY_KEYS}
    if not job.logged:  # the run's first record carries every rank's figures
        extra["memory_per_rank"] = job.memory
        job.logged = True
    record = writer.log(done, stats.loss, stats.lr, stats.grad_norm, speed,
                        step_seconds=stats.seconds, **extra)
    job.emit(format_line(record, max_steps))


def _rank_main(job: Job, rank: int, channels: LocalChannels) -> None:
    trainer = RankTrainer(rank, job.settings, channels, job.build)
    try:
        _restore(job, trainer)
        table = _memory_table(trainer)
        writer = None
        if rank == 0:
            job.memory = table
            for line in memory_lines(table, job):
                job.emit(line)
            if job.pipeline.flops and job.config.model is not None:
                job.emit(job.pipeline.describe(job.config.model.num_layers))
            writer = MetricsWriter(job.config.exp_manager.exp_dir,
                                   job.start if job.resume is not None else None)
        try:
            _steps(job, trainer, writer)
        finally:
            if writer is not None:
                writer.close()
    finally:
        trainer.close()


def _steps(job: Job, trainer: RankTrainer, writer: MetricsWriter | None) -> None:
    every = job.config.exp_manager.every_n_train_steps
    saving = job.config.exp_manager.create_checkpoint_callback and every
    for k in range(job.start, job.config.trainer.max_steps):
        inputs, labels = job.batches.global_batch(k)
        stats = trainer.step(k, inputs, labels)
        if writer is not None:
            _log_step(job, writer, k + 1, stats)
        if saving and (k + 1) % every == 0:
            _save(job, trainer, k + 1)


def make_job(config: TrainConfig, emit: Callable[[str], None]) -> Job:
    """Everything checked and prepared before any rank starts (nothing written yet)."""
    settings = engine_settings(config)
    if config.model is not None:
        build, pipeline = decoder_builder(config.model, config.seed, config.distributed,
                                          config.data)
        vocab = config.model.vocab_size
        join: reshard.Unshard = decoder_unshard(config.model)
    else:
        assert config.onnx is not None
        build, pipeline, vocab = onnx_builder(config.onnx, config.data, config.distributed)
        join = _only_slice
    tokens = load_tokens(config.data.train_dir, vocab)
    batches = Batches(tokens, config.data.seq_length, config.data.global_batch_size)
    found = ckpt.find_latest(config.exp_manager.exp_dir) \
        if config.exp_manager.resume_if_exists else None
    return Job(config, settings, batches, build, emit, found, pipeline, unshard=join)


def _only_slice(name: str, parts: list[list[np.ndarray]], kv_replicator: int) -> np.ndarray:
    """An ONNX model's tensors are never split over TP ranks or pipeline stages: the one
    slice is whole."""
    return parts[0][0]


def summary(job: Job) -> dict[str, object]:
    lay = job.settings.layout
    return {"world_size": lay.world_size, "tp": lay.tp, "pp": lay.pp, "dp": lay.dp,
            "zero1": job.settings.zero1, "sequence_parallel": job.settings.sequence_parallel,
            "first_step": job.start + 1, "steps": len(job.losses), "losses": job.losses,
            "grad_norms": job.grad_norms,
            "final_loss": job.losses[-1] if job.losses else None,
            "tokens_per_s": float(np.mean(job.speeds)) if job.speeds else None,
            "memory": job.memory, "exp_dir": job.config.exp_manager.exp_dir,
            "pipeline_cut_after": None if job.pipeline.cut_after is None else
            list(job.pipeline.cut_after),
            "pipeline_cut_pieces": list(job.pipeline.cuts),
            "stage_flops": list(job.pipeline.flops or ())}


#: How a failed process's note begins: its own error line is already on the job's output,
#: so a peer that stops because of it adds none.
REPORTED = "process failed, reported above: "


def _timeout() -> float:
    try:
        return float(os.environ.get("NEURON_RT_EXEC_TIMEOUT", DEFAULT_TIMEOUT))
    except ValueError:
        return DEFAULT_TIMEOUT


def run_training(config: TrainConfig, emit: Callable[[str], None] = print,
                 on_joined: Callable[[], None] | None = None) -> dict[str, object]:
    """Train as `config` says (see the module docstring); the summary (in process 0 under
    MPI; other processes return an empty summary).

    Under MPI, a caller that ends its process itself after an error (the command line's
    rank child, `cli.rank_process`) passes `on_joined`: it is called once this process has
    met its peers, and a failed rank's error is raised. Without it, a failed rank prints its
    error and aborts the MPI job."""
    processes = launched_processes()
    if processes > 1:
        return _run_mpi(config, emit, processes, on_joined)
    job = make_job(config, emit)
    os.makedirs(config.exp_manager.exp_dir, exist_ok=True)
    channels = LocalChannels(_timeout())
    try:
        run_rank_threads(list(range(job.settings.world)), channels,
                         lambda r: _rank_main(job, r, channels))
    except RankFailed as exc:
        if isinstance(exc.error, CompileError):
            raise exc.error from None
        raise CompileError(RANK_FAILED, str(exc)) from None
    return _finish(job)


def _finish(job: Job) -> dict[str, object]:
    result = summary(job)
    last = job.config.trainer.max_steps
    if job.start >= last:  # resumed from a checkpoint that already reached max_steps
        job.emit(f"nothing to train: resumed at step {job.start}, and trainer.max_steps is "
                 f"{last}")
    else:
        job.emit(f"trained steps {job.start + 1}..{last} on {job.settings.world} ranks: "
                 f"final loss {result['final_loss']}")
    return result


def _run_mpi(config: TrainConfig, emit: Callable[[str], None], processes: int,
             on_joined: Callable[[], None] | None) -> dict[str, object]:
    comm = world_communicator()
    process, world = comm.Get_rank(), config.trainer.world_size
    if world % processes:
        raise TrainConfigError("trainer.devices", f"{world} ranks cannot be spread over the "
                               f"{processes} processes of this job (mpiexec -n {processes})")
    per = world // processes
    local = list(range(process * per, (process + 1) * per))
    job = make_job(config, emit if process == 0 else (lambda _: None))
    if process == 0:
        os.makedirs(config.exp_manager.exp_dir, exist_ok=True)
    comm.Barrier()
    peers = PeerProcesses(comm.allgather(this_process()), process, per,
                          os.environ.get("NXCC_RUNTIME_DIR") or default_runtime_dir())
    if on_joined is not None:
        on_joined()
    channels = MpiChannels(comm, world, local, _timeout(), peers)
    try:
        run_rank_threads(local, channels, lambda r: _rank_main(job, r, channels))
        channels.complete_sends()
    except RankFailed as exc:
        error = exc.error if isinstance(exc.error, CompileError) else \
            CompileError(RANK_FAILED, str(exc))
        if on_joined is not None:
            if REPORTED in str(exc):  # a peer failed and said why: its line is the job's
                raise SystemExit(1) from None
            peers.leaving(f"{REPORTED}{error}")
            raise error from None
        print(f"ERROR: {error}", file=sys.stderr, flush=True)
        comm.Abort(1)
    comm.Barrier()
    return _finish(job) if process == 0 else {}
