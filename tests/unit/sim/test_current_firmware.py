"""`sim up --current-firmware N`: the last N NPU servers ship with the spec's firmware in flash (the drivers
phase must find them current although a factory firmware leaves no version.info), the others with an
older one."""

from __future__ import annotations

from ascend_sim.spec_writer import FACTORY_FIRMWARE, FIRMWARE_VERSION, hardware_json
from ascend_sim.state import ClusterState, SimServer

SERVERS = [
    SimServer("a2-01", "127.0.0.2", ["npu"], True),
    SimServer("a2-02", "127.0.0.3", ["npu"], True),
    SimServer("gw-01", "127.0.0.4", ["gateway"], False),
]


def _state(current: int) -> ClusterState:
    return ClusterState("fw", "atlas-800t-a2", 2, True, False, servers=SERVERS, current_firmware=current)


def test_the_last_npu_servers_ship_the_spec_firmware() -> None:
    assert _state(0).factory_current() == set()
    assert _state(1).factory_current() == {"a2-02"}
    assert _state(2).factory_current() == {"a2-01", "a2-02"}
    assert hardware_json("atlas-800t-a2", SERVERS[1], current_firmware=True)["firmware_version"] == (
        FIRMWARE_VERSION
    )
    assert hardware_json("atlas-800t-a2", SERVERS[0])["firmware_version"] == FACTORY_FIRMWARE
    assert FACTORY_FIRMWARE != FIRMWARE_VERSION


def test_a_cluster_with_current_firmware_has_another_shape() -> None:
    assert not _state(1).same_shape(_state(0))
    assert "1 with current factory firmware" in _state(1).describe()
