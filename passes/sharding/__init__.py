"""Sharding for `-lnc N`, GSPMD style, one module per step.

- `rules/`: per op, the ways it can run on n devices (its strategies);
- `search_graph`: a function numbered for propagation and planning;
- `propagation`: shardings spread forward and backward to a fixed point;
- `cost_model`: a plan's estimated seconds per core;
- `search`: the choice of the matrix ops' shardings under the cost model;
- `partitioning`: which strategy each op runs and which reshards its operands need;
- `collective_insertion`: the plan emitted as one SPMD function, collectives where needed;
- `specialize`: the SPMD program specialised to one physical core;
- `shard_choose`, `shard_propagate`, `shard_partition`: the three passes over those steps.
"""
