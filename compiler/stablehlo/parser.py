"""The MLIR text parser for the forms JAX prints: ``module @jit_f attributes {...} {
func.func ... }``, ops in the pretty form (``stablehlo.add %a, %b : tensor<4xf32>``) and the
generic form (``"stablehlo.sort"(%a) <{...}> ({ ^bb0(...): ... }) : (...) -> ...``),
regions, ``sdy.mesh`` declarations, ``#loc`` aliases and ``loc(...)`` (ignored).

`parse_mlir(text, source)` returns the `MlirModule`; anything malformed is an `HloError`
at the token where it went wrong.
"""

from __future__ import annotations

from nxcc.compiler.hlo import errors as E
from nxcc.compiler.hlo.errors import HloError, Source
from nxcc.compiler.hlo.nodes import Shape
from nxcc.compiler.stablehlo.lexer import TokenList
from nxcc.compiler.stablehlo.reader import Reader
from nxcc.compiler.stablehlo.syntax import (
    Block,
    DenseAttr,
    Func,
    FunctionType,
    HashAttr,
    MlirModule,
    Op,
)
from nxcc.ir.sharding_notation.cursor import unquote

MAX_RESULTS = 1 << 16
"""The most results one op may declare (`%0:N`): a mutated N must not build a huge list."""
_RETURNS = frozenset({"return", "func.return", "stablehlo.return", "mhlo.return"})
_TRAILING_REGIONS = frozenset({"reducer", "cond", "do"})
#: Ops whose pretty form is `%r = OP %a, ... : T` or `: (T, ...) -> T` (see `fast_op`).
FAST_OPS = frozenset(f"stablehlo.{n}" for n in (
    "abs", "negate", "sign", "exponential", "exponential_minus_one", "log", "log_plus_one",
    "sqrt", "rsqrt", "cbrt", "tanh", "logistic", "sine", "cosine", "tan", "floor", "ceil",
    "round_nearest_even", "round_nearest_afz", "not", "popcnt", "count_leading_zeros",
    "is_finite", "convert", "bitcast_convert", "add", "subtract", "multiply", "divide",
    "remainder", "power", "maximum", "minimum", "atan2", "and", "or", "xor", "shift_left",
    "shift_right_arithmetic", "shift_right_logical", "reshape", "clamp"))


def parse_mlir(text: str, source: str = "<mlir>") -> MlirModule:
    """The syntax tree of the MLIR module `text` (HloError if it is malformed)."""
    return Parser(TokenList(Source(text, source))).module()


class Parser(Reader):
    """Recursive descent over the tokens: module, functions, blocks, ops."""

    def module(self) -> MlirModule:
        while self.kind() == "HASH" and self.text(1) == "=":  # #loc aliases before it
            self.skip_alias()
        start = self.offset()
        if self.kind() == "STRING" and self.text() == '"builtin.module"':
            return self.generic_module(start)
        name, attrs = "module", {}
        wrapped = self.eat("module")
        if wrapped:
            if self.kind() == "SYM":
                name = self.value().name  # type: ignore[attr-defined]
            if self.eat("attributes"):
                attrs = self.dict_()
            self.expect("{", "'{' to start the module body")
        mod = MlirModule(name, attrs, [], {}, start)
        while not (self.at("}") if wrapped else self.kind() == "EOF"):
            self.module_item(mod)
        if wrapped:
            self.expect("}")
        while self.kind() == "HASH" and self.text(1) == "=":
            self.skip_alias()
        if self.kind() != "EOF":
            raise self.error("the end of the text after the module")
        if not mod.funcs:
            raise HloError("expected at least one func.func in the module, found none",
                           self.source, start, E.SYNTAX)
        return mod

    def generic_module(self, start: int) -> MlirModule:
        """`"builtin.module"() <{sym_name = ...}> ({ "func.func"() ... }) {attrs} : ...`."""
        op = self.op()
        while self.kind() == "HASH" and self.text(1) == "=":
            self.skip_alias()
        if self.kind() != "EOF":
            raise self.error("the end of the text after the module")
        name = op.attrs.pop("sym_name", "module")
        mod = MlirModule(str(name), op.attrs, [], {}, start)
        for item in op.regions[0][0].ops if op.regions else []:
            if item.name == "func.func":
                mod.funcs.append(func_of_generic(item, self))
        if not mod.funcs:
            raise HloError("expected at least one func.func in the module, found none",
                           self.source, start, E.SYNTAX)
        return mod

    def skip_alias(self) -> None:
        self.i += 2
        if self.kind() in ("HASH", "TYPE", "STRING", "NUM") and self.text(1) != "=":
            self.i += 1

    def module_item(self, mod: MlirModule) -> None:
        t = self.text()
        if t == "func.func":
            mod.funcs.append(self.func())
        elif self.kind() == "STRING" and t == '"func.func"':
            mod.funcs.append(func_of_generic(self.op(), self))
        elif t in ("sdy.mesh", "mhlo.mesh"):
            self.mesh(mod)
        elif self.kind() == "HASH" and self.text(1) == "=":
            self.skip_alias()
        else:
            raise self.error("func.func or sdy.mesh in the module body")

    def mesh(self, mod: MlirModule) -> None:
        """`sdy.mesh @mesh = <["dp"=2, "tp"=4]> {...}`: the axes in order."""
        self.i += 1
        name = self.take("SYM", "the mesh name")[1:]
        self.expect("=")
        start = self.i
        if not self.at("<"):
            raise self.error("'<' to start the mesh")
        self.skip_balanced()
        axes = []
        for j in range(start, self.i - 2):
            if self.kinds[j] == "STRING" and self.texts[j + 1] == "=" and \
                    self.kinds[j + 2] == "NUM":
                axes.append((unquote(self.texts[j]), int(self.texts[j + 2])))
        mod.meshes[name] = tuple(axes)
        if self.at("{"):
            self.skip_balanced()

    # -- functions ---------------------------------------------------------------------
    def func(self) -> Func:
        start = self.offset()
        self.i += 1
        visibility = "public"
        if self.text() in ("public", "private", "nested"):
            visibility = self.text()
            self.i += 1
        sym = self.take("SYM", "the function name like @main")
        name = unquote(sym[1:]) if sym[1] == '"' else sym[1:]
        self.expect("(", "'(' to start the arguments")
        args: list[tuple[str, Shape, dict[str, object]]] = []
        if not self.eat(")"):
            while True:
                arg = self.take("VALUE", "an argument like %arg0")
                self.expect(":", "':' and the argument's type")
                ty = self.type_()
                attrs = self.dict_() if self.at("{") else {}
                args.append((arg, ty, attrs))
                if self.eat(")"):
                    break
                self.expect(",", "',' or ')' between arguments")
        results: list[tuple[Shape, dict[str, object]]] = []
        if self.eat("->"):
            if self.eat("("):
                if not self.eat(")"):
                    while True:
                        ty = self.type_()
                        results.append((ty, self.dict_() if self.at("{") else {}))
                        if self.eat(")"):
                            break
                        self.expect(",", "',' or ')' between result types")
            else:
                results.append((self.type_(), {}))
        if self.eat("attributes"):
            self.dict_()
        body = self.region()[0] if self.at("{") else None
        return Func(name, visibility, args, results, body, start)

    # -- regions and blocks ------------------------------------------------------------
    def region(self, args: list[tuple[str, Shape]] | None = None) -> list[Block]:
        """`{ [^bb0(%a: t, ...):] ops }`: one block (several are not supported)."""
        start = self.expect("{", "'{' to start a region")
        block_args = list(args or [])
        if self.kind() == "BLOCK":
            self.i += 1
            if self.eat("("):
                if not self.eat(")"):
                    while True:
                        name = self.take("VALUE", "a block argument")
                        self.expect(":", "':' and the block argument's type")
                        block_args.append((name, self.type_()))
                        if self.eat(")"):
                            break
                        self.expect(",", "',' or ')' between block arguments")
            self.expect(":", "':' after the block label")
        ops: list[Op] = []
        while not self.eat("}"):
            if self.kind() == "BLOCK":
                raise self.error("one block per region (branches between blocks are not "
                                 "supported)", E.UNSUPPORTED_FEATURE)
            if self.kind() == "EOF":
                raise self.error("'}' to close the region")
            ops.append(self.op())
        return [Block(block_args, ops, start)]

    # -- ops ---------------------------------------------------------------------------
    def op(self) -> Op:
        try:
            fast = self.fast_op()
        except IndexError:  # a truncated text: the general path says what is missing
            fast = None
        if fast is not None:
            return fast
        results: list[str] = []
        if self.kind() == "VALUE":
            while True:
                name = self.take("VALUE", "a result name")
                if self.eat(":"):
                    n = int(self.take("NUM", "the number of results"))
                    if not 0 < n <= MAX_RESULTS:
                        self.i -= 1
                        raise self.error(f"a number of results from 1 to {MAX_RESULTS}")
                    results.extend(f"{name}#{k}" for k in range(n))
                else:
                    results.append(name)
                if self.eat("="):
                    break
                self.expect(",", "',' or '=' after the result names")
        k = self.kind()
        if k == "STRING":
            op = Op(unquote(self.text()), self.offset(), results, generic=True)
            self.i += 1
            self.generic(op)
        elif k == "IDENT":
            op = Op(self.text(), self.offset(), results)
            self.i += 1
            self.pretty(op)
        else:
            raise self.error("an operation name like stablehlo.add")
        return op

    def fast_op(self) -> Op | None:
        """The most common line, `%r = stablehlo.op %a, %b : T` or `: (T, T) -> T`, read
        without the general machinery; None when the op is anything else."""
        i, kinds, texts, starts = self.i, self.kinds, self.texts, self.starts
        if kinds[i] != "VALUE" or texts[i + 1] != "=" or texts[i + 2] not in FAST_OPS or \
                kinds[i + 3] != "VALUE":
            return None
        operands, offsets = [texts[i + 3]], [starts[i + 3]]
        j = i + 4
        while texts[j] == "," and kinds[j + 1] == "VALUE":
            operands.append(texts[j + 1])
            offsets.append(starts[j + 1])
            j += 2
        if texts[j] != ":":
            return None
        j += 1
        in_types: list[Shape] | None = None
        n = len(operands)
        if kinds[j] == "TYPE" and texts[j + 1] not in (",", "->"):
            j += 1
        elif texts[j] == "(" and texts[j + 2 * n + 1] == "->" and \
                kinds[j + 2 * n + 2] == "TYPE" and texts[j + 2 * n + 3] not in (",", "->") and \
                all(kinds[j + 1 + 2 * k] == "TYPE" and texts[j + 2 + 2 * k] ==
                    ("," if k + 1 < n else ")") for k in range(n)):
            in_types = [self.fast_type(j + 1 + 2 * k) for k in range(n)]
            j += 2 * n + 3
        else:
            return None
        shape = self.fast_type(j - 1)
        self.i = j
        return Op(texts[i + 2], starts[i + 2], [texts[i]], operands, offsets,
                  in_types=in_types, out_types=[shape])

    def fast_type(self, j: int) -> Shape:
        saved, self.i = self.i, j
        try:
            return self.type_()
        finally:
            self.i = saved

    def operand_list(self, op: Op, close: str = ")") -> None:
        if self.eat(close):
            return
        while True:
            op.operand_offsets.append(self.offset())
            op.operands.append(self.take("VALUE", "an operand like %0"))
            if self.eat(close):
                return
            self.expect(",", f"',' or '{close}' between operands")

    def attr_dict(self, op: Op, close: str = "}") -> None:
        op.attrs.update(self.dict_(close, op.attr_offsets))

    def generic(self, op: Op) -> None:
        """`"name"(operands) <{properties}> ({regions}) {attributes} : (types) -> types`."""
        self.expect("(", "'(' and the operands")
        self.operand_list(op)
        if self.at("<") and self.text(1) == "{":
            self.i += 1
            self.attr_dict(op)
            self.expect(">", "'>' after the properties")
        if self.at("(") and self.text(1) == "{":
            self.i += 1
            self.region_list(op)
        if self.at("{"):
            self.attr_dict(op)
        self.expect(":", "':' and the op's type")
        op.in_types = self.type_list()
        self.expect("->", "'->' and the result types")
        op.out_types = self.type_list()

    def region_list(self, op: Op) -> None:
        """After '(': `{...}, {...})`."""
        while True:
            op.regions.append(self.region())
            if self.eat(")"):
                return
            self.expect(",", "',' or ')' between regions")

    def pretty(self, op: Op) -> None:
        """The custom forms: operands, keywords, `key = value` items, `(...)` groups, a
        `@callee`, bracketed indices, a dense value; then `:` and the types; then trailing
        regions (`reducer(...) {...}`, `cond {...} do {...}`)."""
        if op.name in _RETURNS and (self.at("}") or self.kind() == "EOF"):
            return
        while not self.at(":"):
            self.pretty_item(op)
        self.i += 1
        self.signature(op)
        while self.kind() == "IDENT" and self.text() in _TRAILING_REGIONS:
            self.trailing_region(op)

    def pretty_item(self, op: Op) -> None:
        k, t = self.kinds[self.i], self.texts[self.i]
        if (k == "VALUE" and (self.text(1) == "=" or (self.text(1) == ":" and
                                                        self.kind(2) == "NUM"))) or \
                t in _RETURNS or (
                k == "IDENT" and "." in t and op.words[-1:] != ["applies"]):
            raise self.error(f"':' and the type of {op.name}")  # the next op started
        if k == "VALUE":
            op.operand_offsets.append(self.offset())
            op.operands.append(t)
            self.i += 1
            if self.at("["):
                self.i += 1
                op.index = self.list_rest()  # type: ignore[assignment]
        elif k == "IDENT" and self.text(1) == "=":
            self.i += 2
            op.attr_offsets[t] = self.offset()
            op.attrs[t] = self.value()
        elif k == "IDENT":
            op.words.append(t)
            self.i += 1
        elif k == "SYM":
            op.callee = unquote(t[1:]) if t[1] == '"' else t[1:]
            self.i += 1
        elif k == "DENSE":
            op.dense = self.value()  # type: ignore[assignment]
        elif k == "STRING":
            op.words.append(unquote(t))
            self.i += 1
        elif t == "(":
            self.i += 1
            if self.at("{"):
                self.region_list(op)
            else:
                self.paren_group(op)
        elif t == "{":
            self.attr_dict(op)
        elif t == "<" and self.text(1) == "{":
            self.i += 1
            self.attr_dict(op)
            self.expect(">", "'>' after the properties")
        elif t == "<" and self.kind(1) == "SYM":
            self.sharding_body(op)
        elif t == ",":
            self.i += 1
        else:
            raise self.error(f"an operand, attribute or ':' and the type of {op.name}")

    def sharding_body(self, op: Op) -> None:
        """`<@mesh, [{...}, ...]>` (Shardy's sharding_constraint): kept as the attribute
        ``sdy.sharding`` with that body."""
        start, depth, j = self.starts[self.i] + 1, 0, self.i
        while True:
            t = self.texts[j]
            if self.kinds[j] == "EOF":
                raise self.error("'>' to close the sharding")
            depth += (t == "<") - (t == ">")
            if depth == 0:
                break
            j += 1
        op.attr_offsets["sdy.sharding"] = start
        op.attrs["sdy.sharding"] = HashAttr("sdy.sharding", self.source.text[start:self.starts[j]],
                                            start)
        self.i = j + 1

    def paren_group(self, op: Op) -> None:
        """After '(': `%a init: %b`, `%iterArg = %a`, `%a`, `key = value`, until ')'."""
        if self.eat(")"):
            return
        while True:
            k, t = self.kinds[self.i], self.texts[self.i]
            if k == "VALUE" and self.text(1) == "=":
                op.bindings.append(t)
                self.i += 2
                op.operand_offsets.append(self.offset())
                op.operands.append(self.take("VALUE", "the initial value"))
            elif k == "VALUE":
                op.operand_offsets.append(self.offset())
                op.operands.append(t)
                self.i += 1
                if self.eat("init"):
                    self.expect(":", "':' after 'init'")
                    op.inits.append(self.take("VALUE", "the initial value"))
            elif k == "IDENT" and self.text(1) == "=":
                self.i += 2
                op.attr_offsets[t] = self.offset()
                op.attrs[t] = self.value()
            else:
                raise self.error(f"an operand in the operand list of {op.name}")
            if self.eat(")"):
                return
            self.expect(",", "',' or ')' in the operand list")

    def signature(self, op: Op) -> None:
        """`t`, `t, t, ...`, `(t, ...) -> t`, `(t, ...) -> (t, ...)`, `t -> t` or
        `t, t -> t` (CHLO's binary ops)."""
        first = self.type_list() if self.at("(") else [self.type_()]
        if self.eat("->"):
            op.in_types = first
            op.out_types = self.type_list()
            return
        while self.at(",") and (self.kind(1) == "TYPE" or self.text(1) == "tuple"):
            self.i += 1
            first.append(self.type_())
        if self.eat("->"):
            op.in_types = first
            op.out_types = self.type_list()
            return
        op.out_types = first

    def trailing_region(self, op: Op) -> None:
        word = self.text()
        self.i += 1
        if word == "reducer":
            groups: list[list[tuple[str, Shape]]] = []
            while self.eat("("):
                group = []
                while True:
                    name = self.take("VALUE", "a reducer argument")
                    self.expect(":", "':' and its type")
                    group.append((name, self.type_()))
                    if self.eat(")"):
                        break
                    self.expect(",", "',' or ')'")
                groups.append(group)
            args = [g[0] for g in groups] + [g[1] for g in groups if len(g) > 1]
            op.regions.append(self.region(args))
        else:
            types = op.out_types
            op.regions.append(self.region(list(zip(op.bindings, types, strict=False))))


def func_of_generic(op: Op, p: Parser) -> Func:
    """A generic `"func.func"() <{sym_name, function_type, arg_attrs, res_attrs,
    sym_visibility}> ({^bb0(args): ...})` as a `Func`."""
    fn_type = op.attrs.get("function_type")
    if not isinstance(fn_type, FunctionType):
        raise HloError("expected function_type = (...) -> (...) on func.func", p.source,
                       op.offset, E.SYNTAX)
    block = op.regions[0][0] if op.regions else None
    arg_attrs = op.attrs.get("arg_attrs") or [{}] * len(fn_type.inputs)
    res_attrs = op.attrs.get("res_attrs") or [{}] * len(fn_type.results)
    names = [a for a, _ in block.args] if block is not None else [
        f"%arg{k}" for k in range(len(fn_type.inputs))]
    args = [(n, t, a if isinstance(a, dict) else {}) for n, t, a in
            zip(names, fn_type.inputs, arg_attrs, strict=False)]  # type: ignore[call-overload]
    results = [(t, a if isinstance(a, dict) else {}) for t, a in
               zip(fn_type.results, res_attrs, strict=False)]  # type: ignore[call-overload]
    visibility = op.attrs.get("sym_visibility", "public")
    return Func(str(op.attrs.get("sym_name", "")), str(visibility), args, results, block,
                op.offset)


def dense_of(op: Op) -> DenseAttr | None:
    """A constant's value: the pretty form's dense<...>, or the generic form's `value`."""
    if op.dense is not None:
        return op.dense
    v = op.attrs.get("value")
    return v if isinstance(v, DenseAttr) else None
