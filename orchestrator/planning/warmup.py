"""The warm-up set: what a replica (every PD rank) serves after its gates and before the gateway routes to
it (rollout.warmup). vLLM-Ascend compiles kernels for each new shape on its first requests (a high TTFT on
the first request while Triton / bisheng JIT-compile:
https://github.com/vllm-project/vllm-ascend/issues/7193; upstream's own warm-up,
https://github.com/vllm-project/vllm-ascend/pull/13327, is in no release up to v0.23.0), so the set covers
the shapes users send: completion and chat, short and long prompts, streamed and not, the site's system
prompts, and enough tokens per answer to run the MTP draft-and-verify steps when speculative decoding is
on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orchestrator.planning.speculative import speculative_config
from orchestrator.spec.site import SiteSpec

SHORT = "The capital of France is"
QUESTION = "Name a prime number."
MIN_TOKENS = 16  # per answer: several decode steps (batch shapes of one sequence) after the prefill


@dataclass(frozen=True)
class WarmupRequest:
    name: str
    chat: bool
    prompt: str  # completion: the prompt; chat: the user message
    max_tokens: int
    stream: bool = False
    system: str | None = None
    # a prompt of this many words instead (ascend.npu.vllm_warmup repeats one word: one token per word for
    # the usual BPE vocabularies; the length is the point, not the text)
    prompt_words: int = 0

    def as_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"max_tokens": self.max_tokens, "stream": self.stream}
        if self.chat:
            system = [{"role": "system", "content": self.system}] if self.system is not None else []
            body["messages"] = [*system, {"role": "user", "content": self.prompt}]
        elif not self.prompt_words:
            body["prompt"] = self.prompt
        out = {"name": self.name, "endpoint": "chat" if self.chat else "completion", "body": body}
        return out | ({"prompt_words": self.prompt_words} if self.prompt_words else {})


@dataclass(frozen=True)
class WarmupPlan:
    requests: tuple[WarmupRequest, ...]
    max_rounds: int
    settle_ratio: float


def speculative_tokens(spec: SiteSpec) -> int:
    """The most draft tokens any engine of the site proposes per step (0: no speculative decoding)."""
    configs: list[dict[str, Any] | None] = [speculative_config(spec.serving.extra_args)]
    pd = spec.serving.disaggregation
    if pd is not None:
        configs += [pd.prefill.speculative_config, pd.decode.speculative_config]
    found = [c.get("num_speculative_tokens") for c in configs if c]
    return max((int(n) for n in found if isinstance(n, int) and not isinstance(n, bool)), default=0)


def warmup_plan(spec: SiteSpec) -> WarmupPlan | None:
    """None when rollout.warmup is off."""
    w = spec.rollout.warmup
    if not w.enabled:
        return None
    k = speculative_tokens(spec)
    tokens = max(MIN_TOKENS, 4 * (k + 1))  # a few draft-and-verify steps of k drafts each
    long_words = max(1, min(w.long_prompt_tokens, spec.serving.max_model_len - tokens - 64))
    requests = [
        WarmupRequest("completion", False, SHORT, tokens),
        WarmupRequest("completion, streamed", False, SHORT, tokens, stream=True),
        WarmupRequest(f"completion, {long_words}-word prompt", False, "", tokens, prompt_words=long_words),
        WarmupRequest("chat", True, QUESTION, tokens),
        WarmupRequest("chat, streamed", True, QUESTION, tokens, stream=True),
    ]
    requests += [
        WarmupRequest(f"chat, system prompt {i + 1}", True, QUESTION, tokens, stream=True, system=text)
        for i, text in enumerate(w.system_prompts)
    ]
    return WarmupPlan(tuple(requests), w.max_rounds, w.settle_ratio)
