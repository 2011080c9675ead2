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
from orchestrator.planning.preflight import drivers_serial
from orchestrator.render.rollout_vars import rollout_play_vars
from orchestrator.spec.site import SiteSpec


def play_vars(spec: SiteSpec, plan: SitePlan) -> dict[str, Any]:
    return {
        # one server alone first (a driver that does not come back costs one server), then
        # software.reboot.batch_size at a time
        "play_drivers_serial": drivers_serial(spec),
        "play_drivers_max_fail_percentage": 0,  # a failed batch stops the rollout
        **rollout_play_vars(spec, plan),
    }
