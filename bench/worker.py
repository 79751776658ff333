"""One measurement of a benchmark table, in a process of its own (so that its peak memory is
its own); prints one JSON object. Run by bench/table.py and bench/gemm_floor.py, not by hand.

    python bench/worker.py compile MODEL.onnx OUT.neff        # {"compile_s", "peak_memory_bytes"}
    python bench/worker.py ort MODEL.onnx IN.npz --threads N --warmup W --duration S
                                                              # load_ms, latency_*, peak_memory
    python bench/worker.py products F.neff IN.npz --rounds R  # products, gflop, products_ms
    python bench/worker.py blas                               # the BLAS numpy runs here
    python bench/worker.py train nxcc|torch SHAPE [...]       # step_seconds (train_gpt.py)

`compile` imports `nxcc` from PYTHONPATH (the tree being measured) and times
`compile_model` for trn1 at -O2. `ort` times building an onnxruntime `InferenceSession` (CPU
provider, N intra-op threads, one inter-op thread) and then its executions with the same
timing and percentiles as `neuronx-cc benchmark`. `products` records and times the matrix
products of one execution (`gemm_floor.products_one`). `blas` says which BLAS library,
version and kernels numpy runs in a process of this environment
(`result_files.blas_info`). `train` times one side of bench/train_gpt.py
(`train_gpt.worker`).
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np


def compile_one(model: str, neff: str) -> dict:
    from nxcc.backend.runtime.benchmark import peak_memory_bytes
    from nxcc.driver.compile import compile_model
    from nxcc.driver.options import CompileOptions

    start = time.perf_counter()
    compile_model(model, CompileOptions(target="trn1", output=neff), emit=lambda s: None)
    return {"compile_s": time.perf_counter() - start, "peak_memory_bytes": peak_memory_bytes()}


def onnxruntime_session(model: str, threads: int) -> Any:
    """An onnxruntime session of `model` as the tables measure it: the CPU provider,
    `threads` intra-op threads, one inter-op thread."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def onnxruntime_one(model: str, inputs: str, threads: int, warmup: int, duration: float
                    ) -> dict:
    from nxcc.backend.runtime.benchmark import peak_memory_bytes, summarize, timed_runs

    with np.load(inputs, allow_pickle=False) as data:
        feed = {k: data[k] for k in data.files}
    start = time.perf_counter()
    session = onnxruntime_session(model, threads)
    load_s = time.perf_counter() - start
    for _ in range(warmup):
        session.run(None, feed)
    times = timed_runs(lambda: session.run(None, feed), None, duration)
    return summarize(model, "onnxruntime", warmup, load_s, times, peak_memory_bytes()).to_json()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    c = sub.add_parser("compile")
    c.add_argument("model")
    c.add_argument("neff")
    o = sub.add_parser("ort")
    o.add_argument("model")
    o.add_argument("inputs")
    o.add_argument("--threads", type=int, default=2)
    o.add_argument("--warmup", type=int, default=3)
    o.add_argument("--duration", type=float, default=3.0)
    p = sub.add_parser("products")
    p.add_argument("neff")
    p.add_argument("inputs")
    p.add_argument("--rounds", type=int, default=20)
    sub.add_parser("blas")
    t = sub.add_parser("train", add_help=False)
    t.add_argument("rest", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    if args.what == "train":
        from train_gpt import worker

        result = worker(args.rest)
    elif args.what == "blas":
        from result_files import blas_info

        result = blas_info()
    elif args.what == "compile":
        result = compile_one(args.model, args.neff)
    elif args.what == "products":
        from gemm_floor import products_one

        result = products_one(args.neff, args.inputs, args.rounds)
    else:
        result = onnxruntime_one(args.model, args.inputs, args.threads, args.warmup,
                                 args.duration)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
