"""The module header's ``input_output_alias`` (JAX writes it for donated arguments).

    input_output_alias={ {0}: (0, {}, may-alias), {1}: (3, {}, must-alias) }

says output 0 (element 0 of the root tuple) may reuse parameter 0's buffer, output 1
parameter 3's. Entries naming a part of a tuple-shaped parameter, or an element of a
nested output tuple, are not supported.
"""

from __future__ import annotations

import re

from nxcc.compiler.hlo.errors import SEMANTIC, HloError
from nxcc.compiler.hlo.nodes import HloModule

_ENTRY = re.compile(r"\{\s*([\d,\s]*)\}\s*:\s*\(\s*(\d+)\s*,\s*\{\s*([\d,\s]*)\}\s*"
                    r"(?:,\s*([\w-]+)\s*)?\)")


def input_output_aliases(hlo: HloModule) -> list[tuple[int, int]]:
    """(output index, parameter number) for each alias of the header; HloError if one
    cannot be represented."""
    attr = hlo.attrs.get("input_output_alias")
    if attr is None:
        return []
    out = []
    for m in _ENTRY.finditer(attr.raw):
        output = [int(i) for i in m.group(1).replace(",", " ").split()]
        param_index = m.group(3).strip()
        if len(output) > 1 or param_index:
            raise HloError(f"input_output_alias entry '{m.group(0)}': only whole parameters "
                           "aliased to top-level outputs are supported", hlo.source,
                           attr.offset, SEMANTIC)
        out.append((output[0] if output else 0, int(m.group(2))))
    return out

