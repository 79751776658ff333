"""Rings over an instance's topology: the order in which ranks pass data to their neighbour.

`device_cycle(instance)` is a cycle through every device of the instance in which
consecutive devices (and the last and the first) are linked wherever the topology allows:

- a ring of devices (inf2): 0, 1, ..., n-1;
- a 2-D torus (trn1.32xlarge, trn2.48xlarge: 4x4): the rows in snake order, row 0 left to
  right, row 1 right to left, ...; the last device of an even row count sits in the first
  column, linked to device 0 by the column's wrap-around link. A torus row alone (devices
  r*c .. r*c+c-1, in the order the snake visits them) is also a cycle, through the row's
  wrap-around link;
- a single device: itself.

`ring_of(cores, instance)` orders physical cores for a ring: by their device's place in the
cycle, cores of one device next to each other (they share the device's on-chip
interconnect). `hops(a, b, instance)` is the length of the shortest NeuronLink path between
two devices (0 on the same device), so a binding can show how adjacent its neighbours are.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Sequence

from nxcc.backend.runtime.topology import Instance


@functools.cache
def device_cycle(instance: Instance) -> tuple[int, ...]:
    """Every device of `instance`, in an order whose neighbours are linked (see above)."""
    if instance.topology == "torus" and instance.torus_shape is not None:
        rows, cols = instance.torus_shape
        order: list[int] = []
        for r in range(rows):
            row = [r * cols + c for c in range(cols)]
            order.extend(row if r % 2 == 0 else reversed(row))
        return tuple(order)
    return tuple(range(instance.devices))


def device_of(core: int, instance: Instance) -> int:
    """The device a physical core belongs to."""
    return core // instance.cores_per_device


def ring_of(cores: Sequence[int], instance: Instance) -> list[int]:
    """The physical `cores` in ring order (see the module docstring)."""
    place = {d: i for i, d in enumerate(device_cycle(instance))}
    return sorted(cores, key=lambda c: (place[device_of(c, instance)], c))


@functools.cache
def _distances(instance: Instance, start: int) -> dict[int, int]:
    seen = {start: 0}
    todo = deque([start])
    while todo:
        d = todo.popleft()
        for e in instance.connected(d):
            if e not in seen:
                seen[e] = seen[d] + 1
                todo.append(e)
    return seen


def hops(core_a: int, core_b: int, instance: Instance) -> int:
    """NeuronLink hops between the devices of two physical cores (0: the same device; -1:
    no path, e.g. devices of separate instances)."""
    a, b = device_of(core_a, instance), device_of(core_b, instance)
    if a == b:
        return 0
    return _distances(instance, a).get(b, -1)


def adjacent(core_a: int, core_b: int, instance: Instance) -> bool:
    """True when the two cores share a device or their devices are directly linked."""
    return hops(core_a, core_b, instance) in (0, 1)
