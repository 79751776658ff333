"""The optimizer update run chunk by chunk gives the whole-shard program's bits."""

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
    chunked = OptimizerStep(cfg, N, OPTIONS, state_dtype, threads=threads)
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
    apart = OptimizerStep(cfg, N, OPTIONS, threads=threads)
    inplace = OptimizerStep(cfg, N, OPTIONS, threads=threads)
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
