"""A plan as pictures: one step's 1F1B schedule as a Perfetto trace, the HBM as a chart.

`perfetto_trace(plan)` is a trace in the Chrome JSON format Perfetto (ui.perfetto.dev) and
chrome://tracing open: one track per pipeline stage (one rank of it), a slice per forward
and backward of each micro-batch, inside them the TP communication and (in a backward)
what the recomputation policy repeats, `bubble` slices where the stage waits, and after
its last backward the exposed DP reduction, the optimizer update and the ZeRO-1
all-gather. Times are microseconds from the step's start.

`hbm_svg(plan)` is an SVG bar chart: per stage, its core's HBM stacked by kind, against
the core's capacity.
"""

from __future__ import annotations

from dataclasses import replace
from html import escape

from nxcc.backend.program.estimate import engine_seconds
from nxcc.driver.plan.plan import HBM_KEYS, Plan, StageCost
from nxcc.driver.plan.report import LABELS
from nxcc.driver.plan.stages import stage_figures

US = 1e6
COLORS = {"parameters": "#4e79a7", "gradients": "#f28e2b", "optimizer_state": "#e15759",
          "master_weights": "#76b7b2", "activations": "#59a14f", "scratch": "#edc948",
          "collective_buffers": "#b07aa1", "runtime_reserve": "#9c755f"}


def recompute_seconds(plan: Plan) -> list[float]:
    """Per stage, the seconds of engine work the recomputation policy adds to one
    micro-batch's backward (its programs against the same stage built to recompute
    nothing)."""
    model = plan.config.model
    if model is None or not model.activations_checkpoint_granularity:
        return [0.0] * len(plan.stages)
    plain = replace(plan.config, model=replace(model,
                                               activations_checkpoint_granularity=None))
    chip, lnc, eff = plan.machine.chip, plan.machine.lnc, plan.efficiency
    out = []
    for s in range(len(plan.stages)):
        now = stage_figures(plan.config, plan.pipeline, s).programs
        before = stage_figures(plain, plan.pipeline, s).programs
        name = "forward_backward" if "forward_backward" in now else "backward"
        out.append(max(0.0, engine_seconds(now[name].work, chip, lnc, eff)
                       - engine_seconds(before[name].work, chip, lnc, eff)))
    return out


def _slice(name: str, cat: str, stage: int, start: float, dur: float,
           args: dict | None = None) -> dict:
    event = {"name": name, "cat": cat, "ph": "X", "pid": 0, "tid": stage,
             "ts": round(start * US, 3), "dur": round(dur * US, 3)}
    if args:
        event["args"] = args
    return event


def perfetto_trace(plan: Plan) -> dict:
    """The step's schedule as a Chrome/Perfetto JSON trace (see the module docstring)."""
    recompute = recompute_seconds(plan)
    events: list[dict] = [{"name": "process_name", "ph": "M", "pid": 0,
                           "args": {"name": f"nxcc plan: {plan.config.name}, one step"}}]
    for cost, ops in zip(plan.stages, plan.timeline, strict=True):
        s = cost.stage
        events.append({"name": "thread_name", "ph": "M", "pid": 0, "tid": s,
                       "args": {"name": f"stage {s} ({cost.layers})"}})
        events.append({"name": "thread_sort_index", "ph": "M", "pid": 0, "tid": s,
                       "args": {"sort_index": s}})
        clock = 0.0
        for op in ops:
            if op.start > clock:
                events.append(_slice("bubble", "idle", s, clock, op.start - clock))
            clock = max(clock, op.end)
            if op.end <= op.start:
                continue
            events += _op_slices(cost, op.kind, op.micro_batch, op.start, op.end,
                                 recompute[s])
        for name, dur in (("DP reduction (exposed)", cost.dp_exposed_s),
                          ("optimizer", cost.optimizer_s),
                          ("ZeRO-1 all-gather", cost.gather_s)):
            if dur > 0:
                events.append(_slice(name, "after backward", s, clock, dur))
                clock += dur
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"step_time_s": plan.step_time_s, "config": plan.config.source}}


def _op_slices(cost: StageCost, kind: str, m: int, start: float, end: float,
               recompute: float) -> list[dict]:
    """A forward or backward slice with its communication and recomputation inside."""
    s = cost.stage
    whole = "forward" if kind == "F" else "backward"
    if cost.backward_s == 0 and kind == "F":
        whole = "forward_backward"  # the last stage runs both at once
    out = [_slice(f"{kind}{m}", whole, s, start, end - start, {"micro_batch": m})]
    comm = cost.forward_communication_s if kind == "F" else cost.backward_communication_s
    redo = recompute if (kind == "B" or whole == "forward_backward") else 0.0
    redo = min(redo, max(end - start - comm, 0.0))
    if redo > 0:
        out.append(_slice("recompute", "recompute", s, start, redo))
    if comm > 0:
        out.append(_slice("TP communication", "communication", s, end - comm, comm))
    return out


def hbm_svg(plan: Plan) -> str:
    """The HBM per core of each stage as a stacked horizontal bar chart (SVG text)."""
    rows = plan.stages
    bar, gap, left, top, width = 18, 6, 150, 40, 560
    top_bytes = max(plan.capacity, max(s.hbm["total"] for s in rows))
    scale = width / top_bytes
    legend_y = top + len(rows) * (bar + gap) + 20
    height = legend_y + 20 * ((len(HBM_KEYS) + 1) // 2) + 20
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 40}" '
             f'height="{height}" font-family="sans-serif" font-size="11">',
             f'<text x="{left}" y="18" font-size="13">HBM per NeuronCore: '
             f'{escape(plan.config.name)} on {plan.machine.nodes} x '
             f'{escape(plan.machine.instance.name)} (GiB)</text>']
    for i, cost in enumerate(rows):
        y = top + i * (bar + gap)
        parts.append(f'<text x="{left - 6}" y="{y + 13}" text-anchor="end">stage '
                     f'{cost.stage}</text>')
        x = float(left)
        for key in HBM_KEYS:
            w = cost.hbm[key] * scale
            if w > 0:
                parts.append(f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{bar}" '
                             f'fill="{COLORS[key]}"><title>{LABELS[key]}: '
                             f'{cost.hbm[key] / 2**30:.3f} GiB</title></rect>')
            x += w
        parts.append(f'<text x="{x + 4:.2f}" y="{y + 13}">'
                     f'{cost.hbm["total"] / 2**30:.2f}</text>')
    cap = left + plan.capacity * scale
    parts.append(f'<line x1="{cap:.2f}" y1="{top - 6}" x2="{cap:.2f}" y2="{legend_y - 14}" '
                 'stroke="#d00" stroke-dasharray="4 3"/>')
    parts.append(f'<text x="{cap:.2f}" y="{top - 10}" text-anchor="middle" fill="#d00">'
                 f'capacity {plan.capacity / 2**30:.1f}</text>')
    for i, key in enumerate(HBM_KEYS):
        x = left + (i % 2) * 260
        y = legend_y + (i // 2) * 20
        parts.append(f'<rect x="{x}" y="{y}" width="12" height="12" fill="{COLORS[key]}"/>'
                     f'<text x="{x + 18}" y="{y + 10}">{LABELS[key]}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
