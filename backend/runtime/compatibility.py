"""Whether a NEFF may load on the simulated instance: architecture and logical core size.

- A NEFF for a newer NeuronCore than the instance's (trn2 NEFF on trn1) never loads.
- A NEFF for an older one (trn1 or inf2 NEFF on trn2) loads only with
  NEURON_RT_ALLOW_LEGACY_NEFF=TRUE. trn1, trn1n and inf2 share NeuronCore-v2 and load on
  each other's instances.
- The NEFF's `lnc_size` must equal the runtime's logical NeuronCore config.
"""

from __future__ import annotations

from nxcc.backend.neff import NeffFile
from nxcc.backend.runtime.status import NrtError, NrtStatus
from nxcc.backend.runtime.topology import GENERATION, Instance


def needed_cores(neff: NeffFile) -> int:
    """Logical cores one copy of the model spans (its physical programs / its LNC)."""
    lnc = max(1, neff.header.lnc_size)
    programs = max(neff.header.num_tpb, len(neff.manifest.get("subgraphs", [])), 1)
    return max(1, programs // lnc)


def check_architecture(neff: NeffFile, instance: Instance, allow_legacy: bool) -> None:
    """NrtError(UNSUPPORTED_NEFF_VERSION) unless the NEFF's target can run on `instance`."""
    target = neff.manifest.get("target")
    if target not in GENERATION:
        return
    name = neff.header.name or neff.path.name
    have, want = instance.generation, GENERATION[target]
    if want > have:
        raise NrtError(NrtStatus.UNSUPPORTED_NEFF_VERSION,
                       f"NEFF '{name}' was compiled for {target}, a newer architecture than "
                       f"{instance.name} ({instance.core_kind}); recompile with --target "
                       f"{_family_target(instance)} or set NXCC_INSTANCE_TYPE to a {target} "
                       "instance")
    if want < have and not allow_legacy:
        raise NrtError(NrtStatus.UNSUPPORTED_NEFF_VERSION,
                       f"NEFF '{name}' was compiled for {target}, an older architecture than "
                       f"{instance.name} ({instance.core_kind}); recompile with --target "
                       f"{_family_target(instance)}, or set NEURON_RT_ALLOW_LEGACY_NEFF=TRUE "
                       "to run it anyway (not every legacy NEFF is compatible)")


def check_lnc(neff: NeffFile, instance: Instance, lnc: int, configured: bool) -> None:
    """NrtError(INVALID) unless the NEFF's LNC equals the runtime's, naming both fixes."""
    have = neff.header.lnc_size
    if have == lnc:
        return
    name = neff.header.name or neff.path.name
    source = ("NEURON_LOGICAL_NC_CONFIG" if configured
              else f"NEURON_LOGICAL_NC_CONFIG (unset: {instance.name}'s default)")
    if have in instance.lnc_choices:
        second = f"set NEURON_LOGICAL_NC_CONFIG={have}"
    else:
        second = f"run it on an instance that offers LNC {have} with NEURON_LOGICAL_NC_CONFIG=" \
                 f"{have}"
    raise NrtError(NrtStatus.INVALID,
                   f"NEFF '{name}' was compiled with logical NeuronCore config {have} "
                   f"(-lnc {have}) but the runtime's {source} is {lnc}; recompile with "
                   f"-lnc {lnc}, or {second}")


def _family_target(instance: Instance) -> str:
    return "trn1" if instance.family == "trn1n" else instance.family
