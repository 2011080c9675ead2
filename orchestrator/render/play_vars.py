"""Play-level settings of the phase playbooks, rendered into `inventories/<site>/play_vars.yml`.

`serial` and `max_fail_percentage` are play keywords: Ansible templates them before any host's inventory
variables exist, so they cannot come from group_vars (`hostvars` is undefined there). The phase playbooks
load this file as `vars_files` (the folder of the inventory source, `-i inventories/<site>/hosts.yml`).
Play vars outrank inventory vars for every host of the play, so this file holds play keywords only
(`play_<phase>_<keyword>`), never a host setting.
"""

from __future__ import annotations

from typing import Any

from orchestrator.planning.model import SitePlan
from orchestrator.render.vars.drivers import drivers_play_vars
from orchestrator.render.vars.serve import serve_play_vars


def play_vars(plan: SitePlan) -> dict[str, Any]:
    return {**drivers_play_vars(plan), **serve_play_vars(plan)}
