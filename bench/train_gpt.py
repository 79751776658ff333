"""Training speed: a GPT trained by `neuronx-cc train` against the same model in PyTorch.

    python bench/train_gpt.py [SHAPE ...] [--steps N] [--warmup W] [--threads T] [--no-tp2]
                              [--repeat R] [--results DIR]

SHAPE is `LAYERSxHIDDENxSEQ` (default: `4x512x256 6x768x512`): that many layers of that
hidden size (heads of 64, FFN 4 x hidden) at that sequence length, micro-batch 4
(`--micro-batch`), vocabulary 8192 (`--vocab`), AdamW, float32, gradients clipped at 1.0,
no activation recomputation. For each shape, each side in a process of its own with
`--threads` threads (OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset, as bench/table.py):

- nxcc: `nxcc.train` on the built-in GPT decoder (`model_source: megatron`, one rank), its
  steps' times from the run's metrics.jsonl;
- nxcc TP2 (unless `--no-tp2`): the same run with tensor parallelism 2 over 2 ranks, one
  BLAS thread each (two cores' worth, as the one rank has);
- PyTorch (when torch is installed): `bench/torch_gpt.py`, with `torch.set_num_threads`.

Each side runs `--warmup` untimed steps and `--steps` timed ones; the figure is tokens per
second of the median step (micro-batch x sequence tokens). With `--repeat R` the sides run
R times each, alternating (in turned order every other round), and the table gives the
medians: of each side's figure, and of the ratios within a round. Columns: tokens/s of each,
and nxcc / PyTorch and TP2 / one rank. The table goes to bench/results/train_gpt.md and .json.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from result_files import add_results_argument, recording  # noqa: E402

SHAPES = ["4x512x256", "6x768x512"]
EXAMPLE = REPO / "examples" / "train" / "megatron_gpt_tiny.yaml"
HEAD = 64


def parse_shape(text: str) -> tuple[int, int, int]:
    """(layers, hidden, seq) of `LAYERSxHIDDENxSEQ`."""
    try:
        layers, hidden, seq = (int(p) for p in text.lower().split("x"))
    except ValueError:
        raise SystemExit(f"ERROR: shape {text!r} is not LAYERSxHIDDENxSEQ, e.g. 4x512x256"
                         ) from None
    if min(layers, hidden, seq) < 1 or hidden % HEAD:
        raise SystemExit(f"ERROR: shape {text!r}: sizes must be positive and the hidden "
                         f"size a multiple of {HEAD}")
    return layers, hidden, seq


def nxcc_overrides(shape: str, micro_batch: int, vocab: int, steps: int, tp: int,
                   data: Path, exp: Path) -> list[str]:
    """The overrides that make the bundled GPT example this run (one rank, or TP ranks)."""
    layers, hidden, seq = parse_shape(shape)
    return [f"trainer.devices={tp}", f"distributed_strategy.tensor_model_parallel_size={tp}",
            "distributed_strategy.pipeline_model_parallel_size=1",
            "distributed_strategy.sequence_parallel=False", "distributed_strategy.zero1=False",
            f"data.micro_batch_size={micro_batch}", f"data.global_batch_size={micro_batch}",
            f"data.train_dir={data}", f"model.num_layers={layers}",
            f"model.hidden_size={hidden}", f"model.ffn_hidden_size={4 * hidden}",
            f"model.num_attention_heads={hidden // HEAD}", f"model.num_kv_heads={hidden // HEAD}",
            f"model.vocab_size={vocab}", f"model.encoder_seq_length={seq}",
            "~model.activations_checkpoint_granularity", f"trainer.max_steps={steps}",
            "trainer.log_every_n_steps=1", "exp_manager.create_checkpoint_callback=False",
            "exp_manager.create_tensorboard_logger=False", "exp_manager.resume_if_exists=False",
            f"exp_manager.exp_dir={exp}"]


def run_nxcc(shape: str, micro_batch: int, vocab: int, steps: int, warmup: int, tp: int,
             tmp: Path) -> list[float]:
    """Seconds of each timed step of `nxcc.train` on this shape (in this process)."""
    import warnings

    import nxcc

    data, exp = tmp / "data", tmp / "exp"
    data.mkdir(exist_ok=True)
    tokens = np.random.default_rng(0).integers(0, vocab, 1 << 20).astype(np.uint16)
    np.save(data / "tokens_00.npy", tokens)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nxcc.train(str(EXAMPLE), nxcc_overrides(shape, micro_batch, vocab, warmup + steps, tp,
                                                data, exp))
    records = [json.loads(line) for line in (exp / "metrics.jsonl").read_text().splitlines()]
    return [r["step_seconds"] for r in records[warmup:]]


def run_torch(shape: str, micro_batch: int, vocab: int, steps: int, warmup: int,
              threads: int) -> list[float]:
    """Seconds of each timed step of bench/torch_gpt.py on this shape (in this process)."""
    from torch_gpt import train_steps

    layers, hidden, seq = parse_shape(shape)
    return train_steps(layers, hidden, hidden // HEAD, seq, micro_batch, vocab, steps, warmup,
                       threads)


def worker(argv: list[str]) -> dict:
    """`worker.py train SIDE SHAPE ...`: one side's step times, JSON-ready."""
    p = argparse.ArgumentParser(prog="worker.py train")
    p.add_argument("side", choices=("nxcc", "torch"))
    p.add_argument("shape")
    p.add_argument("--micro-batch", type=int, default=4)
    p.add_argument("--vocab", type=int, default=8192)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--tp", type=int, default=1)
    a = p.parse_args(argv)
    if a.side == "torch":
        times = run_torch(a.shape, a.micro_batch, a.vocab, a.steps, a.warmup, a.threads)
    else:
        with tempfile.TemporaryDirectory(prefix="nxcc-train-bench-") as tmp:
            times = run_nxcc(a.shape, a.micro_batch, a.vocab, a.steps, a.warmup, a.tp,
                             Path(tmp))
    return {"step_seconds": times}


def tokens_per_s(result: dict, tokens: int) -> float:
    return tokens / statistics.median(result["step_seconds"])


def measure(shape: str, opts: argparse.Namespace) -> dict:
    """One row: each side in a process of its own, the sides alternating `opts.repeat`
    times (in turned order every other round, so that a change of the machine's load
    falls on both); each side's median over the rounds, and the ratios' medians."""
    from table import WORKER, run_json

    _, _, seq = parse_shape(shape)
    tokens = opts.micro_batch * seq
    common = [shape, "--micro-batch", str(opts.micro_batch), "--vocab", str(opts.vocab),
              "--steps", str(opts.steps), "--warmup", str(opts.warmup)]
    sides = {"nxcc": ([WORKER, "train", "nxcc", *common],
                      {"OPENBLAS_NUM_THREADS": str(opts.threads)})}
    if opts.tp2:
        sides["tp2"] = ([WORKER, "train", "nxcc", *common, "--tp", "2"],
                        {"OPENBLAS_NUM_THREADS": "1"})
    if importlib.util.find_spec("torch") is not None:
        sides["torch"] = ([WORKER, "train", "torch", *common, "--threads", str(opts.threads)],
                          {"OMP_NUM_THREADS": str(opts.threads)})
    rounds: dict[str, list[float]] = {side: [] for side in sides}
    for r in range(opts.repeat):
        for side in (list(sides) if r % 2 == 0 else list(sides)[::-1]):
            args, env = sides[side]
            rounds[side].append(tokens_per_s(run_json(args, REPO, env), tokens))
    row: dict = {"shape": shape, "tokens_per_step": tokens, "rounds": rounds}
    for side, figures in rounds.items():
        row[f"{side}_tokens_per_s"] = statistics.median(figures)
    for key, (mine, theirs) in {"tp2_vs_one": ("tp2", "nxcc"),
                                "nxcc_vs_torch": ("nxcc", "torch")}.items():
        if mine in rounds and theirs in rounds:
            row[key] = statistics.median(
                a / b for a, b in zip(rounds[mine], rounds[theirs], strict=True))
    return row


HEADER = ("| shape (layers x hidden x seq) | tokens/step | nxcc tokens/s | PyTorch tokens/s | "
          "nxcc / PyTorch | nxcc TP2 tokens/s | TP2 / one rank |\n"
          "| --- | ---: | ---: | ---: | ---: | ---: | ---: |")


def format_row(r: dict) -> str:
    def cell(key: str, spec: str, suffix: str = "") -> str:
        return f"{r[key]:{spec}}{suffix}" if key in r else "-"

    return (f"| {r['shape']} | {r['tokens_per_step']} | {cell('nxcc_tokens_per_s', '.0f')} | "
            f"{cell('torch_tokens_per_s', '.0f')} | {cell('nxcc_vs_torch', '.2f', 'x')} | "
            f"{cell('tp2_tokens_per_s', '.0f')} | {cell('tp2_vs_one', '.2f', 'x')} |")


def main() -> None:
    import table

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shapes", nargs="*", default=SHAPES, metavar="SHAPE")
    parser.add_argument("--steps", type=int, default=5, help="timed steps per side")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--micro-batch", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=8192)
    parser.add_argument("--repeat", type=int, default=1,
                        help="rounds of the sides, alternating (medians reported)")
    parser.add_argument("--no-tp2", dest="tp2", action="store_false",
                        help="leave out the TP2 run")
    add_results_argument(parser)
    opts = parser.parse_args()
    for shape in opts.shapes:
        parse_shape(shape)
    if min(opts.repeat, opts.steps) < 1:
        raise SystemExit("ERROR: --repeat and --steps must be at least 1")
    with recording("train_gpt", "Training a GPT: nxcc against PyTorch", opts.results,
                   markdown=True) as rec:
        print(f"{opts.threads} threads (TP2: 2 ranks of 1 thread); OPENBLAS_CORETYPE and "
              f"OPENBLAS_L2_SIZE unset; micro-batch {opts.micro_batch}, vocabulary "
              f"{opts.vocab}, AdamW, float32; median of {opts.steps} steps after "
              f"{opts.warmup} untimed; {opts.repeat} alternating round(s) per shape, "
              f"medians")
        print(HEADER, flush=True)
        rows = []
        for shape in opts.shapes:
            rows.append(measure(shape, opts))
            print(format_row(rows[-1]), flush=True)
        rec.data["rows"] = rows
        rec.blas = table.run_json([table.WORKER, "blas"], REPO,
                                  {"OPENBLAS_NUM_THREADS": str(opts.threads)})


if __name__ == "__main__":
    main()
