"""The model to serve: a catalog entry or a custom architecture, and where its weights live."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from orchestrator.spec.common import SpecModel


class CustomArchitecture(SpecModel):
    """Architecture facts for a model not in the catalog (used for capacity and parallelism checks)."""

    family: str = Field("custom", description="Model family, e.g. qwen2, llama, deepseek_v3.")
    params_b: float = Field(gt=0, le=10000, allow_inf_nan=False, description="Total parameters in billions.")
    expert_params_b: float = Field(
        0.0, ge=0, le=10000, allow_inf_nan=False, description="Routed-expert parameters (MoE) in billions."
    )
    layers: int = Field(ge=1, le=1024)
    hidden_size: int = Field(ge=1, le=262144)
    heads: int = Field(ge=1, le=4096)
    kv_heads: int = Field(ge=1, le=4096)
    head_dim: int | None = Field(None, ge=1, le=4096, description="Default: hidden_size / heads.")
    moe: bool = False
    attention: Literal["mla", "gqa"] = "gqa"
    kv_lora_rank: int = Field(0, ge=0, le=65536)
    qk_rope_head_dim: int = Field(0, ge=0, le=4096)
    max_position_embeddings: int = Field(32768, ge=1, le=16777216)
    default_dtype: Literal["bfloat16", "float16"] = "bfloat16"


class WeightsSource(SpecModel):
    type: Literal["staged", "controller", "url"] = Field(
        "staged",
        description="staged: already on every server at weights_path; controller: copied from a controller "
        "path; url: fetched once, then distributed.",
    )
    location: str | None = Field(None, description="Controller path or URL (not for 'staged').")
    manifest_sha256: str | None = Field(
        None,
        pattern=r"^[0-9a-f]{64}$",
        description="sha256 of the weights manifest (`orchestrator weights manifest DIR` prints it); every "
        "server verifies its copy against the manifest before serving. Required for 'controller' and 'url' "
        "(copies are verified); without it staged weights are not verified (only config.json is looked for).",
    )
    manifest: str | None = Field(
        None,
        pattern=r"^/",
        description="Controller path of the manifest; default: weights.manifest.json in the controller "
        "location (controller), in the cache (url) or on each server in weights_path (staged).",
    )
    repair: bool = Field(
        True,
        description="A server file that does not match the manifest is moved aside (renamed "
        "<file>.mismatch-<time>, never deleted) and copied again; false: the weights phase fails naming it.",
    )
    bwlimit_mib_s: float | None = Field(
        None, gt=0, le=100000, allow_inf_nan=False, description="Bandwidth cap of each copy, in MiB/s."
    )
    seeds: int = Field(1, ge=1, le=64, description="Servers the controller copies to before fan-out.")
    port: int = Field(
        8873, ge=1024, le=65535, description="TCP port of the temporary rsync daemon on seeding servers."
    )


class Model(SpecModel):
    name: str = Field(description="Catalog entry (e.g. DeepSeek-R1-W8A8) or any name with `architecture`.")
    architecture: CustomArchitecture | None = Field(
        None, description="Required when name is not in the catalog."
    )
    weights_path: str = Field(pattern=r"^/", description="Absolute directory of the weights on each server.")
    source: WeightsSource = Field(default_factory=WeightsSource)
    storage: Literal["local", "nfs", "lustre", "network"] = Field(
        "local",
        description=(
            "The filesystem weights_path is on: local (a server's own disk), nfs, lustre, or network "
            "(another shared filesystem: SFS, CephFS, DTFS). Picks --safetensors-load-strategy with "
            "load_strategy auto."
        ),
    )
    load_strategy: Literal["auto", "lazy", "eager", "prefetch", "torchao"] = Field(
        "auto",
        description=(
            "--safetensors-load-strategy. auto: none on local storage (vLLM's mmap); on shared storage "
            "prefetch (eager before vLLM v0.18) when the checkpoint fits in 90% of the server's memory "
            "(profiles.*.memory_gb), else lazy. Any other value is passed as given and must be one the "
            "pinned vLLM release takes."
        ),
    )
    quantization: Literal["none", "w8a8", "w4a8"] | None = Field(
        None,
        description="Weight quantization (msmodelslim W8A8/W4A8 -> --quantization ascend); default: catalog.",
    )
    dtype: Literal["auto", "bfloat16", "float16"] = "auto"
    served_name: str | None = Field(None, description="--served-model-name; default: the model name.")
    trust_remote_code: bool = True
