"""Reading StableHLO attribute values in either printed form as the plain Python values
the HLO syntax tree holds (tuples of ints, words, windows, dimension labels)."""

from __future__ import annotations

import re

from nxcc.compiler.hlo import errors as E
from nxcc.compiler.hlo.errors import HloError
from nxcc.compiler.hlo.nodes import ArrayShape
from nxcc.compiler.stablehlo.dense import dense_array
from nxcc.compiler.stablehlo.syntax import Chain, DenseAttr, HashAttr, Op, Word
from nxcc.ir.sharding_notation.cursor import PieceError

_KV_LIST = re.compile(r"(\w+)\s*=\s*(?:\[([^\]]*)\]|(-?\d+))")


class AttrReader:
    """The attributes of one op, with errors at the op (`source` for positions)."""

    def __init__(self, op: Op, source) -> None:
        self.op = op
        self.source = source

    def error(self, message: str, name: str | None = None,
              code: str = E.SEMANTIC) -> HloError:
        at = self.op.attr_offsets.get(name, self.op.offset) if name else self.op.offset
        return HloError(message, self.source, at, code)

    def get(self, *names: str, default: object = None) -> object:
        for n in names:
            if n in self.op.attrs:
                return self.op.attrs[n]
        return default

    def need(self, *names: str) -> object:
        v = self.get(*names)
        if v is None:
            raise self.error(f"expected attribute '{names[0]}' on {self.op.name}, found none")
        return v

    def ints(self, *names: str, default: tuple[int, ...] | None = None) -> tuple[int, ...]:
        v = self.get(*names)
        if v is None:
            if default is None:
                raise self.error(f"expected attribute '{names[0]}' on {self.op.name}, "
                                 "found none")
            return default
        return self.as_ints(v, names[0])

    def as_ints(self, v: object, name: str) -> tuple[int, ...]:
        if isinstance(v, DenseAttr):
            return tuple(int(x) for x in self.dense(v, name).reshape(-1))
        if isinstance(v, list | tuple) and all(isinstance(x, int) for x in v):
            return tuple(int(x) for x in v)
        if isinstance(v, int):
            return (int(v),)
        raise self.error(f"expected a list of integers for '{name}', found {v!r}", name)

    def int_(self, *names: str, default: int | None = None) -> int:
        v = self.get(*names)
        if v is None and default is not None:
            return default
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.error(f"expected an integer for '{names[0]}' on {self.op.name}, "
                             f"found {v!r}", names[0])
        return v

    def bool_(self, name: str, default: bool = False) -> bool:
        v = self.get(name, default=default)
        return bool(v)

    def dense(self, v: DenseAttr, name: str):
        shape = v.type if isinstance(v.type, ArrayShape) else None
        if shape is None:
            raise self.error(f"expected a type after the dense value of '{name}'", name)
        try:
            return dense_array(v.body, shape)
        except PieceError as exc:
            raise HloError(exc.message, self.source, v.offset + exc.offset,
                           E.SYNTAX) from None

    def pairs(self, name: str, rank: int) -> tuple[tuple[int, int], ...]:
        """`[[lo, hi], ...]` or a dense Nx2 padding (zeros when absent)."""
        v = self.get(name)
        if v is None:
            return ((0, 0),) * rank
        if isinstance(v, DenseAttr):
            flat = self.dense(v, name).reshape(-1)
            return tuple((int(flat[2 * i]), int(flat[2 * i + 1])) for i in range(len(flat) // 2))
        if isinstance(v, list) and all(isinstance(p, list) and len(p) == 2 for p in v):
            return tuple((int(p[0]), int(p[1])) for p in v)
        raise self.error(f"expected padding like [[0, 1], [1, 0]] for '{name}', found {v!r}",
                         name)

    def keyword(self, name: str, word_index: int | None = None) -> str | None:
        """An enum value: a bare word of the pretty form (by position) or the generic
        form's `#stablehlo<kind VALUE>`."""
        if word_index is not None and len(self.op.words) > word_index:
            return self.op.words[word_index]
        v = self.get(name)
        if isinstance(v, HashAttr):
            return v.body.split()[-1] if v.body.split() else None
        if isinstance(v, Word):
            return v.text
        return v if isinstance(v, str) else None

    def chain(self, pretty: str, generic: str, lhs: str, rhs: str
              ) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """`name = [a] x [b]` or the generic `#stablehlo.dot<lhs_... = [a], rhs_... = [b]>`."""
        v = self.get(pretty)
        if isinstance(v, Chain) and len(v.parts) == 2:
            return self.as_ints(v.parts[0], pretty), self.as_ints(v.parts[1], pretty)
        g = self.get(generic)
        if isinstance(g, HashAttr):
            kv = hash_fields(g)
            return tuple(kv.get(lhs, ())), tuple(kv.get(rhs, ()))  # type: ignore[arg-type]
        if v is None:
            return (), ()
        raise self.error(f"expected '{pretty} = [..] x [..]', found {v!r}", pretty)


def hash_fields(attr: HashAttr) -> dict[str, object]:
    """`key = [1, 2], other = 3` inside `#stablehlo.gather<...>` and the like."""
    out: dict[str, object] = {}
    for m in _KV_LIST.finditer(attr.body):
        if m.group(3) is not None:
            out[m.group(1)] = int(m.group(3))
        else:
            out[m.group(1)] = tuple(int(x) for x in m.group(2).split(",") if x.strip())
    return out


def dimension_numbers(a: AttrReader, name: str, lists: tuple[str, ...]) -> dict[str, object]:
    """The fields of the `#stablehlo.gather<...>`-style attribute `name`: each of `lists` as
    a tuple (empty when absent) and `index_vector_dim` (0 when absent)."""
    dn = a.need(name)
    fields = hash_fields(dn) if isinstance(dn, HashAttr) else {}
    out: dict[str, object] = {k: tuple(fields.get(k, ())) for k in lists}  # type: ignore[arg-type]
    out["index_vector_dim"] = fields.get("index_vector_dim", 0)
    return out


def labels(part: object) -> str:
    """`[b, 0, 1, f]` (words and ints) -> "b01f"."""
    items = part if isinstance(part, list | tuple) else ()
    return "".join(x.text if isinstance(x, Word) else str(x) for x in items)
