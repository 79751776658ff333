"""`python -m tests.fuzz.blackbox --cases 300 --seed 99`: a black-box campaign whose mutants
the suite's own mutators never make.

Where `python -m tests.fuzz` mutates each kind through its structure with hypothesis, this
campaign knows nothing of the formats beyond "bytes", "text" and "zip": it draws from
Python's `random.Random(seed)` and combines seeds and mutations the structured kinds do not
(crossover of two seeds of a kind at random points; a chunk repeated hundreds of times or
swapped with another; runs of 0x00/0xff/0x7f/0x80; every decimal number in a text nudged
to a neighbour or an extreme; a bracket or quote dropped or doubled; zip members swapped
between seeds, emptied, recompressed (deflate, bzip2, LZMA) or truncated). Each mutant goes
through its kind's commands and `check` under the same limits as the suite (a time limit per
case, the address space capped), and is judged the same way (`harness.run_case`).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import random
import re
import sys
import tempfile
import time
import zipfile
from collections import Counter
from pathlib import Path

from tests.fuzz.__main__ import cap_memory
from tests.fuzz.harness import FAILING, Kind, run_case
from tests.fuzz.kinds import KINDS

INTERESTING = (b"\x00", b"\xff", b"\x7f", b"\x80", b"\x00\x00\x00\x80", b"\xff\xff\xff\xff",
               b"\x00" * 8, b"\xff" * 8)
NUMBER = re.compile(rb"-?\d+")
EXTREMES = (b"0", b"-1", b"1", b"2147483648", b"-2147483649", b"4294967296",
            b"9223372036854775808", b"1" + b"0" * 30, b"99999999999999999999999")
BRACKETS = b"[](){}<>\"'"


def crossover(a: bytes, b: bytes, rng: random.Random) -> bytes:
    return a[:rng.randint(0, len(a))] + b[rng.randint(0, len(b)):]


def chunk_ops(raw: bytes, rng: random.Random) -> bytes:
    buf = bytearray(raw) or bytearray(b"\x00")
    i = rng.randrange(len(buf))
    j = min(len(buf), i + rng.randint(1, 256))
    op = rng.choice(("repeat", "swap", "delete", "interesting", "flip"))
    if op == "repeat":
        buf[j:j] = buf[i:j] * rng.choice((2, 10, 100, 1000))
    elif op == "swap":
        k = rng.randrange(len(buf))
        a, b = bytes(buf[i:j]), bytes(buf[k:k + (j - i)])
        buf[i:j], buf[k:k + len(b)] = b, a
    elif op == "delete":
        del buf[i:j]
    elif op == "interesting":
        value = rng.choice(INTERESTING)
        buf[i:i + len(value)] = value
    else:
        for _ in range(rng.randint(1, 32)):
            k = rng.randrange(len(buf))
            buf[k] ^= 1 << rng.randrange(8)
    return bytes(buf)


def text_ops(raw: bytes, rng: random.Random) -> bytes:
    op = rng.choice(("number", "number", "bracket", "lines"))
    if op == "number":
        found = list(NUMBER.finditer(raw))
        if not found:
            return chunk_ops(raw, rng)
        for m in rng.sample(found, min(len(found), rng.randint(1, 3))):
            value = int(m.group())
            new = rng.choice((str(value + 1).encode(), str(value - 1).encode(),
                              str(-value).encode(), rng.choice(EXTREMES)))
            raw = raw[:m.start()] + new + raw[m.end():] if len(new) == len(m.group()) else \
                raw.replace(m.group(), new, 1)
        return raw
    if op == "bracket":
        spots = [i for i, c in enumerate(raw) if c in BRACKETS]
        if not spots:
            return chunk_ops(raw, rng)
        i = rng.choice(spots)
        return raw[:i] + (raw[i:i + 1] * rng.choice((0, 2, 50))) + raw[i + 1:]
    lines = raw.split(b"\n")
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    if rng.random() < 0.5:
        lines.insert(rng.randrange(len(lines) + 1), lines[rng.randrange(len(lines))])
    return b"\n".join(lines)


def _members(raw: bytes) -> list[tuple[str, bytes]] | None:
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as z:
            return [(i.filename, z.read(i)) for i in z.infolist()]
    except Exception:  # noqa: BLE001 - not an archive zipfile reads
        return None


def zip_ops(raw: bytes, other: bytes, rng: random.Random) -> bytes:
    mine, theirs = _members(raw), _members(other)
    if not mine:
        return chunk_ops(raw, rng)
    op = rng.choice(("foreign", "empty", "recompress", "inner", "truncate"))
    k = rng.randrange(len(mine))
    method = zipfile.ZIP_STORED
    if op == "foreign" and theirs:
        mine[k] = (mine[k][0], rng.choice(theirs)[1])
    elif op == "empty":
        mine[k] = (mine[k][0], b"")
    elif op == "recompress":
        method = rng.choice((zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA))
    elif op == "inner":
        name, body = mine[k]
        mine[k] = (name, zip_ops(body, body, rng) if body[:2] == b"PK" else chunk_ops(body, rng))
    else:
        name, body = mine[k]
        mine[k] = (name, body[:rng.randint(0, len(body))])
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=method) as z:
        for name, body in mine:
            z.writestr(name, body)
    return buf.getvalue()


TEXT_KINDS = {"hlo", "stablehlo", "yaml"}
ZIP_KINDS = {"npz", "state", "checkpoint", "cache"}


def mutant(kind: Kind, corpus: list[bytes], rng: random.Random) -> bytes:
    raw, other = rng.choice(corpus), rng.choice(corpus)
    for _ in range(rng.randint(1, 3)):
        roll = rng.random()
        if roll < 0.2:
            raw = crossover(raw, other, rng)
        elif kind.name in ZIP_KINDS and roll < 0.75:
            raw = zip_ops(raw, other, rng)
        elif kind.name in TEXT_KINDS and roll < 0.75:
            raw = text_ops(raw, rng)
        else:
            raw = chunk_ops(raw, rng)
    return raw


def campaign(kind: Kind, cases: int, work: Path, failures: Path, seed: int,
             limit: float) -> tuple[Counter, dict[str, Path], float]:
    work.mkdir(parents=True, exist_ok=True)
    corpus = kind.seeds(work)
    rng = random.Random(f"{kind.name}:{seed}")
    counts: Counter = Counter()
    failed: dict[str, Path] = {}
    start = time.perf_counter()
    for _ in range(cases):
        data = mutant(kind, corpus, rng)
        status, reason = run_case(kind, data, work, limit)
        counts[status] += 1
        if status in FAILING:
            target = failures / kind.name / (hashlib.sha256(data).hexdigest()[:16] + ".bin")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            failed[str(reason)] = target
    return counts, failed, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.blackbox", description=__doc__)
    parser.add_argument("--kind", action="append", choices=sorted(KINDS))
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--time-limit", type=float, default=20.0)
    parser.add_argument("--memory-gib", type=float, default=2.0)
    parser.add_argument("--failures", type=Path, default=Path("fuzz-failures-blackbox"))
    args = parser.parse_args(argv)
    os.environ.setdefault("NEURON_RT_EXEC_TIMEOUT", "5")
    bad = 0
    failures = args.failures.resolve()
    with tempfile.TemporaryDirectory(prefix="nxcc-blackbox-") as tmp:
        os.environ["NXCC_RUNTIME_DIR"] = str(Path(tmp) / "runtime")
        os.environ["NEURON_COMPILE_CACHE_URL"] = str(Path(tmp) / "compile-cache")
        os.chdir(tmp)
        cap_memory(args.memory_gib)
        for name in args.kind or sorted(KINDS):
            counts, failed, seconds = campaign(KINDS[name], args.cases, Path(tmp) / name,
                                               failures, args.seed, args.time_limit)
            print(f"{name}: {sum(counts.values())} cases in {seconds:.1f} s: "
                  + ", ".join(f"{counts[k]} {k}" for k in
                              ("ok", "refused", "uncoded", "crash", "hang", "memory",
                               "wrong")), flush=True)
            for reason, path in failed.items():
                print(f"  FAIL {path}: {reason[:300]}", flush=True)
            bad += len(failed)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
