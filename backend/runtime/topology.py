"""The simulated instance types as data: devices, cores, LNC grouping, memory and links.

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

Trn3: AWS publishes Trainium3 (eight NeuronCore-v4, 144 GiB of HBM per device, LNC 1 or 2)
and Trn3 UltraServers (Gen1: four servers of 16 devices; Gen2: 36 servers of 4), the devices
joined all-to-all through NeuronSwitch, but no instance sizes. `trn3-server` is one Gen1
server: 16 devices, all-to-all (`switch`), LNC 2 by default as on trn2, HBM in 4 banks per
device as on trn2 (assumed: not published). Its name is nxcc's, not an EC2 instance type.
"""

from __future__ import annotations

from dataclasses import dataclass

GB = 1024**3

GENERATION = {"inf1": 1, "trn1": 2, "trn1n": 2, "inf2": 2, "trn2": 3, "trn3": 4}
"""NeuronCore architecture generation of each target/instance family (v1 .. v4)."""

DEFAULT_INSTANCE_FOR_TARGET = {
    "trn1": "trn1.32xlarge",
    "trn1n": "trn1n.32xlarge",
    "inf2": "inf2.48xlarge",
    "trn2": "trn2.48xlarge",
    "trn3": "trn3-server",
}
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


def _trn1(name: str, devices: int, family: str = "trn1") -> Instance:
    return Instance(name, family, "Trainium", "NeuronCore-v2", devices, 2, 32 * GB, 2,
                    "torus" if devices == 16 else "single",
                    (4, 4) if devices == 16 else None, efa=devices == 16)


def _inf2(name: str, devices: int) -> Instance:
    return Instance(name, "inf2", "Inferentia2", "NeuronCore-v2", devices, 2, 32 * GB, 2,
                    "ring" if devices > 1 else "single")


def _trn2(name: str, devices: int) -> Instance:
    return Instance(name, "trn2", "Trainium2", "NeuronCore-v3", devices, 8, 96 * GB, 4,
                    "torus" if devices == 16 else "single",
                    (4, 4) if devices == 16 else None, lnc_choices=(1, 2), default_lnc=2,
                    efa=devices == 16)


def _trn3(name: str, devices: int) -> Instance:
    return Instance(name, "trn3", "Trainium3", "NeuronCore-v4", devices, 8, 144 * GB, 4,
                    "switch", lnc_choices=(1, 2), default_lnc=2, efa=True)


def _inf1(name: str, devices: int) -> Instance:
    return Instance(name, "inf1", "Inferentia", "NeuronCore-v1", devices, 4, 8 * GB, 1,
                    "ring" if devices > 1 else "single")


INSTANCES: dict[str, Instance] = {
    i.name: i
    for i in (
        _trn1("trn1.2xlarge", 1),
        _trn1("trn1.32xlarge", 16),
        _trn1("trn1n.32xlarge", 16, family="trn1n"),
        _inf2("inf2.xlarge", 1),
        _inf2("inf2.8xlarge", 1),
        _inf2("inf2.24xlarge", 6),
        _inf2("inf2.48xlarge", 12),
        _trn2("trn2.3xlarge", 1),
        _trn2("trn2.48xlarge", 16),
        _trn3("trn3-server", 16),
        _inf1("inf1.xlarge", 1),
        _inf1("inf1.6xlarge", 4),
    )
}


def choose_instance(instance_type: str | None, target: str | None) -> Instance:
    """NXCC_INSTANCE_TYPE's instance, else the target family's, else DEFAULT_INSTANCE."""
    if instance_type:
        return INSTANCES[instance_type]
    if target in DEFAULT_INSTANCE_FOR_TARGET:
        return INSTANCES[DEFAULT_INSTANCE_FOR_TARGET[target]]
    return INSTANCES[DEFAULT_INSTANCE]
