"""Collectives of ranks that are threads of one process, met at once at a meeting point
(`local_collectives`): the same bits as the ring's steps, results written into the caller's
arrays, a started collective finished at its done, and a lost or aborted peer named."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from nxcc.backend.runtime.channel_comm import ChannelCommunicator
from nxcc.backend.runtime.channels import ChannelsAborted, LocalChannels, RankLost
from nxcc.backend.runtime.collective_binding import Binder, Placement
from nxcc.backend.runtime.multicore import Communicator, run_cores
from nxcc.backend.runtime.topology import INSTANCES

RING8 = Placement(INSTANCES["trn1.32xlarge"], 1, tuple(range(8)))
PAIR = Placement(INSTANCES["trn1.32xlarge"], 1, (0, 1))
RNG = np.random.default_rng(5)
# magnitudes from 1e-3 to 1e3: each order of summation gives its own bits
XS = [(RNG.standard_normal((8, 6)) * 10.0 ** RNG.integers(-3, 4, (8, 6))).astype(np.float32)
      for _ in range(8)]
INTS = [np.arange(10, dtype=np.int32) * (k + 1) for k in range(8)]
HALVES = {"replica_groups": ((0, 1, 2, 3), (4, 5, 6, 7))}
ODD = {"replica_groups": ((3, 1, 2, 0, 7, 5, 6, 4),)}  # group order differs from the ring


class Messages:
    """LocalChannels without meeting points: every collective moves messages."""

    def __init__(self, channels: LocalChannels) -> None:
        self.channels = channels

    def send(self, src: int, dst: int, message: object, stream: int = 0) -> None:
        self.channels.send(src, dst, message, stream)

    def recv(self, src: int, dst: int, stream: int = 0) -> object:
        return self.channels.recv(src, dst, stream)

    def abort(self) -> None:
        self.channels.abort()

    def reset(self) -> None:
        self.channels.reset()

    def finish(self) -> None:
        self.channels.finish()


def body(ep, k: int) -> list[list[np.ndarray]]:
    """Every collective the meeting points compute, sync and started, into fresh arrays
    and into the caller's."""
    out = [np.empty_like(XS[k]), np.empty_like(INTS[k])]
    ep.collective_into("all_reduce", [XS[k], INTS[k]], {"reduction": "sum", **ODD}, out) \
        if hasattr(ep, "collective_into") else \
        [np.copyto(o, r) for o, r in zip(out, ep.collective(
            "all_reduce", [XS[k], INTS[k]], {"reduction": "sum", **ODD}), strict=True)]
    handle = ep.collective("all_reduce_start", [XS[k]], {"reduction": "sum", **HALVES})
    return [out,
            ep.collective("all_reduce_done", handle, {"reduction": "sum", **HALVES}),
            ep.collective("all_gather", [XS[k]], {"dimension": 1, **ODD}),
            ep.collective("reduce_scatter", [XS[k]], {"dimension": 0, "reduction": "max",
                                                      **ODD}),
            ep.collective("reduce_scatter", [XS[k]], {"dimension": 0, "reduction": "sum",
                                                      **ODD}),
            ep.collective("all_to_all", [XS[k]], {"split_dimension": 0,
                                                  "concat_dimension": 1, **HALVES})]


def each_rank(n: int, run) -> list:
    """run(k) for k < n, each on a thread of its own; their results."""
    results: list = [None] * n
    threads = [threading.Thread(target=lambda k=k: results.__setitem__(k, run(k)))
               for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def on_threads(channels, n: int = 8) -> list:
    comm = ChannelCommunicator(n, Binder(RING8), channels)
    return each_rank(n, lambda k: body(comm.endpoint(k), k))


def test_met_at_once_the_bits_are_the_ring_steps() -> None:
    """Threads meeting at once, threads passing messages round the ring, and the in-process
    communicator's ring steps all give the same bits, for every collective and group."""
    met = on_threads(LocalChannels(60))
    sent = on_threads(Messages(LocalChannels(60)))
    group = Communicator(8, Binder(RING8))
    stepped = run_cores([lambda k=k: body(group.endpoint(k), k) for k in range(8)], group)
    for k in range(8):
        for a, b, c in zip(met[k], sent[k], stepped[k], strict=True):
            for x, y, z in zip(a, b, c, strict=True):
                assert x.dtype == y.dtype == z.dtype and x.shape == y.shape == z.shape
                np.testing.assert_array_equal(x, y)
                np.testing.assert_array_equal(x, z)
    assert not np.array_equal(met[0][0][0], sum(XS).astype(np.float32))  # order matters here


def test_results_into_the_operands_own_buffer() -> None:
    """An all-reduce in place (its out is its operand, which the others read meanwhile)
    gives the sum on every rank."""
    comm = ChannelCommunicator(2, Binder(PAIR), LocalChannels(60))
    arrays = [XS[0].copy(), XS[1].copy()]
    want = XS[1] + XS[0]

    each_rank(2, lambda k: comm.endpoint(k).collective_into(
        "all_reduce", [arrays[k]], {"reduction": "sum"}, [arrays[k]]))
    for a in arrays:
        np.testing.assert_array_equal(a, want)


def test_a_started_collective_reads_the_operands_as_they_were_at_its_start() -> None:
    """A start copies its operand: the rank may overwrite it before the done."""
    comm = ChannelCommunicator(2, Binder(PAIR), LocalChannels(60))

    def run(k: int) -> np.ndarray:
        ep = comm.endpoint(k)
        for _ in range(3):  # the kept copies are reused once both ranks are done with them
            x = XS[k].copy()
            handle = ep.collective("all_reduce_start", [x], {"reduction": "sum"})
            x[...] = -1.0
            got = ep.collective("all_reduce_done", handle, {"reduction": "sum"})[0]
        return got

    for g in each_rank(2, run):
        np.testing.assert_array_equal(g, XS[1] + XS[0])


def test_a_rank_that_never_comes_is_named() -> None:
    point = LocalChannels(0.3).meeting_point([4, 9])
    call = point.post(0, [XS[0]])
    start = time.monotonic()
    with pytest.raises(RankLost, match=r"^rank 9 was lost: rank 4 waited 0.3 s"):
        point.collect(0, call)
    assert time.monotonic() - start < 5


def test_an_aborted_job_ends_the_wait() -> None:
    channels = LocalChannels(60)
    point = channels.meeting_point([0, 1])
    call = point.post(0, [XS[0]])
    threading.Timer(0.1, channels.abort).start()
    with pytest.raises(ChannelsAborted, match="rank 0: the job was aborted"):
        point.collect(0, call)
