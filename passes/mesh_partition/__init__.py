"""Partitioning a global program annotated for a mesh of N devices into the SPMD program
its N ranks run (JAX's lowered text -> what XLA's SPMD partitioner would give):

- `dist`: where a value lies over the mesh (tiles, pending reductions, copies);
- `rules`: per op, where its operands must lie and where its results then lie;
- `reshard`: the collectives and local slices that move a value between placements;
- `partition`: the mesh-partition pass over the entry function.
"""
