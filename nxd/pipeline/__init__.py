"""Cutting a model of the primitives into pipeline stages and building their programs.

`stage.trace(build, rank, cuts)` runs a model's build function for one rank;
`partition.cut_stage` takes the forward of the stage holding a run of its pieces (what
crosses a cut, what is rebuilt); `stage.build_stage` differentiates it into the engine's
`forward`/`backward` or `forward_backward` programs; `tp_partial` finds the replicated
weights whose gradients the TP ranks sum; `handoff` packs what crosses a cut into one array.
"""
