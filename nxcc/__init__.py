"""nxcc: an ahead-of-time compiler toolchain playing the part of AWS neuronx-cc and its runtime.

The installed distribution has this one top-level package. Its layers keep their folders at the
top of the repository (``compiler/``, ``ir/``, ``passes/``, ``backend/``, ``cli/``,
``driver/``) and have one import name each, ``nxcc.<layer>``:

- installed (a wheel, ``pip install .``), ``setup.py`` maps each folder into the package, so
  site-packages holds ``nxcc/ir/...`` and nothing else;
- in a checkout, the repository root is appended to this package's ``__path__`` (the
  mechanism of ``pkgutil.extend_path``), so ``nxcc.ir`` is ``<root>/ir``.

Imported as a top-level package (``import ir``), a layer raises ImportError naming its one name.
"""

from __future__ import annotations

from pathlib import Path as _Path

_HERE = _Path(__file__).resolve().parent
if not (_HERE / "ir").is_dir() and (_HERE.parent / "ir" / "__init__.py").is_file():
    __path__.append(str(_HERE.parent))
