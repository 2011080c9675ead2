"""What role vllm_image reads besides vllm_image_builds / vllm_image_registry (rendered with the site-wide
settings in render/inventory.py): the one server that builds, and the build context on the controller.

The image tag the role deploys is `<vllm_image_builds[].tag>-<hash12>`: a sha256 over the context's files
and the build args, computed by the role at run time (a context edited after rendering still moves the tag).
"""

from __future__ import annotations

from typing import Any

from orchestrator.planning.roles import role_host
from orchestrator.spec.site import SiteSpec


def image_vars(spec: SiteSpec) -> dict[str, Any]:
    return {
        # image.build_host, else the first server with role build, else the first NPU server
        "vllm_image_build_host": role_host(spec, "build"),
        # null: roles/vllm_image/files/vllm-ascend of the checkout the playbooks run from (the role's default)
        "vllm_image_context": spec.image.context,
    }
