"""A valid PD site (the vllm-ascend 2P1D tutorial layout on four Atlas 800T A3 servers) as YAML text, and
helpers to break one line of it and find the finding that line causes.

Layout (docs/source/tutorials/features/pd_disaggregation_mooncake_multi_node.md @v0.23.0): two prefill
instances of DP2 x TP8 (one per server, kv_port 36000 / 36100), one decode instance of DP32 x TP1 over two
servers (kv_port 36200), EP on both, DeepSeek-R1-W8A8, the gateway on its own server.
"""

from __future__ import annotations

from orchestrator.pipeline import ValidationResult, validate_text
from orchestrator.spec.findings import Finding, format_path

BASE = """\
spec_version: 1
site: pd-a3
ssh:
  user: root
  key_file: ~/.ssh/id_ed25519
profiles:
  atlas-800t-a3:
    chip: "910_93"
    cards: 8
servers:
  - {name: a3-01, address: 10.30.0.11, profile: atlas-800t-a3, roles: [npu, build]}
  - {name: a3-02, address: 10.30.0.12, profile: atlas-800t-a3}
  - {name: a3-03, address: 10.30.0.13, profile: atlas-800t-a3}
  - {name: a3-04, address: 10.30.0.14, profile: atlas-800t-a3}
  - {name: gw-01, address: 10.30.0.5, roles: [gateway, monitoring]}
os:
  distro: ubuntu
  version: "22.04"
software:
  driver:
    version: 25.5.1
    path: /srv/ascend/Atlas-A3-hdk-npu-driver_25.5.1_linux-aarch64.run
    sha256: 95397e4741029245a6b4045bf2456fe079c1015917b3cc9c71341c937cb2cca1
  firmware:
    version: 7.8.0.6.201
    path: /srv/ascend/Atlas-A3-hdk-npu-firmware_7.8.0.6.201.run
    sha256: 927fcce197b3bed2a9f6501608820be75077d303937948e9d823b513e087042e
  vllm_ascend:
    version: v0.23.0
gateway:
  enabled: true
model:
  name: DeepSeek-R1-W8A8
  weights_path: /data/models/DeepSeek-R1-W8A8
  served_name: deepseek-r1
serving:
  max_model_len: 16384
  max_num_seqs: 8
  disaggregation:
    connector: MooncakeConnectorV1
    prefill:
      parallelism: {tp: 8, dp: 2, ep: true}
      port: 7100
      kv_port: 36000
      dp_rpc_port: 12321
      hccl_buffsize_mb: 256
      additional_config: {enable_shared_expert_dp: true}
      speculative_config: {method: deepseek_mtp, num_speculative_tokens: 1}
      env: {VLLM_RPC_TIMEOUT: "3600000"}
      extra_args: [--seed, "1024"]
      instances:
        - {name: p0, servers: [a3-01]}
        - {name: p1, servers: [a3-02]}
    decode:
      parallelism: {tp: 1, dp: 32, ep: true}
      port: 7200
      kv_port: 36200
      dp_rpc_port: 12421
      hccl_buffsize_mb: 1024
      max_num_seqs: 8
      additional_config: {recompute_scheduler_enable: true, multistream_overlap_shared_expert: true}
      speculative_config: {method: deepseek_mtp, num_speculative_tokens: 1}
      compilation_config: {cudagraph_mode: FULL_DECODE_ONLY}
      env: {VLLM_RPC_TIMEOUT: "3600000"}
      extra_args: []
      instances:
        - {name: d0, servers: [a3-03, a3-04]}
"""


def validate(text: str) -> ValidationResult:
    return validate_text(text, "site.yaml")


def edit(text: str, *pairs: tuple[str, str]) -> str:
    """text with each (old, new) replaced; old must occur exactly once (so a test breaks what it means to)."""
    for old, new in pairs:
        assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times"
        text = text.replace(old, new)
    return text


def line_of(text: str, snippet: str) -> int:
    """The 1-based line of the one line that contains snippet."""
    found = [n for n, line in enumerate(text.splitlines(), 1) if snippet in line]
    assert len(found) == 1, f"{snippet!r} is on lines {found}"
    return found[0]


def with_code(result: ValidationResult, code: str) -> list[Finding]:
    return [f for f in result.findings if f.code == code]


def expect(text: str, code: str, path: str, snippet: str | int, *, only: bool = True) -> Finding:
    """The one finding `code` at `path`, on the line of `snippet` (or that line number); with `only`, no other
    error either."""
    result = validate(text)
    hits = [f for f in with_code(result, code) if format_path(f.path) == path]
    assert len(hits) == 1, [(f.code, format_path(f.path), f.message) for f in result.findings]
    f = hits[0]
    line = snippet if isinstance(snippet, int) else line_of(text, snippet)
    assert f.position is not None and f.position.line == line, (f.position, snippet)
    if only and f.is_error:
        others = [(g.code, format_path(g.path), g.message) for g in result.errors if g is not f]
        assert not others, others
    return f


def clean(text: str, code: str) -> None:
    """The fixed spec has no finding with `code`."""
    found = with_code(validate(text), code)
    assert not found, [(f.code, format_path(f.path), f.message) for f in found]


SHARED = edit(
    BASE,
    ("  - {name: a3-02, address: 10.30.0.12, profile: atlas-800t-a3}\n", ""),
    ("  - {name: a3-03, address: 10.30.0.13, profile: atlas-800t-a3}\n", ""),
    ("  - {name: a3-04, address: 10.30.0.14, profile: atlas-800t-a3}\n", ""),
    (
        "  name: DeepSeek-R1-W8A8\n  weights_path: /data/models/DeepSeek-R1-W8A8\n",
        "  name: DeepSeek-R1-Distill-Qwen-32B\n  weights_path: /data/models/DeepSeek-R1-Distill-Qwen-32B\n",
    ),
    ("{tp: 8, dp: 2, ep: true}", "{tp: 4, dp: 1}"),
    ("{tp: 1, dp: 32, ep: true}", "{tp: 4, dp: 1}"),
    ("      kv_port: 36200\n", "      kv_port: 36100\n"),
    ("      speculative_config: {method: deepseek_mtp, num_speculative_tokens: 1}\n      env", "      env"),
    (
        "      speculative_config: {method: deepseek_mtp, num_speculative_tokens: 1}\n      compilation",
        "      compilation",
    ),
    ("additional_config: {enable_shared_expert_dp: true}", "additional_config: {}"),
    (
        "additional_config: {recompute_scheduler_enable: true, multistream_overlap_shared_expert: true}",
        "additional_config: {recompute_scheduler_enable: true}",
    ),
    (
        "        - {name: p0, servers: [a3-01]}\n        - {name: p1, servers: [a3-02]}",
        "        - {name: p0, servers: [a3-01], devices: [0, 1, 2, 3]}",
    ),
    ("{name: d0, servers: [a3-03, a3-04]}", "{name: d0, servers: [a3-01], devices: [4, 5, 6, 7]}"),
)
"""One A3 server shared by a prefill and a decode instance (disjoint devices, kv ports 36000 and 36100), a
dense model (DeepSeek-R1-Distill-Qwen-32B, TP4 on each side)."""
