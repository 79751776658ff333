"""Fusion passes: run on each core's program after every other pass (autodiff, the -O
pipeline and sharding all see unfused IR)."""
