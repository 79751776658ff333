"""PyTorch on nxcc, in the manner of torch_neuronx (`pip install 'nxcc[torch]'`).

    import torch
    import nxcc.torch

    trace = nxcc.torch.trace(model, example, compiler_args="--target trn1")
    trace(example)                                  # runs on a NeuronCore, returns tensors
    nxcc.torch.save(trace, "model.pt")              # the NEFF inside (torch.jit.save's part)
    m = nxcc.torch.load("model.pt")                 # loads to the next core (torch.jit.load's)
    with nxcc.torch.neuron_cores_context(start_nc=3):
        m3 = nxcc.torch.load("model.pt")            # on nc3
    with nxcc.torch.multicore_context():
        mm = nxcc.torch.load("model.pt")            # a replica on every core of the process
    m3.neuron_cores, mm.executions                  # where it is loaded, where calls ran

Importing `nxcc` never imports torch; importing `nxcc.torch` does, and says how to install it
when it is missing.
"""

from __future__ import annotations

try:
    import torch as _torch  # noqa: F401 - fail here, with the install line, when absent
except ImportError as _exc:
    raise ImportError("nxcc.torch needs PyTorch: pip install 'nxcc[torch]'") from _exc

from nxcc.backend.runtime.placement import multicore_context, neuron_cores_context
from nxcc.torch.module import TracedModule
from nxcc.torch.trace import load, save, set_multicore, set_neuron_cores, trace

__all__ = ["TracedModule", "load", "multicore_context", "neuron_cores_context", "save",
           "set_multicore", "set_neuron_cores", "trace"]
