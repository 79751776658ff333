"""`run_training(config) -> summary`: a whole training run, as `neuronx-cc train` starts it.

The job has `trainer.devices x num_nodes` ranks laid out TP x PP x DP (`layout`). Without an
MPI launcher every rank is a thread of this process; under `mpiexec -n P` (`mpi_job`'s
detection) each of the P processes runs its block of world / P ranks as threads
(`MpiChannels` between processes, which name a peer whose process ended at once), so
`-n 8` is one rank per process and `-n 2` four.

Before any rank starts, every check is made (`prepare.prepare_job`, as `--dry-run` makes
them: among them the checkpoint to resume, and the refusal of a run that would save over a
committed checkpoint, `resume`), then the folders interrupted saves left where this run saves
are set aside. Each rank (`_rank_main`): builds and compiles its stage (`model_stage`,
`engine`), loads the checkpoint the job resumes (an nxcc step folder named by
`exp_manager.resume_from_checkpoint`, else the latest when `resume_if_exists`): its
parameters and optimizer shard, every array's name, shape and dtype checked against the
model and layout before any is used, and the step, from which the data position follows;
then runs the steps. Rank 0 writes
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
from collections.abc import Callable

import numpy as np

from nxcc import errors
from nxcc.backend.runtime.channels import LocalChannels, MpiChannels
from nxcc.backend.runtime.config import default_runtime_dir
from nxcc.backend.runtime.mpi_job import launched_processes, world_communicator
from nxcc.backend.runtime.peer_liveness import PeerProcesses, this_process
from nxcc.driver.errors import CompileError
from nxcc.driver.train import checkpoint_io as ckpt
from nxcc.driver.train.config import TrainConfig
from nxcc.driver.train.engine import RankTrainer, StepStats
from nxcc.driver.train.errors import TrainConfigError
from nxcc.driver.train.memory import MEMORY_KEYS
from nxcc.driver.train.metrics import MetricsWriter, format_line, should_log
from nxcc.driver.train.prepare import Job, prepare_job
from nxcc.driver.train.ranks import RankFailed, run_rank_threads
from nxcc.driver.train.resume import set_aside_interrupted
from nxcc.driver.train.tensorboard_log import TensorBoardLog

#: A rank of the job failed (the message names it).
RANK_FAILED = errors.RANK_FAILED
DEFAULT_TIMEOUT = 600.0


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
    lay = job.settings.layout
    return ckpt.shard_names(lay.tp, lay.pp, lay.dp, job.settings.zero1)


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
    now = job.layout_record()  # the precision was checked with the job (`prepare`)
    if written != now:  # another layout: its shards made whole, then cut for this rank
        trainer.load_whole(*job.whole_state(list(trainer.optimizer_spec())), found.path)
        return
    tp, pp = trainer.tp_rank, trainer.stage
    trainer.load_params(found.read(ckpt.params_name(tp, pp), trainer.param_spec()))
    d = trainer.dp_rank if trainer.sync.zero1 else 0
    trainer.load_optimizer_state(found.read(ckpt.optim_name(d, tp, pp),
                                            trainer.optimizer_spec()))


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


def _log_step(job: Job, writer: MetricsWriter, done: int, stats: StepStats,
              val_loss: float | None, board: TensorBoardLog | None) -> None:
    job.losses.append(stats.loss)
    job.grad_norms.append(stats.grad_norm)
    speed = stats.tokens / stats.seconds if stats.seconds > 0 else float("nan")
    job.speeds.append(speed)
    max_steps = job.config.trainer.max_steps
    if val_loss is not None:
        job.val_losses.append((done, val_loss))
        if board is not None:
            board.validation(done, val_loss)
    if not should_log(done, job.config.trainer.log_every_n_steps, max_steps) and \
            val_loss is None:
        return
    if board is not None:
        board.step(done, stats.loss, stats.lr, stats.grad_norm, stats.seconds,
                   job.config.data.global_batch_size, stats.tokens)
    extra: dict[str, object] = {f"max_{k}": max(row[k] for row in job.memory)
                                for k in MEMORY_KEYS}
    if not job.logged:  # the run's first record carries every rank's figures
        extra["memory_per_rank"] = job.memory
        job.logged = True
    if val_loss is not None:
        extra["val_loss"] = val_loss
    record = writer.log(done, stats.loss, stats.lr, stats.grad_norm, speed,
                        step_seconds=stats.seconds, **extra)
    line = format_line(record, max_steps)
    job.emit(line if val_loss is None else f"{line}  val_loss {val_loss:.4f}")


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
            if job.pipeline.flops:
                job.emit(job.pipeline.describe())
            writer = MetricsWriter(job.config.exp_manager.exp_dir,
                                   job.start if job.resume is not None else None)
        board = TensorBoardLog(job.config.exp_manager.exp_dir) \
            if rank == 0 and job.tensorboard else None
        try:
            _steps(job, trainer, writer, board)
        finally:
            if writer is not None:
                writer.close()
            if board is not None:
                board.close()
    finally:
        trainer.close()


def _validate(job: Job, trainer: RankTrainer, done: int) -> float | None:
    """The validation loss after step `done` when one is due: NxD's, the mean over the
    first `limit_val_batches` validation batches of each batch's mean token loss."""
    interval = job.config.data.validation.interval
    if job.validation is None or not interval or done % interval:
        return None
    losses = []
    for b in range(job.validation_batches):
        total, tokens = trainer.evaluate(*job.validation.global_batch(b))
        losses.append(total / tokens if tokens else float("nan"))
    return float(np.mean(losses))


def _steps(job: Job, trainer: RankTrainer, writer: MetricsWriter | None,
           board: TensorBoardLog | None) -> None:
    every = job.config.exp_manager.every_n_train_steps
    saving = job.config.exp_manager.create_checkpoint_callback and every
    for k in range(job.start, job.config.trainer.max_steps):
        stats = trainer.step(k, *job.batches.global_batch(k))
        val_loss = _validate(job, trainer, k + 1)
        if writer is not None:
            _log_step(job, writer, k + 1, stats, val_loss, board)
        if saving and (k + 1) % every == 0:
            _save(job, trainer, k + 1)


def _prepare_exp_dir(job: Job) -> None:
    """The experiment folder made, and the folders interrupted saves left where this run
    saves set aside (`resume`), each named in one line."""
    exp = job.config.exp_manager.exp_dir
    os.makedirs(exp, exist_ok=True)
    for moved in set_aside_interrupted(exp, job.saves()):
        job.emit(f"set aside the folder of an interrupted save as {moved}")


def summary(job: Job) -> dict[str, object]:
    lay = job.settings.layout
    return {"world_size": lay.world_size, "tp": lay.tp, "pp": lay.pp, "dp": lay.dp,
            "zero1": job.settings.zero1, "sequence_parallel": job.settings.sequence_parallel,
            "first_step": job.start + 1, "steps": len(job.losses), "losses": job.losses,
            "grad_norms": job.grad_norms, "val_losses": job.val_losses,
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
                 on_joined: Callable[[], None] | None = None,
                 on_prepared: Callable[[], None] | None = None) -> dict[str, object]:
    """Train as `config` says (see the module docstring); the summary (in process 0 under
    MPI; other processes return an empty summary).

    Every check comes first (`prepare.prepare_job`, as `--dry-run` makes them); then
    `on_prepared` is called (the command line prints its warnings there), then the run
    writes under `exp_dir`. Under MPI, a caller that ends its process itself after an
    error (the command line's rank child, `cli.rank_process`) passes `on_joined`: it is
    called once this process has met its peers, and a failed rank's error is raised.
    Without it, a failed rank prints its error and aborts the MPI job."""
    processes = launched_processes()
    if processes > 1:
        return _run_mpi(config, emit, processes, on_joined, on_prepared)
    job = prepare_job(config, emit)
    _prepared(job, on_prepared)
    _prepare_exp_dir(job)
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


def _prepared(job: Job, on_prepared: Callable[[], None] | None) -> None:
    if on_prepared is not None:
        on_prepared()
    for line in job.warnings:
        print(f"WARNING: {line}", file=sys.stderr, flush=True)


def _run_mpi(config: TrainConfig, emit: Callable[[str], None], processes: int,
             on_joined: Callable[[], None] | None,
             on_prepared: Callable[[], None] | None) -> dict[str, object]:
    comm = world_communicator()
    process, world = comm.Get_rank(), config.trainer.world_size
    if world % processes:
        raise TrainConfigError("trainer.devices", f"{world} ranks cannot be spread over the "
                               f"{processes} processes of this job (mpiexec -n {processes})")
    per = world // processes
    local = list(range(process * per, (process + 1) * per))
    job = prepare_job(config, emit if process == 0 else (lambda _: None))
    if process == 0:
        _prepared(job, on_prepared)
        _prepare_exp_dir(job)
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
