"""Models built from the parallel primitives of `nxcc.nxd`: the built-in decoder."""
