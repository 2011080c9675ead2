"""The model section as whole findings: a custom architecture's consistency (config.json facts: heads are
grouped over KV heads, experts are part of all parameters, MLA has a latent KV rank), a catalog model given
an architecture, the weights source and the model's positions."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import validate_data
from tests.spec_text import Described, described

BASE = {"params_b": 14.0, "layers": 48, "hidden_size": 5120, "heads": 40, "kv_heads": 8}


def _findings(data: dict[str, Any]) -> list[Described]:
    data["serving"]["max_num_seqs"] = 1  # no capacity warning in the way
    return [described(f) for f in validate_data(data).findings]


def _custom(data: dict[str, Any], **arch: object) -> dict[str, Any]:
    data["model"] = {"name": "ft-14b", "weights_path": "/data/models/ft", "architecture": {**BASE, **arch}}
    return data


KV = "check num_key_value_heads in the model's config.json"
MOE = (
    "model.architecture.moe",
    "moe: true needs expert_params_b > 0 and the other way round",
    "set both consistently",
    "model",
    [],
)
MLA = (
    "model.architecture.kv_lora_rank",
    "MLA attention needs kv_lora_rank and qk_rope_head_dim",
    "copy them from config.json",
    "model",
    [],
)


@pytest.mark.parametrize(
    ("arch", "expected"),
    [
        ({}, []),
        ({"kv_heads": 40}, []),  # multi-head attention: one KV head per head
        (
            {"kv_heads": 80},
            [("model.architecture.kv_heads", "kv_heads 80 must divide heads 40", KV, "model", [])],
        ),
        (
            {"kv_heads": 16},
            [("model.architecture.kv_heads", "kv_heads 16 must divide heads 40", KV, "model", [])],
        ),
        (
            {"expert_params_b": 14.0, "moe": True},
            [
                (
                    "model.architecture.expert_params_b",
                    "expert parameters must be fewer than all parameters",
                    "check the model card",
                    "model",
                    [],
                )
            ],
        ),
        ({"expert_params_b": 10.0, "moe": True}, []),
        ({"expert_params_b": 10.0, "moe": False}, [MOE]),
        ({"moe": True}, [MOE]),
        ({"attention": "mla", "kv_lora_rank": 512, "qk_rope_head_dim": 64}, []),
        ({"attention": "mla", "kv_lora_rank": 512}, [MLA]),
        ({"attention": "mla", "qk_rope_head_dim": 64}, [MLA]),
    ],
)
def test_custom_architecture_consistency(
    single: dict[str, Any], arch: dict[str, object], expected: list[Described]
) -> None:
    assert _findings(_custom(single, **arch)) == expected


def test_a_catalog_model_may_not_redefine_its_architecture(single: dict[str, Any]) -> None:
    single["model"]["architecture"] = dict(BASE)
    assert _findings(single) == [
        (
            "model.architecture",
            "'DeepSeek-R1-Distill-Qwen-32B' is a catalog model; its architecture is known",
            "remove model.architecture, or give the model another name",
            "model",
            [],
        )
    ]


def test_max_model_len_may_reach_the_models_positions(single: dict[str, Any]) -> None:
    _custom(single, max_position_embeddings=16384)
    single["serving"]["max_model_len"] = 16384
    assert _findings(single) == []
    single["serving"]["max_model_len"] = 16385
    assert _findings(single) == [
        (
            "serving.max_model_len",
            "max_model_len 16385 exceeds the model's 16384 positions",
            "use at most 16384",
            "model",
            [],
        )
    ]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ({"type": "staged"}, []),
        ({"type": "controller", "location": "/srv/weights/ft", "manifest_sha256": "a" * 64}, []),
        ({"type": "url", "location": "https://models.example.com/ft.tar", "manifest_sha256": "a" * 64}, []),
        (
            {"type": "staged", "location": "/srv/weights/ft"},
            [
                (
                    "model.source.location",
                    "a 'staged' source has no location: weights are already on the servers",
                    "remove location or use type 'controller' or 'url'",
                    "model",
                    [],
                )
            ],
        ),
        (
            {"type": "url", "manifest_sha256": "a" * 64},
            [
                (
                    "model.source.location",
                    "source type 'url' needs a location",
                    "set the controller path or URL of the weights",
                    "model",
                    [],
                )
            ],
        ),
        (
            {"type": "controller", "location": "", "manifest_sha256": "a" * 64},
            [
                (
                    "model.source.location",
                    "source type 'controller' needs a location",
                    "set the controller path or URL of the weights",
                    "model",
                    [],
                )
            ],
        ),
    ],
)
def test_weights_source_location(
    single: dict[str, Any], source: dict[str, str], expected: list[Described]
) -> None:
    single["model"]["source"] = source
    assert _findings(single) == expected


@pytest.mark.parametrize("kind", ["controller", "url"])
def test_copied_weights_without_a_manifest_are_refused(single: dict[str, Any], kind: str) -> None:
    """roles/model_weights/tasks/unverified.yml stops a copy without a manifest; validate says so first."""
    single["model"]["source"] = {"type": kind, "location": "/srv/weights/ft"}
    assert _findings(single) == [
        (
            "model.source.manifest_sha256",
            f"source type '{kind}' copies the weights, and every copy is verified against the manifest: "
            "without manifest_sha256 the weights phase stops",
            "run `orchestrator weights manifest DIR` on the weights and set model.source.manifest_sha256 to "
            "the sha256 it prints",
            "weights",
            [],
        )
    ]


def test_an_unknown_model_name_with_and_without_a_close_catalog_name(single: dict[str, Any]) -> None:
    single["model"] = {"name": "qqqq", "weights_path": "/data/models/q"}  # like no catalog name at all
    ((path, message, fix, code, related),) = _findings(single)
    assert (path, message, code, related) == (
        "model.name",
        "'qqqq' is not in the model catalog and has no architecture block",
        "model",
        [],
    )
    use = "add model.architecture (params_b, layers, hidden_size, heads, kv_heads, ...) or use one of: "
    assert fix is not None and fix.startswith(use) and "DeepSeek-R1-W8A8" in fix
    single["model"] = {"name": "DeepSeek-R1-W8A9", "weights_path": "/data/models/q"}
    ((_, _, fix, _, _),) = _findings(single)
    assert fix is not None and fix.startswith(f"did you mean 'DeepSeek-R1-W8A8'? Otherwise {use}")
