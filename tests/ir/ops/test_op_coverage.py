"""Every op definition has what the compiler and runtime need: a type rule, a kernel, its
step plan (the executor's fast path, or "kernel only"), a sharding rule, a mesh partition
rule (or "runs on whole values") and a FLOP count. The test lists every gap, not just the
first."""

from __future__ import annotations

from nxcc.ir.flops import FLOPS
from nxcc.ir.kernels import KERNELS
from nxcc.ir.kernels.plan import PLANS
from nxcc.ir.opdef import all_opdefs
from nxcc.passes.mesh_partition.rules import MESH_RULES
from nxcc.passes.sharding.rules import RULES


def coverage_gaps() -> list[str]:
    """One line per (op, missing piece)."""
    gaps = []
    for opdef in all_opdefs():
        if not callable(opdef.type_rule):
            gaps.append(f"{opdef.name}: no type/shape rule")
        for what, table in (("kernel", KERNELS), ("step plan", PLANS),
                            ("sharding rule", RULES), ("mesh partition rule", MESH_RULES),
                            ("FLOP count", FLOPS)):
            if opdef not in table:
                gaps.append(f"{opdef.name}: no {what}")
    return gaps


def test_every_op_has_a_kernel_type_rule_sharding_rule_and_flop_count() -> None:
    gaps = coverage_gaps()
    assert not gaps, "ops missing pieces:\n" + "\n".join(gaps)


def test_tables_hold_only_core_op_definitions() -> None:
    defs = set(all_opdefs())
    for table in (KERNELS, PLANS, RULES, MESH_RULES, FLOPS):
        assert set(table) <= defs, table.what


def test_a_new_op_without_its_pieces_is_reported(monkeypatch) -> None:
    from nxcc.ir.opdef import OP_DEFS, OpDef

    all_opdefs()  # the core ops first, so that the fake op is not overwritten
    monkeypatch.setitem(OP_DEFS, "fake", OpDef("fake", lambda ts, attrs, module: ts))
    assert coverage_gaps() == ["fake: no kernel", "fake: no step plan", "fake: no sharding rule",
                               "fake: no mesh partition rule", "fake: no FLOP count"]
