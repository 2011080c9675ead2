"""Small planning helpers on inputs written out by hand: reading --speculative-config the ways vLLM's parser
accepts it (``--speculative-config JSON``, ``--speculative-config=JSON``, underscores), sysctls on an
unknown kernel, and the checkpoint size of a model without MTP layers."""

from __future__ import annotations

import pytest

from orchestrator.catalog import get_model
from orchestrator.planning import capacity as cap
from orchestrator.planning.speculative import mtp_draft, speculative_config
from orchestrator.planning.tuning import split_sysctls

MTP = '{"method": "mtp", "num_speculative_tokens": 1}'


@pytest.mark.parametrize(
    ("args", "config"),
    [
        (["--speculative-config", MTP], {"method": "mtp", "num_speculative_tokens": 1}),
        ([f"--speculative-config={MTP}"], {"method": "mtp", "num_speculative_tokens": 1}),
        ([f"--speculative_config={MTP}"], {"method": "mtp", "num_speculative_tokens": 1}),
        (["--seed", "1", "--speculative-config", MTP], {"method": "mtp", "num_speculative_tokens": 1}),
        (["--seed", "1"], None),
        (["--speculative-config"], None),  # no value: vLLM's parser would stop; no draft planned
        (["--speculative-config", "[1]"], None),  # JSON, but not an object
        (["--speculative-config", "{not json"], None),
    ],
)
def test_speculative_config_is_read_like_vllm(args: list[str], config: dict[str, object] | None) -> None:
    assert speculative_config(args) == config


def test_only_an_mtp_method_loads_a_draft() -> None:
    assert mtp_draft(["--speculative-config", '{"method": "DeepSeek_MTP"}'])
    assert not mtp_draft(["--speculative-config", '{"method": "ngram"}'])
    assert not mtp_draft(["--speculative-config", '{"num_speculative_tokens": 2}'])


def test_sysctls_on_an_unknown_kernel_are_all_sysctls() -> None:
    settings = {"kernel.sched_migration_cost_ns": 50000, "vm.swappiness": 10}
    assert split_sysctls(settings, "") == (settings, {}, [])


def test_a_model_without_mtp_layers_has_no_mtp_weights() -> None:
    qwen = get_model("DeepSeek-R1-Distill-Qwen-32B")  # BF16: 2 bytes per parameter, no MTP layer
    assert cap.weight_bytes_total(qwen, "none") == pytest.approx(qwen.params_b * 2e9, abs=0.5)
