"""The IR's text form, parser side (lark, LALR). Reads exactly what `ir.printer` prints.

`parse_module(text)` returns a verified-shape module: every op's attributes are checked
against its definition and its printed result types against its type rule. Errors are
`IRParseError` with the line and column.
"""

from __future__ import annotations

import functools
import json
from importlib import resources

import numpy as np
from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedInput

from nxcc.ir.attributes import Dense, Symbol
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.opdef import TypeRuleError, get_opdef
from nxcc.ir.sharding import Sharding
from nxcc.ir.types import TensorType


class IRParseError(ValueError):
    """A syntax or semantic error in IR text, with its position."""


@functools.cache
def _lark() -> Lark:
    grammar = resources.files("nxcc.ir").joinpath("ir.lark").read_text()
    return Lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=True)


def _unquote(text: str) -> str:
    return json.loads(text) if text.startswith('"') else text


def parse_module(text: str, source: str = "<ir>") -> Module:
    """Parse IR text into a Module; IRParseError naming `source`, line and column if wrong."""
    try:
        tree = _lark().parse(text)
    except UnexpectedInput as exc:
        line = text.splitlines()[exc.line - 1] if 0 < exc.line <= len(text.splitlines()) else ""
        raise IRParseError(
            f"{source}:{exc.line}:{exc.column}: syntax error\n  {line}\n  "
            f"{' ' * max(exc.column - 1, 0)}^"
        ) from None
    return _ModuleReader(source).read(tree)


class _ModuleReader:
    def __init__(self, source: str) -> None:
        self.source = source

    def error(self, node: Tree | Token, message: str) -> IRParseError:
        line = getattr(node, "line", None) or getattr(getattr(node, "meta", None), "line", "?")
        col = getattr(node, "column", None) or getattr(getattr(node, "meta", None), "column", "?")
        return IRParseError(f"{self.source}:{line}:{col}: {message}")

    def read(self, tree: Tree) -> Module:
        children = list(tree.children)
        name = self.symbol(children[0])
        entry = "main"
        rest = children[1:]
        if rest and isinstance(rest[0], Tree) and rest[0].data == "entry":
            entry = self.symbol(rest[0].children[0])
            rest = rest[1:]
        elif rest and rest[0] is None:
            rest = rest[1:]
        module = Module(name, entry=entry)
        # Functions may refer to functions defined later: declare signatures first.
        fn_trees = [t for t in rest if isinstance(t, Tree)]
        for ft in fn_trees:
            fn = self.declare(ft)
            if fn.name in module.functions:
                raise self.error(ft, f"function @{fn.name} is defined twice")
            module.functions[fn.name] = fn
        for ft in fn_trees:
            self.fill(ft, module)
        if entry not in module.functions:
            raise IRParseError(f"{self.source}: entry function @{entry} is not defined")
        return module

    def symbol(self, node: Tree) -> str:
        return _unquote(str(node.children[0])[1:])

    def type_(self, node: Tree) -> TensorType:
        dtype_tok = node.children[0]
        try:
            dtype = DType.from_name(str(dtype_tok))
        except ValueError as exc:
            raise self.error(dtype_tok, str(exc)) from None
        dims = tuple(int(str(t)) for t in node.children[1:] if t is not None)
        return TensorType(dtype, dims)

    def declare(self, ft: Tree) -> Function:
        ch = ft.children
        name = self.symbol(ch[0])
        params, results, result_names = [], [], []
        for node in ch[1:]:
            if isinstance(node, Tree) and node.data == "param":
                vname = _unquote(str(node.children[0].children[0])[1:])
                param = Value(self.type_(node.children[1]), vname)
                param.sharding = self.sharding(node.children[2], param.type)
                params.append(param)
            elif isinstance(node, Tree) and node.data == "result":
                label, t = node.children
                results.append(self.type_(t))
                result_names.append(json.loads(str(label)) if label is not None else None)
        # Placeholder results carry the declared signature until the body is read.
        fn = Function(name, params, results=[Value(t) for t in results])
        if any(n is not None for n in result_names):
            if any(n is None for n in result_names):
                raise self.error(ft, f"@{name}: name every result or none")
            fn.result_names = result_names  # type: ignore[assignment]
        return fn

    def fill(self, ft: Tree, module: Module) -> None:
        fn = module.functions[self.symbol(ft.children[0])]
        scope: dict[str, Value] = {}
        for p in fn.params:
            scope[p.name] = p  # type: ignore[index]
        for node in ft.children[1:]:
            if not isinstance(node, Tree):
                continue
            if node.data == "op":
                fn.body.append(self.op(node, scope, module))
            elif node.data == "ret":
                returned = [self.use(v, scope) for v in node.children if v is not None]
        declared = [r.type for r in fn.results]
        fn.results = returned
        if [r.type for r in fn.results] != declared:
            raise self.error(ft, f"@{fn.name} returns values whose types differ from its "
                                 f"signature ({', '.join(map(str, declared))})")

    def use(self, node: Tree, scope: dict[str, Value]) -> Value:
        tok = node.children[0]
        name = _unquote(str(tok)[1:])
        if name not in scope:
            raise self.error(tok, f"use of undefined value %{name}")
        return scope[name]

    def op(self, node: Tree, scope: dict[str, Value], module: Module) -> Op:
        opname = next(c for c in node.children if isinstance(c, Token) and c.type == "NAME")
        split = node.children.index(opname)
        defs = [c for c in node.children[:split] if c is not None]
        uses = [c for c in node.children[split + 1:] if isinstance(c, Tree) and c.data == "value"]
        attrs_node = next((c for c in node.children
                           if isinstance(c, Tree) and c.data == "attrs"), None)
        rtypes = [c for c in node.children if isinstance(c, Tree) and c.data == "rtype"]
        types = [self.type_(c.children[0]) for c in rtypes]
        try:
            opdef = get_opdef(str(opname))
        except KeyError as exc:
            raise self.error(opname, str(exc.args[0])) from None
        operands = [self.use(u, scope) for u in uses]
        raw = {}
        if attrs_node is not None:
            for a in attrs_node.children:
                if a is None:
                    continue
                key = str(a.children[0])
                if key in raw:
                    raise self.error(a.children[0], f"attribute '{key}' given twice")
                raw[key] = self.literal(a.children[1])
        try:
            attrs = opdef.check_attrs(raw)
            inferred = opdef.infer([v.type for v in operands], attrs, module)
        except TypeRuleError as exc:
            raise self.error(opname, str(exc)) from None
        if types != inferred:
            raise self.error(
                opname,
                f"{opname} results are ({', '.join(map(str, inferred))}), "
                f"the text says ({', '.join(map(str, types))})",
            )
        names = [_unquote(str(d.children[0])[1:]) for d in defs]
        if len(names) != len(inferred):
            raise self.error(opname, f"{opname} has {len(inferred)} results, "
                                     f"the text names {len(names)}")
        op = Op(str(opname), operands, inferred, attrs, names)
        for r, rt in zip(op.results, rtypes, strict=True):
            r.sharding = self.sharding(rt.children[1], r.type)
        for d, r in zip(defs, op.results, strict=True):
            if r.name in scope:
                raise self.error(d.children[0], f"value %{r.name} is defined twice")
            scope[r.name] = r  # type: ignore[index]
        return op

    def sharding(self, node: Tree | None, t: TensorType) -> Sharding | None:
        """`sharding<replicated>`, `sharding<[2,1]>`, `sharding<[1,1,2] partial sum>`."""
        if node is None:
            return None
        body, word, reduction = node.children
        try:
            if isinstance(body, Token):
                if str(body) != "replicated" or word is not None:
                    raise ValueError(f"expected replicated, a tile list or a partial "
                                     f"sharding, got {body}")
                return Sharding.replicated()
            tiles = self.literal(body)
            if word is not None and str(word) != "partial":
                raise ValueError(f"expected 'partial' after the tiles, got {word}")
            result = Sharding(tiles, None if reduction is None else str(reduction))  # type: ignore[arg-type]
            rank = len(result.tiles) - (1 if result.is_partial else 0)
            if rank != t.rank:
                raise ValueError(f"{result} has {rank} dimensions, the type {t} has {t.rank}")
        except (TypeError, ValueError) as exc:
            raise self.error(node, str(exc)) from None
        return result.normalized()

    def literal(self, node: Tree | Token) -> object:
        if isinstance(node, Token):
            raise self.error(node, f"unexpected {node}")
        kind = node.data
        if kind == "int_":
            return int(str(node.children[0]))
        if kind == "float_":
            return float(str(node.children[0]))
        if kind == "true":
            return True
        if kind == "false":
            return False
        if kind == "string":
            return json.loads(str(node.children[0]))
        if kind == "name":
            return str(node.children[0])
        if kind == "symbol":
            return Symbol(self.symbol(node))
        if kind == "list":
            return tuple(self.literal(c) for c in node.children if c is not None)
        if kind in ("dense", "splat"):
            return self.dense(node)
        raise self.error(node, f"unexpected literal {kind}")

    def dense(self, node: Tree) -> Dense:
        t = self.type_(node.children[0])
        body = node.children[1]
        np_dtype = t.dtype.numpy
        if node.data == "splat":
            return Dense.splat(t, _scalar(self.literal(body), t.dtype))
        if isinstance(body, Token) and body.type == "ELIDED":
            raise self.error(body, "elided constant (printed with a size limit) cannot be parsed")
        if isinstance(body, Token):
            raw = bytes.fromhex(str(body)[2:])
            if len(raw) != t.nbytes:
                raise self.error(body, f"dense data has {len(raw)} bytes, {t} needs {t.nbytes}")
            arr = np.frombuffer(raw, dtype=np_dtype.newbyteorder("<")).astype(np_dtype)
            return Dense(t, arr.reshape(t.shape))
        items = self.literal(body)
        if not isinstance(items, tuple):
            raise self.error(body, f"dense needs a list of values, got {items!r}")
        values = [_scalar(v, t.dtype) for v in items]
        if len(values) != t.size:
            raise self.error(node.children[0],
                             f"dense has {len(values)} values, {t} needs {t.size}")
        return Dense(t, np.array(values, dtype=np_dtype).reshape(t.shape))


def _scalar(value: object, dtype: DType) -> bool | int | float:
    if dtype is DType.PRED:
        return bool(value)
    if dtype.is_float:
        return float(value)  # type: ignore[arg-type]
    return int(value)  # type: ignore[call-overload]
