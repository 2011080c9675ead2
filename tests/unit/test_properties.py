"""Properties over generated valid site specs: they validate, render deterministically and round-trip."""

from __future__ import annotations

import io
import math
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from orchestrator.catalog import ModelArch, get_chip, get_model
from orchestrator.render import render, render_texts
from orchestrator.spec.site import SiteSpec
from orchestrator.validation import ValidationResult, validate_text

GIB = 1024**3
HDK = "25.5.1", "7.8.0.6.201"
# The real HDK package names and digests per chip family, as the examples under inventories/ use them.
PACKAGES: dict[str, dict[str, tuple[str, str]]] = {
    "910b": {
        "driver": (
            "Ascend-hdk-910b-npu-driver_25.5.1_linux-aarch64.run",
            "90dbac2b52c361da24e1f46f890dd08a491a9c7394cc5933fdff3f7db9188078",
        ),
        "firmware": (
            "Ascend-hdk-910b-npu-firmware_7.8.0.6.201.run",
            "e8ddcac6a1356191b50e0cec2fefb65c3c4853e079dafcbd10049950ef9b4ed9",
        ),
    },
    "910_93": {
        "driver": (
            "Atlas-A3-hdk-npu-driver_25.5.1_linux-aarch64.run",
            "95397e4741029245a6b4045bf2456fe079c1015917b3cc9c71341c937cb2cca1",
        ),
        "firmware": (
            "Atlas-A3-hdk-npu-firmware_7.8.0.6.201.run",
            "927fcce197b3bed2a9f6501608820be75077d303937948e9d823b513e087042e",
        ),
    },
    "310p": {
        "driver": (
            "Ascend-hdk-310p-npu-driver_25.5.1_linux-aarch64.run",
            "99a6d93259bcbef19148cecee00722f9b369cc05c5b176983f36fe9b52350cfd",
        ),
        "firmware": (
            "Ascend-hdk-310p-npu-firmware_7.8.0.6.201.run",
            "3303e8fd37f8ec06b118f4dbdcb995fcabb05aa6c858bfff2029771cd0036779",
        ),
    },
}
CHIPS = {"910b": ["910B1", "910B2", "910B3", "910B4"], "910_93": ["910_93"], "310p": ["310P3"]}
DENSE = [
    "DeepSeek-R1-Distill-Qwen-1.5B",
    "DeepSeek-R1-Distill-Qwen-7B",
    "DeepSeek-R1-Distill-Qwen-14B",
    "DeepSeek-R1-Distill-Qwen-32B",
    "DeepSeek-R1-Distill-Llama-8B",
    "DeepSeek-R1-Distill-Llama-70B",
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


def _layouts(arch: ModelArch, local: int, nodes: int, hbm_gb: int, max_len: int) -> list[Par]:
    """Parallel layouts that use every device of the replica, respect the heads and fit easily."""
    out: list[Par] = []
    for tp in (t for t in range(1, local + 1) if local % t == 0):
        if arch.heads % tp or (arch.attention == "gqa" and arch.kv_heads % tp and tp % arch.kv_heads):
            continue
        for pp in (1, 2) if nodes == 1 and not arch.moe else (1,):
            if local % (tp * pp):
                continue
            par = (tp, pp, local * nodes // (tp * pp), arch.moe)
            if _fits(arch, par, hbm_gb, max_len):
                out.append(par)
    return out


def _par_dict(par: Par) -> dict[str, Any]:
    tp, pp, dp, ep = par
    out: dict[str, Any] = {"tp": tp}
    if pp > 1:
        out["pp"] = pp
    if dp > 1:
        out["dp"] = dp
    if ep:
        out["ep"] = True
    return out


@st.composite
def _replicas(
    draw: st.DrawFn, arch: ModelArch, names: list[str], local: int, hbm: int, max_len: int
) -> list[dict[str, Any]]:
    """Replicas that partition the NPU servers: multi-node DP replicas, whole servers, device splits."""
    n = len(names)
    sizes = [k for k in range(1, n + 1) if _layouts(arch, local, k, hbm, max_len)]
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
        chunks = [c for c in chunks if _layouts(arch, c, 1, hbm, max_len)]
        if k == 1 and chunks and draw(st.booleans()):
            size = draw(st.sampled_from(chunks))
            for j in range(local // size):
                par = draw(st.sampled_from(_layouts(arch, size, 1, hbm, max_len)))
                rep = {"servers": members, "par": par, "devices": list(range(j * size, (j + 1) * size))}
                reps.append({**rep, "port": 8000 + j} if j else rep)
        else:
            reps.append({"servers": members, "par": draw(st.sampled_from(_layouts(arch, local, k, hbm, max_len)))})
    return reps


@st.composite
def site_specs(draw: st.DrawFn) -> dict[str, Any]:
    family = draw(st.sampled_from(sorted(PACKAGES)))
    chip = draw(st.sampled_from(CHIPS[family]))
    facts = get_chip(chip)
    profile: dict[str, Any] = {"chip": chip, "cards": draw(st.sampled_from([8, 8, 4, 2]))}
    if family == "310p":
        profile["cards"] = draw(st.integers(1, 4))
        profile["devices_per_card"] = draw(st.sampled_from([1, 2]))
    if chip == "910B4" or family == "310p":
        profile["hbm_gb"] = draw(st.sampled_from(facts.hbm_gb_allowed))
    hbm = profile.get("hbm_gb", facts.hbm_gb_default)
    local = profile["cards"] * profile.get("devices_per_card", facts.devices_per_card_default)
    n = draw(st.integers(1, 8))
    max_len = draw(st.sampled_from([2048, 4096, 8192, 16384]))
    feasible = [
        m
        for m in [*DENSE, MOE]
        if any(_layouts(get_model(m), local, k, hbm, max_len) for k in range(1, n + 1))
        and (m != MOE or family != "310p")
    ]
    model = draw(st.sampled_from(feasible))
    arch = get_model(model)
    names = [f"npu-{i:02d}" for i in range(n)]
    reps = draw(_replicas(arch, names, local, hbm, max_len))

    servers: list[dict[str, Any]] = []
    for i, name in enumerate(names):
        srv: dict[str, Any] = {"name": name, "address": f"172.16.{i // 200}.{10 + i % 200}", "profile": "npu"}
        srv["roles"] = ["npu", "build"] if i == 0 else ["npu"]
        if draw(st.booleans()):
            srv["labels"] = {"rack": f"r{i // 4}", "pod": "p1"}
        servers.append(srv)
    extra = draw(st.sampled_from(["none", "ops", "edge"]))
    if extra != "none":
        roles = ["monitoring"] if extra == "ops" else ["gateway", "monitoring"]
        servers.append({"name": f"{extra}-01", "address": "172.17.0.5", "roles": roles})

    global_par = reps[0]["par"]
    replicas = []
    for r, rep in enumerate(reps):
        out: dict[str, Any] = {"name": f"r{r}", "servers": rep["servers"]}
        if rep["par"] != global_par:
            out["parallelism"] = _par_dict(rep["par"])
        for key in ("devices", "port"):
            if key in rep:
                out[key] = rep[key]
        if draw(st.booleans()):
            out["group"] = draw(st.sampled_from(["default", "blue"]))
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

    sw = PACKAGES[family]
    url = draw(st.booleans())

    def package(kind: str, version: str) -> dict[str, str]:
        file, sha = sw[kind]
        where = {"url": f"https://mirror.example.com/ascend/{file}"} if url else {"path": f"/srv/{file}"}
        return {"version": version, **where, "sha256": sha}

    distro, version = draw(st.sampled_from(facts.supported_os))
    spec: dict[str, Any] = {
        "site": f"gen-{draw(st.integers(0, 999))}",
        "profiles": {"npu": profile},
        "servers": servers,
        "os": {"distro": distro, "version": version},
        "software": {
            "driver": package("driver", HDK[0]),
            "firmware": package("firmware", HDK[1]),
            "vllm_ascend": {"version": "v0.23.0"},
        },
        "model": {"name": model, "weights_path": f"/data/models/{model}"},
        "serving": serving,
    }
    if family == "310p" and draw(st.booleans()):
        spec["model"]["dtype"] = "float16"
    multi = any(len(r["servers"]) > 1 for r in reps)
    if (multi and facts.has_roce) or draw(st.booleans()):
        o = draw(st.integers(100, 250))
        subnet: dict[str, Any] = {"cidr": f"10.{o}.0.0/16"}
        if draw(st.booleans()):
            subnet["gateway"] = f"10.{o}.0.1"
        hccn: dict[str, Any] = {"plan": "single_subnet", "subnets": [subnet]}
        if local > 1 and draw(st.booleans()):
            hccn = {"plan": "per_index", "subnets": [subnet, {"cidr": f"10.{o + 1}.0.0/16"}]}
        hccn["first_host"] = draw(st.integers(10, 3000))
        spec["network"] = {"hccn": hccn}
    if extra == "edge" and draw(st.booleans()):
        spec["gateway"] = {"enabled": True}
    n_rep = len(replicas)
    rollout: dict[str, Any] = {"canary": draw(st.integers(0, min(1, n_rep)))}
    rollout["batch_size"] = draw(st.one_of(st.integers(1, n_rep), st.just("50%")))
    if n_rep > 1 and draw(st.booleans()):
        rollout["min_available"] = draw(st.integers(0, n_rep - 1))
    spec["rollout"] = rollout
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
    assert [str(f) for f in result.errors] == [], text
    assert result.ok and result.spec is not None
    return result


def files_without_sha(result: ValidationResult) -> dict[str, str]:
    assert result.document is not None
    return {k: v.replace(result.document.sha256, "<sha256>") for k, v in render_texts(result).items()}


PROPERTY = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


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
    first = render_texts(validated(text))
    assert render_texts(validated(text)) == first
    assert sorted(k for k in first if k.startswith("host_vars/")) == sorted(
        f"host_vars/{s['name']}.yml" for s in data["servers"]
    )
    with tempfile.TemporaryDirectory() as tmp:
        written = render(validated(text), Path(tmp))
        assert {str(p.relative_to(tmp)): p.read_text(encoding="utf-8") for p in written} == first
        assert not [p for p in Path(tmp).iterdir() if p.name.startswith(".render-")]


@PROPERTY
@given(site_specs())
def test_yaml_round_trip_gives_the_same_spec_and_files(data: dict[str, Any]) -> None:
    a = validated(pyyaml_text(data))
    b = validated(ruamel_text(data))
    assert a.spec is not None and b.spec is not None
    assert a.spec.model_dump() == b.spec.model_dump()
    assert files_without_sha(a) == files_without_sha(b)
    # The fully expanded spec (every default written out) is the same spec and renders the same files.
    c = validated(pyyaml_text(a.spec.model_dump(mode="json")))
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
