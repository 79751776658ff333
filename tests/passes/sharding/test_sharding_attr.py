"""The sharding attribute: construction, blocks, and its IR text form."""

from __future__ import annotations

import pytest

from nxcc.ir.parser import IRParseError, parse_module
from nxcc.ir.printer import print_module
from nxcc.ir.sharding import Sharding

TEXT = """\
module @m {
  func @main(%x: f32[8,4] sharding<[2,1]>, %w: f32[4,6] sharding<replicated>) -> (f32[8,6]) {
    %0 = dot_general(%x, %w) {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : f32[8,6] sharding<[1,1,2] partial sum>
    %1 = exp(%0) : f32[8,6]
    return %1
  }
}
"""


def test_kinds_and_blocks() -> None:
    s = Sharding.split(2, 0, 2)
    assert str(s) == "sharding<[2,1]>" and s.split_dim == 0 and s.num_devices == 2
    assert s.local_shape((8, 4)) == (4, 4) and s.global_shape((4, 4)) == (8, 4)
    assert s.block((8, 4), 1) == ((4, 8), (0, 4))
    p = Sharding.partial(2, 2)
    assert str(p) == "sharding<[1,1,2] partial sum>" and p.is_partial and p.split_dim is None
    assert p.local_shape((8, 4)) == (8, 4)
    r = Sharding.replicated()
    assert r.is_replicated and str(r) == "sharding<replicated>"
    assert Sharding.split(2, 1, 1) == r and Sharding((1, 1)).normalized() == r


@pytest.mark.parametrize(("tiles", "reduction", "fragment"), [
    ((2, 2), None, "one axis"),
    ((2, 1, 2), "sum", "tiles no data dimension"),
    ((1, 2), "mean", "not one of"),
    ((0, 1), None, ">= 1"),
])
def test_invalid_shardings(tiles, reduction, fragment) -> None:
    with pytest.raises(ValueError, match=fragment):
        Sharding(tiles, reduction)


def test_check_against_a_shape() -> None:
    Sharding.split(2, 0, 2).check((8, 3))
    with pytest.raises(ValueError, match="does not divide"):
        Sharding.split(2, 1, 2).check((8, 3))
    with pytest.raises(ValueError, match="dimensions"):
        Sharding.split(2, 1, 2).check((8,))


def test_text_round_trip() -> None:
    module = parse_module(TEXT)
    fn = module.entry_function
    assert fn.params[0].sharding == Sharding.split(2, 0, 2)
    assert fn.params[1].sharding == Sharding.replicated()
    assert fn.body[0].result.sharding == Sharding.partial(2, 2)
    assert fn.body[1].result.sharding is None
    assert print_module(module) == TEXT
    assert print_module(parse_module(print_module(module))) == TEXT


@pytest.mark.parametrize(("text", "fragment"), [
    ("sharding<[2,1,1]>", "has 3 dimensions"),
    ("sharding<[2,2]>", "one axis"),
    ("sharding<everywhere>", "expected replicated"),
    ("sharding<[1,1,2] total sum>", "expected 'partial'"),
    ("sharding<[1,1,2] partial mean>", "not one of"),
])
def test_bad_sharding_text(text: str, fragment: str) -> None:
    bad = TEXT.replace("sharding<[2,1]>", text)
    with pytest.raises(IRParseError, match=fragment):
        parse_module(bad)
