"""The image phase's variables (role vllm_image): what each chip's image is built from (the plan's image
builds), the registry, the one server that builds, and the build context on the controller.

The image tag the role deploys is `<vllm_image_builds[].tag>-<hash12>`: a sha256 over the context's files
and the build args, computed by the role at run time (a context edited after rendering still moves the tag).
"""

from __future__ import annotations

from typing import Any

from orchestrator.planning.model import SitePlan
from orchestrator.spec.site import SiteSpec


def image_vars(spec: SiteSpec, plan: SitePlan) -> dict[str, Any]:
    reg = spec.image.registry
    return {
        "vllm_image_registry": None
        if reg is None
        else {
            "url": reg.url,
            "username": reg.username,
            "password_ref": reg.password,
            "insecure": reg.insecure,
        },
        "vllm_image_builds": [
            {
                "chip": i.chip,
                "soc_version": i.soc_version,
                "cann": i.cann,
                "os_family": i.os_family,
                "base_image": i.base_image,
                "upstream_image": i.upstream_image,
                "tag": i.tag,
                "build_args": dict(i.build_args),
            }
            for i in plan.images
        ],
        # image.build_host, else the first server with role build, else the first NPU server
        "vllm_image_build_host": plan.roles.build,
        # null: roles/vllm_image/files/vllm-ascend of the checkout the playbooks run from (the role's default)
        "vllm_image_context": spec.image.context,
    }
