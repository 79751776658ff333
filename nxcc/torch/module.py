"""`TracedModule`: a compiled model loaded on NeuronCores, called with torch tensors.

What `nxcc.torch.trace` and `nxcc.torch.load` return (torch_neuronx's traced ScriptModule):
it is loaded onto NeuronCores when it is made, under the placement context in force
(`neuron_cores_context`, `multicore_context`), takes the positional arguments the example
had (tensors of the same shapes and dtypes, the same constants) and returns the nesting the
traced function returned, as CPU tensors. It is an `nn.Module`, so it can sit inside a
larger module; it has no parameters of its own (the weights are in the NEFF).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

import nxcc
from nxcc.errors import NrtError, NrtStatus
from nxcc.torch.export import Signature
from nxcc.torch.structure import StructureError, flatten, unflatten
from nxcc.torch.tensors import from_numpy, to_numpy


class TracedModule(torch.nn.Module):
    """A NEFF with the signature of the function it was traced from, loaded on cores."""

    def __init__(self, neff: bytes, signature: Signature) -> None:
        """Load `neff` onto NeuronCores (the placement context in force applies)."""
        super().__init__()
        self.neff = neff
        self.signature = signature
        self._model: nxcc.Model | None = None
        self._model = nxcc.load(neff)

    # placement

    @property
    def model(self) -> nxcc.Model:
        """The loaded NEFF (`nxcc.Model`): its inputs, outputs, cores, benchmark..."""
        return self._loaded()

    @property
    def neuron_cores(self) -> list[int]:
        """The NeuronCores the model is loaded on (global indices): [3] on nc3, [0, 1] for
        replicas on nc0 and nc1."""
        return list(self._loaded().cores)

    @property
    def executions(self) -> list[int]:
        """The NeuronCore each call ran on, oldest first (the runtime keeps the last few
        thousand): the replicas of a model take the calls in turn."""
        return list(self._loaded().handle.history)

    def reload(self, start_nc: int | None = None, nc_count: int | None = None) -> None:
        """Unload the model and load it again at `start_nc` over `nc_count` cores (None: the
        placement context's value, else automatic)."""
        model = self._loaded()
        self._model = None
        model.close()
        self._model = nxcc.load(self.neff, start_nc=start_nc, nc_count=nc_count)

    def close(self) -> None:
        """Unload the model from its cores; calling the module afterwards is an error."""
        model, self._model = self._model, None
        if model is not None:
            model.close()

    # execution

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Run the model on `args` (shaped like the example inputs); the result nested as
        the traced function's, as CPU tensors."""
        if kwargs:
            raise _bad_input(f"a traced module takes its inputs by position, as traced; got "
                            f"keyword(s) {', '.join(sorted(kwargs))}")
        arrays = self._arrays(args)
        outputs = self._loaded()(**arrays)
        return unflatten(self.signature.outputs, self._tensors(outputs))

    def _arrays(self, args: tuple[Any, ...]) -> dict[str, np.ndarray]:
        try:
            leaves, structure = flatten(args, "input")
        except StructureError as exc:
            raise _bad_input(str(exc)) from None
        if structure != self.signature.inputs:
            raise _bad_input(f"the inputs do not nest like the example inputs (or a constant "
                            f"differs): traced with {_describe(self.signature.inputs)}, "
                            f"called with {_describe(structure)}")
        arrays = {}
        for i, (leaf, spec) in enumerate(zip(leaves, self.signature.input_tensors,
                                             strict=True)):
            if leaf.dtype != spec.torch_dtype or tuple(leaf.shape) != spec.shape:
                raise _bad_input(f"input tensor {i} is {_tensor(leaf)}, but the model was "
                                 f"traced with {spec.describe()}: trace again for other "
                                 "shapes or dtypes")
            arrays[spec.name] = to_numpy(leaf)
        return arrays

    def _tensors(self, outputs: Mapping[str, np.ndarray]) -> list[torch.Tensor]:
        """The outputs (by NEFF name) as tensors, in the order of the result's leaves."""
        return [from_numpy(outputs[spec.name]) for spec in self.signature.output_tensors]

    def _loaded(self) -> nxcc.Model:
        if self._model is None:
            raise NrtError(NrtStatus.INVALID_HANDLE, "this traced module was closed (or moving "
                           "it failed); load it again with nxcc.torch.load")
        return self._model

    def __reduce_ex__(self, protocol: object) -> Any:
        """Refused: the module holds a loaded NEFF, which pickle (torch.save, deepcopy)
        cannot carry; `nxcc.torch.save` writes it."""
        raise TypeError("a traced module holds a NEFF loaded on NeuronCores and cannot be "
                        "pickled (torch.save, copy.deepcopy): save it with "
                        "nxcc.torch.save(module, path) and load it with nxcc.torch.load(path)")

    def extra_repr(self) -> str:
        ins = ", ".join(s.describe() for s in self.signature.input_tensors)
        outs = ", ".join(s.describe() for s in self.signature.output_tensors)
        cores = ", ".join(f"nc{c}" for c in self.neuron_cores) if self._model else "closed"
        return f"({ins}) -> ({outs}) on {cores}"


def _bad_input(message: str) -> NrtError:
    return NrtError(NrtStatus.EXEC_BAD_INPUT, message)


def _tensor(t: torch.Tensor) -> str:
    return f"{str(t.dtype).removeprefix('torch.')}{list(t.shape)}"


def _describe(structure: dict[str, Any]) -> str:
    """A short text of a structure: (T, T, None, 4) with T for each tensor."""
    kind, body = next(iter(structure.items()))
    if kind == "tensor":
        return "T"
    if kind == "tuple":
        return "(" + ", ".join(_describe(s) for s in body) + ("," if len(body) == 1 else "") + ")"
    if kind == "list":
        return "[" + ", ".join(_describe(s) for s in body) + "]"
    if kind == "dict":
        return "{" + ", ".join(f"{k!r}: {_describe(s)}" for k, s in body) + "}"
    return repr(body)
