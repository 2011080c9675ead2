#!/usr/bin/python
# Copyright: ascend-orchestrator contributors
# Apache-2.0 (see the repository's pyproject.toml)
"""ascend.npu.hccn_ping: read-only gate over the NPU NICs of a host (links, net health, pings to peers)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: hccn_ping
short_description: Check the NPU NICs of a host - link up, net health, reachability of peer NPU NICs
description:
  - For every listed local device, C(hccn_tool -i N -link -g) must say C(UP) and, when the device has a
    netdetect address, C(hccn_tool -i N -net_health -g) must say C(Success).
  - Then every local device with its link up pings (C(hccn_tool -i N -ping -g address X)) every peer address
    it should reach - a peer in the device's subnet, or any peer when the device has a gateway - or, with
    C(pairs=same_index), only the peers of its own index. A pair passes when at least one packet comes back
    (the first is commonly lost to address resolution).
  - Fails naming every failed check - the local device, the peer server/device/address, the tool's summary
    line and the command that reproduces it. Never changes anything; supports check mode (same reads).
options:
  devices:
    description: The local NPU NICs (the same list ascend.npu.hccn takes; gateway/netdetect may be null).
    type: list
    elements: dict
    required: true
    suboptions:
      index: {description: Device (the physical id of hccn_tool -i N)., type: int, required: true}
      address: {description: IPv4 address of the NIC., type: str, required: true}
      netmask: {description: Netmask of the NIC., type: str, required: true}
      gateway: {description: Gateway of the NIC (reaches peers outside its subnet)., type: str}
      netdetect: {description: Netdetect address (net health is checked only with one)., type: str}
  peers:
    description: NPU NICs of other servers the local devices must reach.
    type: list
    elements: dict
    default: []
    suboptions:
      server: {description: Peer server name (for messages)., type: str, required: true}
      index: {description: Peer device index., type: int, required: true}
      address: {description: Peer NIC address., type: str, required: true}
  pairs:
    description: C(full) = every reachable peer from every local device; C(same_index) = peer index equals
      the local index.
    type: str
    choices: [full, same_index]
    default: full
  pkt:
    description:
      - Payload size of each ping packet in bytes (C(pkt N)), 0 to 65507; not given, the tool sends 4096.
      - It is not a packet count; every C(hccn_tool -ping) sends 3 packets (parse_data_len_param in
        src/custom/network/hccn/ascend910B/hccn_product_ext/tool_cmd.c of github.com/verylucky01/driver
        at e29d066f).
    type: int
  parallel:
    description: Pings run at once.
    type: int
    default: 8
  host:
    description: Name of this host in messages (e.g. the inventory hostname).
    type: str
    default: this host
  hccn_tool:
    description: Path of hccn_tool.
    type: path
    default: /usr/local/Ascend/driver/tools/hccn_tool
author: ascend-orchestrator
"""

EXAMPLES = r"""
- name: NPU network gate
  ascend.npu.hccn_ping:
    host: "{{ inventory_hostname }}"
    devices: "{{ hccn_network_devices }}"
    peers: "{{ hccn_network_peers }}"
"""

RETURN = r"""
links:
  description: Link status per local device index.
  returned: always
  type: dict
health:
  description: Net health status per local device index (only devices with a netdetect address).
  returned: always
  type: dict
pairs:
  description: One entry per ping (local device -> peer), with the tool's summary and the command.
  returned: always
  type: list
failures:
  description: One sentence per failed check.
  returned: always
  type: list
  elements: str
"""

import ipaddress
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ascend.npu.plugins.module_utils.hccn_tool import (
    PING_PAYLOAD_MAX,
    HccnError,
    HccnTool,
    execute,
    shell,
)

SHOWN = 20  # failures listed in the message; all are in `failures`


def reachable(dev: dict[str, Any], peer: dict[str, Any], pairs: str) -> bool:
    if pairs == "same_index":
        return bool(peer["index"] == dev["index"])
    if dev.get("gateway"):
        return True
    net = ipaddress.IPv4Network(f"{dev['address']}/{dev['netmask']}", strict=False)
    return ipaddress.IPv4Address(peer["address"]) in net


def pair_plan(
    devices: list[dict[str, Any]], peers: list[dict[str, Any]], links: dict[int, str | None], how: str
) -> tuple[list[tuple[dict[str, Any], dict[str, Any]]], list[str]]:
    """(pairs to ping, failures for peers no local device should or can reach)."""
    todo, failures = [], []
    for peer in peers:
        wanted = [d for d in devices if reachable(d, peer, how)]
        if not wanted and how == "full":
            failures.append(
                f"{peer['server']} device {peer['index']} ({peer['address']}) is in no local NIC's subnet "
                "and no local NIC has a gateway: the HCCN plan cannot connect them"
            )
        todo += [(d, peer) for d in wanted if links.get(d["index"]) == "UP"]
    return todo, failures


def main() -> None:
    device = {
        "index": {"type": "int", "required": True},
        "address": {"type": "str", "required": True},
        "netmask": {"type": "str", "required": True},
        "gateway": {"type": "str"},
        "netdetect": {"type": "str"},
    }
    peer = {
        "server": {"type": "str", "required": True},
        "index": {"type": "int", "required": True},
        "address": {"type": "str", "required": True},
    }
    module = AnsibleModule(
        argument_spec={
            "devices": {"type": "list", "elements": "dict", "required": True, "options": device},
            "peers": {"type": "list", "elements": "dict", "default": [], "options": peer},
            "pairs": {"type": "str", "choices": ["full", "same_index"], "default": "full"},
            "pkt": {"type": "int"},
            "parallel": {"type": "int", "default": 8},
            "host": {"type": "str", "default": "this host"},
            "hccn_tool": {"type": "path", "default": "/usr/local/Ascend/driver/tools/hccn_tool"},
        },
        supports_check_mode=True,
    )
    p = module.params
    if p["pkt"] is not None and not 0 <= p["pkt"] <= PING_PAYLOAD_MAX:
        module.fail_json(
            msg=f"pkt {p['pkt']} is outside 0..{PING_PAYLOAD_MAX}: it is the payload size of each ping "
            "packet in bytes (hccn_tool sends 3 packets per ping); leave it out for the tool's 4096."
        )
    tool = HccnTool(execute, p["hccn_tool"])
    devices = sorted(p["devices"], key=lambda d: d["index"])
    me = p["host"]
    failures: list[str] = []
    links: dict[int, str | None] = {}
    health: dict[int, str | None] = {}
    workers = max(1, p["parallel"])
    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            statuses = list(pool.map(lambda d: tool.status(d["index"]), devices))
        for dev, (link, status) in zip(devices, statuses):
            i = dev["index"]
            links[i] = link
            if links[i] != "UP":
                failures.append(
                    f"{me} device {i}: link {links[i] or 'unknown'}; its pings to peers were not tried "
                    f"(reproduce: hccn_tool -i {i} -link -g)"
                )
            elif dev.get("netdetect"):
                health[i] = status
                if status != "Success":
                    failures.append(
                        f"{me} device {i}: net health {status} (netdetect {dev['netdetect']}; reproduce: "
                        f"hccn_tool -i {i} -net_health -g)"
                    )
    except HccnError as exc:
        module.fail_json(msg=f"Reading the NPU NIC status on {me} failed: {exc}")
    todo, unplanned = pair_plan(devices, p["peers"], links, p["pairs"])
    failures += unplanned

    def one(job: tuple[dict[str, Any], dict[str, Any]]) -> dict[str, Any]:
        dev, peer = job
        argv, parsed, _ = tool.ping(dev["index"], peer["address"], p["pkt"])
        received = parsed.get("received")
        return {
            "device": dev["index"],
            "address": dev["address"],
            "peer_server": peer["server"],
            "peer_index": peer["index"],
            "peer_address": peer["address"],
            **parsed,
            "ok": isinstance(received, int) and received > 0,
            "command": shell(argv),
        }

    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(one, todo))
    for r in results:
        if not r["ok"]:
            summary = (
                f"{r['sent']} packets transmitted, {r['received']} received, {r['loss']:.2f}% packet loss"
                if r["sent"] is not None
                else r.get("error", "no summary line")
            )
            failures.append(
                f"{me} device {r['device']} ({r['address']}) -> {r['peer_server']} device {r['peer_index']} "
                f"({r['peer_address']}): {summary} (reproduce on {me}: {r['command']})"
            )
    out = {
        "changed": False,
        "links": {str(k): v for k, v in links.items()},
        "health": {str(k): v for k, v in health.items()},
        "pairs": results,
        "failures": failures,
    }
    if failures:
        more = len(failures) - SHOWN
        listed = failures[:SHOWN] + ([f"... and {more} more (see `failures`)"] if more > 0 else [])
        module.fail_json(
            msg=f"NPU network gate failed on {me}: {len(failures)} problem(s). " + " | ".join(listed), **out
        )
    module.exit_json(
        msg=f"{len(devices)} NPU NICs up, {len(results)} pings to {len(p['peers'])} peer NICs answered", **out
    )


if __name__ == "__main__":
    main()
