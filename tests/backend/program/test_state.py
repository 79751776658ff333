"""`state`: the manifest's `input_output_alias` and `state` sections of a training step
(parameters and slots the loaded model keeps) and of donated arguments (aliases only), and
the refusal of an alias that pairs different types or an index twice."""

from __future__ import annotations

import numpy as np
import pytest

from nxcc.backend.program.state import StateBuffer, state_manifest
from nxcc.ir.attributes import Dense

INPUTS = [{"name": "w", "dtype": "f32", "shape": [2, 3]},
          {"name": "m", "dtype": "f32", "shape": [2, 3]},
          {"name": "x", "dtype": "bf16", "shape": [4]},
          {"name": "step", "dtype": "s32", "shape": []}]
OUTPUTS = [{"name": "loss", "dtype": "f32", "shape": []},
           {"name": "w_new", "dtype": "f32", "shape": [2, 3]},
           {"name": "m_new", "dtype": "f32", "shape": [2, 3]},
           {"name": "step_new", "dtype": "s32", "shape": []}]


def manifest(state: list[StateBuffer]) -> tuple[dict, dict[str, Dense]]:
    stored: dict[str, Dense] = {}

    def store(value: Dense) -> str:
        stored[f"w{len(stored)}"] = value
        return f"w{len(stored) - 1}"

    return state_manifest(INPUTS, OUTPUTS, state, store), stored


def test_kept_state_has_its_initial_value_or_zeros() -> None:
    w0 = np.arange(6, dtype=np.float64).reshape(2, 3)
    out, stored = manifest([StateBuffer("w", 0, 1, initial=w0), StateBuffer("m", 1, 2),
                            StateBuffer("step", 3, 3, initial=np.int64(5))])
    assert out["input_output_alias"] == [{"output": 1, "input": 0}, {"output": 2, "input": 1},
                                         {"output": 3, "input": 3}]
    assert out["state"] == [
        {"name": "w", "dtype": "f32", "shape": [2, 3], "input": 0, "output": 1,
         "init": {"weight": "w0"}},
        {"name": "m", "dtype": "f32", "shape": [2, 3], "input": 1, "output": 2,
         "init": {"zeros": True}},
        {"name": "step", "dtype": "s32", "shape": [], "input": 3, "output": 3,
         "init": {"weight": "w1"}}]
    # stored in the input's dtype, whatever the array given was
    assert stored["w0"].array.dtype == np.float32
    np.testing.assert_array_equal(stored["w0"].array, w0.astype(np.float32))
    assert stored["w1"].array.dtype == np.int32 and int(stored["w1"].array) == 5


def test_donated_arguments_are_aliases_without_state() -> None:
    out, stored = manifest([StateBuffer("w", 0, 1, kept=False)])
    assert out == {"input_output_alias": [{"output": 1, "input": 0}]}
    assert stored == {}


@pytest.mark.parametrize(("state", "fragment"), [
    ([StateBuffer("w", 0, 0)], "output 0 is f32[], input 0 is f32[2,3]"),
    ([StateBuffer("x", 2, 1)], "output 1 is f32[2,3], input 2 is bf16[4]"),
    ([StateBuffer("w", 9, 1)], "input 9 or output 1 does not exist"),
    ([StateBuffer("w", 0, -1)], "input 0 or output -1 does not exist"),
    ([StateBuffer("w", 0, 1), StateBuffer("m", 1, 1)], "aliased twice"),
    ([StateBuffer("w", 0, 1), StateBuffer("w2", 0, 2)], "aliased twice"),
])
def test_a_wrong_alias_is_refused(state: list[StateBuffer], fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        manifest(state)
