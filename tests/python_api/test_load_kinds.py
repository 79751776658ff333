"""One `nxcc.load` for every kind of NEFF (a model on one core, an `-lnc 2` NEFF, an SPMD
program as ranks, a training step with state), the placement rules, and a model's life."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import nxcc
from nxcc.backend.runtime.cores import holders
from nxcc.backend.runtime.topology import choose_instance
from tests.inprocess import run_cli
from tests.paths import REPO
from tests.python_api.conftest import EXAMPLES
from tests.python_api.test_compile_run import cli_run, npz

SPMD = REPO / "tests/passes/mesh_partition/fixtures"


def test_an_lnc2_neff_loads_on_one_logical_core_of_two_physical(tmp_path: Path) -> None:
    inputs = npz(EXAMPLES / "mlp_inputs.npz")
    neff = nxcc.compile(EXAMPLES / "mlp.onnx", target="trn2", output=tmp_path / "lnc2.neff")
    assert [sg["core"] for sg in nxcc.inspect(neff)["subgraphs"]] == [0, 1]
    with nxcc.load(neff) as model:
        assert (model.lnc, model.instance, model.replicas) == (2, "trn2.48xlarge", [(0,)])
        sharded = model(**inputs)
    expected = cli_run(tmp_path / "lnc2.neff", EXAMPLES / "mlp_inputs.npz", tmp_path)
    np.testing.assert_array_equal(sharded["y"], expected["y"])
    with nxcc.load(nxcc.compile(EXAMPLES / "mlp.onnx", target="trn1")) as one_core:
        np.testing.assert_allclose(sharded["y"], one_core(**inputs)["y"], rtol=1e-5)


def _jax(name: str) -> tuple[dict[str, np.ndarray], list[str]]:
    """JAX's global inputs and outputs of fixture program `name`, and its output layouts."""
    data = npz(SPMD / f"{name}.npz")
    meta = json.loads((SPMD / f"{name}.json").read_text())
    return data, meta["output_shardings"]


def test_an_spmd_program_runs_as_ranks_and_a_global_program_at_lnc2(tmp_path: Path) -> None:
    data, layouts = _jax("megatron_mlp")
    inputs = [data[f"input{i}"] for i in range(sum(k.startswith("input") for k in data))]
    spmd = nxcc.compile(SPMD / "megatron_mlp.compiled.hlo", target="trn1",
                        output=tmp_path / "spmd.neff")
    with pytest.raises(nxcc.NrtError, match="partitioned for 8 ranks; load it with world_size"):
        nxcc.load(spmd)
    with nxcc.load(spmd, world_size=8, output_shardings=layouts) as ranks:
        assert len(ranks.replicas) == 1 and len(ranks.cores) == 8
        assert [b.describe() for b in ranks.bindings]  # its collectives were bound
        ran = ranks(*inputs)
    np.testing.assert_allclose(ran["output0"], data["output0"], rtol=1e-4, atol=1e-5)
    npz_in = tmp_path / "in.npz"
    np.savez(npz_in, *inputs)
    out = tmp_path / "out.npz"
    outcome = run_cli("run", str(spmd.path), "--world-size", "8", "--inputs", str(npz_in),
                      "--output-sharding", layouts[0], "--output", str(out), "-q")
    assert outcome.status == 0, outcome.stderr
    np.testing.assert_array_equal(npz(out)["output0"], ran["output0"])
    lnc2 = nxcc.compile(SPMD / "megatron_mlp.lowered.hlo", target="trn2", lnc=2)
    with nxcc.load(lnc2) as model:
        np.testing.assert_allclose(model(*inputs)["output0"], data["output0"], rtol=1e-4,
                                   atol=1e-5)


def test_a_training_step_runs_steps_and_keeps_its_state(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    batch = {"x": rng.normal(size=(4, 16)).astype(np.float32),
             "labels": np.array([1, 2, -100, 9])}
    np.savez(tmp_path / "batch.npz", **batch)
    path = tmp_path / "step.neff"
    neff = nxcc.compile(EXAMPLES / "mlp.onnx", target="trn1", output=path, training=True,
                        loss="cross-entropy", loss_input="y", label_input="labels",
                        optimizer="adamw", lr=1e-2, weight_decay=0.01)
    with nxcc.load(neff) as model:
        start = model.state()
        whole = model.run_steps(6, **batch)
    with nxcc.load(neff) as model:
        model.load_state(start)
        first = model.run_steps(3, **batch)["loss"]
        state = model.state()
    with nxcc.load(neff) as model:
        model.load_state(state)
        rest = model.run_steps(3, **batch)["loss"]
        with pytest.raises(nxcc.NrtError) as bad:
            model.load_state({**state, "0.weight": np.zeros((1, 1), np.float32)})
    assert whole["loss"].shape == (6,) and whole["loss"][-1] < whole["loss"][0]
    np.testing.assert_array_equal(np.concatenate([first, rest]), whole["loss"])
    assert bad.value.code == "NRT_INVALID" and "0.weight" in str(bad.value)
    out, saved = tmp_path / "out.npz", tmp_path / "state.npz"
    outcome = run_cli("run", str(path), "--inputs", str(tmp_path / "batch.npz"), "--steps",
                      "6", "--output", str(out), "--save-state", str(saved), "-q")
    assert outcome.status == 0, outcome.stderr
    cli_out = npz(out)
    assert list(cli_out) == list(whole)
    np.testing.assert_array_equal(cli_out["loss"], whole["loss"])
    assert sorted(npz(saved)) == sorted(state)


def test_models_go_to_the_least_used_of_the_process_cores(
        monkeypatch: pytest.MonkeyPatch, runtime_env: Path) -> None:
    monkeypatch.setenv("NEURON_RT_VISIBLE_CORES", "4-5")
    neff = nxcc.compile(EXAMPLES / "mlp.onnx", target="trn1")
    instance = choose_instance(None, "trn1")
    with nxcc.load(neff) as a, nxcc.load(neff) as b, nxcc.load(neff) as c:
        assert (a.cores, b.cores, c.cores) == ((4,), (5,), (4,))
        with nxcc.load(neff, start_nc=1) as d, nxcc.load(neff, nc_count=2) as e:
            assert d.cores == (5,) and e.replicas == [(4,), (5,)]
        assert sorted(holders(runtime_env, instance)) == [4, 5]
    assert holders(runtime_env, instance) == {}  # the last model closed: cores given back
    with pytest.raises(nxcc.NrtError) as err:
        nxcc.load(neff, start_nc=2)
    assert err.value.code == "NRT_LOAD_NOT_ENOUGH_NC"  # and the failed load holds nothing


def test_a_closed_model_refuses_calls(tmp_path: Path) -> None:
    model = nxcc.load(nxcc.compile(EXAMPLES / "mlp.onnx", target="trn1"))
    x = npz(EXAMPLES / "mlp_inputs.npz")["x"]
    assert list(model(x)) == ["y"]
    model.close()
    model.close()
    assert model.closed and "closed" in repr(model)
    for call in (lambda: model(x), model.state, lambda: model.run_steps(2, x)):
        with pytest.raises(nxcc.NrtError) as err:
            call()
        assert err.value.code == "NRT_INVALID_HANDLE"


def test_benchmark_and_profile(tmp_path: Path) -> None:
    inputs = npz(EXAMPLES / "mlp_inputs.npz")
    with nxcc.load(nxcc.compile(EXAMPLES / "mlp.onnx", target="trn1")) as model:
        result = model.benchmark(inputs, warmup=1, iterations=3)
        assert (result.iterations, result.warmup, result.name) == (3, 1, "mlp")
        assert result.latency_min_ms <= result.latency_p50_ms <= result.latency_max_ms
        assert result.load_ms == pytest.approx(model.load_seconds * 1e3)
        assert model.benchmark(iterations=1, warmup=0).iterations == 1  # random inputs
        with pytest.raises(nxcc.NrtError, match="not both"):
            model.benchmark(iterations=1, duration=1.0)
        profiler = model.profile()
        model(**inputs)
        profiler.write(str(tmp_path / "trace.json"))
    events = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    assert any(e.get("ph") == "X" and e.get("cat") == "compute" for e in events)
