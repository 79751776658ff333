"""Copying modules: new graph objects (values, ops, functions), shared immutable attributes."""

from __future__ import annotations

from nxcc.ir.core import Function, Module, Op, Value


def clone_function(fn: Function) -> Function:
    """A copy of `fn` whose values and ops are new (names, types, shardings kept)."""
    mapping: dict[int, Value] = {}

    def copy_value(v: Value) -> Value:
        new = Value(v.type, v.name)
        new.sharding = v.sharding
        return new

    params = []
    for p in fn.params:
        q = copy_value(p)
        mapping[id(p)] = q
        params.append(q)
    body = []
    for op in fn.body:
        new = Op(op.opdef, [mapping[id(v)] for v in op.operands], [r.type for r in op.results],
                 op.attrs, [r.name for r in op.results])
        for old, r in zip(op.results, new.results, strict=True):
            r.sharding = old.sharding
            mapping[id(old)] = r
        body.append(new)
    return Function(fn.name, params, body, [mapping[id(r)] for r in fn.results],
                    list(fn.result_names))


def clone_module(module: Module) -> Module:
    """A copy of `module` that can be rewritten without touching the original."""
    return Module(module.name, {name: clone_function(fn) for name, fn in module.functions.items()},
                  module.entry, module.spmd, list(module.input_output_alias),
                  module.mesh_layouts)
