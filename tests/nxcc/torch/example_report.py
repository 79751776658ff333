"""Runs a script of examples/torch as `python SCRIPT` runs it (in the current folder, which
holds model.pt), then prints one JSON line saying where each of its traced modules is loaded
and where each of its executions ran, {"m0": {"cores": [3], "executions": [3, 3, 3]}, ...},
and keeps its NeuronCores until its standard input closes (so a second process started
meanwhile sees them taken, as in the seed's multiple-processes example).

    python -m tests.nxcc.torch.example_report examples/torch/manual_core_selection.py
"""

from __future__ import annotations

import json
import runpy
import sys

import nxcc.torch


def main(script: str) -> None:
    names = runpy.run_path(script, run_name="__main__")
    report = {name: {"cores": value.neuron_cores, "executions": value.executions}
              for name, value in names.items() if isinstance(value, nxcc.torch.TracedModule)}
    print(json.dumps(report), flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main(sys.argv[1])
