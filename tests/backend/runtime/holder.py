"""A process that takes NeuronCores the way an application does, for the exclusivity tests.

`python -m tests.backend.runtime.holder [NEFF [RANK WORLD GROUP]]`: initializes a Runtime from its
environment, loads NEFF when given (as rank RANK of WORLD in collective group GROUP when
those are given), prints one JSON line - {"ok": true, "pid", "cores"} or
{"ok": false, "status", "message"} - then holds its cores until stdin closes.
"""

from __future__ import annotations

import json
import os
import sys

from nxcc.backend.runtime.nrt import Runtime
from nxcc.backend.runtime.status import NrtError


def main() -> int:
    rt = Runtime()
    try:
        rt.init()
        if len(sys.argv) > 4:
            rank, world, group = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
            rt.load_collectives(sys.argv[1], rank=rank, world_size=world, group=group)
        elif len(sys.argv) > 1:
            rt.load(sys.argv[1])
    except NrtError as exc:
        print(json.dumps({"ok": False, "status": int(exc.status), "message": str(exc)}),
              flush=True)
        return 1
    print(json.dumps({"ok": True, "pid": os.getpid(), "cores": list(rt.cores)}), flush=True)
    sys.stdin.read()
    rt.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
