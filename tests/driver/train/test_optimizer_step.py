"""The optimizer update run chunk by chunk, and as one whole-shard program bound to the
caller's arrays and writing over them, gives the whole-shard program's bits."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from nxcc.driver.options import CompileOptions
from nxcc.driver.train import optimizer_step
from nxcc.driver.train.optimizer_step import OptimizerStep
from nxcc.passes.autodiff.optimizers import OptimizerConfig

OPTIONS = CompileOptions(target="trn1")
N = 30


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("state_dtype", [None, ml_dtypes.bfloat16])
@pytest.mark.parametrize("name", ["adamw", "sgd"])
def test_chunks_give_the_whole_programs_bits(monkeypatch: pytest.MonkeyPatch, name: str,
                                             state_dtype: object, threads: int) -> None:
    """Chunked, and the chunks shared by threads: the one whole-shard program's bits."""
    cfg = OptimizerConfig(name=name, weight_decay=0.01, betas=(0.9, 0.95), momentum=0.9)
    whole = OptimizerStep(cfg, N, OPTIONS, state_dtype, threads=1)
    monkeypatch.setattr(optimizer_step, "CHUNK", 7)  # 4 chunks of 7 and one of 2
    chunked = OptimizerStep(cfg, N, OPTIONS, state_dtype, threads=threads, in_place=False)
    assert chunked.chunk == 7 and chunked.threads == threads
    assert [sorted(e) for e in chunked.executors] == [[2, 7]] * threads
    rng = np.random.default_rng(0)
    param = rng.standard_normal(N).astype(np.float32)
    p_whole, p_chunked = param, param.copy()
    for step in range(3):
        grad = rng.standard_normal(N).astype(np.float32)
        p_whole = whole(p_whole, grad, 0.5, 1e-2, step).copy()
        p_chunked = chunked(p_chunked, grad, 0.5, 1e-2, step)  # its own output as input
        np.testing.assert_array_equal(p_chunked, p_whole)
        for a, b in zip(chunked.slots, whole.slots, strict=True):
            assert a.dtype == b.dtype == np.dtype(state_dtype or np.float32)
            np.testing.assert_array_equal(a, b)
    assert not np.array_equal(p_whole, param)



@pytest.mark.parametrize("threads", [1, 2])
def test_the_parameters_updated_in_place_give_the_same_bits(monkeypatch: pytest.MonkeyPatch,
                                                            threads: int) -> None:
    """`out=param`: each chunk is read before it is written, so updating the parameters
    where they are gives what the update into a separate array gives."""
    cfg = OptimizerConfig(name="adamw", weight_decay=0.01, betas=(0.9, 0.95))
    monkeypatch.setattr(optimizer_step, "CHUNK", 7)
    apart = OptimizerStep(cfg, N, OPTIONS, threads=threads, in_place=False)
    inplace = OptimizerStep(cfg, N, OPTIONS, threads=threads, in_place=False)
    rng = np.random.default_rng(1)
    p_apart = rng.standard_normal(N).astype(np.float32)
    p_inplace = p_apart.copy()
    for step in range(3):
        grad = rng.standard_normal(N).astype(np.float32)
        p_apart = apart(p_apart, grad, 0.5, 1e-2, step).copy()
        assert inplace(p_inplace, grad, 0.5, 1e-2, step, out=p_inplace) is p_inplace
        np.testing.assert_array_equal(p_inplace, p_apart)
    with pytest.raises(ValueError, match="f32\\[30\\]"):
        inplace(p_inplace, grad, 0.5, 1e-2, 3, out=np.empty(N, np.float64))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", ["adamw", "sgd"])
def test_the_bound_whole_shard_program_gives_the_chunks_bits(monkeypatch: pytest.MonkeyPatch,
                                                             name: str, threads: int) -> None:
    """The whole-shard program on the caller's arrays, writing the parameters and slots
    over the old ones (bound again when other arrays come), gives the chunks' bits; with
    a separate output array, the parameters are left as they were."""
    cfg = OptimizerConfig(name=name, weight_decay=0.01, betas=(0.9, 0.95), momentum=0.9)
    monkeypatch.setattr(optimizer_step, "CHUNK", 7)
    chunked = OptimizerStep(cfg, N, OPTIONS, threads=threads, in_place=False)
    bound = OptimizerStep(cfg, N, OPTIONS, threads=threads)
    rng = np.random.default_rng(2)
    p_chunked = rng.standard_normal(N).astype(np.float32)
    p_bound = p_chunked.copy()
    grad = np.empty(N, np.float32)
    for step in range(4):
        grad[...] = rng.standard_normal(N)
        if step == 2:  # other arrays: bound again
            p_bound, grad = p_bound.copy(), grad.copy()
        p_chunked = chunked(p_chunked, grad, 0.5, 1e-2, step, out=p_chunked)
        assert bound(p_bound, grad, 0.5, 1e-2, step, out=p_bound) is p_bound
        assert bound._in_place is not None  # the whole-shard program ran
        np.testing.assert_array_equal(p_bound, p_chunked)
        for a, b in zip(bound.slots, chunked.slots, strict=True):
            np.testing.assert_array_equal(a, b)
    before = p_bound.copy()
    out = np.empty(N, np.float32)
    assert bound(p_bound, grad, 0.5, 1e-2, 4, out=out) is out
    np.testing.assert_array_equal(p_bound, before)
    np.testing.assert_array_equal(out, chunked(p_chunked, grad, 0.5, 1e-2, 4))


def test_arrays_it_cannot_bind_go_by_chunks() -> None:
    """A strided gradient, or one sharing memory with the parameters: the chunks."""
    cfg = OptimizerConfig(name="adamw", weight_decay=0.01, betas=(0.9, 0.95))
    opt = OptimizerStep(cfg, N, OPTIONS)
    ref = OptimizerStep(cfg, N, OPTIONS, in_place=False)
    rng = np.random.default_rng(3)
    param = rng.standard_normal(N).astype(np.float32)
    grad = rng.standard_normal(2 * N).astype(np.float32)[::2]
    np.testing.assert_array_equal(opt(param, grad, 0.5, 1e-2, 0),
                                  ref(param, grad, 0.5, 1e-2, 0))
    assert opt._in_place is None
    shared = rng.standard_normal(N).astype(np.float32)
    np.testing.assert_array_equal(opt(shared, shared, 0.5, 1e-2, 1),
                                  ref(shared, shared, 0.5, 1e-2, 1))
    assert opt._in_place is None


def _function(instructions: list[tuple[str, list[int], list[int]]]) -> dict:
    return {"params": [0, 1], "results": [3],
            "instructions": [{"op": op, "args": a, "outs": o} for op, a, o in instructions]}


def test_in_place_safe() -> None:
    """Result 0 (slot 3) over parameter 0 (slot 0): safe when one elementwise instruction
    writes it and nothing reads the parameter after it."""
    assert optimizer_step.in_place_safe(
        _function([("multiply", [0, 1], [2]), ("fused_elementwise", [2, 0], [3])]), [(0, 0)])
    assert not optimizer_step.in_place_safe(  # the old value read after the new is written
        _function([("add", [1, 1], [3]), ("multiply", [0, 3], [2])]), [(0, 0)])
    assert not optimizer_step.in_place_safe(  # not elementwise
        _function([("transpose", [0], [3])]), [(0, 0)])
    assert not optimizer_step.in_place_safe(  # written twice
        _function([("add", [0, 1], [3]), ("add", [3, 1], [3])]), [(0, 0)])
