"""Regenerate the XLA fixtures of the driver tests (needs jax; the tests do not):

    /work/jaxvenv/bin/python tests/driver/make_fixtures.py

`matmul.hlo.pb` is the binary HloModuleProto of one f32 matmul, `matmul.hlo` its HLO text,
`matmul.stablehlo.mlir` its StableHLO text (JAX's default `as_text()`).
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp

HERE = Path(__file__).resolve().parent / "data"


def main() -> None:
    def f(a, b):
        return jnp.dot(a, b)

    lowered = jax.jit(f).lower(jnp.zeros((4, 8), jnp.float32), jnp.zeros((8, 3), jnp.float32))
    HERE.mkdir(exist_ok=True)
    proto = lowered.compiler_ir("hlo").as_serialized_hlo_module_proto()
    (HERE / "matmul.hlo.pb").write_bytes(proto)
    (HERE / "matmul.hlo").write_text(lowered.as_text(dialect="hlo"))
    (HERE / "matmul.stablehlo.mlir").write_text(lowered.as_text())


if __name__ == "__main__":
    main()
