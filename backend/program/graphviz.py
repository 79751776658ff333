"""A NEFF's partitioned program as Graphviz text (`inspect-neff --format dot`).

One cluster per subgraph (physical core): its inputs, weights and instructions, with an
edge wherever an instruction reads what another wrote. Collective placeholders are drawn
bold and filled red, and the same placeholder on different cores is tied by a dashed red
edge, so the exchange points of the cores line up.
"""

from __future__ import annotations

import json

from nxcc.backend.neff import NeffFile
from nxcc.backend.program.collectives import COLLECTIVE_OPS
from nxcc.ir.opdef import OP_DEFS


def _quote(text: str) -> str:
    return json.dumps(text)


def _shape(slot: dict) -> str:
    return f"{slot['dtype']}[{','.join(str(d) for d in slot['shape'])}]"


def neff_to_dot(neff: NeffFile) -> str:
    """The Graphviz (dot) text of every subgraph's entry function."""
    m = neff.manifest
    lines = [f"digraph {_quote(neff.header.name or 'neff')} {{",
             "  rankdir=TB;",
             '  node [shape=box, fontname="Helvetica", fontsize=10];']
    seen: dict[int, list[str]] = {}
    for sg in m.get("subgraphs", []):
        program = json.loads(neff.files[sg["program"]])
        fn = program["functions"][program["entry"]]
        prefix = sg["name"]
        lines.append(f"  subgraph cluster_{prefix} {{")
        title = f"{prefix} (core {sg.get('core')})"
        lines.append(f"    label={_quote(title)};")
        writer: dict[int, str] = {}
        slots = fn["slots"]
        for i, slot in enumerate(slots):
            node = f"{prefix}_s{i}"
            if slot["kind"] == "param":
                inputs = m.get("inputs", [])
                index = slot["index"]
                name = inputs[index]["name"] if index < len(inputs) else f"param{index}"
                label = _quote(f"{name}: {_shape(slot)}")
                lines.append(f"    {node} [label={label}, shape=ellipse];")
                writer[i] = node
            elif slot["kind"] == "weight":
                label = _quote(f"{slot['name']}: {_shape(slot)}")
                lines.append(f"    {node} [label={label}, shape=note, color=gray50, "
                             "fontcolor=gray30];")
                writer[i] = node
        count = 0
        for k, ins in enumerate(fn["instructions"]):
            node = f"{prefix}_i{k}"
            outs = ", ".join(_shape(slots[o]) for o in ins["outs"])
            if OP_DEFS.get(ins["op"]) in COLLECTIVE_OPS:
                label = f"#{count} {ins['op']}\\n{outs}"
                lines.append(f"    {node} [label=\"{label}\", style=\"filled,bold\", "
                             "fillcolor=\"#f4a6a6\", color=red, penwidth=2];")
                seen.setdefault(count, []).append(node)
                count += 1
            else:
                lines.append(f"    {node} [label=\"{ins['op']}\\n{outs}\"];")
            for a in ins["args"]:
                if a in writer:
                    lines.append(f"    {writer[a]} -> {node};")
            for o in ins["outs"]:
                writer[o] = node
        for r, slot in enumerate(fn["results"]):
            out = f"{prefix}_out{r}"
            name = m["outputs"][r]["name"] if r < len(m.get("outputs", [])) else f"out{r}"
            label = _quote(f"{name}: {_shape(slots[slot])}")
            lines.append(f"    {out} [label={label}, shape=ellipse, style=dashed];")
            if slot in writer:
                lines.append(f"    {writer[slot]} -> {out};")
        lines.append("  }")
    for nodes in seen.values():
        for a, b in zip(nodes, nodes[1:], strict=False):
            lines.append(f"  {a} -> {b} [dir=both, style=dashed, color=red, constraint=false];")
    lines.append("}")
    return "\n".join(lines) + "\n"
