"""The guide's catalogues equal the code's: the runtime's environment variables
(docs/runtime.md) and the keys of `neuronx-cc train` (docs/training.md).

A catalogue is the table right after an HTML comment `<!-- catalogue: NAME -->`; the
backticked names in its first column are its entries.
"""

from __future__ import annotations

import re
from pathlib import Path

from nxcc.backend.runtime import config
from nxcc.driver.train import config_keys
from tests.docs.blocks import REPO

_NAME = re.compile(r"`([^`]+)`")


def catalogue(page: Path, name: str) -> set[str]:
    """The entries of catalogue `name` on `page` (empty if it has none)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    marker = f"<!-- catalogue: {name} -->"
    if marker not in lines:
        return set()
    entries: set[str] = set()
    for line in lines[lines.index(marker) + 1:]:
        if not line.startswith("|"):
            if entries:
                break
            continue
        first = line.split("|")[1]
        entries.update(_NAME.findall(first))
    return entries


def test_every_runtime_variable_is_documented() -> None:
    source = Path(config.__file__).read_text(encoding="utf-8")
    own = set(re.findall(r'"(NXCC_[A-Z_]+|NEURON_LOGICAL_NC_CONFIG)"', source))
    known = set(config.KNOWN_VARIABLES) | own
    documented = catalogue(REPO / "docs" / "runtime.md", "runtime-variables")
    assert not known - documented, f"docs/runtime.md misses {sorted(known - documented)}"
    assert not documented - known, (f"docs/runtime.md lists {sorted(documented - known)}, "
                                    "which the runtime does not read")


def test_every_train_key_acted_on_is_documented() -> None:
    documented = catalogue(REPO / "docs" / "training.md", "train-keys")
    acted = set(config_keys.ACTED)
    missing = {k: config_keys.ACTED[k] for k in sorted(acted - documented)}
    assert not missing, f"docs/training.md misses keys nxcc acts on: {missing}"
    assert not documented - acted, (f"docs/training.md lists {sorted(documented - acted)}, "
                                    "which nxcc does not act on")


def test_the_neutral_and_refused_keys_are_documented() -> None:
    documented = catalogue(REPO / "docs" / "training.md", "train-keys-off")
    expected = set(config_keys.NEUTRAL) | set(config_keys.REFUSED_SUBTREES)
    assert documented == expected, (f"missing {sorted(expected - documented)}, "
                                    f"stale {sorted(documented - expected)}")
