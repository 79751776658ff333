"""Binding collective placeholders to algorithms at load.

A NEFF's collectives say what is communicated (kind, reduction, replica groups, dtype,
bytes), never how. When a model is loaded its ranks have a `Placement` (the physical core
each rank runs on), and every collective is bound to an algorithm for it:

=================  ==========================================================================
algorithm          when, and how
=================  ==========================================================================
shared_memory      every replica group lies within one logical core (the physical cores of
                   an LNC=2 core share memory): one step; each rank publishes its operands
                   and reads its group's in place.
ring               otherwise: each group is a ring over the instance topology
                   (`ring_order.ring_of`: neighbours on one device or on linked devices),
                   data moves only between ring neighbours. all-reduce: reduce-scatter then
                   all-gather, 2(k-1) steps of bytes/k; all-gather: k-1 steps of the operand;
                   reduce-scatter: k-1 steps of bytes/k; all-to-all: k-1 steps, the first
                   (the largest) of (k-1)/k of the operand (each hop delivers one block).
point_to_point     collective-permute between logical cores: one step, each source sends its
                   operand to its target over the shortest NeuronLink path (`hops`).
hierarchical       an all-reduce whose groups span simulated instances, as many ranks on
                   each: reduce-scatter round each instance's ring, all-reduce each chunk
                   across the instances (over EFA; folded in instance order), all-gather round
                   each instance's ring: 2(k-1) + 1 steps, k the ranks per instance.
=================  ==========================================================================

Over several instances a ring visits the ranks instance by instance, so it leaves each
instance once; every hop between instances is bound as EFA, every hop inside one as
NeuronLink (`GroupRoute.links`).

`k` is the largest group's size; `bytes` one rank's operand bytes. A collective whose groups
span logical cores is bound as a ring as a whole (each group its own ring), so every rank of
a collective takes the same number of steps.

`CollectiveBinding` is the explicit result, shown by ``neuronx-cc run --show-bindings`` and
`ModelHandle.bindings`; the communicator (`multicore.Communicator`) runs each collective by
its binding (`Binder`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from nxcc.backend.runtime.ring_order import hops, ring_of
from nxcc.backend.runtime.topology import Instance

SHARED_MEMORY = "shared_memory"
RING = "ring"
POINT_TO_POINT = "point_to_point"
HIERARCHICAL = "hierarchical"
NEURONLINK = "neuronlink"
EFA = "efa"


@dataclass(frozen=True)
class Placement:
    """Where the ranks of one communicator run: `cores[r]` is rank r's physical core on
    `instance` (None: no instance, every rank in one logical core), at `lnc` physical cores
    per logical core; `instances[r]` the simulated instance of that type rank r is on (a job
    over several instances, joined by EFA; empty: all on one)."""

    instance: Instance | None
    lnc: int
    cores: tuple[int, ...]
    instances: tuple[int, ...] = ()

    @property
    def world_size(self) -> int:
        return len(self.cores)

    def instance_of(self, rank: int) -> int:
        """Which simulated instance rank `rank` is on (`instances[rank]`; 0 when not given)."""
        return self.instances[rank] if self.instances else 0

    def logical(self, rank: int) -> tuple[int, int]:
        """(instance, logical core) of rank `rank` (all (0, 0) without an instance)."""
        if self.instance is None:
            return 0, 0
        return self.instance_of(rank), self.cores[rank] // self.lnc

    @staticmethod
    def one_logical_core(n: int) -> Placement:
        """`n` ranks sharing one logical core's memory (no instance)."""
        return Placement(None, n, tuple(range(n)))


@dataclass(frozen=True)
class GroupRoute:
    """One replica group as bound: its ranks in the order data flows (ring order; group
    order for shared memory; source then target for a point-to-point pair), their physical
    cores, and the NeuronLink hops from each rank to the next (the last to the first)."""

    ranks: tuple[int, ...]
    cores: tuple[int, ...]
    hops: tuple[int, ...]
    links: tuple[str, ...] = ()

    def link(self, i: int) -> str:
        """What carries hop i: "neuronlink" inside an instance, "efa" between instances."""
        return self.links[i] if self.links else NEURONLINK

    def to_json(self) -> dict:
        return {"ranks": list(self.ranks), "cores": list(self.cores), "hops": list(self.hops),
                "links": [self.link(i) for i in range(len(self.hops))]}

    def describe_hops(self) -> str:
        """``1,1,EFA,1``: NeuronLink hop counts, EFA where the hop leaves the instance."""
        return ",".join("EFA" if self.link(i) == EFA else str(h)
                        for i, h in enumerate(self.hops))


@dataclass(frozen=True)
class CollectiveBinding:
    """How one collective runs for a placement (see the module docstring)."""

    kind: str
    algorithm: str
    routes: tuple[GroupRoute, ...]
    steps: int
    bytes: int
    bytes_per_step: int
    id: int | None = None

    def to_json(self) -> dict:
        return {"id": self.id, "kind": self.kind, "algorithm": self.algorithm,
                "steps": self.steps, "bytes": self.bytes, "bytes_per_step": self.bytes_per_step,
                "routes": [r.to_json() for r in self.routes]}

    def describe(self) -> str:
        """One line: ``#0 all_reduce: ring of 4 (nc0>nc1>nc2>nc3, hops 0,1,0,1) x2, 6 steps
        of 64 bytes``."""
        head = f"#{self.id} {self.kind}" if self.id is not None else self.kind
        first = self.routes[0] if self.routes else GroupRoute((), (), ())
        path = ">".join(f"nc{c}" for c in first.cores)
        if self.algorithm == POINT_TO_POINT:
            pairs = ", ".join(f"nc{r.cores[0]}>nc{r.cores[1]} ({r.hops[0]} hops)"
                              for r in self.routes)
            where = f"point_to_point {pairs}"
        else:
            where = f"{self.algorithm} of {len(first.ranks)} ({path}"
            if self.algorithm in (RING, HIERARCHICAL):
                where += f", hops {first.describe_hops()}"
            where += ")"
            if len(self.routes) > 1:
                where += f" x{len(self.routes)} groups"
        steps = f"{self.steps} step{'s' if self.steps != 1 else ''}"
        return f"{head}: {where}, {steps} of {self.bytes_per_step} bytes"


def _steps(kind: str, algorithm: str, k: int, nbytes: int) -> tuple[int, int]:
    """(steps, bytes per step) of one rank."""
    if k <= 1:
        return 0, 0
    if algorithm != RING:
        return 1, nbytes
    if kind == "all_reduce":
        return 2 * (k - 1), math.ceil(nbytes / k)
    if kind == "all_gather":
        return k - 1, nbytes
    if kind == "reduce_scatter":
        return k - 1, math.ceil(nbytes / k)
    if kind == "all_to_all":
        return k - 1, math.ceil(nbytes * (k - 1) / k)
    raise ValueError(f"{kind} has no ring algorithm")


def _route(ranks: Sequence[int], placement: Placement) -> GroupRoute:
    cores = tuple(placement.cores[r] for r in ranks)
    if placement.instance is None:
        return GroupRoute(tuple(ranks), cores, (0,) * len(ranks))
    inst = placement.instance
    k = len(cores)
    nxt = [(i + 1) % k for i in range(k)]
    efa = [placement.instance_of(ranks[i]) != placement.instance_of(ranks[j])
           for i, j in enumerate(nxt)]
    return GroupRoute(tuple(ranks), cores,
                      tuple(0 if e else hops(cores[i], cores[j], inst)
                            for i, (j, e) in enumerate(zip(nxt, efa, strict=True))),
                      tuple(EFA if e else NEURONLINK for e in efa))


def ring_order(ranks: Sequence[int], placement: Placement) -> list[int]:
    """`ranks` in the order data flows round their ring: instance by instance (so the ring
    leaves each instance once, over EFA), each instance's ranks in its topology's ring."""
    assert placement.instance is not None
    out: list[int] = []
    for index in sorted({placement.instance_of(r) for r in ranks}):
        here = [r for r in ranks if placement.instance_of(r) == index]
        by_core = {placement.cores[r]: r for r in here}
        out += [by_core[c] for c in ring_of([placement.cores[r] for r in here],
                                            placement.instance)]
    return out


def is_hierarchical(kind: str, group: Sequence[int], placement: Placement) -> bool:
    """An all-reduce over several instances with as many ranks on each: reduce-scatter
    inside each instance, all-reduce across, all-gather inside (`hierarchical`)."""
    counts: dict[int, int] = {}
    for r in group:
        counts[placement.instance_of(r)] = counts.get(placement.instance_of(r), 0) + 1
    return kind == "all_reduce" and len(counts) > 1 and len(set(counts.values())) == 1


def _check_ranks(ranks: Sequence[int], placement: Placement, kind: str) -> None:
    bad = [r for r in ranks if not 0 <= r < placement.world_size]
    if bad:
        raise ValueError(f"{kind} names rank(s) {bad}, but the model runs on "
                         f"{placement.world_size} rank(s)")


def bind(kind: str, groups: Sequence[Sequence[int]], pairs: Sequence[Sequence[int]],
         nbytes: int, placement: Placement, id: int | None = None) -> CollectiveBinding:
    """The binding of one collective (`groups` its replica groups, empty meaning every rank;
    `pairs` the source-target pairs of a collective_permute). ValueError for a rank the
    placement does not have."""
    same_core = placement.instance is None
    if kind in ("collective_permute", "send", "recv_done"):
        _check_ranks([r for p in pairs for r in p], placement, kind)
        local = same_core or all(placement.logical(a) == placement.logical(b) for a, b in pairs)
        algorithm = SHARED_MEMORY if local else POINT_TO_POINT
        routes = tuple(_route((a, b), placement) for a, b in pairs)
        steps, per_step = (1, nbytes) if pairs else (0, 0)
        return CollectiveBinding(kind, algorithm, routes, steps, nbytes, per_step, id)
    members = [tuple(g) for g in groups] or [tuple(range(placement.world_size))]
    _check_ranks([r for g in members for r in g], placement, kind)
    local = same_core or all(len({placement.logical(r) for r in g}) == 1 for g in members)
    if local:
        routes = tuple(_route(g, placement) for g in members)
        algorithm = SHARED_MEMORY
    else:
        routes = tuple(_route(ring_order(g, placement), placement) for g in members)
        algorithm = RING
        if all(is_hierarchical(kind, g, placement) for g in members):
            algorithm = HIERARCHICAL
    k = max(len(g) for g in members)
    if algorithm == HIERARCHICAL:
        inside = k // len({placement.instance_of(r) for r in members[0]})
        steps, per_step = 2 * (inside - 1) + 1, math.ceil(nbytes / inside)
        return CollectiveBinding(kind, algorithm, routes, steps, nbytes, per_step, id)
    steps, per_step = _steps(kind, algorithm, k, nbytes)
    return CollectiveBinding(kind, algorithm, routes, steps, nbytes, per_step, id)


def _key(kind: str, groups: object, pairs: object) -> tuple:
    def norm(x: object) -> tuple:
        if not isinstance(x, Iterable):
            return ()
        return tuple(tuple(int(i) for i in g) for g in x)
    return kind, norm(groups), norm(pairs)


def bind_manifest(entries: Sequence[Mapping], placement: Placement) -> list[CollectiveBinding]:
    """The bindings of a manifest's collective entries (see `backend.program.collectives`)."""
    return [bind(str(e["kind"]), e.get("replica_groups") or (), e.get("source_target_pairs")
                 or (), int(e.get("bytes", 0)), placement, e.get("id", i))
            for i, e in enumerate(entries)]


class Binder:
    """The communicator's view of the bindings: the binding of each collective call, looked
    up by kind and groups among those bound at load (else bound on first use)."""

    def __init__(self, placement: Placement, bound: Sequence[CollectiveBinding] = (),
                 entries: Sequence[Mapping] = ()) -> None:
        """`bound[i]` is the binding of manifest entry `entries[i]`."""
        self.placement = placement
        self.table: dict[tuple, CollectiveBinding] = {}
        for b, e in zip(bound, entries, strict=True):
            self.table.setdefault(_key(b.kind, e.get("replica_groups"),
                                       e.get("source_target_pairs")), b)

    def binding(self, opcode: str, attrs: Mapping[str, object], nbytes: int
                ) -> CollectiveBinding:
        """The binding of a call of `opcode` with `attrs` (replica_groups or
        source_target_pairs); ValueError for a rank the placement does not have."""
        groups, pairs = attrs.get("replica_groups"), attrs.get("source_target_pairs")
        key = _key(opcode, groups, pairs)
        found = self.table.get(key)
        if found is None:
            found = bind(opcode, key[1], key[2], nbytes, self.placement)
            self.table[key] = found
        return found
