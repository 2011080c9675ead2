"""Filters of the vllm_serve role (ascend.npu vllm_serve.py): the readiness timeout formula against the
plan's, the interface carrying an address, CPU sets from the NPU topology fact, the container of an instance,
which replicas restart."""

from __future__ import annotations

import pytest
from ansible_collections.ascend.npu.plugins.filter import vllm_serve as f

from orchestrator.planning.gates import READ_FACTOR, startup_timeout_s

GIB = 1 << 30


@pytest.mark.parametrize(
    ("gib", "rate", "eager"), [(640.9, 2000, False), (32.0, 500, True), (0.03, 2000, False)]
)
def test_startup_timeout_matches_the_plan_formula_at_the_same_rate(
    gib: float, rate: int, eager: bool
) -> None:
    base = 120 + (0 if eager else 240)
    assert f.startup_timeout(gib * GIB, rate, base, READ_FACTOR, 180) == startup_timeout_s(gib, rate, eager)


def test_startup_timeout_grows_with_bytes_and_shrinks_with_rate() -> None:
    slow = f.startup_timeout(640 * GIB, 100.0, 360)
    fast = f.startup_timeout(640 * GIB, 1000.0, 360)
    assert slow == 13470  # 360 + 2 x 655360 MiB / 100 MiB/s = 13467.2, rounded up to 30 s
    assert slow > fast > 360
    assert f.startup_timeout(0, 100.0, 10, 2, 180) == 180
    with pytest.raises(ValueError, match="read_mib_s"):
        f.startup_timeout(1, 0, 360)


def test_interface_of_exact_address_then_containing_network() -> None:
    facts = {
        "interfaces": ["lo", "enp189s0f0", "eth0"],
        "lo": {"device": "lo", "ipv4": {"address": "127.0.0.1", "netmask": "255.0.0.0"}},
        "enp189s0f0": {
            "device": "enp189s0f0",
            "ipv4": {"address": "10.0.0.5", "netmask": "255.255.255.0"},
            "ipv4_secondaries": [{"address": "10.20.1.11", "netmask": "255.255.255.0"}],
        },
        "eth0": {"device": "eth0", "ipv4": {"address": "192.0.2.2", "netmask": "255.255.255.0"}},
    }
    assert f.interface_of(facts, "10.20.1.11") == "enp189s0f0"
    assert f.interface_of(facts, "192.0.2.2") == "eth0"
    assert f.interface_of(facts, "127.0.0.12") == "lo"
    assert f.interface_of(facts, "172.16.0.1") is None


def test_npu_cpuset_unions_affinities_inside_the_allowed_cpus() -> None:
    npus = {"0": {"cpu_affinity": "144-167"}, "1": {"cpu_affinity": "144-167"}, "4": {"cpu_affinity": "0-23"}}
    assert f.npu_cpuset(npus, [0, 1]) == "144-167"
    assert f.npu_cpuset(npus, [0, 4], "0-191") == "0-23,144-167"
    assert f.npu_cpuset(npus, [0], "0-1") is None  # CPUs the host does not have
    assert f.npu_cpuset(npus, [5]) is None
    assert f.npu_cpuset(None, [0]) is None


def _instance(**over: object) -> dict[str, object]:
    base = {
        "replica": "mn", "role": "head", "mode": "dp", "container_name": "vllm-mn", "devices": [4, 5],
        "args": ["serve", "/m", "--port", "8000"], "env": {"ASCEND_RT_VISIBLE_DEVICES": "0,1"},
        "port": 8000, "head_address": "10.0.0.1",
    }  # fmt: skip
    return {**base, **over}


OPTS = {
    "image_id": "sha256:ab", "weights_manifest": "m1", "weights_host": "/data/m", "weights_path": "/data/m",
    "mounts": ["/usr/local/dcmi", "/etc/ascend_install.info"], "mounts_rw": ["/usr/local/dcmi"],
    "shm_size": "1g", "api_key_file": "/etc/k", "api_key_mount": "/run/secrets/vllm-api-key",
    "ifname": "enp1",
}  # fmt: skip


def test_container_gets_only_its_devices_and_the_key_by_file() -> None:
    c = f.vllm_serve_container(_instance(), OPTS)
    p = c["params"]
    assert p["devices"] == ["/dev/davinci4", "/dev/davinci5", *f.MANAGEMENT_DEVICES]
    assert p["command"] == ["vllm", "serve", "/m", "--port", "8000"]
    assert p["env"]["VLLM_API_KEY_FILE"] == "/run/secrets/vllm-api-key" and "VLLM_API_KEY" not in p["env"]
    assert p["env"]["HCCL_SOCKET_IFNAME"] == p["env"]["GLOO_SOCKET_IFNAME"] == "enp1"
    assert (
        "/etc/k:/run/secrets/vllm-api-key:ro" in p["volumes"]
        and "/usr/local/dcmi:/usr/local/dcmi" in p["volumes"]
    )
    single = f.vllm_serve_container(_instance(mode="single"), OPTS)["params"]["env"]
    assert "HCCL_SOCKET_IFNAME" not in single
    spec_set = f.vllm_serve_container(_instance(env={"HCCL_SOCKET_IFNAME": "bond0"}), OPTS)
    assert spec_set["params"]["env"]["HCCL_SOCKET_IFNAME"] == "bond0"  # the spec's value wins


def test_release_changes_with_argv_image_weights_and_key_only() -> None:
    base = f.vllm_serve_container(_instance(), OPTS)["release"]
    assert f.vllm_serve_container(_instance(), dict(OPTS))["release"] == base
    assert f.vllm_serve_container(_instance(args=["serve", "/m", "--port", "8001"]), OPTS)["release"] != base
    for key, value in (("image_id", "sha256:cd"), ("weights_manifest", "m2"), ("api_key_checksum", "x")):
        assert f.vllm_serve_container(_instance(), {**OPTS, key: value})["release"] != base, key


def test_a_replica_restarts_on_every_member_when_one_is_stale() -> None:
    replicas = [
        {"name": "mn", "head": "a", "members": ["a", "b"]},
        {"name": "c-a", "head": "c", "members": ["c"]},
        {"name": "c-b", "head": "c", "members": ["c"]},
    ]
    hostvars = {
        "a": {"_vllm_serve_stale": []},
        "b": {"_vllm_serve_stale": ["mn"]},
        "c": {"_vllm_serve_stale": ["c-b"]},
    }
    assert f.restart(replicas, hostvars, ["a", "b", "c"]) == ["mn", "c-b"]
    assert f.restart(replicas, hostvars, ["a", "c"]) == ["c-b"]  # b outside the play (--limit)
    want = {"replica": "mn", "release": "r1", "params": {"name": "vllm-mn"}}
    running = {"State": {"Running": True}, "Config": {"Labels": {"io.ascend-orchestrator.release": "r1"}}}
    assert f.stale([{"item": want, "container": running}]) == []
    assert f.stale([{"item": {**want, "release": "r2"}, "container": running}]) == ["mn"]
    assert f.stale([{"item": want, "container": None}]) == ["mn"]


def test_ray_members_start_ray_then_the_head_serves_in_the_same_container() -> None:
    ray = {"start_args": ["start", "--address", "10.0.0.1:6379", "--block"]}
    worker = f.vllm_serve_container(_instance(role="ray-worker", mode="ray", args=[], ray=ray), OPTS)
    assert worker["params"]["command"] == ["ray", "start", "--address", "10.0.0.1:6379", "--block"]
    head_ray = {"start_args": ["start", "--head", "--resources", '{"NPU": 8}']}
    head = f.vllm_serve_container(_instance(mode="ray", ray=head_ray), OPTS)["params"]["command"]
    assert head == [
        "sh",
        "-c",
        "ray start --head --resources '{\"NPU\": 8}' && exec vllm serve /m --port 8000",
    ]
