"""`orchestrator schema`: the JSON Schema of the site spec."""

from __future__ import annotations

import json


def schema_command() -> None:
    """Print the JSON Schema of the site spec (for editor completion)."""
    from orchestrator.spec.site import SiteSpec

    print(json.dumps(SiteSpec.model_json_schema(), indent=2, sort_keys=True))
