"""The warm-up set of rollout.warmup (planning/warmup.py) and its render (group_vars rollout_warmup): every
shape users send, the site's system prompts, enough tokens per answer for MTP's draft-and-verify steps
(num_speculative_tokens as the examples' serving arguments give it), a long prompt that fits max_model_len,
nothing when it is off."""

from __future__ import annotations

import json
from typing import Any

from orchestrator.pipeline import validate_text
from orchestrator.planning.model import SitePlan
from orchestrator.planning.warmup import speculative_tokens, warmup_plan
from orchestrator.render.vars.serve import serve_vars
from orchestrator.spec.site import SiteSpec
from tests.helpers import load_example, to_yaml


def plan_of(s: SiteSpec) -> SitePlan:
    result = validate_text(to_yaml(s.model_dump(mode="json", exclude_unset=True)))
    assert result.plan is not None, [str(f) for f in result.errors]
    return result.plan


def spec(name: str, **rollout: Any) -> SiteSpec:
    data = load_example(name)
    data.setdefault("rollout", {}).update(rollout)
    return SiteSpec.model_validate(data)


def test_every_shape_once_and_the_system_prompts_as_chats() -> None:
    s = spec("a2-single-distill", warmup={"system_prompts": ["You are a tutor.", "Answer in French."]})
    plan = warmup_plan(s)
    assert plan is not None and (plan.max_rounds, plan.settle_ratio) == (5, 1.25)
    reqs = [r.as_dict() for r in plan.requests]
    shapes = [(r["endpoint"], r["body"]["stream"], "prompt_words" in r) for r in reqs]
    assert shapes[:5] == [
        ("completion", False, False),
        ("completion", True, False),
        ("completion", False, True),
        ("chat", False, False),
        ("chat", True, False),
    ]
    systems = [r["body"]["messages"][0] for r in reqs[5:]]
    assert systems == [
        {"role": "system", "content": "You are a tutor."},
        {"role": "system", "content": "Answer in French."},
    ]
    assert len({r["name"] for r in reqs}) == len(reqs)
    assert all("model" not in r["body"] for r in reqs)  # the role sends the served name


def test_the_long_prompt_fits_max_model_len() -> None:
    data = load_example("a2-single-distill")
    data["serving"]["max_model_len"] = 512
    data.setdefault("rollout", {})["warmup"] = {"long_prompt_tokens": 100_000}
    plan = warmup_plan(SiteSpec.model_validate(data))
    assert plan is not None
    (long,) = [r for r in plan.requests if r.prompt_words]
    assert long.prompt_words + long.max_tokens <= 512
    assert long.prompt_words == 512 - 16 - 64


def test_mtp_answers_are_long_enough_for_several_draft_steps() -> None:
    pd = spec("a3-pd-r1-w8a8")
    k = pd.serving.disaggregation.decode.speculative_config["num_speculative_tokens"]  # type: ignore[union-attr,index]
    assert speculative_tokens(pd) == k
    data = load_example("a2-single-distill")
    data["serving"]["extra_args"] = [
        "--speculative-config",
        json.dumps({"method": "mtp", "num_speculative_tokens": 7}),
    ]
    plan = warmup_plan(SiteSpec.model_validate(data))
    assert plan is not None and {r.max_tokens for r in plan.requests} == {32}  # 4 steps of 7 drafts + 1


def test_off_renders_null_and_on_renders_the_requests() -> None:
    off = spec("a2-single-distill", warmup={"enabled": False})
    assert warmup_plan(off) is None
    assert serve_vars(off, plan_of(off))["rollout_warmup"] is None
    on = spec("a2-single-distill")
    rendered = serve_vars(on, plan_of(on))["rollout_warmup"]
    assert (
        rendered["max_rounds"] == 5
        and rendered["requests"][0]["body"]["prompt"] == "The capital of France is"
    )
