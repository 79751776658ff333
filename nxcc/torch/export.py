"""A torch module or function and example inputs, to an ONNX model and its signature.

`export` runs the function once on the example inputs (to learn the nesting of its outputs),
then exports it with `torch.onnx.export` (the dynamo exporter, which needs onnxscript). The
ONNX graph's inputs are the example inputs' tensor leaves in order and its outputs the
outputs' tensor leaves in order; both are checked against the example, so the signature
says which NEFF input each tensor feeds and which tensor each NEFF output becomes.
"""

from __future__ import annotations

import contextlib
import logging
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import onnx
import torch

from nxcc.errors import BAD_ARGUMENT, DYNAMIC_SHAPE, UNSUPPORTED_OPERATOR, CompileError
from nxcc.torch.structure import Structure, StructureError, flatten
from nxcc.torch.tensors import DTYPE_NAMED, NUMPY_OF, dtype_name


class ExportError(CompileError):
    """The function could not be exported to ONNX, in one line: NCC_EUOC002 when torch's
    exporter fails (an operator or construct it cannot export), NCC_EMOD025 for a
    data-dependent shape, NCC_EARG001 for inputs or outputs a traced module cannot take."""


@dataclass(frozen=True)
class TensorSpec:
    """A tensor the compiled model takes or gives: its NEFF name, dtype name and shape."""

    name: str
    dtype: str
    shape: tuple[int, ...]

    def describe(self) -> str:
        return f"{self.dtype}{list(self.shape)}"

    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPE_NAMED[self.dtype]


@dataclass(frozen=True)
class Signature:
    """How torch values map onto the NEFF: the nesting of the positional arguments (a tuple
    structure) and of the result, and the tensor leaves of each in order."""

    inputs: Structure
    outputs: Structure
    input_tensors: tuple[TensorSpec, ...]
    output_tensors: tuple[TensorSpec, ...]


def example_args(example_inputs: object) -> tuple[Any, ...]:
    """The positional arguments: a tuple as given, anything else as the one argument (as
    `torch.jit.trace` takes them)."""
    return example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)


def export(func: Callable[..., Any], example_inputs: object) -> tuple[onnx.ModelProto, Signature]:
    """(the ONNX model of `func` at the example inputs, its signature). ExportError when
    torch cannot export it or the export does not match the example."""
    args = example_args(example_inputs)
    module = func if isinstance(func, torch.nn.Module) else _FunctionModule(func)
    try:
        input_leaves, inputs = flatten(args, "example_inputs")
        with torch.no_grad():
            result = module(*args)
        output_leaves, outputs = flatten(result, "the traced function's result")
    except StructureError as exc:
        raise ExportError(BAD_ARGUMENT, str(exc)) from None
    if not output_leaves:
        raise ExportError(BAD_ARGUMENT, "the traced function returns no tensor")
    proto = _onnx_export(module, args)
    graph = proto.graph
    initializers = {i.name for i in graph.initializer}
    graph_inputs = [i for i in graph.input if i.name not in initializers]
    input_specs = _specs(graph_inputs, input_leaves, "input")
    output_specs = _specs(list(graph.output), output_leaves, "output")
    return proto, Signature(inputs, outputs, input_specs, output_specs)


class _FunctionModule(torch.nn.Module):
    """A plain function as a module, for the exporter."""

    def __init__(self, func: Callable[..., Any]) -> None:
        super().__init__()
        self.func = func

    def forward(self, *args: Any) -> Any:
        return self.func(*args)


def _onnx_export(module: torch.nn.Module, args: tuple[Any, ...]) -> onnx.ModelProto:
    """`torch.export` (non-strict) then the ONNX exporter on the program: exporting the
    program keeps every positional argument one (`torch.onnx.export` given the module would
    take a trailing dict argument for keyword arguments)."""
    try:
        with _quiet_exporter():
            program = torch.export.export(module, args, strict=False)
            onnx_program = torch.onnx.export(program, dynamo=True, verbose=False,
                                             external_data=False)
    except ImportError as exc:
        raise ExportError(BAD_ARGUMENT, f"torch.onnx.export needs "
                          f"{exc.name or 'onnxscript'}: pip install 'nxcc[torch]'") from exc
    except Exception as exc:  # noqa: BLE001 - the exporters raise many kinds; one line out
        raise ExportError(UNSUPPORTED_OPERATOR, f"torch could not export the function: "
                          f"{_summary(exc)}") from exc
    if onnx_program is None:
        raise ExportError(UNSUPPORTED_OPERATOR, "torch.onnx.export returned no program")
    return onnx_program.model_proto


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _summary(exc: BaseException) -> str:
    """One line of an exporter's error: its exception summary when it has one (the ONNX
    exporter's errors open with advice and put the cause under '## Exception summary')."""
    lines = [line.strip() for line in _ANSI.sub("", str(exc)).splitlines() if line.strip()]
    if "## Exception summary" in lines[:-1]:
        return lines[lines.index("## Exception summary") + 1]
    return lines[0] if lines else type(exc).__name__


@contextlib.contextmanager
def _quiet_exporter() -> Iterator[None]:
    """The exporter's progress warnings (optional torchvision ops, deprecations) silenced;
    its errors still raise."""
    log = logging.getLogger("torch.onnx")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        log.setLevel(level)


def _specs(values: list[onnx.ValueInfoProto], leaves: list[torch.Tensor], kind: str
           ) -> tuple[TensorSpec, ...]:
    """The graph's `kind`s as specs, checked one to one against the example's tensors."""
    if len(values) != len(leaves):
        hint = (" (a module that updates its buffers, e.g. batch norm in training mode, "
                "exports them as outputs: call .eval() first)" if kind == "output" else "")
        raise ExportError(BAD_ARGUMENT, f"the ONNX export has {len(values)} {kind}s where "
                          f"the example has {len(leaves)} tensors{hint}")
    specs = []
    for i, (value, leaf) in enumerate(zip(values, leaves, strict=True)):
        name = dtype_name(leaf.dtype, f"{kind} tensor {i}")
        shape = tuple(int(d) for d in leaf.shape)
        tensor_type = value.type.tensor_type
        dims = tuple(d.dim_value if d.HasField("dim_value") else -1
                     for d in tensor_type.shape.dim)
        elem = onnx.helper.tensor_dtype_to_np_dtype(tensor_type.elem_type) \
            if tensor_type.elem_type else None
        if -1 in dims:
            shown = ", ".join("?" if d < 0 else str(d) for d in dims)
            raise ExportError(DYNAMIC_SHAPE, f"ONNX {kind} {value.name!r} has a "
                              f"data-dependent shape [{shown}]: a traced model needs fixed "
                              "tensor shapes")
        if dims != shape or (elem is not None and elem != NUMPY_OF[leaf.dtype]):
            raise ExportError(BAD_ARGUMENT, f"ONNX {kind} {value.name!r} is "
                              f"{elem}{list(dims)}, but the example's tensor {i} is "
                              f"{name}{list(shape)}")
        specs.append(TensorSpec(value.name, name, shape))
    return tuple(specs)

