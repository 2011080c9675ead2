"""Rendering: committed examples are fresh, output is deterministic and atomic, and says what the plan says."""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrator.catalog import get_chip
from orchestrator.render import render, render_texts
from orchestrator.render.writer import header
from orchestrator.validation import ValidationResult, validate_file, validate_text

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "inventories").glob("*/site.yaml"))
EXAMPLE_IDS = [p.parent.name for p in EXAMPLES]
PAIR = ROOT / "inventories" / "a2-pair-r1-w8a8" / "site.yaml"
FLEET = ROOT / "inventories" / "a2-fleet-gateway" / "site.yaml"
BIN = Path(sys.executable).parent

WRITER_BUG = (
    "bug in orchestrator/render/writer.py write_atomic: managed entries are swapped one at a time and the "
    "old ones are moved into the staging folder, which the finally-clause deletes; an os.replace failure "
    "after the first swap loses or mixes the previous inventory"
)


def _valid(path: Path) -> ValidationResult:
    result = validate_file(path)
    assert result.ok, [str(f) for f in result.errors]
    return result


def _valid_text(text: str) -> ValidationResult:
    result = validate_text(text)
    assert result.ok, [str(f) for f in result.errors]
    return result


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(".render-")]


def _load(text: str) -> Any:
    return yaml.safe_load(text)


def _spec_dict(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _dump(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, sort_keys=False)


def _unsha(texts: dict[str, str], result: ValidationResult) -> dict[str, str]:
    assert result.document is not None
    sha = result.document.sha256
    return {rel: text.replace(sha, "<sha256>") for rel, text in texts.items()}


def _pair_after(args: list[str], flag: str) -> str:
    assert args.count(flag) == 1, f"{flag} appears {args.count(flag)} times in {args}"
    return args[args.index(flag) + 1]


# --- golden --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", EXAMPLES, ids=EXAMPLE_IDS)
def test_committed_inventory_is_what_render_writes(spec: Path, tmp_path: Path) -> None:
    written = render(_valid(spec), tmp_path)
    fix = f"run `orchestrator render {spec.parent.name}`"
    assert written, "render wrote no files"
    rendered = _snapshot(tmp_path)
    for rel, data in rendered.items():
        committed = spec.parent / rel
        assert committed.is_file(), f"{committed} is missing: {fix}"
        assert committed.read_bytes() == data, f"{committed} is stale: {fix}"
    for sub in ("host_vars", "group_vars"):
        extra = sorted(
            f"{sub}/{p.name}" for p in (spec.parent / sub).iterdir() if f"{sub}/{p.name}" not in rendered
        )
        assert not extra, f"{spec.parent} has files render does not write: {extra}; {fix}"
    assert sorted(rendered) == sorted(str(p.relative_to(tmp_path)) for p in written)
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("spec", EXAMPLES, ids=EXAMPLE_IDS)
def test_one_host_vars_file_per_server(spec: Path) -> None:
    result = _valid(spec)
    assert result.spec is not None
    host_files = sorted(k for k in render_texts(result) if k.startswith("host_vars/"))
    assert host_files == sorted(f"host_vars/{s.name}.yml" for s in result.spec.servers)


# --- determinism ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", EXAMPLES, ids=EXAMPLE_IDS)
def test_render_is_deterministic(spec: Path, tmp_path: Path) -> None:
    first, second = render_texts(_valid(spec)), render_texts(_valid(spec))
    assert first == second
    render(_valid(spec), tmp_path / "a")
    render(_valid(spec), tmp_path / "b")
    assert _snapshot(tmp_path / "a") == _snapshot(tmp_path / "b")


def _reverse_mappings(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _reverse_mappings(node[k]) for k in reversed(list(node))}
    if isinstance(node, list):
        return [_reverse_mappings(v) for v in node]
    return node


def _decorated_pair() -> dict[str, Any]:
    """The pair example with every free-form mapping the renderer must order itself."""
    data = _spec_dict(PAIR)
    data["profiles"]["spare-a2"] = {"chip": "910B4", "cards": 8}
    data["servers"][0]["labels"] = {"rack": "r1", "pod": "p2", "row": "c"}
    data["servers"][1]["overrides"] = {"sysctls": {"vm.swappiness": 10, "net.core.somaxconn": 4096}}
    data["tuning"]["sysctls"] = {"vm.swappiness": 0, "kernel.numa_balancing": 0, "fs.file-max": 1000000}
    data["tuning"]["rdma_modules"] = {"mlx5_core": {"prof_sel": 2, "debug_mask": 0}, "ib_core": {}}
    data["serving"]["env"] = {"VLLM_LOGGING_LEVEL": "INFO", "OMP_NUM_THREADS": "1", "A_FLAG": "x"}
    data["image"] = {"build_args": {"PIP_INDEX_URL": "https://pypi.example/simple", "HTTPS_PROXY": "h:3128"}}
    return data


@pytest.mark.parametrize(
    "data",
    [pytest.param(_decorated_pair, id="decorated-pair")]
    + [pytest.param(lambda p=p: _spec_dict(p), id=p.parent.name) for p in EXAMPLES],
)
def test_key_order_inside_mappings_does_not_change_output(data: Callable[[], dict[str, Any]]) -> None:
    spec = data()
    forward = _valid_text(_dump(spec))
    backward = _valid_text(_dump(_reverse_mappings(spec)))
    assert forward.document is not None and backward.document is not None
    assert forward.document.sha256 != backward.document.sha256, "the reordered spec is the same text"
    assert forward.spec == backward.spec
    assert _unsha(render_texts(forward), forward) == _unsha(render_texts(backward), backward)


# --- header --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", EXAMPLES, ids=EXAMPLE_IDS)
def test_every_file_starts_with_the_generated_from_header(spec: Path) -> None:
    sha = hashlib.sha256(spec.read_bytes()).hexdigest()
    expected = (
        f"# Generated by `orchestrator render` from site.yaml (sha256 {sha}).\n"
        "# Do not edit: change the spec and render again.\n---\n"
    )
    assert header("site.yaml", sha) + "---\n" == expected
    texts = render_texts(_valid(spec))
    assert {"hosts.yml", "group_vars/all.yml", "group_vars/npu.yml"} <= set(texts)
    for rel, text in texts.items():
        assert text.startswith(expected), f"{rel} does not start with the header: {text[:200]!r}"
    assert _load(texts["group_vars/all.yml"])["orchestrator_spec_sha256"] == sha


# --- atomic --------------------------------------------------------------------------------------------

INVALID = {
    "yaml-syntax": lambda t: t.replace("servers: [a2-01, a2-02]", "servers: [a2-01, a2-02"),
    "unknown-key": lambda t: t.replace("  max_num_seqs: 8", "  max_num_seqs: 8\n  max_num_seq: 8"),
    "capacity": lambda t: t.replace("servers: [a2-01, a2-02]", "servers: [a2-01]"),
}


def _cli_render(spec: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "orchestrator"), "render", str(spec), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("breakage", sorted(INVALID))
def test_invalid_spec_renders_nothing(breakage: str, tmp_path: Path) -> None:
    text = INVALID[breakage](PAIR.read_text(encoding="utf-8"))
    assert text != PAIR.read_text(encoding="utf-8")
    spec = tmp_path / "site.yaml"
    spec.write_text(text, encoding="utf-8")
    absent = tmp_path / "absent"
    proc = _cli_render(spec, absent)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "error" in proc.stderr
    assert not absent.exists()
    previous = tmp_path / "previous"
    render(_valid(PAIR), previous)
    before = _snapshot(previous)
    proc = _cli_render(spec, previous)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert _snapshot(previous) == before
    assert _leftovers(previous) == []


def test_cli_render_writes_the_same_files_as_the_library(tmp_path: Path) -> None:
    proc = _cli_render(PAIR, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert _snapshot(tmp_path) == {k: v.encode() for k, v in render_texts(_valid(PAIR)).items()}


def test_rerender_without_a_server_removes_its_host_vars(tmp_path: Path) -> None:
    render(_valid(FLEET), tmp_path)
    assert (tmp_path / "host_vars" / "a2-04.yml").is_file()
    data = _spec_dict(FLEET)
    data["servers"] = [s for s in data["servers"] if s["name"] != "a2-04"]
    data["serving"]["replicas"] = [r for r in data["serving"]["replicas"] if r["servers"] != ["a2-04"]]
    smaller = _valid_text(_dump(data))
    render(smaller, tmp_path)
    assert not (tmp_path / "host_vars" / "a2-04.yml").exists()
    assert sorted(p.name for p in (tmp_path / "host_vars").iterdir()) == [
        "a2-01.yml",
        "a2-02.yml",
        "a2-03.yml",
        "edge-01.yml",
    ]
    assert "a2-04" not in (tmp_path / "hosts.yml").read_text(encoding="utf-8")
    assert _snapshot(tmp_path) == {k: v.encode() for k, v in render_texts(smaller).items()}
    assert _leftovers(tmp_path) == []


def _changed_pair() -> ValidationResult:
    text = PAIR.read_text(encoding="utf-8").replace("max_num_seqs: 8", "max_num_seqs: 12")
    return _valid_text(text)


@pytest.mark.parametrize(
    "fail_at",
    [1] + [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=WRITER_BUG)) for n in (2, 3, 4, 5)],
)
def test_failing_replace_keeps_the_previous_inventory(
    fail_at: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    render(_valid(PAIR), tmp_path)
    before = _snapshot(tmp_path)
    real = os.replace
    calls: list[int] = []

    def flaky(src: Any, dst: Any) -> None:
        calls.append(1)
        if len(calls) == fail_at:
            raise OSError("disk went away")
        real(src, dst)

    monkeypatch.setattr("orchestrator.render.writer.os.replace", flaky)
    with pytest.raises(OSError, match="disk went away"):
        render(_changed_pair(), tmp_path)
    monkeypatch.undo()
    assert _leftovers(tmp_path) == []
    assert _snapshot(tmp_path) == before


def test_failing_write_keeps_the_previous_inventory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    render(_valid(PAIR), tmp_path)
    before = _snapshot(tmp_path)
    real = Path.write_text
    calls: list[Path] = []

    def flaky(self: Path, data: str, *args: Any, **kwargs: Any) -> int:
        calls.append(self)
        if len(calls) == 3:
            raise OSError("no space left on device")
        return real(self, data, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", flaky)
    with pytest.raises(OSError, match="no space left"):
        render(_changed_pair(), tmp_path)
    monkeypatch.undo()
    assert len(calls) == 3
    assert _leftovers(tmp_path) == []
    assert _snapshot(tmp_path) == before


# --- content -------------------------------------------------------------------------------------------


def _host_vars(result: ValidationResult) -> dict[str, Any]:
    texts = render_texts(result)
    return {Path(k).stem: _load(v) for k, v in texts.items() if k.startswith("host_vars/")}


def test_two_node_dp_replica_arguments() -> None:
    result = _valid(PAIR)
    addresses = {s["name"]: s["address"] for s in _spec_dict(PAIR)["servers"]}
    hosts = _host_vars(result)
    (head,) = hosts["a2-01"]["vllm_serve_instances"]
    (second,) = hosts["a2-02"]["vllm_serve_instances"]
    assert hosts["ops-01"]["vllm_serve_instances"] == []
    assert (head["role"], second["role"]) == ("head", "headless")
    h, s = head["args"], second["args"]
    assert "--headless" not in h
    assert _pair_after(h, "--data-parallel-size-local") == "2"
    assert _pair_after(h, "--data-parallel-address") == addresses["a2-01"]
    assert _pair_after(h, "--host") == addresses["a2-01"]
    assert _pair_after(h, "--port") == "8000"
    assert "--data-parallel-start-rank" not in h
    assert "--headless" in s
    assert _pair_after(s, "--data-parallel-size-local") == "2"
    assert _pair_after(s, "--data-parallel-start-rank") == "2"
    assert _pair_after(s, "--data-parallel-address") == addresses["a2-01"]
    assert "--host" not in s and "--port" not in s
    for args in (h, s):
        assert _pair_after(args, "--tensor-parallel-size") == "4"
        assert _pair_after(args, "--data-parallel-size") == "4"
        assert _pair_after(args, "--quantization") == "ascend"
        assert "--enable-expert-parallel" in args
        assert "--api-key" not in args
    assert (head["dp_start_rank"], second["dp_start_rank"]) == (0, 2)
    assert head["head_address"] == second["head_address"] == addresses["a2-01"]
    assert head["env"]["HCCL_IF_IP"] == addresses["a2-01"]
    assert second["env"]["HCCL_IF_IP"] == addresses["a2-02"]


@pytest.mark.parametrize("spec", EXAMPLES, ids=EXAMPLE_IDS)
def test_visible_devices_per_member(spec: Path) -> None:
    data = _spec_dict(spec)
    result = _valid(spec)
    assert result.spec is not None
    hosts = _host_vars(result)
    profiles = {s.name: result.spec.profiles[s.profile] for s in result.spec.servers if s.profile}
    seen = 0
    for rep in data["serving"]["replicas"]:
        for server in rep["servers"]:
            prof = profiles[server]
            count = prof.cards * (prof.devices_per_card or get_chip(prof.chip).devices_per_card_default)
            devices = rep.get("devices", list(range(count)))
            (inst,) = [i for i in hosts[server]["vllm_serve_instances"] if i["replica"] == rep["name"]]
            expected = ",".join(str(d) for d in devices)
            assert inst["env"]["ASCEND_RT_VISIBLE_DEVICES"] == expected
            assert inst["visible_devices"] == expected
            assert inst["devices"] == devices
            seen += 1
    assert seen == sum(len(h["vllm_serve_instances"]) for h in hosts.values())


@pytest.mark.parametrize("spec", EXAMPLES, ids=EXAMPLE_IDS)
def test_hccn_addresses_unique_and_inside_the_plan(spec: Path) -> None:
    result = _valid(spec)
    assert result.spec is not None
    hosts = _host_vars(result)
    hccn = result.spec.network.hccn
    addresses = [d["address"] for h in hosts.values() for d in h.get("hccn_network_devices", [])]
    assert len(addresses) == len(set(addresses))
    if hccn is None:
        assert addresses == []
        return
    for name, hv in hosts.items():
        if "npu_device_count" not in hv:
            continue
        devs = hv["hccn_network_devices"]
        assert [d["index"] for d in devs] == list(range(hv["npu_device_count"])), name
        for d in devs:
            addr = ipaddress.IPv4Address(d["address"])
            home = [s for s in hccn.subnets if addr in s.cidr]
            assert len(home) == 1 and d["netmask"] == str(home[0].cidr.netmask)
            assert addr not in (home[0].cidr.network_address, home[0].cidr.broadcast_address)


@pytest.mark.parametrize("spec", EXAMPLES, ids=EXAMPLE_IDS)
def test_soc_version_follows_the_chip(spec: Path) -> None:
    result = _valid(spec)
    assert result.spec is not None
    texts = render_texts(result)
    hosts = _host_vars(result)
    builds = _load(texts["group_vars/all.yml"])["vllm_image_builds"]
    for srv in result.spec.servers:
        if srv.profile is None:
            assert "npu_soc_version" not in hosts[srv.name]
            continue
        soc = get_chip(result.spec.profiles[srv.profile].chip).soc_version
        assert hosts[srv.name]["npu_soc_version"] == soc
        for inst in hosts[srv.name]["vllm_serve_instances"]:
            assert inst["image"].endswith(f"-{soc}")
        assert soc in {b["build_args"]["SOC_VERSION"] for b in builds}
    assert all(b["soc_version"] == b["build_args"]["SOC_VERSION"] for b in builds)


def test_secrets_stay_references(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("VLLM_API_KEY", "REGISTRY_PASSWORD", "DRIFT_WEBHOOK_URL"):
        monkeypatch.setenv(name, "supersecret")
    pair = render_texts(_valid(PAIR))
    assert "env:VLLM_API_KEY" in pair["group_vars/all.yml"]
    assert _load(pair["group_vars/all.yml"])["vllm_serve_api_key_ref"] == "env:VLLM_API_KEY"
    fleet = render_texts(_valid(FLEET))
    assert "env:REGISTRY_PASSWORD" in fleet["group_vars/all.yml"]
    assert "env:DRIFT_WEBHOOK_URL" in fleet["group_vars/all.yml"]
    for spec in EXAMPLES:
        for rel, text in render_texts(_valid(spec)).items():
            assert "supersecret" not in text, f"{spec.parent.name}/{rel} contains a resolved secret"


# --- ansible-inventory ---------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", EXAMPLES, ids=EXAMPLE_IDS)
def test_ansible_inventory_reads_the_committed_inventory(spec: Path, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "ANSIBLE_LOCAL_TEMP": str(tmp_path),
        "ANSIBLE_HOME": str(tmp_path / "ansible-home"),
        "ANSIBLE_INVENTORY_UNPARSED_FAILED": "true",
        "ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED": "true",
    }
    proc = subprocess.run(
        [str(BIN / "ansible-inventory"), "-i", str(spec.parent / "hosts.yml"), "--list"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    inventory = json.loads(proc.stdout)
    hostvars = inventory["_meta"]["hostvars"]
    result = _valid(spec)
    assert result.spec is not None and result.plan is not None
    assert sorted(hostvars) == sorted(s.name for s in result.spec.servers)
    for srv in result.spec.servers:
        hv = hostvars[srv.name]
        assert hv["ansible_host"] == str(srv.address)
        members = [(r.name, m.role) for r in result.plan.replicas for m in r.members if m.server == srv.name]
        assert [(i["replica"], i["role"]) for i in hv["vllm_serve_instances"]] == members
        assert hv["orchestrator_site"] == result.spec.site
    npu = sorted(s.name for s in result.spec.servers if "npu" in s.roles)
    assert sorted(inventory["npu"]["hosts"]) == npu
    for rep in result.plan.replicas:
        group = f"replica_{rep.name}".replace("-", "_")
        assert inventory[group]["hosts"] == [m.server for m in rep.members]
