"""Filters of the vllm_serve role (ascend.npu vllm_serve.py): the plan's readiness timeout passed through,
the interface carrying an address, CPU sets from the NPU topology fact, the container of an instance,
which replicas restart."""

from __future__ import annotations

import pytest
from ansible_collections.ascend.npu.plugins.filter import vllm_serve as f


def test_the_container_carries_the_planned_startup_timeout_and_refuses_none() -> None:
    """The timeout is the plan's (render writes it on every instance): passed through, never recomputed."""
    assert f.vllm_serve_container(_instance(startup_timeout_s=4470), OPTS)["startup_timeout_s"] == 4470
    for bad in (None, 0, -30, "600", True):
        with pytest.raises(ValueError, match=r"startup_timeout_s=.*Fix: render the inventory again"):
            f.vllm_serve_container(_instance(startup_timeout_s=bad), OPTS)
    missing = {k: v for k, v in _instance().items() if k != "startup_timeout_s"}
    with pytest.raises(ValueError, match="'vllm-mn' has startup_timeout_s=None"):
        f.vllm_serve_container(missing, OPTS)


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
        "port": 8000, "head_address": "10.0.0.1", "startup_timeout_s": 600,
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


def test_a_heal_restarts_what_is_down_and_leaves_another_running_release_to_an_apply() -> None:
    want = {"replica": "mn", "release": "r1", "params": {"name": "vllm-mn"}}
    labels = {"Config": {"Labels": {"io.ascend-orchestrator.release": "r2"}}}
    up, down = {"State": {"Running": True}, **labels}, {"State": {"Running": False}, **labels}
    assert f.stale([{"item": want, "container": up}], heal=True) == []
    assert f.stale([{"item": want, "container": up}]) == ["mn"]  # an apply rolls it
    assert f.stale([{"item": want, "container": down}], heal=True) == ["mn"]
    assert f.stale([{"item": want, "container": None}], heal=True) == ["mn"]


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


def test_the_compile_cache_is_one_host_directory_per_image_and_configuration() -> None:
    """Mounted at /root/.cache (vllm-ascend's docker run) with vLLM's and Triton's caches under it; replicas
    that differ only in ports, addresses and ranks share it; another image, flag or weights does not."""
    opts = {**OPTS, "cache_dir": "/var/cache/c"}
    head = f.vllm_serve_container(_instance(), opts)
    key = head["record"]["cache_key"]
    assert f"/var/cache/c/{key}:/root/.cache" in head["params"]["volumes"]
    assert head["params"]["env"]["TRITON_CACHE_DIR"] == "/root/.cache/triton"
    assert head["params"]["env"]["VLLM_CACHE_ROOT"] == "/root/.cache/vllm"
    other_server = ["serve", "/m", "--port=8001", "--host", "10.0.0.2", "--served-model-name", "deepseek-r1"]
    assert f.vllm_serve_container(_instance(args=other_server), opts)["record"]["cache_key"] == key
    # a headless member runs other DP ranks: its graphs are in other rank directories than its head's
    member = ["serve", "/m", "--headless", "--data-parallel-start-rank", "2"]
    member_key = f.vllm_serve_container(_instance(args=member), opts)["record"]["cache_key"]
    assert member_key != key
    again = f.vllm_serve_container(_instance(args=[*member, "--port", "9"]), opts)
    assert again["record"]["cache_key"] == member_key
    for other_args, other_opts in (
        (["serve", "/m", "--port", "8000", "--max-model-len", "4096"], opts),
        (["serve", "/m", "--port", "8000"], {**opts, "image_id": "sha256:cd"}),
        (["serve", "/m", "--port", "8000"], {**opts, "weights_manifest": "m2"}),
    ):
        assert f.vllm_serve_container(_instance(args=other_args), other_opts)["record"]["cache_key"] != key
    none = f.vllm_serve_container(_instance(), OPTS)  # no cache_dir: nothing mounted
    assert none["record"]["cache_key"] is None and "TRITON_CACHE_DIR" not in none["params"]["env"]
    assert not [v for v in none["params"]["volumes"] if v.endswith(":/root/.cache")]


def test_compile_cache_items_sources_and_what_a_server_keeps() -> None:
    wanted = [{"record": {"cache_key": k}} for k in ("k1", "k1", None)]
    assert f.cache_items(wanted, host="a") == [{"host": "a", "key": "k1"}]
    members = [
        {"host": "a", "target": {"record": {"cache_key": "k2"}}, "restore": {"record": {"cache_key": "k1"}}},
        {"host": "b", "target": {"record": {"cache_key": "k2"}}, "restore": None},
    ]
    assert f.cache_items(members, "target") == [{"host": "a", "key": "k2"}, {"host": "b", "key": "k2"}]
    assert f.cache_items(members, "restore") == [{"host": "a", "key": "k1"}]
    need = {"host": "b", "key": "k2"}
    results = [
        {"item": [need, "c"], "stat": {"exists": False}},
        {"item": [need, "d"], "unreachable": True},
        {"item": [need, "e"], "stat": {"exists": True, "isdir": True}},
        {"item": [need, "f"], "stat": {"exists": True, "isdir": True}},
    ]
    assert f.cache_sources(results) == [{"host": "b", "key": "k2", "peer": "e"}]
    records = {"vllm-a": {"current": {"cache_key": "k2"}, "previous": {"cache_key": "k0"}}, "vllm-b": None}
    assert f.cache_keep(wanted, records) == ["k0", "k1", "k2"]
