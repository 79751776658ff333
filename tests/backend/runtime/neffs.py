"""Small NEFFs for the runtime tests, built from IR (no frontend involved)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from nxcc.backend.neff import read_neff, write_neff
from nxcc.backend.program.package import NeffSpec, write_program_neff
from nxcc.ir.builder import Builder
from nxcc.ir.core import Function, Module, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.parser import parse_module
from nxcc.ir.types import TensorType

SPIN_IR = """module @spin {
  func @main(%n: s32[]) -> ("count": s32[]) {
    %zero = constant() {value = splat<s32[]: 0>} : s32[]
    %0, %1 = while(%zero, %n) {condition = @cond, body = @body} : s32[], s32[]
    return %0
  }
  func @cond(%i: s32[], %n: s32[]) -> (pred[]) {
    %c = compare(%i, %n) {direction = LT} : pred[]
    return %c
  }
  func @body(%i: s32[], %n: s32[]) -> (s32[], s32[]) {
    %one = constant() {value = splat<s32[]: 1>} : s32[]
    %j = add(%i, %one) : s32[]
    return %j, %n
  }
}"""
"""Counts from 0 to its input `n` in a `while` loop: runs for as long as `n` says."""

WEIGHT_SIZE = 512


def spin_neff(path: Path, target: str = "trn1", lnc: int = 1) -> Path:
    """The spin model for `target`; at lnc 2 the same program on both physical cores."""
    module = parse_module(SPIN_IR)
    write_program_neff(str(path), [module] * lnc,
                       NeffSpec(target=target, lnc=lnc, name=f"spin-{target}-lnc{lnc}"))
    return path


def weights_neff(path: Path, target: str = "trn1") -> Path:
    """y = x @ W with a 1 MiB float32 weight W (512x512): for measuring weight memory."""
    module = Module("weights")
    x = Value(TensorType(DType.F32, (1, WEIGHT_SIZE)), "x")
    fn = Function("main", [x])
    module.add_function(fn)
    b = Builder(module, fn)
    w = np.random.default_rng(0).standard_normal((WEIGHT_SIZE, WEIGHT_SIZE)).astype(np.float32)
    y = b.dot_general(x, b.constant(w), lhs_contracting_dims=(1,), rhs_contracting_dims=(0,))
    fn.results = [y]
    fn.result_names = ["y"]
    write_program_neff(str(path), [module], NeffSpec(target=target, lnc=1, name="weights"))
    return path


def with_collectives(src: Path, dst: Path, collectives: list[dict]) -> Path:
    """A copy of the NEFF `src` whose manifest lists `collectives`."""
    neff = read_neff(src)
    manifest = dict(neff.manifest, collectives=collectives)
    write_neff(str(dst), manifest=manifest, files=dict(neff.files), name=neff.header.name,
               num_tpb=neff.header.num_tpb, lnc_size=neff.header.lnc_size)
    return dst
