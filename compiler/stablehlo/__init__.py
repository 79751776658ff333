"""The StableHLO frontend: the MLIR text JAX prints by default
(``jax.jit(f).lower(x).as_text()``) -> the HLO syntax tree -> the IR, through the HLO text
frontend's own lowering, so both forms of a program give the same IR.

    from nxcc.compiler.stablehlo import import_stablehlo
    module = import_stablehlo("model.mlir")      # a path, or the text itself

`driver.frontends` calls `import_stablehlo` for files whose content is StableHLO.
"""

from nxcc.compiler.stablehlo.frontend import (
    import_stablehlo,
    import_xla,
    looks_like_mlir,
    parse_stablehlo,
)

__all__ = ["import_stablehlo", "import_xla", "looks_like_mlir", "parse_stablehlo"]
