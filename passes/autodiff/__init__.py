"""Reverse-mode differentiation over the IR, losses, optimizers and learning-rate schedules.

`differentiate(module, fn, wrt, loss)` appends the backward program of `fn` to its body as
ordinary core ops (see `differentiate.py`); the gradient rules live in `rules/`, one module
per op family, registered against each op's `OpDef`.
"""
