"""Every asynchronous collective kind gives bit-identical results to its synchronous form, run
as 2 and 4 ranks in this process: the program compiled with latency-hiding (each collective a
start and a done, run on each rank's communication thread) against it compiled without; and
JAX-style HLO text with all-reduce-/all-gather-/collective-permute-start/-done against the
same program written with the synchronous collectives."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from nxcc.backend.neff import read_neff
from nxcc.backend.runtime.nrt import Runtime
from nxcc.backend.runtime.profile import COMMUNICATION, COMPUTE, Profiler, attach
from nxcc.driver.compile import compile_model
from nxcc.driver.options import CompileOptions
from nxcc.passes import registry

ADD = """max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] maximum(a, b)
}
"""
T = "f32[8,8]{1,0}"


def _collective(kind: str, n: int, asynchronous: bool) -> list[str]:
    """HLO lines computing `c` from `g` (f32[8,8] on each rank) by collective `kind`."""
    group = f"replica_groups={{{{{','.join(map(str, range(n)))}}}}}, channel_id=1, " \
            "use_global_device_ids=true"
    ring = ",".join(f"{{{i},{(i + 1) % n}}}" for i in range(n))
    if kind == "all-reduce":
        if asynchronous:
            return [f"  s = {T} all-reduce-start(g), {group}, to_apply=max",
                    f"  c = {T} all-reduce-done(s)"]
        return [f"  c = {T} all-reduce(g), {group}, to_apply=max"]
    if kind == "all-gather":
        out = f"f32[{8 * n},8]{{1,0}}"
        if asynchronous:
            return [f"  s = ({T}, {out}) all-gather-start(g), dimensions={{0}}, {group}",
                    f"  c = {out} all-gather-done(s)"]
        return [f"  c = {out} all-gather(g), dimensions={{0}}, {group}"]
    if kind == "collective-permute":
        pairs = f"source_target_pairs={{{ring}}}, channel_id=1"
        if asynchronous:
            return [f"  s = ({T}, {T}, u32[], u32[]) collective-permute-start(g), {pairs}",
                    f"  c = {T} collective-permute-done(s)"]
        return [f"  c = {T} collective-permute(g), {pairs}"]
    if kind == "reduce-scatter":
        return [f"  c = f32[8,{8 // n}]{{1,0}} reduce-scatter(g), dimensions={{1}}, {group}, "
                "to_apply=max"]
    assert kind == "all-to-all"
    return [f"  c = {T} all-to-all(g), dimensions={{1}}, {group}"]


def program(kind: str, n: int, asynchronous: bool = False) -> str:
    """Each rank: g = x * w + its partition id; c = kind(g) while tanh(x) @ w is computed; the
    results exp(c) and that product."""
    lines = [f"  x = {T} parameter(0)", f"  w = {T} parameter(1)",
             "  pid = u32[] partition-id()", "  pf = f32[] convert(pid)",
             f"  pb = {T} broadcast(pf), dimensions={{}}",
             f"  m = {T} multiply(x, w)", f"  g = {T} add(m, pb)",
             *_collective(kind, n, asynchronous),
             f"  h = {T} tanh(x)",
             f"  k = {T} dot(h, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}",
             ]
    c_line = next(line for line in lines if line.startswith("  c = "))
    c_type = c_line.split(" = ")[1].split(" ")[0]
    lines += [f"  e = {c_type} exponential(c)",
              f"  ROOT out = ({c_type}, {T}) tuple(e, k)"]
    return f"HloModule {kind.replace('-', '_')}, num_partitions={n}\n\n{ADD}\nENTRY main {{\n" \
        + "\n".join(lines) + "\n}\n"


def compile_text(text: str, out: Path, hide_latency: bool, monkeypatch: pytest.MonkeyPatch
                 ) -> Path:
    src = out.with_suffix(".hlo")
    src.write_text(text)
    with monkeypatch.context() as m:
        if not hide_latency:
            m.setattr(registry, "PIPELINES", {
                level: ",".join(p for p in text.split(",") if p != "latency-hiding")
                for level, text in registry.PIPELINES.items()})
        compile_model(str(src), CompileOptions(target="inf2", output=str(out)),
                      emit=lambda s: None)
    return out


@pytest.fixture
def rt() -> Iterator[Runtime]:
    runtime = Runtime().init(target="inf2")
    try:
        yield runtime
    finally:
        runtime.close()


def inputs_for(n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(n)
    return [rng.standard_normal((8, 8)).astype(np.float32) for _ in range(2)]


def run(rt: Runtime, neff: Path, n: int) -> list[np.ndarray]:
    """Every rank's outputs, stacked along dimension 0 (rank order)."""
    stacked = f"{{devices=[{n},1]<=[{n}]}}"
    model = rt.load_spmd(neff, n, output_shardings=[stacked, stacked])
    assert [i.shape for i in model.inputs] == [(8, 8), (8, 8)]
    outs = rt.execute(model, {i.name: a for i, a in zip(model.inputs, inputs_for(n),
                                                       strict=True)})
    return [outs[k] for k in sorted(outs)]


def asynchronous(neff: Path) -> list[bool]:
    return [bool(c.get("async")) for c in read_neff(neff).manifest.get("collectives", [])]


KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("kind", KINDS)
def test_latency_hiding_gives_the_synchronous_results(kind: str, n: int, rt: Runtime,
                                                      tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    text = program(kind, n)
    split = compile_text(text, tmp_path / "split.neff", True, monkeypatch)
    sync = compile_text(text, tmp_path / "sync.neff", False, monkeypatch)
    assert asynchronous(split) == [True] and asynchronous(sync) == [False]
    got, want = run(rt, split, n), run(rt, sync, n)
    assert [g.shape for g in got] == [w.shape for w in want]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("kind", ["all-reduce", "all-gather", "collective-permute"])
def test_hlo_start_done_pairs_give_the_synchronous_results(
        kind: str, n: int, rt: Runtime, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The -start/-done pairs stay asynchronous even without latency-hiding (they lower to
    the IR's start/done), and give what the synchronous collective gives."""
    pairs = compile_text(program(kind, n, asynchronous=True), tmp_path / "pairs.neff", False,
                         monkeypatch)
    sync = compile_text(program(kind, n), tmp_path / "sync.neff", False, monkeypatch)
    assert asynchronous(pairs) == [True] and asynchronous(sync) == [False]
    got = run(rt, pairs, n)
    for g, w in zip(got, run(rt, sync, n), strict=True):
        np.testing.assert_array_equal(g, w)
    # and what it should be: rank r's g is x * w + r
    x, w = (a.astype(np.float64) for a in inputs_for(n))
    g = [x * w + r for r in range(n)]
    c = {"all-reduce": [np.max(g, axis=0)] * n,
         "all-gather": [np.concatenate(g)] * n,
         "collective-permute": [g[(r - 1) % n] for r in range(n)]}[kind]
    np.testing.assert_allclose(got[0], np.concatenate([np.exp(b) for b in c]), rtol=1e-6)


@pytest.mark.parametrize("kind", KINDS)
def test_profile_shows_each_kind_on_the_communication_track(
        kind: str, rt: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The start and done run on each rank's compute track; the collective itself on its
    communication track, between them."""
    n = 2
    neff = compile_text(program(kind, n), tmp_path / "split.neff", True, monkeypatch)
    stacked = f"{{devices=[{n},1]<=[{n}]}}"
    model = rt.load_spmd(neff, n, output_shardings=[stacked, stacked])
    profiler = Profiler()
    for replica in model.replicas:
        attach(replica.model, profiler)
    rt.execute(model, {i.name: a for i, a in zip(model.inputs, inputs_for(n), strict=True)})
    name = kind.replace("-", "_")
    for rank in range(n):
        events = {(e["name"], e["tid"]): e for e in profiler.events if e["pid"] == rank}
        start, done = events[(f"{name}_start", COMPUTE)], events[(f"{name}_done", COMPUTE)]
        comm = events[(name, COMMUNICATION)]
        assert start["ts"] <= comm["ts"] and comm["ts"] <= done["ts"] + done["dur"]
