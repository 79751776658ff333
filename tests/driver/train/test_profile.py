"""`neuronx-cc train --profile FILE`: a Chrome trace-event JSON (what Perfetto opens) of every
rank's steps on the TP2 x PP2 x DP2 example: one trace process per rank, micro-batches in
1F1B order on the compute track with their recomputation inside, collectives and the
transfers between stages on tracks of their own, the optimizer update."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

import nxcc
from nxcc.driver.train.layout import RankLayout
from nxcc.driver.train.profile_spans import step_labels
from nxcc.driver.train.schedule import stage_ops
from tests.cli_helpers import REPO, assert_one_line_error, neuronx_cc
from tests.mpi.test_mpi_runs import mpiexec, needs_mpi

LLAMA = REPO / "examples" / "train" / "hf_llama_tiny_gqa.yaml"  # TP2 x PP2 x DP2, selective
GPT = REPO / "examples" / "train" / "megatron_gpt_tiny.yaml"
ONE_STEP = ("trainer.max_steps=1", "model.encoder_seq_length=16",
            "exp_manager.resume_if_exists=false", "exp_manager.create_checkpoint_callback=false")
COMPUTE, TP, DP, JOB, PIPE = 0, 1, 2, 3, 4


def check_trace_events(trace: dict) -> dict[tuple[int, int], list[dict]]:
    """The trace-event format's rules Perfetto's JSON importer relies on; the complete
    events by (process, track), in time order."""
    assert set(trace) == {"traceEvents", "displayTimeUnit"}
    tracks: dict[tuple[int, int], list[dict]] = defaultdict(list)
    for e in trace["traceEvents"]:
        assert e["ph"] in ("X", "M") and isinstance(e["name"], str) and isinstance(e["pid"], int)
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "process_sort_index", "thread_name")
            continue
        assert isinstance(e["tid"], int) and e["ts"] >= 0 and e["dur"] >= 0
        tracks[e["pid"], e["tid"]].append(e)
    return tracks


def nested(events: list[dict]) -> bool:
    """Whether the spans of one track nest (each starts after its parent and ends before;
    times to the nanosecond, as Perfetto reads them)."""
    open_ends: list[float] = []
    for e in sorted(events, key=lambda e: (e["ts"], -e["dur"])):
        while open_ends and e["ts"] >= open_ends[-1] - 1e-3:
            open_ends.pop()
        end = e["ts"] + e["dur"]
        if open_ends and end > open_ends[-1] + 1.0:  # 1 us of rounding
            return False
        open_ends.append(end)
    return True


@pytest.fixture(scope="module")
def llama_trace(tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("profile")
    r = neuronx_cc("train", str(LLAMA), "--quiet", *ONE_STEP, f"exp_manager.exp_dir={tmp}",
                   "--profile", str(tmp / "trace.json"))
    assert r.returncode == 0, r.stderr
    assert f"wrote the trace of 8 ranks to {tmp / 'trace.json'}" in r.stdout
    return json.loads((tmp / "trace.json").read_text())


def test_one_process_per_rank_with_named_tracks(llama_trace: dict) -> None:
    tracks = check_trace_events(llama_trace)
    meta = [e for e in llama_trace["traceEvents"] if e["ph"] == "M"]
    names = {e["pid"]: e["args"]["name"] for e in meta if e["name"] == "process_name"}
    lay = RankLayout(2, 2, 2)
    assert names == {r: f"rank {r} (tp {c.tp} pp {c.pp} dp {c.dp})"
                     for r in range(8) for c in (lay.coords(r),)}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in meta if e["name"] == "thread_name"}
    assert threads[0, COMPUTE] == "compute" and threads[0, PIPE] == "pipeline send/recv"
    assert threads[0, TP] == "tensor-parallel collectives"
    for rank in range(8):
        assert {COMPUTE, TP, DP, JOB, PIPE} <= {tid for pid, tid in tracks if pid == rank}
        assert nested(tracks[rank, COMPUTE]), rank


def test_each_stage_runs_1f1b_with_recomputation_and_the_update(llama_trace: dict) -> None:
    tracks = check_trace_events(llama_trace)
    micro = 4  # global 8 = micro 1 x DP 2 x 4
    for rank in range(8):
        stage = RankLayout(2, 2, 2).coords(rank).pp
        events = sorted(tracks[rank, COMPUTE], key=lambda e: e["ts"])
        top = [e["name"] for e in events if " mb " in e["name"]]
        if stage == 0:
            want = [f"{'forward' if k == 'F' else 'backward'} mb {m}"
                    for k, m in stage_ops(0, 2, micro)]
            assert top == want == ["forward mb 0", "forward mb 1", "backward mb 0",
                                   "forward mb 2", "backward mb 1", "forward mb 3",
                                   "backward mb 2", "backward mb 3"]
        else:  # the last stage: forward and backward in one program, at each forward
            assert top == [f"forward+backward mb {m}" for m in range(micro)]
        names = [e["name"] for e in events]
        assert names[0] == "step 1" and names[-1] == "optimizer update"
        spans = {e["name"]: e for e in events if " mb " in e["name"]}
        inner = [e for e in events if e["name"] == "recompute"]
        assert len(inner) >= micro  # selective recomputation: the attention cores
        for e in inner:  # each inside the program run of one micro-batch
            assert any(s["ts"] <= e["ts"] and e["ts"] + e["dur"] <= s["ts"] + s["dur"] + 1
                       and ("backward" in s["name"]) for s in spans.values())
        assert all(e["args"]["micro_batch"] == int(e["name"].split(" mb ")[1])
                   for e in spans.values())


def test_collectives_and_transfers_on_their_own_tracks(llama_trace: dict) -> None:
    tracks = check_trace_events(llama_trace)
    tp = {e["name"] for e in tracks[0, TP]}
    assert {"tp all_gather", "tp reduce_scatter"} <= tp  # sequence parallelism's
    assert {e["name"] for e in tracks[0, DP]} >= {"dp reduce_scatter", "dp all_gather"}
    assert "world all_reduce" in {e["name"] for e in tracks[0, JOB]}
    sends = [e["name"] for e in tracks[0, PIPE] if e["name"].startswith("send")]
    recvs = [e["name"] for e in tracks[4, PIPE] if e["name"].startswith("recv")]
    assert sends[:2] == ["send activation mb 0 to rank 4", "send activation mb 1 to rank 4"]
    assert recvs[0] == "recv activation mb 0 from rank 0"
    assert all(e["args"]["bytes"] > 0 for e in tracks[0, DP])


def test_the_api_writes_the_trace_too(tmp_path: Path) -> None:
    with pytest.warns(UserWarning):
        nxcc.train(GPT, [*ONE_STEP, f"exp_manager.exp_dir={tmp_path / 'exp'}"],
                   profile=tmp_path / "gpt.json")
    tracks = check_trace_events(json.loads((tmp_path / "gpt.json").read_text()))
    assert {pid for pid, _ in tracks} == set(range(8))
    assert [e["name"] for e in tracks[0, COMPUTE] if " mb " in e["name"]] == \
        ["forward+backward mb 0", "forward+backward mb 1"]  # PP 1: one stage, 2 per DP rank


def test_a_trace_that_cannot_be_written_is_refused_before_training(tmp_path: Path) -> None:
    r = neuronx_cc("train", str(GPT), "--quiet", *ONE_STEP,
                   f"exp_manager.exp_dir={tmp_path / 'exp'}",
                   "--profile", str(tmp_path / "no" / "such" / "trace.json"))
    assert_one_line_error(r, "[NCC_EARG001] --profile", "cannot write a trace there")
    assert not (tmp_path / "exp").exists()
    r = neuronx_cc("train", str(GPT), "--dry-run", "--profile", str(tmp_path / "t.json"))
    assert_one_line_error(r, "--profile traces a training run")


def test_labels_of_a_lowered_backward() -> None:
    """A recomputed op reads the barrier's results, constants and weights only; the
    gradient ops read the output gradient; on a last stage the loss's cone is the forward."""
    slot = {"kind": "buffer", "offset": 0, "dtype": "f32", "shape": [2]}
    program = {"entry": "main", "functions": {"main": {
        "slots": [{"kind": "param", "index": 0}, {"kind": "param", "index": 1},
                  {"kind": "param", "index": 2}, slot, slot, slot, slot,
                  {"kind": "splat", "value": 1.0}, dict(slot, view_of=4), slot, slot],
        "params": [0, 1, 2], "results": [10, 6],
        "instructions": [
            {"op": "optimization_barrier", "args": [1], "outs": [3]},  # stash -> recompute
            {"op": "multiply", "args": [3, 0], "outs": [4]},  # x * w: recompute
            {"op": "multiply", "args": [2, 8], "outs": [5]},  # g * (a view of) x w
            {"op": "add", "args": [5, 7], "outs": [6]},  # gradient + 1
            {"op": "exponential", "args": [8], "outs": [9]},  # recompute (reads a view)
            {"op": "add", "args": [0, 7], "outs": [10]}]}}}  # w + 1: the "loss"
    assert step_labels(program, weights=1) == ["recompute", "recompute", "backward",
                                              "backward", "recompute", "backward"]
    assert step_labels(program, weights=1, loss_results=[0]) == \
        ["recompute", "recompute", "backward", "backward", "recompute", "forward"]
    assert step_labels(program, weights=3)[2] == "recompute"  # g counted as a weight


@needs_mpi
def test_under_mpiexec_process_0_writes_every_rank(tmp_path: Path) -> None:
    r = mpiexec(2, "train", str(GPT), "--quiet", *ONE_STEP,
                f"exp_manager.exp_dir={tmp_path / 'exp'}", "--profile",
                str(tmp_path / "mpi.json"), env={})
    assert r.returncode == 0, r.stderr
    tracks = check_trace_events(json.loads((tmp_path / "mpi.json").read_text()))
    assert {pid for pid, _ in tracks} == set(range(8))
    starts = [min(e["ts"] for e in tracks[rank, COMPUTE]) for rank in range(8)]
    assert max(starts) - min(starts) < 60e6  # one clock: the processes' steps line up
