"""The simulated instance types as data: devices, cores, LNC grouping, memory and links.

Built from the one table of published hardware figures, `ir.hardware` (which also gives
the rates the estimates use); `Instance` is the runtime's view of an instance type.

Which instance is simulated (`choose_instance`):

1. `NXCC_INSTANCE_TYPE` when set;
2. otherwise the instance of the NEFF's target family: trn1 -> trn1.32xlarge,
   trn1n -> trn1n.32xlarge, inf2 -> inf2.48xlarge, trn2 -> trn2.48xlarge,
   trn3 -> trn3-server (see below);
3. with neither (e.g. `neuronx-cc ls` with no NEFF), `DEFAULT_INSTANCE` (trn1.32xlarge).

NeuronCores are numbered as the runtime exposes them: logical core L under LNC g is made of
the physical cores L*g .. L*g+g-1, and physical core p sits on device p // cores_per_device.
inf1.xlarge and inf1.6xlarge (NeuronCore-v1, which nxcc compiles nothing for) are here only
because the allocation seed's examples are written for them; no NEFF loads on them.

`trn3-server` (one Trn3 UltraServer server: 16 Trainium3 devices all-to-all through
NeuronSwitch, `switch`) is nxcc's name, not an EC2 instance type (`ir.hardware` says which
of its figures are published and which assumed).
"""

from __future__ import annotations

from dataclasses import dataclass

from nxcc.ir.hardware import DEFAULT_INSTANCE_FOR_TARGET, INSTANCE_TYPES, GiB, InstanceType

GB = GiB

GENERATION = {t.family: t.chip.generation for t in INSTANCE_TYPES.values()}
"""NeuronCore architecture generation of each target/instance family (v1 .. v4)."""

DEFAULT_INSTANCE = "trn1.32xlarge"


@dataclass(frozen=True)
class Instance:
    """One instance type. `topology` is "single", "ring", "torus" (2D, `torus_shape`) or
    "switch" (every device reaches every other)."""

    name: str
    family: str
    device_kind: str
    core_kind: str
    devices: int
    cores_per_device: int
    hbm_per_device: int
    hbm_banks_per_device: int
    topology: str
    torus_shape: tuple[int, int] | None = None
    lnc_choices: tuple[int, ...] = (1,)
    default_lnc: int = 1
    efa: bool = False

    @property
    def physical_cores(self) -> int:
        return self.devices * self.cores_per_device

    @property
    def generation(self) -> int:
        return GENERATION[self.family]

    def logical_cores(self, lnc: int) -> int:
        """How many NeuronCores the runtime exposes at this LNC."""
        return self.physical_cores // lnc

    def physical_of(self, logical: int, lnc: int) -> tuple[int, ...]:
        """The physical cores that make up logical core `logical`."""
        return tuple(range(logical * lnc, logical * lnc + lnc))

    def device_of(self, logical: int, lnc: int) -> int:
        return logical * lnc // self.cores_per_device

    def logical_per_device(self, lnc: int) -> int:
        return self.cores_per_device // lnc

    def connected(self, device: int) -> tuple[int, ...]:
        """The devices `device` has NeuronLinks to, sorted."""
        n = self.devices
        if self.topology == "switch":
            return tuple(d for d in range(n) if d != device)
        if self.topology == "ring" and n > 1:
            return tuple(sorted({(device - 1) % n, (device + 1) % n} - {device}))
        if self.topology == "torus" and self.torus_shape is not None:
            rows, cols = self.torus_shape
            r, c = divmod(device, cols)
            near = {((r - 1) % rows) * cols + c, ((r + 1) % rows) * cols + c,
                    r * cols + (c - 1) % cols, r * cols + (c + 1) % cols}
            return tuple(sorted(near - {device}))
        return ()

    def describe_topology(self) -> str:
        if self.topology == "torus" and self.torus_shape is not None:
            return f"{self.torus_shape[0]}x{self.torus_shape[1]} 2D torus"
        if self.topology == "ring":
            return f"ring of {self.devices} devices"
        if self.topology == "switch":
            return f"{self.devices} devices all-to-all"
        return "single device"


def _instance(t: InstanceType) -> Instance:
    return Instance(t.name, t.family, t.chip.name, t.chip.core_kind, t.chips, t.chip.cores,
                    t.chip.hbm_bytes, t.chip.hbm_banks, t.topology, t.torus_shape,
                    lnc_choices=t.lnc_choices, default_lnc=t.default_lnc,
                    efa=t.efa_bytes_per_s > 0)


INSTANCES: dict[str, Instance] = {name: _instance(t) for name, t in INSTANCE_TYPES.items()}


def choose_instance(instance_type: str | None, target: str | None) -> Instance:
    """NXCC_INSTANCE_TYPE's instance, else the target family's, else DEFAULT_INSTANCE."""
    if instance_type:
        return INSTANCES[instance_type]
    if target in DEFAULT_INSTANCE_FOR_TARGET:
        return INSTANCES[DEFAULT_INSTANCE_FOR_TARGET[target]]
    return INSTANCES[DEFAULT_INSTANCE]
