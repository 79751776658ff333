"""The cyclic collector is off inside a compile and back as it was after."""

from __future__ import annotations

import gc

import pytest

from nxcc.driver.compile_gc import compile_gc


def test_collector_off_inside_then_enabled_again_even_on_error() -> None:
    assert gc.isenabled()
    with pytest.raises(RuntimeError), compile_gc():
        assert not gc.isenabled()
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_collector_left_off_when_it_was_off() -> None:
    gc.disable()
    try:
        with compile_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
