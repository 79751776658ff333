"""What the runtime reads of an SPMD NEFF: the world it was written for and the layouts of
its inputs and outputs (the manifest's ``spmd`` section, `backend.program.spmd_manifest`),
and which layout each output is assembled by.

A NEFF without the section is read as a program whose inputs and outputs are all
replicated (any world size).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nxcc.backend.runtime.spmd_layout import LayoutError, parse_layout
from nxcc.ir.spmd import TileLayout


@dataclass(frozen=True)
class SpmdTensor:
    """One input or output: name, global and per-rank shape, layout (None: none written)."""

    name: str
    shape: tuple[int, ...]
    local_shape: tuple[int, ...]
    layout: TileLayout | None


@dataclass(frozen=True)
class SpmdSpec:
    """The manifest's ``spmd`` section, read."""

    world_size: int | None
    num_partitions: int
    replica_count: int
    inputs: tuple[SpmdTensor, ...]
    outputs: tuple[SpmdTensor, ...]

    def rank_ids(self, rank: int, world_size: int) -> tuple[int, int]:
        """(partition_id, replica_id) of `rank`: partitions vary fastest, as XLA numbers
        devices; a program that gives neither count has one partition per rank."""
        if self.num_partitions > 1:
            per = self.num_partitions
        elif self.replica_count > 1:
            per = 1
        else:
            per = world_size
        return rank % per, rank // per


def _tensor(e: dict) -> SpmdTensor:
    layout = TileLayout.from_json(e["layout"]) if e.get("layout") else None
    return SpmdTensor(str(e["name"]), tuple(e["shape"]), tuple(e["local_shape"]), layout)


def read_spec(manifest: dict) -> SpmdSpec:
    """The SPMD view of a manifest (KeyError/TypeError/ValueError when malformed)."""
    section = manifest.get("spmd")
    if section is None:
        def plain(e: dict) -> SpmdTensor:
            return SpmdTensor(e["name"], tuple(e["shape"]), tuple(e["shape"]), None)

        return SpmdSpec(None, 1, 1, tuple(plain(e) for e in manifest["inputs"]),
                        tuple(plain(e) for e in manifest["outputs"]))
    world = section.get("world_size")
    return SpmdSpec(int(world) if world else None, int(section.get("num_partitions", 1)),
                    int(section.get("replica_count", 1)),
                    tuple(_tensor(e) for e in section["inputs"]),
                    tuple(_tensor(e) for e in section["outputs"]))


def _same_layout(a: TileLayout, b: TileLayout) -> bool:
    return (a.tiles, a.devices, a.copies, a.owner) == (b.tiles, b.devices, b.copies, b.owner)


def output_layouts(spec: SpmdSpec, given: Sequence[str] | None) -> list[TileLayout | None]:
    """Each output's layout: the program's, else the `given` HLO sharding text (one per
    output, in order), else None (taken as replicated). LayoutError for a count that does not
    match, text that cannot be read, or a given layout that contradicts the program's."""
    outs = spec.outputs
    if given is not None and len(given) != len(outs):
        names = ", ".join(o.name for o in outs)
        raise LayoutError(f"--output-sharding was given {len(given)} time(s) but the program "
                          f"has {len(outs)} output(s) ({names}); give it once per output, in "
                          "order")
    found: list[TileLayout | None] = []
    for i, o in enumerate(outs):
        mine = o.layout
        if given is not None:
            try:
                theirs = parse_layout(given[i], len(o.local_shape))
            except LayoutError as exc:
                raise LayoutError(f"--output-sharding for output '{o.name}': {exc}") from None
            if mine is not None and not _same_layout(mine, theirs):
                raise LayoutError(f"output '{o.name}' carries sharding {mine.text} in the "
                                  f"program, but --output-sharding says {given[i]}")
            mine = mine or theirs
        found.append(mine)
    return found


def check_layouts(spec: SpmdSpec, outputs: Sequence[TileLayout | None], world_size: int
                  ) -> None:
    """LayoutError unless every layout suits `world_size` ranks and its value."""
    named = [(f"input '{t.name}'", t.layout, t.local_shape) for t in spec.inputs]
    named += [(f"output '{t.name}'", lay, t.local_shape)
              for t, lay in zip(spec.outputs, outputs, strict=True)]
    for what, layout, local in named:
        if layout is None:
            continue
        try:
            layout.check(world_size, len(local))
        except ValueError as exc:
            raise LayoutError(f"{what}: {exc}") from None
