"""Distributed training as NxD Training configures it (`neuronx-cc train CONFIG.yaml`).

`config` reads the YAML into frozen dataclasses, `layout` places ranks (TP innermost),
`data` cuts the token stream into batches, `metrics` and `checkpoint_io` write a run's
outputs. See docs/training.md (use) and docs/training-internals.md (design).
"""
