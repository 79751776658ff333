"""The decoder's forward pieces on one rank: embedding, transformer layer, head and loss.

`Model(blocks, params)` reads parameters by name (`weights.py`) from `params`; each method
appends ops through the `Blocks` builder and returns the new activation (a layer's pieces,
`config.PIECES`, take and return the tuple of values one hands the next).
"""

from __future__ import annotations

from nxcc.compiler.decoder.blocks import Blocks
from nxcc.compiler.decoder.config import CHUNKS, CORE, MLP_FIRST, OUT, QKV_FIRST, chunks_in
from nxcc.ir import ops
from nxcc.ir.core import Value
from nxcc.passes.autodiff.losses import IGNORE_INDEX, reduce_all


class Model:
    """The decoder's pieces on `blocks`' rank, reading parameters from `params`."""

    def __init__(self, blocks: Blocks, params: dict[str, Value]) -> None:
        self.k = blocks
        self.p = params

    def _norm(self, x: Value, name: str) -> Value:
        return self.k.norm(x, self.p[f"{name}.weight"], self.p.get(f"{name}.bias"))

    def embed(self, tokens: Value) -> Value:
        """Vocabulary-parallel lookup: rows outside this rank's range give zeros, the sum
        over ranks (all_reduce, or reduce_scatter along the sequence) the embedding."""
        k, b = self.k, self.k.b
        table = self.p["embed.tokens"]
        rows, hidden = table.type.shape
        bsz, s = tokens.type.shape
        index, in_range = tokens, None
        if k.tp > 1:
            local = b.subtract(tokens, b.splat(k.plan.tp_rank * rows, tokens.type))
            in_range = b.and_(b.compare(local, b.splat(0, tokens.type), direction="GE"),
                              b.compare(local, b.splat(rows, tokens.type), direction="LT"))
            index = b.select(in_range, local, b.splat(0, tokens.type))
        x = b.gather(table, index, offset_dims=(2,), collapsed_slice_dims=(0,),
                     start_index_map=(0,), index_vector_dim=2, slice_sizes=(1, hidden))
        if in_range is not None:
            x = b.select(k.expand(in_range, x.type.shape, (0, 1)), x, k.scalar(0.0, x))
        x = k.leave_parallel(x)
        if "embed.positions" in self.p:
            local_s = x.type.shape[1]
            start = k.plan.tp_rank * local_s if k.sp else 0
            pos = b.slice(self.p["embed.positions"], start_indices=(start, 0),
                          limit_indices=(start + local_s, hidden), strides=(1, 1))
            x = b.add(x, k.expand(pos, x.type.shape, (1, 2)))
        return x

    def run(self, state: tuple[Value, ...], layer: int, pieces: range) -> tuple[Value, ...]:
        """Pieces `pieces` (a run of indices into `PIECES`) of layer `layer` on `state`, the
        values the piece before handed on: (x,) before `attn.qkv.0` and `mlp.0`; (x, normed
        input, the projection's columns so far) before `attn.qkv.c`, c > 0; (x, q, k, v)
        before `attn.core`; (x, context) before `attn.out`; (x, normed input, partial sum)
        before `mlp.c`, c > 0. x is the residual stream. The chunks of a projection that a
        stage holds run as one: its parameters hold just their columns."""
        pre = f"layers.{layer}"
        qkv = chunks_in(pieces, QKV_FIRST)
        if qkv:
            state = self._qkv(state, pre, qkv.start == 0, qkv.stop == CHUNKS)
        if CORE in pieces:
            state = self._core(state)
        if OUT in pieces:
            state = self._out(state, pre)
        mlp = chunks_in(pieces, MLP_FIRST)
        if mlp:
            state = self._mlp(state, pre, mlp.start == 0, mlp.stop == CHUNKS)
        return state

    def _chunk_input(self, state: tuple[Value, ...], norm: str, first: bool
                     ) -> tuple[Value, Value, Value | None]:
        """(x, the normed input in the parallel region, the projection's result so far):
        at the first chunk from x alone (nothing so far), else as the last chunk left it."""
        if not first:
            x, h, done = state
            return x, h, done
        (x,) = state
        return x, self.k.enter_parallel(self._norm(x, norm)), None

    def _qkv(self, state: tuple[Value, ...], pre: str, first: bool, last: bool
             ) -> tuple[Value, ...]:
        """The q/k/v projection's columns this stage holds; at the last chunk the heads,
        rotated for llama."""
        k, b, p, cfg = self.k, self.k.b, self.p, self.k.cfg
        x, h, done = self._chunk_input(state, f"{pre}.attn_norm", first)
        part = k.linear(h, p[f"{pre}.attn.qkv"], p.get(f"{pre}.attn.qkv_bias"))
        qkv = part if done is None else b.concatenate(done, part,
                                                      dimension=part.type.rank - 1)
        if not last:
            return x, h, qkv
        nq, nkv = k.heads * cfg.head_dim, k.kv * cfg.head_dim
        rotate = cfg.rotary
        q = k.heads_first(k.slice_last(qkv, 0, nq), k.heads, rotate)
        key = k.heads_first(k.slice_last(qkv, nq, nq + nkv), k.kv, rotate)
        value = k.heads_first(k.slice_last(qkv, nq + nkv, nq + 2 * nkv), k.kv, False)
        return x, q, key, value

    def _core(self, state: tuple[Value, ...]) -> tuple[Value, ...]:
        x, q, key, value = state
        return x, self.k.attention_core(q, key, value)

    def _out(self, state: tuple[Value, ...], pre: str) -> tuple[Value, ...]:
        k, b, p = self.k, self.k.b, self.p
        x, ctx = state
        out = k.leave_parallel(k.matmul(ctx, p[f"{pre}.attn.out"]))
        if f"{pre}.attn.out_bias" in p:
            out = b.add(out, k.feature(p[f"{pre}.attn.out_bias"], out.type.shape))
        return (b.add(x, out),)

    def _mlp(self, state: tuple[Value, ...], pre: str, first: bool, last: bool
             ) -> tuple[Value, ...]:
        """The MLP's columns this stage holds: from `mlp.0` (`first`) the input is normed;
        the partial sum of the down projection grows by these columns; at `mlp.3` (`last`)
        it is reduced over the TP group and added to the residual stream."""
        k, b, p = self.k, self.k.b, self.p
        x, h, total = self._chunk_input(state, f"{pre}.mlp_norm", first)
        if not k.cfg.swiglu:
            u = k.gelu(k.linear(h, p[f"{pre}.mlp.up"], p.get(f"{pre}.mlp.up_bias")))
        else:
            gu = k.linear(h, p[f"{pre}.mlp.gate_up"], p.get(f"{pre}.mlp.gate_up_bias"))
            f = gu.type.shape[-1] // 2
            u = b.multiply(k.silu(k.slice_last(gu, 0, f)), k.slice_last(gu, f, 2 * f))
        down = k.matmul(u, p[f"{pre}.mlp.down"])
        total = down if total is None else b.add(total, down)
        if not last:
            return x, h, total
        total = k.leave_parallel(total)
        if f"{pre}.mlp.down_bias" in p:
            total = b.add(total, k.feature(p[f"{pre}.mlp.down_bias"], total.type.shape))
        return (b.add(x, total),)

    def logits(self, x: Value) -> Value:
        """Final norm and the vocabulary-parallel head: this rank's columns of the logits
        [batch, seq, V / TP] (with tied embeddings the table transposed)."""
        k, b = self.k, self.k.b
        h = k.enter_parallel(self._norm(x, "final_norm"))
        head = self.p["head"] if "head" in self.p else \
            b.transpose(self.p["embed.tokens"], permutation=(1, 0))  # tied: [H, V / TP]
        return k.matmul(h, head)

    def loss(self, x: Value, labels: Value) -> tuple[Value, Value]:
        """Final norm, vocabulary-parallel head (with tied embeddings the embedding table
        transposed: its rank's rows are the same vocabulary range) and cross-entropy: (the
        sum over positions whose label is not -100 of -log softmax(logits)[label], the
        number of them). The
        shift (the max logit, all_reduce max over ranks) passes no gradient; the exp-sum
        and the label's logit are summed over ranks by one all_reduce."""
        k, b = self.k, self.k.b
        logits = self.logits(x)
        shape = logits.type.shape
        last = (len(shape) - 1,)
        top = reduce_all(b, logits, ops.maximum, last)
        if k.tp > 1:
            top = b.all_reduce(top, reduction="max", replica_groups=k.groups)
        k.stop.append(top)
        shifted = b.subtract(logits, k.last(top, shape))
        total = reduce_all(b, b.exp(shifted), ops.add, last)
        classes = b.iota(dtype=labels.type.dtype, shape=shape, dimension=len(shape) - 1)
        if k.plan.tp_rank:
            classes = b.add(classes, b.splat(k.plan.tp_rank * shape[-1], classes.type))
        is_label = b.compare(classes, k.last(labels, shape), direction="EQ")
        picked = reduce_all(b, b.select(is_label, shifted, k.scalar(0.0, shifted)), ops.add,
                            last)
        if k.tp > 1:
            total, picked = b.ops("all_reduce", [total, picked], {
                "reduction": "sum", "replica_groups": k.groups})
        nll = b.subtract(b.log(total), picked)
        keep = b.compare(labels, b.splat(IGNORE_INDEX, labels.type), direction="NE")
        loss_sum = reduce_all(b, b.select(keep, nll, k.scalar(0.0, nll)))
        count = reduce_all(b, b.convert(keep, k.dtype))
        return loss_sum, count


