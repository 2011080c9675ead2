"""The root of the site spec."""

from __future__ import annotations

from pydantic import Field, StrictInt

from orchestrator.spec.bench import Bench
from orchestrator.spec.common import Name, SpecModel
from orchestrator.spec.gateway import Gateway
from orchestrator.spec.hardware import HardwareProfile, Server
from orchestrator.spec.image import Image
from orchestrator.spec.model import Model
from orchestrator.spec.network import Network
from orchestrator.spec.operations import Drift, Monitoring, Rollout
from orchestrator.spec.serving import Serving
from orchestrator.spec.software import OperatingSystem, Software
from orchestrator.spec.tuning import Tuning
from orchestrator.spec.version import SPEC_VERSION


class Ssh(SpecModel):
    user: str = Field("root", description="SSH user on every server.")
    key_file: str | None = Field(
        None, description="Private key on the controller (default: ssh-agent/ssh config)."
    )
    host_key_checking: bool = Field(True, description="Verify host keys (turn off only for throw-away labs).")
    known_hosts_file: str | None = Field(
        None, description="known_hosts to use instead of ~/.ssh/known_hosts."
    )
    become: bool = Field(False, description="Use sudo when user is not root.")


class SiteSpec(SpecModel):
    """One site: servers, their software, the model and how it is served and kept."""

    spec_version: StrictInt = Field(
        ge=1,
        le=SPEC_VERSION,
        description="Format of this file, written first: the release's current format is "
        f"{SPEC_VERSION}. A spec without it is format 0 (written before formats were numbered): "
        '`orchestrator migrate SITE` rewrites it (section "Spec format version" above).',
    )
    site: Name = Field(description="Site name (also the inventory folder name).")
    ssh: Ssh = Field(default_factory=Ssh)
    profiles: dict[str, HardwareProfile] = Field(min_length=1, description="Hardware profiles by name.")
    servers: list[Server] = Field(min_length=1)
    os: OperatingSystem
    software: Software
    network: Network = Field(default_factory=Network)
    tuning: Tuning = Field(default_factory=Tuning)
    image: Image = Field(default_factory=Image)
    model: Model
    serving: Serving
    rollout: Rollout = Field(default_factory=Rollout)
    gateway: Gateway = Field(default_factory=Gateway)
    monitoring: Monitoring = Field(default_factory=Monitoring)
    drift: Drift = Field(default_factory=Drift)
    bench: Bench = Field(default_factory=Bench)
