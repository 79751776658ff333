"""The implementation of nxcc's Python API that sits on the driver: `compile` (flags as the
command line takes them, through the compile cache), `inspect` and `train`. `nxcc/__init__.py`
exports them, with `load` and `Model` from the runtime (`backend.runtime.api`); the command
line and the ONNX backend call them too."""
