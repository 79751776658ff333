"""mesh-partition over many shardings of one program (dot, transpose, reshape, reduce,
elementwise; a Sharding custom-call; tuple and explicit output shardings): on 1-D and 2-D
meshes of 8 devices, with replication, permuted device orders and a maximal parameter,
the 8 ranks give numpy's global outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nxcc.backend.runtime.nrt import Runtime
from tests.passes.mesh_partition.programs import compile_hlo

PROGRAM = """HloModule mesh_case
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  x = f32[8,16]{1,0} parameter(0), sharding=SX
  w = f32[16,24]{1,0} parameter(1), sharding=SW
  d = f32[8,24]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  c = f32[8,24]{1,0} custom-call(d), custom_call_target="Sharding", sharding=SC
  t = f32[24,8]{1,0} transpose(c), dimensions={1,0}
  r = f32[4,6,8]{2,1,0} reshape(t)
  z = f32[] constant(0)
  s = f32[4,8]{1,0} reduce(r, z), dimensions={1}, to_apply=add_f32
  e = f32[4,8]{1,0} tanh(s)
  ROOT out = (f32[4,8]{1,0}, f32[8,24]{1,0}) tuple(e, d)ROOT_SHARDING
}
"""

R = "{replicated}"
CASES = {
    "batch_1d": ("{devices=[8,1]<=[8]}", R, R, None),
    "contraction_1d": ("{devices=[1,8]<=[8]}", "{devices=[8,1]<=[8]}", R, None),
    "megatron_2x4": ("{devices=[2,1,4]<=[8] last_tile_dim_replicate}",
                     "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}", R, None),
    "both_dims_2x4": ("{devices=[2,4]<=[8]}", "{devices=[4,2]<=[8]}", R, None),
    "permuted_4x2": ("{devices=[4,2]0,2,4,6,1,3,5,7}",
                     "{devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}",
                     "{devices=[1,8]<=[8]}", None),
    "explicit_outputs": (R, "{devices=[1,8]<=[8]}", R,
                         "{{devices=[2,4]<=[8]}, {devices=[1,2,4]<=[8] "
                         "last_tile_dim_replicate}}"),
    "maximal_param": ("{maximal device=3}", "{devices=[1,8]<=[8]}",
                      "{devices=[8,1]<=[8]}", "{{replicated}, {devices=[8,1]<=[8]}}"),
}


def program(sx: str, sw: str, sc: str, root: str | None) -> str:
    text = PROGRAM.replace("SX", sx).replace("SW", sw).replace("SC", sc)
    return text.replace("ROOT_SHARDING", f", sharding={root}" if root else "")


@pytest.mark.parametrize("case", sorted(CASES))
def test_shardings_partition_to_numpy_outputs(case: str, tmp_path: Path,
                                              runtime: Runtime) -> None:
    src = tmp_path / "p.hlo"
    src.write_text(program(*CASES[case]))
    neff = compile_hlo(src, tmp_path / "p.neff")
    rng = np.random.default_rng(7)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    w = (rng.standard_normal((16, 24)) * 0.3).astype(np.float32)
    model = runtime.load_spmd(neff, 8)
    names = [i.name for i in model.inputs]
    out = runtime.execute(model, dict(zip(names, (x, w), strict=True)))
    d = x.astype(np.float64) @ w.astype(np.float64)
    e = np.tanh(d.T.reshape(4, 6, 8).sum(axis=1))
    got = [out[o.name] for o in model.outputs]
    np.testing.assert_allclose(got[0], e, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[1], d, rtol=1e-5, atol=1e-5)


SOFTMAX = """HloModule softmax_case
max_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  x = f32[8,32]{1,0} parameter(0), sharding=SX
  lo = f32[] constant(-inf)
  m = f32[8]{0} reduce(x, lo), dimensions={1}, to_apply=max_f32
  mb = f32[8,32]{1,0} broadcast(m), dimensions={0}
  d = f32[8,32]{1,0} subtract(x, mb)
  e = f32[8,32]{1,0} exponential(d)
  z = f32[] constant(0)
  s = f32[8]{0} reduce(e, z), dimensions={1}, to_apply=add_f32
  sb = f32[8,32]{1,0} broadcast(s), dimensions={0}
  p = f32[8,32]{1,0} divide(e, sb)
  i = s32[8,32]{1,0} iota(), iota_dimension=1
  k = s32[] constant(16)
  kb = s32[8,32]{1,0} broadcast(k), dimensions={}
  lt = pred[8,32]{1,0} compare(i, kb), direction=LT
  zb = f32[8,32]{1,0} broadcast(z), dimensions={}
  masked = f32[8,32]{1,0} select(lt, p, zb)
  c = f32[8,64]{1,0} concatenate(masked, x), dimensions={1}
  ROOT out = (f32[8,64]{1,0}, f32[8]{0}) tuple(c, m)
}
"""


@pytest.mark.parametrize("sx", ["{devices=[1,8]<=[8]}", "{devices=[2,4]<=[8]}",
                                "{devices=[4,2]<=[2,4]T(1,0)}",
                                "{devices=[1,4,2]<=[8] last_tile_dim_replicate}"])
def test_split_reductions_iota_select_and_concatenate(sx: str, tmp_path: Path,
                                                      runtime: Runtime) -> None:
    """A max and a sum over a split dimension (pending max/sum, all-reduced once each), an
    iota and a select on split values, and a concatenate (run on whole values)."""
    src = tmp_path / "s.hlo"
    src.write_text(SOFTMAX.replace("SX", sx))
    neff = compile_hlo(src, tmp_path / "s.neff")
    x = np.random.default_rng(3).standard_normal((8, 32)).astype(np.float32)
    model = runtime.load_spmd(neff, 8)
    out = runtime.execute(model, {model.inputs[0].name: x})
    got = [out[o.name] for o in model.outputs]
    e = np.exp(x - x.max(axis=1, keepdims=True))
    p = np.where(np.arange(32) < 16, e / e.sum(axis=1, keepdims=True), 0)
    np.testing.assert_allclose(got[0], np.concatenate([p, x], axis=1), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got[1], x.max(axis=1))
