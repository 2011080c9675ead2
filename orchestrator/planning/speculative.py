"""Whether the served engine loads a draft model: MTP speculative decoding given in serving.extra_args.

vLLM takes it as ``--speculative-config '{"method": "mtp", "num_speculative_tokens": 3}'`` (also written
``--speculative-config=...`` or with underscores); DeepSeek's MTP draft is its own checkpoint layer(s),
loaded next to the main model (vllm-project/vllm-ascend docs/source/tutorials/models/DeepSeek-R1.md).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

MTP_METHODS = frozenset({"mtp", "deepseek_mtp"})
_FLAG = "--speculative-config"


def speculative_config(extra_args: Sequence[str]) -> dict[str, object] | None:
    """The JSON object passed with --speculative-config, or None (absent or not a JSON object)."""
    for i, arg in enumerate(extra_args):
        name, sep, value = arg.partition("=")
        if name.replace("_", "-") != _FLAG:
            continue
        text = value if sep else (extra_args[i + 1] if i + 1 < len(extra_args) else "")
        try:
            parsed = json.loads(text)
        except ValueError:
            return None
        return parsed if isinstance(parsed, dict) else None
    return None


def mtp_draft(extra_args: Sequence[str]) -> bool:
    """True when the extra args turn on MTP speculative decoding (the draft layers take device memory)."""
    config = speculative_config(extra_args)
    return config is not None and str(config.get("method", "")).lower() in MTP_METHODS
