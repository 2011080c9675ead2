"""Host tuning and NPU-NIC rules as whole findings: sysctl names (as `sysctl -a` prints them: a lower-case
first component and at least one dot), host RDMA NIC modules and their parameters (`modinfo -p`), hugepages
against the host memory, HCCN addresses on servers without NPU NICs or without an HCCN plan."""

from __future__ import annotations

from typing import Any

from tests.helpers import validate_data
from tests.spec_text import Described, described

SYSCTL_FIX = "use the dotted name shown by 'sysctl -a', e.g. vm.swappiness"


def _findings(data: dict[str, Any]) -> list[Described]:
    return [described(f) for f in validate_data(data).findings]


def test_sysctl_names(single: dict[str, Any]) -> None:
    single["tuning"] = {
        "sysctls": {
            "net.ipv4.conf.all.rp_filter": 1,
            "kernel.numa_balancing": 0,
            "vm": 1,
            "Vm.swappiness": 1,
            "vm.": 1,
        }
    }
    assert _findings(single) == [
        ('tuning.sysctls["Vm.swappiness"]', "'Vm.swappiness' is not a sysctl name", SYSCTL_FIX, "tuning", []),
        ("tuning.sysctls.vm", "'vm' is not a sysctl name", SYSCTL_FIX, "tuning", []),
        ('tuning.sysctls["vm."]', "'vm.' is not a sysctl name", SYSCTL_FIX, "tuning", []),
    ]


def test_a_module_outside_the_catalog(single: dict[str, Any]) -> None:
    single["tuning"] = {"rdma_modules": {"foo_nic": {"bar": 1}}}
    assert _findings(single) == [
        (
            "tuning.rdma_modules.foo_nic",
            "module 'foo_nic' is not in the catalog of host RDMA NIC modules",
            "check 'modinfo -p foo_nic' on the host, or set tuning.allow_unknown_module_options: true",
            "tuning",
            [],
        )
    ]


def test_unknown_module_parameters_with_and_without_a_close_match(single: dict[str, Any]) -> None:
    single["tuning"] = {"rdma_modules": {"mlx5_core": {"zzzzzz": 1}}}
    assert _findings(single) == [
        (
            "tuning.rdma_modules.mlx5_core.zzzzzz",
            "'zzzzzz' is not a parameter of mlx5_core",
            "check 'modinfo -p mlx5_core' on the host, or set tuning.allow_unknown_module_options: true",
            "tuning",
            [],
        )
    ]
    single["tuning"] = {"rdma_modules": {"mlx5_core": {"prob_vf": 1}}, "allow_unknown_module_options": True}
    assert _findings(single) == [
        (
            "tuning.rdma_modules.mlx5_core.prob_vf",
            "'prob_vf' is not a parameter of mlx5_core (allowed by tuning.allow_unknown_module_options)",
            "did you mean 'probe_vf'? check 'modinfo -p mlx5_core' on the host",
            "tuning",
            [],
        )
    ]


def test_hugepages_are_reported_once_for_the_first_server_over_the_limit(pair: dict[str, Any]) -> None:
    # default 2048 kB pages on 1024 GB hosts: 262144 pages = 512 GB, exactly half; one more is over. Both
    # NPU servers are over: one finding, at the first
    pair["tuning"] = {"hugepages": {"count": 262144}}
    assert _findings(pair) == []
    pair["tuning"] = {"hugepages": {"count": 262145}}
    assert _findings(pair) == [
        (
            "tuning.hugepages.count",
            "262145 pages of 2048 kB reserve 512 GB, over half of the 1024 GB of server 'a2-01' (servers[0])",
            "reserve fewer hugepages",
            "tuning",
            [],
        )
    ]


def _addresses(data: dict[str, Any]) -> None:
    data["servers"][0]["overrides"] = {"hccn_addresses": [f"192.168.1.{i}" for i in range(8)]}


NO_PLAN = (
    "servers[0].overrides.hccn_addresses",
    "HCCN addresses without network.hccn",
    "add network.hccn with the subnet(s) these addresses belong to",
    "hccn",
    [],
)


def test_hccn_addresses_without_an_hccn_plan(single: dict[str, Any]) -> None:
    _addresses(single)
    assert _findings(single) == [NO_PLAN]


def test_hccn_addresses_on_a_server_without_npu_nics(duo: dict[str, Any]) -> None:
    _addresses(duo)
    assert _findings(duo) == [
        NO_PLAN,
        (
            "servers[0].overrides.hccn_addresses",
            "server 'duo-01' has no NPU NICs",
            "remove hccn_addresses",
            "hccn",
            [],
        ),
    ]
