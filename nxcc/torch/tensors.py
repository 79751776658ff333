"""Torch tensors to numpy arrays and back, for the dtypes a NEFF carries.

bfloat16 has no numpy dtype of its own: it travels as ml_dtypes' bfloat16 (what the runtime
computes in), reinterpreted bit for bit through int16 on the torch side. Tensors on another
device or that require grad are detached and copied to the CPU; outputs come back as CPU
tensors that own their memory.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import torch

from nxcc.errors import UNSUPPORTED_DTYPE, CompileError

#: torch dtype -> the numpy dtype its values travel as.
NUMPY_OF: dict[torch.dtype, np.dtype] = {
    torch.bool: np.dtype(np.bool_),
    torch.int8: np.dtype(np.int8), torch.int16: np.dtype(np.int16),
    torch.int32: np.dtype(np.int32), torch.int64: np.dtype(np.int64),
    torch.uint8: np.dtype(np.uint8), torch.uint16: np.dtype(np.uint16),
    torch.uint32: np.dtype(np.uint32), torch.uint64: np.dtype(np.uint64),
    torch.float16: np.dtype(np.float16), torch.bfloat16: np.dtype(ml_dtypes.bfloat16),
    torch.float32: np.dtype(np.float32), torch.float64: np.dtype(np.float64),
}
TORCH_OF: dict[np.dtype, torch.dtype] = {v: k for k, v in NUMPY_OF.items()}
#: The name a dtype is stored under in a saved module ("float32", "bfloat16", ...).
NAME_OF: dict[torch.dtype, str] = {t: str(t).removeprefix("torch.") for t in NUMPY_OF}
DTYPE_NAMED: dict[str, torch.dtype] = {v: k for k, v in NAME_OF.items()}


def dtype_name(dtype: torch.dtype, where: str) -> str:
    """The stored name of `dtype`; CompileError(NCC_EDTY001) naming `where` for one a NEFF
    cannot carry."""
    if dtype not in NAME_OF:
        raise CompileError(UNSUPPORTED_DTYPE, f"{where} is a {dtype} tensor; nxcc.torch supports "
                        f"{', '.join(NAME_OF.values())}")
    return NAME_OF[dtype]


def to_numpy(tensor: torch.Tensor) -> np.ndarray:
    """`tensor`'s values as a C-contiguous numpy array (a view where torch allows one)."""
    t = tensor.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def from_numpy(array: np.ndarray) -> torch.Tensor:
    """A CPU tensor owning a copy of `array`'s values (TypeError for a dtype torch lacks)."""
    dtype = TORCH_OF.get(array.dtype)
    if dtype is None:
        raise TypeError(f"an output of dtype {array.dtype} has no torch dtype")
    if dtype == torch.bfloat16:
        bits = np.ascontiguousarray(array).view(np.int16)
        return torch.from_numpy(bits.copy()).view(torch.bfloat16)
    return torch.from_numpy(np.array(array, copy=True, order="C"))
