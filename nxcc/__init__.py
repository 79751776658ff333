"""nxcc: an ahead-of-time compiler toolchain playing the part of AWS neuronx-cc and its runtime.

The installed distribution has this one top-level package. Its layers keep their folders at the
top of the repository, in the order the data flows (``compiler/`` frontends, ``ir/``,
``passes/``, ``backend/``, ``cli/``); ``nxcc/`` links to them, so a source checkout, an editable
install and a wheel all import them as ``nxcc.compiler``, ``nxcc.ir``, ... with no import hook.
"""
