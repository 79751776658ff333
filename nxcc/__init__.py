"""nxcc: an ahead-of-time compiler toolchain playing the part of AWS neuronx-cc and its runtime.

The Python API (docs/python-api.md):

    import nxcc
    neff = nxcc.compile("examples/mlp.onnx", target="trn1")    # -> nxcc.Neff
    with nxcc.load(neff) as model:                              # -> nxcc.Model on a core
        outputs = model(x)                                      # {output name: array}
    nxcc.inspect(neff)                                          # what inspect-neff --json says
    nxcc.train("examples/train/tiny.yaml", dry_run=True)        # the run's layout
    nxcc.plan("examples/plan/hf_llama3_70B.yaml")               # its cost on real Trainium

Every refusal raises `nxcc.Error` (`CompileError`, `NrtError`, `NeffError`) carrying the code
the command line prints (docs/error-codes.md). The names are imported on first use, so
`import nxcc` stays cheap and `import nxcc.ir` loads no more than the IR.

The installed distribution has this one top-level package. Its layers keep their folders at the
top of the repository (``compiler/``, ``ir/``, ``passes/``, ``nxd/``, ``backend/``,
``cli/``, ``driver/``) and have one import name each, ``nxcc.<layer>``:

- installed (a wheel, ``pip install .``), ``setup.py`` maps each folder into the package, so
  site-packages holds ``nxcc/ir/...`` and nothing else;
- in a checkout, the repository root is appended to this package's ``__path__`` (the
  mechanism of ``pkgutil.extend_path``), so ``nxcc.ir`` is ``<root>/ir``.

Imported as a top-level package (``import ir``), a layer raises ImportError naming its one name.
"""

from __future__ import annotations

import importlib
from pathlib import Path as _Path
from typing import TYPE_CHECKING

_HERE = _Path(__file__).resolve().parent
if not (_HERE / "ir").is_dir() and (_HERE.parent / "ir" / "__init__.py").is_file():
    __path__.append(str(_HERE.parent))

if TYPE_CHECKING:
    from nxcc.backend.neff.artifact import Neff
    from nxcc.backend.runtime.api import Model, load, register_async_exec_callback
    from nxcc.driver.api.compile import compile
    from nxcc.driver.api.inspect import inspect
    from nxcc.driver.api.plan import plan
    from nxcc.driver.api.train import train
    from nxcc.errors import CompileError, Error, NeffError, NrtError, NrtStatus

#: exported name -> the module defining it, imported when the name is first used.
_EXPORTS = {
    "compile": "nxcc.driver.api.compile",
    "load": "nxcc.backend.runtime.api",
    "inspect": "nxcc.driver.api.inspect",
    "plan": "nxcc.driver.api.plan",
    "train": "nxcc.driver.api.train",
    "Neff": "nxcc.backend.neff.artifact",
    "Model": "nxcc.backend.runtime.api",
    "register_async_exec_callback": "nxcc.backend.runtime.api",
    "Error": "nxcc.errors",
    "CompileError": "nxcc.errors",
    "NrtError": "nxcc.errors",
    "NeffError": "nxcc.errors",
    "NrtStatus": "nxcc.errors",
}

__all__ = ["CompileError", "Error", "Model", "Neff", "NeffError", "NrtError", "NrtStatus",
           "compile", "inspect", "load", "plan", "register_async_exec_callback", "train"]


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'nxcc' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
