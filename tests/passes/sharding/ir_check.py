"""Helpers for sharding tests written in IR text: run passes, compare with one core."""

from __future__ import annotations

import textwrap

import numpy as np

from nxcc.ir.clone import clone_module
from nxcc.ir.core import Module
from nxcc.ir.interpreter import IRContext
from nxcc.ir.parser import parse_module
from nxcc.ir.printer import print_module
from nxcc.passes.manager import PassManager
from nxcc.passes.pipeline_text import option_types
from nxcc.passes.registry import PASSES, build_pipeline
from tests.passes.sharding.spmd import run_spmd

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all",
               "collective_permute")


def partitioned(text: str, *names: str, n: int = 2) -> tuple[Module, Module]:
    """(the module as parsed, the module after the named sharding passes)."""
    module = parse_module(textwrap.dedent(text))
    original = clone_module(module)
    text = ",".join(f"{name}{{num_cores={n}}}" if "num_cores" in option_types(PASSES[name])
                    else name for name in names)
    PassManager(build_pipeline(text)).run(module)
    return original, module


def collectives(module: Module) -> list[str]:
    return [op.opcode for op in module.entry_function.body if op.opcode in COLLECTIVES]


def random_inputs(module: Module, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for p in module.entry_function.params:
        t = p.type
        if t.dtype.is_float:
            out.append(rng.standard_normal(t.shape).astype(t.dtype.numpy))
        else:
            out.append(rng.integers(-5, 5, t.shape).astype(t.dtype.numpy))
    return out


def assert_same_results(original: Module, spmd: Module, n: int = 2, seed: int = 0) -> None:
    """The SPMD module on `n` cores computes what the original computes on one."""
    inputs = random_inputs(original, seed)
    expected = IRContext(original).call(original.entry, inputs)
    got = run_spmd(spmd, inputs, n)
    for e, g in zip(expected, got, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def text(module: Module) -> str:
    return print_module(module)


# Scalar computations (reducers, comparators) the tests' IR refers to; appended after a
# module's last function, they also close the module.
COMPUTATIONS = """
  func @sum(%a: f32[], %b: f32[]) -> (f32[]) {
    %0 = add(%a, %b) : f32[]
    return %0
  }
  func @max(%a: f32[], %b: f32[]) -> (f32[]) {
    %0 = maximum(%a, %b) : f32[]
    return %0
  }
  func @less(%a: f32[], %b: f32[]) -> (pred[]) {
    %0 = compare(%a, %b) {direction = LT} : pred[]
    return %0
  }
  func @ge(%a: f32[], %b: f32[]) -> (pred[]) {
    %0 = compare(%a, %b) {direction = GE} : pred[]
    return %0
  }
}"""
