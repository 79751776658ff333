"""StableHLO / CHLO / func ops -> HLO instructions, one converter per op family.

Each converter reads the op's operands, attributes and types in either printed form and
appends the HLO instruction the HLO text of the same program would hold (same opcode, same
typed attribute values), so `compiler.hlo.lower` gives the same IR. Control flow and
regions are in control.py.
"""

from __future__ import annotations

from nxcc.compiler.hlo import errors as E
from nxcc.compiler.hlo.attr_windows import parse_dim_labels
from nxcc.compiler.hlo.attributes import Window
from nxcc.compiler.hlo.errors import HloError
from nxcc.compiler.hlo.nodes import ArrayShape, Attribute
from nxcc.compiler.stablehlo.attrs import AttrReader, dimension_numbers, labels
from nxcc.compiler.stablehlo.builder import CompBuilder
from nxcc.compiler.stablehlo.dense import dense_array
from nxcc.compiler.stablehlo.registry import converts
from nxcc.compiler.stablehlo.sdy import sdy_to_hlo_sharding
from nxcc.compiler.stablehlo.syntax import Chain, DenseAttr, HashAttr, Op, Sym
from nxcc.ir.sharding_notation.cursor import PieceError
from nxcc.ir.sharding_notation.hlo_sharding import parse_sharding

UNARY = ("abs", "negate", "sign", "exponential", "exponential_minus_one", "log",
         "log_plus_one", "sqrt", "rsqrt", "cbrt", "tanh", "logistic", "sine", "cosine", "tan",
         "floor", "ceil", "round_nearest_even", "round_nearest_afz", "not", "popcnt",
         "count_leading_zeros", "is_finite", "convert", "bitcast_convert")
BINARY = ("add", "subtract", "multiply", "divide", "remainder", "power", "maximum", "minimum",
          "atan2", "and", "or", "xor", "shift_left", "shift_right_arithmetic",
          "shift_right_logical")
#: CHLO ops with an HLO opcode of their own.
CHLO = {"chlo.erf": "erf", "chlo.tan": "tan"}


def _opcode(name: str) -> str:
    return name.split(".", 1)[1].replace("_", "-")


@converts(*(f"stablehlo.{n}" for n in UNARY + BINARY), *CHLO)
def elementwise(b: CompBuilder, op: Op, a: AttrReader) -> None:
    b.emit(op, CHLO.get(op.name) or _opcode(op.name), op.operands, {})


@converts("stablehlo.select", "stablehlo.clamp")
def select_clamp(b: CompBuilder, op: Op, a: AttrReader) -> None:
    b.emit(op, _opcode(op.name), op.operands, {}, shape=op.out_types[-1])


@converts("stablehlo.compare")
def compare(b: CompBuilder, op: Op, a: AttrReader) -> None:
    attrs: dict[str, object] = {"direction": a.keyword("comparison_direction", 0)}
    kind = a.keyword("compare_type", 1)
    if kind is not None:
        attrs["type"] = kind
    if attrs["direction"] not in ("EQ", "NE", "LT", "LE", "GT", "GE"):
        raise a.error(f"expected a comparison direction (EQ, NE, LT, LE, GT, GE), found "
                      f"{attrs['direction']!r}")
    b.emit(op, "compare", op.operands, attrs)


@converts("stablehlo.constant")
def constant(b: CompBuilder, op: Op, a: AttrReader) -> None:
    value = op.dense if op.dense is not None else a.get("value")
    shape = op.out_types[0]
    if not isinstance(value, DenseAttr) or not isinstance(shape, ArrayShape):
        raise a.error("expected a constant like dense<1.0> : tensor<f32>", code=E.SYNTAX)
    try:
        literal = dense_array(value.body, shape)
    except PieceError as exc:
        code = E.UNSUPPORTED_DTYPE if "supported" in exc.message else E.SYNTAX
        raise HloError(exc.message, b.conv.source, value.offset + exc.offset, code) from None
    b.emit(op, "constant", [], {}, literal=literal)


@converts("stablehlo.broadcast_in_dim")
def broadcast_in_dim(b: CompBuilder, op: Op, a: AttrReader) -> None:
    b.emit(op, "broadcast", op.operands,
           {"dimensions": a.ints("dims", "broadcast_dimensions", default=())})


@converts("stablehlo.reshape")
def reshape(b: CompBuilder, op: Op, a: AttrReader) -> None:
    b.emit(op, "reshape", op.operands, {})


@converts("stablehlo.transpose")
def transpose(b: CompBuilder, op: Op, a: AttrReader) -> None:
    b.emit(op, "transpose", op.operands, {"dimensions": a.ints("dims", "permutation")})


@converts("stablehlo.reverse")
def reverse(b: CompBuilder, op: Op, a: AttrReader) -> None:
    b.emit(op, "reverse", op.operands, {"dimensions": a.ints("dims", "dimensions")})


@converts("stablehlo.iota")
def iota(b: CompBuilder, op: Op, a: AttrReader) -> None:
    b.emit(op, "iota", [], {"iota_dimension": a.int_("dim", "iota_dimension")})


@converts("stablehlo.concatenate")
def concatenate(b: CompBuilder, op: Op, a: AttrReader) -> None:
    b.emit(op, "concatenate", op.operands, {"dimensions": (a.int_("dim", "dimension"),)})


@converts("stablehlo.slice")
def slice_(b: CompBuilder, op: Op, a: AttrReader) -> None:
    if op.index is not None:
        ranges = []
        for r in op.index:
            if not isinstance(r, tuple) or len(r) not in (2, 3):
                raise a.error(f"expected slice ranges like [0:2, 1:5:2], found {op.index!r}")
            ranges.append((r[0], r[1], r[2] if len(r) == 3 else 1))
    else:
        starts = a.ints("start_indices")
        limits = a.ints("limit_indices")
        strides = a.ints("strides", default=(1,) * len(starts))
        ranges = list(zip(starts, limits, strides, strict=True))
    b.emit(op, "slice", op.operands, {"slice": tuple(ranges)})


@converts("stablehlo.dynamic_slice")
def dynamic_slice(b: CompBuilder, op: Op, a: AttrReader) -> None:
    b.emit(op, "dynamic-slice", op.operands,
           {"dynamic_slice_sizes": a.ints("sizes", "slice_sizes")})


@converts("stablehlo.dynamic_update_slice")
def dynamic_update_slice(b: CompBuilder, op: Op, a: AttrReader) -> None:
    b.emit(op, "dynamic-update-slice", op.operands, {})


@converts("stablehlo.pad")
def pad(b: CompBuilder, op: Op, a: AttrReader) -> None:
    low = a.ints("low", "edge_padding_low")
    high = a.ints("high", "edge_padding_high")
    interior = a.ints("interior", "interior_padding", default=(0,) * len(low))
    b.emit(op, "pad", op.operands,
           {"padding": tuple(zip(low, high, interior, strict=True))})


@converts("stablehlo.dot_general")
def dot_general(b: CompBuilder, op: Op, a: AttrReader) -> None:
    lb, rb = a.chain("batching_dims", "dot_dimension_numbers", "lhs_batching_dimensions",
                     "rhs_batching_dimensions")
    lc, rc = a.chain("contracting_dims", "dot_dimension_numbers",
                     "lhs_contracting_dimensions", "rhs_contracting_dimensions")
    b.emit(op, "dot", op.operands, {"lhs_batch_dims": lb, "rhs_batch_dims": rb,
                                    "lhs_contracting_dims": lc, "rhs_contracting_dims": rc})


@converts("stablehlo.dot")
def dot(b: CompBuilder, op: Op, a: AttrReader) -> None:
    lhs = b.operand_array(op, 0)
    b.emit(op, "dot", op.operands, {"lhs_contracting_dims": (len(lhs.dims) - 1,),
                                    "rhs_contracting_dims": (0,)})


@converts("stablehlo.convolution")
def convolution(b: CompBuilder, op: Op, a: AttrReader) -> None:
    dn = a.need("dim_numbers", "dimension_numbers")
    if isinstance(dn, HashAttr):  # generic: #stablehlo.conv<[b, 0, f]x[0, i, o]->[b, 0, f]>
        text = dn.body.replace(" ", "").replace("[", "").replace("]", "").replace(",", "")
        lhs, _, rest = text.partition("x")
        rhs, _, out = rest.partition("->")
    elif isinstance(dn, Chain) and len(dn.parts) == 2 and dn.arrow is not None:
        lhs, rhs, out = labels(dn.parts[0]), labels(dn.parts[1]), labels(dn.arrow)
    else:
        raise a.error(f"expected dim_numbers like [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], "
                      f"found {dn!r}", "dim_numbers")
    try:
        dims = parse_dim_labels(f"{lhs}_{rhs}->{out}")
    except PieceError as exc:
        raise a.error(exc.message, "dim_numbers") from None
    n = len(dims.input_spatial)
    win = a.get("window")
    win = win if isinstance(win, dict) else {}
    kernel = b.operand_array(op, 1)
    rank = len(dims.kernel_spatial) + 2  # and its input and output feature dimensions
    if len(kernel.dims) != rank:
        raise a.error(f"the kernel's type {kernel} does not have the {rank} dimensions "
                      "dim_numbers names", "dim_numbers")

    def field(pretty: str, generic: str, default: int) -> tuple[int, ...]:
        v = win.get(pretty, op.attrs.get(generic))
        if v is None:
            return (default,) * n
        return tuple(int(x) for x in a.as_ints(v, generic))

    pads = a.pairs("padding", n) if "pad" not in win else tuple(
        (int(p[0]), int(p[1])) for p in win["pad"])
    window = Window(size=tuple(kernel.dims[d] for d in dims.kernel_spatial),
                    stride=field("stride", "window_strides", 1), pad=pads,
                    lhs_dilate=field("lhs_dilate", "lhs_dilation", 1),
                    rhs_dilate=field("rhs_dilate", "rhs_dilation", 1),
                    rhs_reversal=field("reverse", "window_reversal", 0))
    b.emit(op, "convolution", op.operands, {
        "dim_labels": dims, "window": window,
        "feature_group_count": a.int_("feature_group_count", default=1),
        "batch_group_count": a.int_("batch_group_count", default=1)})


@converts("stablehlo.gather")
def gather(b: CompBuilder, op: Op, a: AttrReader) -> None:
    attrs = dimension_numbers(a, "dimension_numbers", (
        "offset_dims", "collapsed_slice_dims", "operand_batching_dims",
        "start_indices_batching_dims", "start_index_map"))
    attrs["slice_sizes"] = a.ints("slice_sizes")
    attrs["indices_are_sorted"] = a.bool_("indices_are_sorted")
    b.emit(op, "gather", op.operands, attrs)


@converts("stablehlo.get_dimension_size")
def get_dimension_size(b: CompBuilder, op: Op, a: AttrReader) -> None:
    b.emit(op, "get-dimension-size", op.operands, {"dimensions": (a.int_("dimension"),)})


@converts("stablehlo.reduce_precision")
def reduce_precision(b: CompBuilder, op: Op, a: AttrReader) -> None:
    fmt = a.get("format")
    if fmt is not None:  # pretty: format = e8m7
        text = getattr(fmt, "text", str(fmt))
        e, _, m = text[1:].partition("m")
        bits: dict[str, object] = {"exponent_bits": int(e), "mantissa_bits": int(m)}
    else:
        bits = {"exponent_bits": a.int_("exponent_bits"),
                "mantissa_bits": a.int_("mantissa_bits")}
    b.emit(op, "reduce-precision", op.operands, bits)


_RNG = {"THREE_FRY": "rng_three_fry", "PHILOX": "rng_philox", "DEFAULT": "rng_default"}


@converts("stablehlo.rng_bit_generator")
def rng_bit_generator(b: CompBuilder, op: Op, a: AttrReader) -> None:
    alg = a.keyword("rng_algorithm") if "rng_algorithm" in op.attrs else a.keyword("algorithm")
    if alg not in _RNG:
        raise a.error(f"expected an rng algorithm (THREE_FRY, PHILOX, DEFAULT), found "
                      f"{alg!r}")
    b.emit(op, "rng-bit-generator", op.operands, {"algorithm": _RNG[alg]})


@converts("stablehlo.optimization_barrier")
def optimization_barrier(b: CompBuilder, op: Op, a: AttrReader) -> None:
    """An identity here: each result is its operand."""
    for res, (o, at) in zip(op.results, b.operand_pairs(op, op.operands), strict=True):
        b.bind(res, b.ref(o, at))


@converts("chlo.top_k")
def chlo_top_k(b: CompBuilder, op: Op, a: AttrReader) -> None:
    b.emit(op, "topk", op.operands, {"k": a.int_("k"), "largest": True})


@converts("stablehlo.custom_call")
def custom_call(b: CompBuilder, op: Op, a: AttrReader) -> None:
    target = op.callee or a.get("call_target_name")
    if isinstance(target, Sym):
        target = target.name
    if target in ("mhlo.topk", "TopK"):
        fields = a.get("mhlo.attributes")
        fields = fields if isinstance(fields, dict) else {}
        out = op.out_types[0] if op.out_types else None
        if "k" not in fields and not (isinstance(out, ArrayShape) and out.dims):
            raise a.error("expected mhlo.attributes = {k = ...} or a result tensor whose last "
                          "dimension is k")
        k = fields["k"] if "k" in fields else out.dims[-1]  # type: ignore[union-attr]
        b.emit(op, "topk", op.operands, {"k": k, "largest": fields.get("largest", True)})
        return
    b.emit(op, "custom-call", op.operands, {"custom_call_target": target})
    text = a.get("mhlo.sharding")
    if target == "Sharding" and isinstance(text, str):
        _set_sharding(b, text, op.offset)


def _set_sharding(b: CompBuilder, text: str, at: int) -> None:
    """The instruction just emitted carries HLO sharding `text`."""
    try:
        sharding = parse_sharding(text)
    except PieceError as exc:
        raise HloError(f"expected an HLO sharding, found {text!r}: {exc.message}",
                       b.conv.source, at, E.SEMANTIC) from None
    b.instrs[-1].attrs["sharding"] = Attribute("sharding", sharding, text, at)


@converts("sdy.sharding_constraint")
def sharding_constraint(b: CompBuilder, op: Op, a: AttrReader) -> None:
    """Shardy's constraint, as HLO's Sharding custom-call (an identity that places its
    operand; through the module's mesh)."""
    b.emit(op, "custom-call", op.operands, {"custom_call_target": "Sharding"})
    attr = op.attrs.get("sdy.sharding", op.attrs.get("sharding"))
    out = op.out_types[0] if op.out_types else None
    rank = len(out.dims) if isinstance(out, ArrayShape) else 0
    text = sdy_to_hlo_sharding(attr, b.conv.mod.meshes, rank) \
        if isinstance(attr, HashAttr) else None
    if text is not None:
        _set_sharding(b, text, op.offset)


@converts("stablehlo.get_tuple_element")
def get_tuple_element(b: CompBuilder, op: Op, a: AttrReader) -> None:
    index = op.index[0] if op.index else a.int_("index")
    b.emit(op, "get-tuple-element", op.operands, {"index": index})


@converts("stablehlo.tuple")
def tuple_(b: CompBuilder, op: Op, a: AttrReader) -> None:
    b.emit(op, "tuple", op.operands, {})


@converts("stablehlo.partition_id", "stablehlo.replica_id")
def ids(b: CompBuilder, op: Op, a: AttrReader) -> None:
    b.emit(op, _opcode(op.name), [], {})

