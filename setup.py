"""Maps the repository's layer folders into the one installed package, ``nxcc``.

The layers keep their folders at the top of the repository (``compiler/``, ``ir/``,
``passes/``, ``backend/``, ``cli/``, ``driver/``); installed, each is ``nxcc.<layer>``.
setuptools' ``package_dir`` does the mapping; the package list is computed here because
pyproject.toml's ``packages.find`` cannot prefix the packages it finds with ``nxcc.``.
Everything else about the distribution is in pyproject.toml.
"""

from setuptools import find_packages, setup

LAYERS = ("backend", "cli", "compiler", "driver", "ir", "nxd", "passes")

packages = ["nxcc", *(f"nxcc.{sub}" for sub in find_packages("nxcc"))]  # nxcc.torch, nxcc.jax
package_dir = {"nxcc": "nxcc"}
for layer in LAYERS:
    for name in [layer, *(f"{layer}.{sub}" for sub in find_packages(layer))]:
        packages.append(f"nxcc.{name}")
        package_dir[f"nxcc.{name}"] = name.replace(".", "/")

setup(packages=packages, package_dir=package_dir)
