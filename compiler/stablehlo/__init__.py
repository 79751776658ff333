"""The StableHLO frontend: the MLIR text JAX prints by default
(``jax.jit(f).lower(x).as_text()``) -> the HLO syntax tree -> the IR, through the HLO text
frontend's own lowering, so both forms of a program give the same IR.

    from nxcc.compiler.stablehlo.frontend import import_stablehlo, looks_like_mlir
"""
