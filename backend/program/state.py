"""State a NEFF keeps between executions: which outputs alias which inputs.

A training step takes its parameters and optimizer state as inputs and returns their new
values as outputs; the NEFF pairs them (``input_output_alias``, as HLO's) and names them
(``state``), with each buffer's value before the first execution (a weight file, or zeros).
The runtime holds the state of a loaded model and feeds output j back as input i on the next
execution, so the program's users pass only the other inputs and see only the other outputs.

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
from nxcc.ir.core import Module


@dataclass(frozen=True)
class StateBuffer:
    """Program input `input` is fed from output `output` of the previous execution;
    `initial` is its value before the first one (None: zeros)."""

    name: str
    input: int
    output: int
    initial: np.ndarray | None = None


def state_manifest(module: Module, state: Sequence[StateBuffer],
                   store: Callable[[Dense], str]) -> dict:
    """The manifest's ``input_output_alias`` and ``state`` sections for `module`'s entry
    (`store` keeps an initial value as a weight and returns its name); ValueError if an
    alias pairs values of different types or an index twice."""
    fn = module.entry_function
    entries, seen_in, seen_out = [], set(), set()
    for s in state:
        if not (0 <= s.input < len(fn.params) and 0 <= s.output < len(fn.results)):
            raise ValueError(f"state '{s.name}': input {s.input} or output {s.output} does "
                             "not exist")
        t = fn.params[s.input].type
        if fn.results[s.output].type != t:
            raise ValueError(f"state '{s.name}': output {s.output} is "
                             f"{fn.results[s.output].type}, input {s.input} is {t}")
        if s.input in seen_in or s.output in seen_out:
            raise ValueError(f"state '{s.name}': input or output aliased twice")
        seen_in.add(s.input)
        seen_out.add(s.output)
        if s.initial is None:
            init: dict = {"zeros": True}
        else:
            init = {"weight": store(Dense.of(np.asarray(s.initial), t.dtype))}
        entries.append({"name": s.name, "dtype": t.dtype.value, "shape": list(t.shape),
                        "input": s.input, "output": s.output, "init": init})
    return {"input_output_alias": [{"output": s.output, "input": s.input} for s in state],
            "state": entries}
