"""random_bits: Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
SC'11), vectorized over every counter block at once in uint64 arithmetic."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import AttrValue
from nxcc.ir.kernels.base import KernelContext, kernel
from nxcc.ir.kernels.plan import kernel_only

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)
_MASK = np.uint64(0xFFFFFFFF)
_SHIFT = np.uint64(32)


def philox4x32(counters: np.ndarray, key: int) -> np.ndarray:
    """The (n, 4) uint32 outputs for (n, 4) uint32 counters under the 64-bit `key`."""
    c = [counters[:, i].astype(np.uint64) for i in range(4)]
    k0, k1 = np.uint64(key & 0xFFFFFFFF), np.uint64(key >> 32)
    for _ in range(10):
        p0, p1 = _M0 * c[0], _M1 * c[2]
        hi0, lo0 = p0 >> _SHIFT, p0 & _MASK
        hi1, lo1 = p1 >> _SHIFT, p1 & _MASK
        c = [hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0]
        k0, k1 = (k0 + _W0) & _MASK, (k1 + _W1) & _MASK
    return np.stack(c, axis=1).astype(np.uint32)


def random_words(key: int, counter: int, n: int) -> np.ndarray:
    """n uint32 words: block j is Philox of counter (j, counter) as four 32-bit words."""
    blocks = (n + 3) // 4
    j = np.arange(blocks, dtype=np.uint64)
    counters = np.empty((blocks, 4), np.uint32)
    counters[:, 0] = (j & _MASK).astype(np.uint32)
    counters[:, 1] = (j >> _SHIFT).astype(np.uint32)
    counters[:, 2] = counter & 0xFFFFFFFF
    counters[:, 3] = (counter >> 32) & 0xFFFFFFFF
    return philox4x32(counters, key).reshape(-1)[:n]


@kernel(ops.random_bits)
def random_bits(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
                attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    key, counter = (int(np.asarray(a).reshape(())) for a in args)
    out = outs[0]
    out[...] = random_words(key, counter, out.size).reshape(out.shape)


kernel_only(ops.random_bits)
