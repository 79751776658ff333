"""nxcc as an ONNX backend (the `onnx.backend.base` convention).

    import nxcc.driver.onnx_backend as nxcc
    rep = nxcc.prepare(model)             # compiles `model` to a NEFF
    outputs = rep.run([x, y])             # a list of numpy arrays, in graph-output order

`prepare` compiles the model with `nxcc.compile` (frontend, the -O pipeline, the NEFF writer;
not through the compile cache) and loads it with `nxcc.load` on the process's NeuronCores,
the same path `neuronx-cc compile` + `neuronx-cc run` take; there is no second execution
path. A model whose inputs have dynamic dimensions is compiled on its first
`run`, for the shapes of the inputs given, and once per distinct set of input shapes after.
Inputs given positionally map to the graph's inputs that are not initializers, in order.
An input whose value the compiler needs (a Reshape's shape, a Resize's scales...) is frozen
into the model and compiled per value (see `NxccRep`). Compilation errors raise
`CompileError`, execution errors `NrtError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import helper
from onnx.backend import base
from onnx.backend.base import BackendRep, Device, DeviceType

from nxcc.backend.runtime.api import Model, load
from nxcc.compiler.onnx.loader import graph_inputs, value_sources
from nxcc.driver.api.compile import compile
from nxcc.driver.errors import CompileError
from nxcc.errors import DYNAMIC_SHAPE

DEFAULT_TARGET = "trn1"
DYNAMIC_CODE = DYNAMIC_SHAPE  # a value must be known at compile time


def _static_shape(info: onnx.ValueInfoProto) -> tuple[int, ...] | None:
    """The input's shape when every dimension is a number, else None."""
    tt = info.type.tensor_type
    if not info.type.HasField("tensor_type") or not tt.HasField("shape"):
        return None
    if not all(d.HasField("dim_value") for d in tt.shape.dim):
        return None
    return tuple(d.dim_value for d in tt.shape.dim)


def compile_to_loaded(model: onnx.ModelProto, input_shapes: Mapping[str, Sequence[int]],
                      target: str = DEFAULT_TARGET, optlevel: int = 2) -> Model:
    """`model` compiled (without the compile cache) and loaded for execution."""
    neff = compile(model, target=target, optlevel=optlevel, no_cache=True,
                   input_shape={k: tuple(v) for k, v in input_shapes.items()})
    return load(neff)


def freeze_inputs(model: onnx.ModelProto, values: Mapping[str, np.ndarray]) -> onnx.ModelProto:
    """A copy of `model` in which the graph inputs `values` names are initializers."""
    frozen = onnx.ModelProto()
    frozen.CopyFrom(model)
    for name, arr in values.items():
        frozen.graph.initializer.append(onnx.numpy_helper.from_array(np.asarray(arr), name))
    return frozen


class NxccRep(BackendRep):
    """A prepared model: `run(inputs)` executes its NEFF and returns the outputs as a list.

    Inputs that the compiler needs as compile-time constants (a Reshape's shape, a Resize's
    scales, reduction axes given as an input...) are found from the compiler's NCC_EMOD025
    errors; the model is then compiled on each `run` with those inputs' values frozen into
    it as initializers (one NEFF per distinct set of values, as XLA compiles per value of
    its compile-time-constant arguments). Every other input stays a NEFF input.
    """

    def __init__(self, model: onnx.ModelProto, target: str = DEFAULT_TARGET,
                 optlevel: int = 2) -> None:
        self.model = model
        self.target = target
        self.optlevel = optlevel
        self.inputs = graph_inputs(model)
        self.input_names = [i.name for i in self.inputs]
        self.frozen: set[str] = set()
        self._loaded: dict[tuple, Model] = {}
        static = [_static_shape(i) for i in self.inputs]
        if all(s is not None for s in static):
            try:
                self._loaded[tuple(static)] = compile_to_loaded(model, {}, target, optlevel)
            except CompileError as exc:
                self._learn_frozen(exc)

    def _learn_frozen(self, exc: CompileError) -> None:
        """Add the inputs `exc` needs constant to `frozen`; re-raise `exc` if there are none
        new (the error is not one that freezing inputs can fix)."""
        if exc.code != DYNAMIC_CODE or exc.value is None:
            raise exc
        more = set(value_sources(self.model.graph.node, exc.value,
                                     [i.name for i in graph_inputs(self.model)])) - self.frozen
        if not more:
            raise exc
        self.frozen |= more

    def _feeds(self, inputs: Any) -> dict[str, np.ndarray]:
        if isinstance(inputs, Mapping):
            return {k: np.asarray(v) for k, v in inputs.items()}
        if isinstance(inputs, np.ndarray):
            inputs = [inputs]
        values = list(inputs)
        if len(values) > len(self.input_names):
            raise ValueError(f"{len(values)} inputs given; the model takes "
                             f"{len(self.input_names)} ({', '.join(self.input_names)})")
        return {n: np.asarray(v) for n, v in zip(self.input_names, values, strict=False)}

    def _key(self, feeds: Mapping[str, np.ndarray]) -> tuple:
        shapes = tuple(tuple(feeds[n].shape) if n in feeds else () for n in self.input_names)
        if not self.frozen:
            return shapes
        values = tuple((n, str(feeds[n].dtype), feeds[n].shape, feeds[n].tobytes())
                       for n in sorted(self.frozen) if n in feeds)
        return (shapes, values)

    def _model_for(self, feeds: Mapping[str, np.ndarray]) -> Model:
        loaded = self._loaded.get(self._key(feeds))
        while loaded is None:
            dynamic = {n: feeds[n].shape for n in self.input_names
                       if n in feeds and n not in self.frozen
                       and _static_shape(self.inputs[self.input_names.index(n)]) is None}
            model = self.model
            if self.frozen:
                model = freeze_inputs(model, {n: feeds[n] for n in self.frozen if n in feeds})
            try:
                loaded = compile_to_loaded(model, dynamic, self.target, self.optlevel)
            except CompileError as exc:
                self._learn_frozen(exc)
                continue
            self._loaded[self._key(feeds)] = loaded
        return loaded

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        """Execute once; `inputs` a sequence (positional) or a name -> array mapping."""
        feeds = self._feeds(inputs)
        loaded = self._model_for(feeds)
        outputs = loaded(**{n: a for n, a in feeds.items() if n not in self.frozen})
        return tuple(outputs[info.name] for info in loaded.outputs)


class Backend(base.Backend):
    """The onnx.backend.base.Backend of nxcc (CPU only: the simulated NeuronCores)."""

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> NxccRep:
        """Compile `model`; keyword options `target` (trn1...) and `optlevel` (1-3)."""
        if not cls.supports_device(device):
            raise ValueError(f"nxcc runs on CPU only, not {device}")
        return NxccRep(model, kwargs.get("target", DEFAULT_TARGET),
                       int(kwargs.get("optlevel", 2)))

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU",
                  **kwargs: Any) -> tuple[np.ndarray, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: onnx.NodeProto, inputs: Any, device: str = "CPU",
                 outputs_info: Sequence[tuple[np.dtype, tuple[int, ...]]] | None = None,
                 **kwargs: Any) -> tuple[np.ndarray, ...]:
        """Run one node on `inputs` (positional, in the node's input order).

        `opset_version` (keyword) picks the default-domain opset; the latest otherwise."""
        arrays = [np.asarray(v) for v in inputs]
        names = [n for n in node.input if n][:len(arrays)]
        graph = helper.make_graph(
            [node], "node",
            [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype),
                                           a.shape) for n, a in zip(names, arrays, strict=True)],
            [helper.make_empty_tensor_value_info(o) for o in node.output if o])
        opset = kwargs.pop("opset_version", onnx.defs.onnx_opset_version())
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        inferred = onnx.shape_inference.infer_shapes(model)
        types = {v.name: v.type for v in (*inferred.graph.value_info, *inferred.graph.output)}
        for out in model.graph.output:
            if out.name in types and types[out.name].tensor_type.HasField("shape"):
                out.type.CopyFrom(types[out.name])
        return cls.prepare(model, device, **kwargs).run(arrays)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        try:
            return Device(device).type == DeviceType.CPU
        except (AttributeError, ValueError):
            return False


NxccBackend = Backend
prepare = Backend.prepare
run_model = Backend.run_model
run_node = Backend.run_node
supports_device = Backend.supports_device
is_compatible = Backend.is_compatible
