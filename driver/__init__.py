"""The driver: strings a frontend, the pass pipeline and the NEFF writer together.

It sits above the frontends (`compiler/`) and the backend (`backend/`), which know nothing of
each other; the command line and the `onnx.backend` API are its clients.
"""

if not __name__.startswith("nxcc."):
    raise ImportError(f"import nxcc.{__name__}, not {__name__}: each layer has one import name")
