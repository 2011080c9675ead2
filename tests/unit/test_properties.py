"""Properties over generated valid site specs: they validate, render deterministically and round-trip."""

from __future__ import annotations

import io
import math
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from orchestrator.catalog import ModelArch, get_chip, get_model
from orchestrator.pipeline import ValidationResult, validate_text
from orchestrator.render import render, render_texts
from orchestrator.spec.findings import format_finding
from orchestrator.spec.site import SiteSpec

GIB = 1024**3
# Per chip family: HDK package prefix, driver and firmware sha256 (as the examples in inventories/ use).
PACKAGES = {
    "910b": (
        "Ascend-hdk-910b",
        "90dbac2b52c361da24e1f46f890dd08a491a9c7394cc5933fdff3f7db9188078",
        "e8ddcac6a1356191b50e0cec2fefb65c3c4853e079dafcbd10049950ef9b4ed9",
    ),
    "910_93": (
        "Atlas-A3-hdk",
        "95397e4741029245a6b4045bf2456fe079c1015917b3cc9c71341c937cb2cca1",
        "927fcce197b3bed2a9f6501608820be75077d303937948e9d823b513e087042e",
    ),
    "310p": (
        "Ascend-hdk-310p",
        "99a6d93259bcbef19148cecee00722f9b369cc05c5b176983f36fe9b52350cfd",
        "3303e8fd37f8ec06b118f4dbdcb995fcabb05aa6c858bfff2029771cd0036779",
    ),
}
CHIPS = {"910b": ["910B1", "910B2", "910B3", "910B4"], "910_93": ["910_93"], "310p": ["310P3"]}
DENSE = [
    f"DeepSeek-R1-Distill-{m}"
    for m in ("Qwen-1.5B", "Qwen-7B", "Qwen-14B", "Qwen-32B", "Llama-8B", "Llama-70B")
]
MOE = "DeepSeek-R1-W8A8"
Par = tuple[int, int, int, bool]  # tp, pp, dp, ep


def _fits(arch: ModelArch, par: Par, hbm_gb: int, max_len: int) -> bool:
    """Conservative: weights + one max-length sequence + 4 GiB fit in 72% of the device memory."""
    tp, pp, dp, ep = par
    per_param = 1.0 if arch.quantization == "w8a8" else 2.0
    dense = (arch.params_b - arch.expert_params_b) * 1e9 * per_param / (tp * pp)
    experts = arch.expert_params_b * 1e9 * per_param / (tp * dp if ep else tp * pp)
    if arch.attention == "mla":
        kv = arch.layers * (arch.kv_lora_rank + arch.qk_rope_head_dim) * 2 * max_len
    else:
        kv = 2 * math.ceil(arch.layers / pp) * max(1, arch.kv_heads // tp) * arch.head_dim * 2 * max_len
    return dense + experts + kv + 4 * GIB <= 0.72 * hbm_gb * GIB


def _layouts(arch: ModelArch, local: int, hbm_gb: int, max_len: int, k: int) -> list[Par]:
    """Parallel layouts that use every device of the replica, respect the heads and fit easily."""
    out: list[Par] = []
    for tp in (t for t in range(1, local + 1) if local % t == 0):
        if arch.heads % tp or (arch.attention == "gqa" and arch.kv_heads % tp and tp % arch.kv_heads):
            continue
        for pp in (1, 2) if k == 1 and not arch.moe else (1,):
            if local % (tp * pp):
                continue
            par = (tp, pp, local * k // (tp * pp), arch.moe)
            if _fits(arch, par, hbm_gb, max_len):
                out.append(par)
    return out


def _par_dict(par: Par) -> dict[str, Any]:
    tp, pp, dp, ep = par
    return (
        {"tp": tp}
        | ({"pp": pp} if pp > 1 else {})
        | ({"dp": dp} if dp > 1 else {})
        | ({"ep": True} if ep else {})
    )


@st.composite
def _replicas(
    draw: st.DrawFn, arch: ModelArch, names: list[str], local: int, hbm: int, max_len: int
) -> list[dict[str, Any]]:
    """Replicas that partition the NPU servers: multi-node DP replicas, whole servers, device splits."""
    n = len(names)
    sizes = [j for j in range(1, n + 1) if _layouts(arch, local, hbm, max_len, j)]
    smallest = sizes[0]
    reps: list[dict[str, Any]] = []
    at = 0
    while at < n:
        left = n - at
        options = [k for k in sizes if k <= left and (k == left or left - k >= smallest)][:4]
        k = draw(st.sampled_from(options))
        members = names[at : at + k]
        at += k
        chunks = [c for c in range(local // 4 or 1, local) if local % c == 0]
        chunks = [c for c in chunks if _layouts(arch, c, hbm, max_len, 1)]
        if k == 1 and chunks and draw(st.booleans()):
            size = draw(st.sampled_from(chunks))
            for j in range(local // size):
                par = draw(st.sampled_from(_layouts(arch, size, hbm, max_len, 1)))
                rep = {"servers": members, "par": par, "devices": list(range(j * size, (j + 1) * size))}
                reps.append({**rep, "port": 8000 + j} if j else rep)
        else:
            reps.append(
                {"servers": members, "par": draw(st.sampled_from(_layouts(arch, local, hbm, max_len, k)))}
            )
    return reps


def _profile(draw: st.DrawFn, family: str, cards: int | None = None) -> dict[str, Any]:
    chip = draw(st.sampled_from(CHIPS[family]))
    profile: dict[str, Any] = {"chip": chip, "cards": cards or draw(st.sampled_from([8, 8, 4, 2]))}
    if family == "310p":
        profile["cards"] = cards or draw(st.integers(1, 4))
        profile["devices_per_card"] = draw(st.sampled_from([1, 2]))
    if chip == "910B4" or family == "310p":
        profile["hbm_gb"] = draw(st.sampled_from(get_chip(chip).hbm_gb_allowed))
    return profile


def _shape(profile: dict[str, Any]) -> tuple[int, int]:
    """(devices per server, GB per device)."""
    facts = get_chip(profile["chip"])
    local = profile["cards"] * profile.get("devices_per_card", facts.devices_per_card_default)
    return local, profile.get("hbm_gb", facts.hbm_gb_default)


def _model(
    draw: st.DrawFn, family: str, profiles: dict[str, Any], counts: dict[str, int], max_len: int
) -> str:
    """A catalog model that fits every kind of server in the site (DeepSeek-R1-W8A8 where capacity allows)."""

    def fits(model: str) -> bool:
        arch = get_model(model)
        return all(
            any(_layouts(arch, *_shape(profiles[p]), max_len, k) for k in range(1, counts[p] + 1))
            for p in profiles
        )

    return draw(st.sampled_from([m for m in [*DENSE, MOE] if (m != MOE or family != "310p") and fits(m)]))


def _servers(
    draw: st.DrawFn, arch: ModelArch, profiles: dict[str, Any], counts: dict[str, int], max_len: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    servers: list[dict[str, Any]] = []
    reps: list[dict[str, Any]] = []
    order = list(counts)  # the larger servers first or last: the HCCN plan numbers NICs in server order
    if draw(st.booleans()):
        order.reverse()
    for pname in order:
        names = [f"{pname}-{i:02d}" for i in range(counts[pname])]
        local, hbm = _shape(profiles[pname])
        group = "default" if pname == "npu" else "small"  # replicas of one rollout group share a profile
        reps += [{**r, "group": group} for r in draw(_replicas(arch, names, local, hbm, max_len))]
        for name in names:
            i = len(servers)
            srv: dict[str, Any] = {"name": name, "address": f"172.16.{i // 200}.{10 + i % 200}"}
            srv |= {"profile": pname, "roles": ["npu", "build"] if i == 0 else ["npu"]}
            if draw(st.booleans()):
                srv["labels"] = {"rack": f"r{i // 4}", "pod": "p1"}
            if draw(st.integers(0, 4)) == 0:
                srv["overrides"] = {"hccl_if_ip": f"172.18.0.{10 + i}", "socket_ifname": "enp189s0f1"}
            servers.append(srv)
    return servers, reps


def _serving(draw: st.DrawFn, arch: ModelArch, reps: list[dict[str, Any]], max_len: int) -> dict[str, Any]:
    global_par = reps[0]["par"]
    replicas = []
    for r, rep in enumerate(reps):
        out: dict[str, Any] = {"name": f"r{r}", "servers": rep["servers"]}
        if rep["par"] != global_par:
            out["parallelism"] = _par_dict(rep["par"])
        out |= {key: rep[key] for key in ("devices", "port") if key in rep}
        if rep["group"] != "default" or draw(st.booleans()):
            out["group"] = rep["group"]
        replicas.append(out)
    seqs = draw(st.integers(1, 32))
    serving: dict[str, Any] = {
        "parallelism": _par_dict(global_par),
        "max_model_len": max_len,
        "max_num_seqs": seqs,
        "gpu_memory_utilization": draw(st.sampled_from([0.9, 0.92])),
        "replicas": replicas,
    }
    if draw(st.booleans()):
        serving["api_key"] = "env:VLLM_API_KEY"
    if draw(st.booleans()):
        serving["max_num_batched_tokens"] = max(seqs, draw(st.sampled_from([2048, 4096, 8192])))
    if arch.moe:
        serving["hccl"] = {"buffsize_mb": 256}
    if draw(st.booleans()):
        serving["env"] = {"OMP_NUM_THREADS": "1", "VLLM_LOGGING_LEVEL": "INFO"}
    return serving


def _software(family: str, where: str = "path") -> dict[str, Any]:
    """Driver and firmware .run packages named the way Huawei names them for the chip family."""
    prefix, driver_sha, firmware_sha = PACKAGES[family]
    base = "https://mirror.example.com/ascend" if where == "url" else "/srv/ascend"
    driver = f"{prefix}-npu-driver_25.5.1_linux-aarch64.run"
    firmware = f"{prefix}-npu-firmware_7.8.0.6.201.run"
    return {
        "driver": {"version": "25.5.1", where: f"{base}/{driver}", "sha256": driver_sha},
        "firmware": {"version": "7.8.0.6.201", where: f"{base}/{firmware}", "sha256": firmware_sha},
        "vllm_ascend": {"version": "v0.23.0"},
    }


def _hccn(draw: st.DrawFn, local: int) -> dict[str, Any]:
    o = draw(st.integers(100, 250))
    subnet: dict[str, Any] = {"cidr": f"10.{o}.0.0/16"}
    if draw(st.booleans()):
        subnet["gateway"] = f"10.{o}.0.1"
    hccn: dict[str, Any] = {"plan": "single_subnet", "subnets": [subnet]}
    if local > 1 and draw(st.booleans()):
        hccn = {"plan": "per_index", "subnets": [subnet, {"cidr": f"10.{o + 1}.0.0/16"}]}
    return hccn | {"first_host": draw(st.integers(10, 3000))}


def _rollout(draw: st.DrawFn, n_rep: int) -> dict[str, Any]:
    rollout: dict[str, Any] = {"canary": draw(st.integers(0, min(1, n_rep)))}
    rollout["batch_size"] = draw(st.one_of(st.integers(1, n_rep), st.just("50%")))
    if n_rep > 1 and draw(st.booleans()):
        rollout["min_available"] = draw(st.integers(0, n_rep - 1))
    return rollout


@st.composite
def site_specs(draw: st.DrawFn) -> dict[str, Any]:
    """A valid site spec as a plain dict: one chip family, 1-8 NPU servers of one or two sizes."""
    family = draw(st.sampled_from(sorted(PACKAGES)))
    profiles = {"npu": _profile(draw, family)}
    n = draw(st.integers(1, 8))
    counts = {"npu": n}
    if n > 1 and profiles["npu"]["cards"] > 1 and draw(st.booleans()):  # a second, smaller kind of server
        profiles["npu-small"] = _profile(draw, family, cards=profiles["npu"]["cards"] // 2)
        counts["npu"] = draw(st.integers(1, n - 1))
        counts["npu-small"] = n - counts["npu"]
    max_len = draw(st.sampled_from([2048, 4096, 8192, 16384]))
    model = _model(draw, family, profiles, counts, max_len)
    arch = get_model(model)
    servers, reps = _servers(draw, arch, profiles, counts, max_len)
    extra = draw(st.sampled_from(["none", "ops", "edge"]))
    if extra != "none":
        roles = ["monitoring"] if extra == "ops" else ["gateway", "monitoring"]
        servers.append({"name": f"{extra}-01", "address": "172.17.0.5", "roles": roles})
    facts = get_chip(profiles["npu"]["chip"])
    distro, version = draw(st.sampled_from(facts.supported_os))
    spec: dict[str, Any] = {
        "spec_version": 1,
        "site": f"gen-{draw(st.integers(0, 999))}",
        "profiles": profiles,
        "servers": servers,
        "os": {"distro": distro, "version": version},
        "software": _software(family, draw(st.sampled_from(["path", "url"]))),
        "model": {"name": model, "weights_path": f"/data/models/{model}"},
        "serving": _serving(draw, arch, reps, max_len),
        "rollout": _rollout(draw, len(reps)),
    }
    if family == "310p" and draw(st.booleans()):
        spec["model"]["dtype"] = "float16"
    multi_node = any(len(r["servers"]) > 1 for r in reps)
    if (multi_node and facts.has_roce) or draw(st.booleans()):  # required for multi-node RoCE replicas
        spec["network"] = {"hccn": _hccn(draw, min(_shape(p)[0] for p in profiles.values()))}
    if extra == "edge" and draw(st.booleans()):
        spec["gateway"] = {"enabled": True}
    if distro not in ("ubuntu", "debian"):  # monitoring needs a Debian-family OS (validation refuses it)
        spec["monitoring"] = {"enabled": False}
    return spec


# --- helpers -------------------------------------------------------------------------------------------


def pyyaml_text(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False)


def ruamel_text(data: Any) -> str:
    dumper = YAML(typ="safe", pure=True)
    dumper.default_flow_style = False
    buf = io.StringIO()
    dumper.dump(data, buf)
    return buf.getvalue()


def validated(text: str) -> ValidationResult:
    result = validate_text(text)
    errors = [format_finding(f, "site.yaml") for f in result.errors]
    assert not errors, "\n".join(errors) + "\n--- spec:\n" + text
    assert result.ok and result.spec is not None
    return result


def files_without_sha(result: ValidationResult) -> dict[str, str]:
    assert result.document is not None
    return {k: v.replace(result.document.sha256, "<sha256>") for k, v in render_texts(result).items()}


PROPERTY = settings(max_examples=40, deadline=None)


# --- properties ----------------------------------------------------------------------------------------


@PROPERTY
@given(site_specs())
def test_generated_specs_validate_and_plan_every_server(data: dict[str, Any]) -> None:
    result = validated(pyyaml_text(data))
    assert result.plan is not None and result.spec is not None
    assert [r.name for r in result.plan.replicas] == [r["name"] for r in data["serving"]["replicas"]]
    npu = {s["name"] for s in data["servers"] if "npu" in s["roles"]}
    served = {m.server for r in result.plan.replicas for m in r.members}
    assert served == npu
    for rep in result.plan.replicas:
        assert rep.tp * rep.pp * rep.dp == sum(len(m.devices) for m in rep.members)
        assert [m.dp_start_rank for m in rep.members] == [
            i * rep.members[0].dp_size_local for i in range(len(rep.members))
        ]


@PROPERTY
@given(site_specs())
def test_render_is_deterministic(data: dict[str, Any]) -> None:
    text = pyyaml_text(data)
    first, second = validated(text), validated(text)
    texts = render_texts(second)
    assert sorted(k for k in texts if k.startswith("host_vars/")) == sorted(
        f"host_vars/{s['name']}.yml" for s in data["servers"]
    )
    with tempfile.TemporaryDirectory() as tmp:
        written = render(first, Path(tmp))
        assert {str(p.relative_to(tmp)): p.read_text(encoding="utf-8") for p in written} == texts
        assert not [p for p in Path(tmp).iterdir() if p.name.startswith(".render-")]


@PROPERTY
@given(site_specs())
def test_yaml_round_trip_gives_the_same_spec_and_files(data: dict[str, Any]) -> None:
    a = validated(pyyaml_text(data))
    b = validated(ruamel_text(data))
    assert a.spec is not None and b.spec is not None
    assert a.spec.model_dump() == b.spec.model_dump()
    # The fully expanded spec (every default written out) is the same spec and renders the same files.
    c = validated(ruamel_text(a.spec.model_dump(mode="json")))
    assert c.spec is not None
    assert c.spec.model_dump() == a.spec.model_dump()
    assert files_without_sha(c) == files_without_sha(a)


@PROPERTY
@given(site_specs())
def test_model_dump_round_trip(data: dict[str, Any]) -> None:
    spec = validated(pyyaml_text(data)).spec
    assert spec is not None
    again = SiteSpec.model_validate(spec.model_dump(mode="json"))
    assert again == spec
    assert again.model_dump(mode="json") == spec.model_dump(mode="json")


def _hccn_addresses_of_mixed_a2_site(small_first: bool) -> list[str]:
    """An 8-card and a 4-card A2 server, one single-server replica each, one HCCN /24: their NIC addresses."""
    servers = [
        {"name": "big", "address": "10.0.0.1", "profile": "a2-8"},
        {"name": "small", "address": "10.0.0.2", "profile": "a2-4"},
    ]
    data = {
        "spec_version": 1,
        "site": "mixed-a2",
        "profiles": {"a2-8": {"chip": "910B3", "cards": 8}, "a2-4": {"chip": "910B3", "cards": 4}},
        "servers": servers[::-1] if small_first else servers,
        "os": {"distro": "ubuntu", "version": "22.04"},
        "software": _software("910b"),
        "network": {"hccn": {"subnets": [{"cidr": "192.168.100.0/24"}]}},
        "model": {"name": "DeepSeek-R1-Distill-Qwen-7B", "weights_path": "/data/models/qwen-7b"},
        "serving": {
            "parallelism": {"tp": 4},
            "replicas": [
                {"name": "r1", "servers": ["big"], "parallelism": {"tp": 4, "dp": 2}},
                {"name": "r2", "servers": ["small"], "group": "small"},
            ],
        },
    }
    plan = validated(pyyaml_text(data)).plan
    assert plan is not None
    return [d.address for h in plan.hosts for d in h.hccn]


@pytest.mark.parametrize("small_first", [True, False])
def test_hccn_plan_for_servers_of_different_sizes(small_first: bool) -> None:
    # Regression: the plan numbered server i's NICs from first_host + i x (its own device count), so a
    # 4-NPU server listed after an 8-NPU one got addresses 4-7 of the first (rejected as 'already used').
    addresses = _hccn_addresses_of_mixed_a2_site(small_first)
    assert len(addresses) == len(set(addresses)) == 12
