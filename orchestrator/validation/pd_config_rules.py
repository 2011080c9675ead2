"""Each PD pool's additional_config, key by key against the pinned vllm-ascend release: keys a release
removed (refused, naming it), keys the release does not read (a misspelling does nothing), and
recompute_scheduler_enable, which only decode instances use.

Sources: orchestrator/validation/ascend_keys.py (vllm_ascend/ascend_config.py @v0.23.0, release notes);
vllm_ascend/platform.py @v0.23.0 check_and_update_config: on kv_role kv_producer "recompute_scheduler_enable
is ignored on PD-disaggregated P nodes" (a warning; it is forced to false).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from orchestrator.catalog.version import Version
from orchestrator.spec.findings import Finding, error, warning
from orchestrator.spec.site import SiteSpec
from orchestrator.validation.ascend_keys import ACCEPTED, ACCEPTED_RELEASE, REMOVED
from orchestrator.validation.pd_common import Pool, pools
from orchestrator.validation.software import release_of

CODE = "pd-config"


def check(spec: SiteSpec) -> Iterator[Finding]:
    release = release_of(spec)
    pinned = Version(release.version) if release is not None else None
    for p in pools(spec):
        for key in p.pool.additional_config:
            yield from _key(spec, p, key, pinned)
        if p.role == "prefill" and p.pool.additional_config.get("recompute_scheduler_enable") is True:
            yield warning(
                p.field("additional_config", "recompute_scheduler_enable"),
                "recompute_scheduler_enable on prefill instances is ignored: vllm-ascend logs "
                '"recompute_scheduler_enable is ignored on PD-disaggregated P nodes '
                "(kv_role='kv_producer')\" "
                "and turns it off (vllm_ascend/platform.py @v0.23.0)",
                "remove it from the prefill pool's additional_config; keep it in the decode pool's",
                CODE,
            )


def _key(spec: SiteSpec, p: Pool, key: str, pinned: Version | None) -> Iterator[Finding]:
    path = p.field("additional_config", key)
    gone = REMOVED.get(key)
    if gone is not None and (pinned is None or pinned >= gone.since):
        yield error(
            path,
            f"additional_config key {key} is gone from vllm-ascend {gone.since} on"
            + (f" (the pinned release is {pinned})" if pinned else "")
            + f": {gone.note}",
            gone.fix,
            CODE,
        )
        return
    if gone is not None or pinned != ACCEPTED_RELEASE or key in ACCEPTED:
        return
    close = difflib.get_close_matches(key, sorted(ACCEPTED), n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    message = (
        f"additional_config key {key!r} is not read by vllm-ascend {ACCEPTED_RELEASE} "
        "(vllm_ascend/ascend_config.py), which ignores unknown keys without a word"
    )
    if spec.serving.allow_unknown_args:
        yield warning(path, message + " (allowed by serving.allow_unknown_args)", hint or None, CODE)
    else:
        yield error(
            path,
            message,
            f"{hint}remove it, or set serving.allow_unknown_args: true if your build reads it",
            CODE,
        )
