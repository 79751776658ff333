"""State a NEFF keeps between executions: which outputs alias which inputs.

A training step takes its parameters and optimizer state as inputs and returns their new
values as outputs; the NEFF pairs them (``input_output_alias``, as HLO's) and names them
(``state``), with each buffer's value before the first execution (a weight file, or zeros).
The runtime holds the state of a loaded model and feeds output j back as input i on the next
execution, so the program's users pass only the other inputs and see only the other outputs.
An alias without a ``state`` entry (HLO's donated arguments) stays visible: the caller passes
the input and gets the output, and running several steps feeds one to the other.

Manifest entries::

    "input_output_alias": [{"output": j, "input": i}, ...],
    "state": [{"name": N, "dtype": D, "shape": [...], "input": i, "output": j,
               "init": {"weight": "w3"} | {"zeros": true}}, ...]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from nxcc.ir.attributes import Dense
from nxcc.ir.dtypes import DType
from nxcc.ir.types import TensorType


@dataclass(frozen=True)
class StateBuffer:
    """Program input `input` is fed from output `output` of the previous execution.

    `kept`: the loaded model holds the buffer (a training step's parameters), `initial`
    being its value before the first execution (None: zeros); otherwise the caller passes
    and receives it and only the alias is declared (HLO's donated arguments)."""

    name: str
    input: int
    output: int
    initial: np.ndarray | None = None
    kept: bool = True


def state_manifest(inputs: Sequence[dict], outputs: Sequence[dict],
                   state: Sequence[StateBuffer], store: Callable[[Dense], str]) -> dict:
    """The manifest's ``input_output_alias`` and ``state`` sections, given its ``inputs``
    and ``outputs`` entries (whole shapes, also for a program split over cores); `store`
    keeps an initial value as a weight and returns its name. ValueError if an alias pairs
    values of different types or an index twice."""
    entries, seen_in, seen_out = [], set(), set()
    for s in state:
        if not (0 <= s.input < len(inputs) and 0 <= s.output < len(outputs)):
            raise ValueError(f"state '{s.name}': input {s.input} or output {s.output} does "
                             "not exist")
        t = TensorType(DType.from_name(inputs[s.input]["dtype"]),
                       tuple(inputs[s.input]["shape"]))
        t_out = TensorType(DType.from_name(outputs[s.output]["dtype"]),
                           tuple(outputs[s.output]["shape"]))
        if t_out != t:
            raise ValueError(f"state '{s.name}': output {s.output} is {t_out}, input "
                             f"{s.input} is {t}")
        if s.input in seen_in or s.output in seen_out:
            raise ValueError(f"state '{s.name}': input or output aliased twice")
        seen_in.add(s.input)
        seen_out.add(s.output)
        if not s.kept:
            continue
        if s.initial is None:
            init: dict = {"zeros": True}
        else:
            init = {"weight": store(Dense.of(np.asarray(s.initial), t.dtype))}
        entries.append({"name": s.name, "dtype": t.dtype.value, "shape": list(t.shape),
                        "input": s.input, "output": s.output, "init": init})
    out: dict = {"input_output_alias": [{"output": s.output, "input": s.input} for s in state]}
    if entries:
        out["state"] = entries
    return out
