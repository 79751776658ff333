"""The executable program stored in a NEFF: lowering from IR, memory planning, encoding."""
