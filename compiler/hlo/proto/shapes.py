"""ShapeProto -> the syntax tree's `ArrayShape` / `TupleShape`, and shapes back to text.

A shape is what HLO text would write: the element type's name, the dimensions, the layout
(minor-to-major, None for a scalar or when the proto has none) and, after ':' in text, the
tiles, element size and memory space (`layout_extra`, e.g. ``T(8,128)(2,1)``).
"""

from __future__ import annotations

from nxcc.compiler.hlo import errors as E
from nxcc.compiler.hlo.nodes import ArrayShape, Shape, TupleShape
from nxcc.compiler.hlo.proto.enums import PRIMITIVE_TYPES, TUPLE
from nxcc.compiler.hlo.proto.schema import HloMessage

#: Tuples nest at most this deep (the protobuf runtime stops at 100 levels anyway).
MAX_DEPTH = 64


class ShapeError(ValueError):
    """A shape the syntax tree cannot hold; `code` the NCC code to report."""

    def __init__(self, message: str, code: str = E.SYNTAX) -> None:
        super().__init__(message)
        self.code = code


def to_shape(p: HloMessage, depth: int = 0) -> Shape:
    """The tree's shape of ShapeProto `p`; ShapeError when it has none."""
    if depth > MAX_DEPTH:
        raise ShapeError(f"expected a shape, found tuples nested more than {MAX_DEPTH} "
                         "deep")
    if p.element_type == TUPLE:
        return TupleShape(tuple(to_shape(e, depth + 1) for e in p.tuple_shapes))
    dtype = PRIMITIVE_TYPES.get(p.element_type)
    if dtype is None:
        raise ShapeError(f"expected an element type, found PrimitiveType {p.element_type}, "
                         "which the schema does not know")
    dims = tuple(int(d) for d in p.dimensions)
    if any(p.is_dynamic_dimension) or any(d < 0 for d in dims):
        raise ShapeError(f"expected a static shape, found the dynamic shape {dtype}"
                         f"[{','.join(map(str, dims))}] (dynamic shapes are not supported)",
                         E.DYNAMIC)
    layout = None
    extra = ""
    if p.HasField("layout") and dims:
        minor = tuple(int(d) for d in p.layout.minor_to_major)
        if minor:
            if sorted(minor) != list(range(len(dims))):
                raise ShapeError(f"expected a layout that permutes the {len(dims)} dimensions, "
                                 f"found "
                                 f"{{{','.join(map(str, minor))}}}", E.SEMANTIC)
            layout = minor
        extra = _layout_extra(p.layout)
    return ArrayShape(dtype, dims, layout, extra)


def _layout_extra(layout: HloMessage) -> str:
    text = ""
    if layout.tiles:
        text = "T" + "".join("(" + ",".join(map(str, t.dimensions)) + ")"
                             for t in layout.tiles)
    if layout.element_size_in_bits:
        text += f"E({layout.element_size_in_bits})"
    if layout.memory_space:
        text += f"S({layout.memory_space})"
    return text


def shape_text(shape: Shape) -> str:
    """`f32[2,3]{1,0}` / `(f32[], s32[4]{0})`: the shape with its layout."""
    if isinstance(shape, TupleShape):
        return "(" + ", ".join(shape_text(e) for e in shape.elements) + ")"
    text = str(shape)
    if shape.layout is not None:
        extra = f":{shape.layout_extra}" if shape.layout_extra else ""
        text += "{" + ",".join(map(str, shape.layout)) + extra + "}"
    return text
