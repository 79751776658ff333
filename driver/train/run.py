"""`run_training(config) -> summary`: a whole training run, as `neuronx-cc train` starts it.

The job has `trainer.devices x num_nodes` ranks laid out TP x PP x DP (`layout`). Without an
MPI launcher every rank is a thread of this process; under `mpiexec -n P` (`mpi_job`'s
detection) each of the P processes runs its block of world / P ranks as threads
(`MpiChannels` between processes, which name a peer whose process ended at once), so
`-n 8` is one rank per process and `-n 2` four.

Before any rank starts, every check is made (`prepare.prepare_job`, as `--dry-run` makes
them: among them the instance, target and LNC the job runs on, `instance`, the checkpoint to
resume, and the refusal of a run that would save over a committed checkpoint, `resume`). Then
the job's NeuronCores are reserved on the simulated instance (`job_cores.reserve_job_cores`:
each process its own ranks' cores, exclusively, for the whole run); a job that does not get
them is refused naming who holds them, as `neuronx-cc run` is. Then the folders interrupted
saves left where this run saves are set aside. Each rank (`_rank_main`): builds and compiles
its stage (`model_stage`, `engine`), loads the checkpoint the job resumes (an nxcc step folder
named by `exp_manager.resume_from_checkpoint`, else the latest when `resume_if_exists`): its
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

With `profile` (`train --profile FILE`) every rank's steps are recorded
(`RankTrainer.attach_profiler`) and written at the end as one Chrome/Perfetto trace: one
trace process per rank, its compute on one track (each step, each micro-batch's forward and
backward in 1F1B order with their recomputation, the optimizer update), its collectives on
others, its sends and receives between stages on another. Under MPI every process records
its ranks against the time origin of process 0 (one host: one clock) and process 0 writes.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Callable

import numpy as np

from nxcc import errors
from nxcc.backend.runtime.channels import LocalChannels, MpiChannels
from nxcc.backend.runtime.config import RuntimeConfig, default_runtime_dir
from nxcc.backend.runtime.job_cores import JobCores, PeerFailed, reserve_job_cores
from nxcc.backend.runtime.mpi_job import launched_processes, world_communicator
from nxcc.backend.runtime.peer_liveness import PeerProcesses, this_process
from nxcc.backend.runtime.profile import Profiler
from nxcc.driver.errors import CompileError
from nxcc.driver.train import checkpoint_io as ckpt
from nxcc.driver.train.config import TrainConfig
from nxcc.driver.train.engine import TRACKS, RankTrainer, StepStats
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


def _share_cores(job: Job, ranks: int) -> None:
    """Several ranks in this process share its cores: each runs its elementwise work and
    its optimizer update on its own thread (and their BLAS calls share the BLAS's threads,
    `ranks.run_rank_threads`)."""
    if ranks > 1 and job.settings.threads is None:
        job.settings = dataclasses.replace(job.settings, threads=1)


def _rank_main(job: Job, rank: int, channels: LocalChannels, cores: JobCores,
               profiler: Profiler | None = None) -> None:
    trainer = RankTrainer(rank, job.settings, channels, job.build, cores)
    if rank == 0:
        job.core_programs.update(trainer.core_programs())
    if profiler is not None:
        trainer.attach_profiler(profiler)
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
        if saving and every and (k + 1) % every == 0:
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
            "stage_flops": list(job.pipeline.flops or ()),
            "instance": job.where.describe(),
            "cores": [list(c) for c in job.cores.cores] if job.cores is not None else None,
            "core_programs": dict(job.core_programs)}


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
                 on_prepared: Callable[[], None] | None = None,
                 profile: str | None = None) -> dict[str, object]:
    """Train as `config` says (see the module docstring); the summary (in process 0 under
    MPI; other processes return an empty summary).

    Every check comes first (`prepare.prepare_job`, as `--dry-run` makes them); then
    `on_prepared` is called (the command line prints its warnings there), then the run
    writes under `exp_dir`. Under MPI, a caller that ends its process itself after an
    error (the command line's rank child, `cli.rank_process`) passes `on_joined`: it is
    called once this process has met its peers, and a failed rank's error is raised.
    Without it, a failed rank prints its error and aborts the MPI job. `profile`: where to
    write the run's trace (see the module docstring)."""
    if profile is not None:
        check_profile_path(profile)
    processes = launched_processes()
    if processes > 1:
        return _run_mpi(config, emit, processes, on_joined, on_prepared, profile)
    job = prepare_job(config, emit)
    ranks = list(range(job.settings.world))
    cores = reserve_cores(job, ranks)
    _share_cores(job, len(ranks))
    try:
        _prepared(job, on_prepared)
        _prepare_exp_dir(job)
        channels = LocalChannels(_timeout())
        profiler = Profiler(track_names=TRACKS) if profile is not None else None
        try:
            run_rank_threads(ranks, channels,
                             lambda r: _rank_main(job, r, channels, cores, profiler))
        except RankFailed as exc:
            if isinstance(exc.error, CompileError):
                raise exc.error from None
            raise CompileError(RANK_FAILED, str(exc)) from None
        if profiler is not None and profile is not None:
            _write_profile(job, profiler, profile)
        return _finish(job)
    finally:
        cores.release()


def reserve_cores(job: Job, local: list[int], gather=None, process: int = 0) -> JobCores:
    """This process's ranks' NeuronCores on the job's instance (`job_cores`), logged."""
    where, trainer = job.where, job.config.trainer
    args = (RuntimeConfig.from_env(), where.instance, where.lnc, trainer.devices, local,
            trainer.world_size)
    cores = reserve_job_cores(*args) if gather is None else \
        reserve_job_cores(*args, gather=gather, process=process)
    job.cores = cores
    if process == 0:
        job.emit(f"instance {where.instance.name} ({where.source}), stages compiled for "
                 f"{where.target} at LNC {where.lnc}; " + "; ".join(cores.describe()))
    return cores


def check_profile_path(path: str) -> None:
    """CompileError (NCC_EARG001) before the run when the trace could not be written."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path) or not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        raise CompileError(errors.BAD_ARGUMENT, f"--profile {path}: cannot write a trace "
                           "there (give a file in an existing, writable folder)")


def _write_profile(job: Job, profiler: Profiler, path: str) -> None:
    try:
        profiler.write(path)
    except OSError as exc:
        raise CompileError(errors.BAD_ARGUMENT, f"--profile {path}: {exc.strerror or exc}"
                           ) from None
    job.emit(f"wrote the trace of {len(profiler.ranks)} ranks to {path} (open it in "
             "https://ui.perfetto.dev)")


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
             on_prepared: Callable[[], None] | None,
             profile: str | None = None) -> dict[str, object]:
    comm = world_communicator()
    process, world = comm.Get_rank(), config.trainer.world_size
    if world % processes:
        raise TrainConfigError("trainer.devices", f"{world} ranks cannot be spread over the "
                               f"{processes} processes of this job (mpiexec -n {processes})")
    per = world // processes
    local = list(range(process * per, (process + 1) * per))
    job = prepare_job(config, emit if process == 0 else (lambda _: None))
    try:
        cores = reserve_cores(job, local, comm.allgather, process)
    except PeerFailed:  # the process that failed says why: one line for the job
        if on_joined is not None:
            raise SystemExit(1) from None
        raise
    try:
        return _run_mpi_ranks(job, comm, local, per, cores, on_joined, on_prepared, profile)
    finally:
        cores.release()


def _run_mpi_ranks(job: Job, comm, local: list[int], per: int, cores: JobCores,
                   on_joined: Callable[[], None] | None,
                   on_prepared: Callable[[], None] | None,
                   profile: str | None) -> dict[str, object]:
    process, world = comm.Get_rank(), job.settings.world
    if process == 0:
        _prepared(job, on_prepared)
        _prepare_exp_dir(job)
    comm.Barrier()
    peers = PeerProcesses(comm.allgather(this_process()), process, per,
                          os.environ.get("NXCC_RUNTIME_DIR") or default_runtime_dir())
    if on_joined is not None:
        on_joined()
    channels = MpiChannels(comm, world, local, _timeout(), peers)
    _share_cores(job, len(local))
    origin = comm.bcast(time.perf_counter(), root=0)  # one host: one monotonic clock
    profiler = Profiler(origin, TRACKS) if profile is not None else None
    try:
        run_rank_threads(local, channels,
                         lambda r: _rank_main(job, r, channels, cores, profiler))
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
    if profiler is not None and profile is not None:
        recorded = comm.gather((profiler.events, profiler.rank_names), root=0)
        if process == 0:
            for events, names in recorded[1:]:
                profiler.merge(events, names)
            _write_profile(job, profiler, profile)
    return _finish(job) if process == 0 else {}
