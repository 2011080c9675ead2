"""ascend.npu.hccn_ping against the simulator's fake hccn_tool under a temp ASCEND_SIM_ROOT: a configured host
passes; a link down, a net health that is not Success and an unreachable peer each fail the gate naming the
host, the local NPU, the peer and the command that reproduces it; it never changes a file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.unit.collection.hccn_helpers import MASK, configured, devices, run_module, snapshot
from tests.unit.sim.ascend_fake_helpers import FAKES, PYTHON, put

# What a loaded host can do to the module's threads (how test_local_link_down_and_net_health_are_named failed
# under load in CI): a thread whose select() ran out its timeout with nothing to read gets the CPU back only
# once the command it waits for has written its output and exited. Loaded as the module's sitecustomize.
DESCHEDULED = """
import select
import selectors
import time


class Descheduled(selectors.PollSelector):
    def select(self, timeout=None):
        events = super().select(timeout)
        if events or timeout is None:
            return events
        hangup = select.poll()
        for key in self.get_map().values():
            hangup.register(key.fd, 0)  # no event asked: poll reports only the writer's close (POLLHUP)
        pending, deadline = len(self.get_map()), time.monotonic() + 60
        while pending and time.monotonic() < deadline:
            for fd, _ in hangup.poll(1000):
                hangup.unregister(fd)
                pending -= 1
        time.sleep(0.2)  # its pipes closed as it exited: it has exited by now
        return []


selectors.PollSelector = Descheduled
"""
SILENT_S = 1.5  # longer than the 1 s select() timeout of AnsibleModule.run_command


def peer_server(root: Path, name: str, base: int, *, down: tuple[int, ...] = ()) -> list[dict[str, Any]]:
    """Another server on the shared fabric (what its own hccn_tool mirrors there): 8 NICs from 10.0.0.<base>,
    and the peer list the planner would give this host for it."""
    entries = {
        str(i): {
            "address": f"10.0.0.{base + i}",
            "netmask": MASK,
            "gateway": "10.0.0.1",
            "link": "DOWN" if i in down else "UP",
        }
        for i in range(8)
    }
    put(root, f"/var/lib/ascend-sim/fabric/{name}.json", entries)
    return [{"server": name, "index": i, "address": f"10.0.0.{base + i}"} for i in range(8)]


def gate(root: Path, peers: list[dict[str, Any]], check: bool = False, **extra: Any) -> dict[str, Any]:
    args = {"devices": devices(), "peers": peers, "host": "node-1", **extra}
    return run_module(root, "hccn_ping", args, check=check)


def test_configured_hosts_pass_and_nothing_changes(tmp_path: Path) -> None:
    root = configured(tmp_path)
    peers = peer_server(root, "node-2", 20)
    before = snapshot(root)
    res = gate(root, peers)
    assert res.get("failed") is None and res["changed"] is False, res
    assert res["links"] == {str(i): "UP" for i in range(8)}
    assert res["health"] == {str(i): "Success" for i in range(8)}
    assert len(res["pairs"]) == 64 and all(p["received"] == 3 and p["loss"] == 0.0 for p in res["pairs"])
    assert res["msg"] == "8 NPU NICs up, 64 pings to 8 peer NICs answered"
    assert snapshot(root) == before
    same = gate(root, peers, pairs="same_index", check=True)
    assert [(p["device"], p["peer_index"]) for p in same["pairs"]] == [(i, i) for i in range(8)]
    assert same["pairs"][2]["command"] == "hccn_tool -i 2 -ping -g address 10.0.0.22"


def test_unreachable_peer_names_host_npu_peer_and_command(tmp_path: Path) -> None:
    root = configured(tmp_path)
    peers = peer_server(root, "node-2", 20, down=(5,))
    res = gate(root, peers, pairs="same_index", pkt=9000)  # payload bytes: still 3 packets
    assert res["failed"] and res["failures"] == [
        "node-1 device 5 (10.0.0.15) -> node-2 device 5 (10.0.0.25): 3 packets transmitted, 0 received, "
        "100.00% packet loss (reproduce on node-1: hccn_tool -i 5 -ping -g address 10.0.0.25 pkt 9000)"
    ]
    assert res["msg"].startswith("NPU network gate failed on node-1: 1 problem(s). node-1 device 5")


def test_pkt_is_a_payload_size_in_bytes(tmp_path: Path) -> None:
    """hccn_tool's `pkt N` is the payload in bytes, at most 65535 - 20 - 8 (parse_data_len_param, ds_net_ext.h
    MAX_DATA_LEN, src/custom/network/hccn/ascend910B/hccn_product_ext of github.com/verylucky01/driver at
    e29d066f); not given, the tool's 4096 is used and no `pkt` is passed."""
    root = configured(tmp_path)
    peers = peer_server(root, "node-2", 20)
    res = gate(root, peers, pairs="same_index")
    assert res.get("failed") is None and all(p["sent"] == 3 for p in res["pairs"]), res
    assert res["pairs"][0]["command"] == "hccn_tool -i 0 -ping -g address 10.0.0.20"
    big = gate(root, peers, pairs="same_index", pkt=65507)
    assert big.get("failed") is None and big["pairs"][0]["command"].endswith(" pkt 65507"), big
    over = gate(root, peers, pairs="same_index", pkt=65508)
    assert over["failed"] and "payload size of each ping packet in bytes" in over["msg"], over


def test_local_link_down_and_net_health_are_named(tmp_path: Path) -> None:
    root = configured(tmp_path)
    peers = peer_server(root, "node-2", 20)
    put(root, "/var/lib/ascend-sim/faults.json", {"link_down": [2]})
    lean = [dict(d, netdetect=None) if d["index"] == 4 else d for d in devices()]
    res = run_module(
        root, "hccn_ping", {"devices": lean, "peers": peers, "host": "node-1", "pairs": "same_index"}
    )
    assert res["failed"]
    assert res["failures"] == [
        "node-1 device 2: link DOWN; its pings to peers were not tried (reproduce: hccn_tool -i 2 -link -g)"
    ]
    assert "2" not in res["health"] and "4" not in res["health"]  # down: not read; no netdetect: not checked
    assert [p["device"] for p in res["pairs"]] == [0, 1, 3, 4, 5, 6, 7]


def test_net_health_other_than_success_fails(tmp_path: Path) -> None:
    root = configured(tmp_path)
    # netdetect removed live (the driver re-applied a file without it): the NIC reports Init, sample 5c's
    # other states.
    conf = root / "etc/hccn.conf"
    conf.write_text(conf.read_text(encoding="utf-8").replace("netdetect_6=10.0.0.1\n", ""), encoding="utf-8")
    live = root / "var/lib/ascend-sim/hccn_live.json"
    data = json.loads(live.read_text(encoding="utf-8"))
    del data["devices"]["6"]["netdetect"]
    live.write_text(json.dumps(data), encoding="utf-8")
    res = gate(root, [])
    assert res["failed"] and res["failures"] == [
        "node-1 device 6: net health Init (netdetect 10.0.0.1; reproduce: hccn_tool -i 6 -net_health -g)"
    ]


def test_peer_outside_every_subnet_without_gateway_is_a_plan_error(tmp_path: Path) -> None:
    root = configured(tmp_path)
    no_gw = [dict(d, gateway=None) for d in devices()]
    far = [{"server": "node-9", "index": 0, "address": "10.9.0.10"}]
    res = run_module(root, "hccn_ping", {"devices": no_gw, "peers": far, "host": "node-1"})
    assert res["failed"] and res["failures"] == [
        "node-9 device 0 (10.9.0.10) is in no local NIC's subnet and no local NIC has a gateway: "
        "the HCCN plan cannot connect them"
    ]


def test_readings_of_commands_that_exit_while_the_module_waits_are_kept(tmp_path: Path) -> None:
    """test_local_link_down_and_net_health_are_named under the interleaving a loaded CI host produced: every
    hccn_tool call is silent for longer than a select() timeout of the module's reader, then writes and exits
    before the module's thread runs again. AnsibleModule.run_command then returns rc 0 with an empty stdout
    (its loop ends once the process has exited after an empty select, without reading the pipes: ansible/
    ansible#51393); the gate must still read every link, net health and ping."""
    root = configured(tmp_path)
    peers = peer_server(root, "node-2", 20)
    put(root, "/var/lib/ascend-sim/faults.json", {"link_down": [2]})
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(DESCHEDULED, encoding="utf-8")
    slow = tmp_path / "slow-bin" / "hccn_tool"
    slow.parent.mkdir()
    fake = FAKES / "hccn_tool.py"
    slow.write_text(f'#!/bin/sh\nsleep {SILENT_S}\nexec {PYTHON} -S {fake} "$@"\n', encoding="utf-8")
    slow.chmod(0o755)
    lean = [dict(d, netdetect=None) if d["index"] == 4 else d for d in devices()]
    args = {"devices": lean, "peers": peers, "host": "node-1", "pairs": "same_index"}
    res = run_module(root, "hccn_ping", args, tool=slow, site=site)
    assert res["failures"] == [
        "node-1 device 2: link DOWN; its pings to peers were not tried (reproduce: hccn_tool -i 2 -link -g)"
    ], res
    assert res["links"] == {str(i): "DOWN" if i == 2 else "UP" for i in range(8)}
    assert res["health"] == {str(i): "Success" for i in (0, 1, 3, 5, 6, 7)}
    assert [(p["device"], p["received"]) for p in res["pairs"]] == [(i, 3) for i in (0, 1, 3, 4, 5, 6, 7)]
