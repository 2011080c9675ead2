"""Which planned holder services the drivers role stops for an upgrade (npu_driver tasks/install.yml, "the
planned services that hold the NPUs and run"), evaluated by Ansible's own templating against
ansible.builtin.service_facts as it reports services: systemd names them `<unit>.service`
(SystemctlScanService: `systemctl list-units`), sysv by their init script (ServiceScanService)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

TASKS = Path(__file__).resolve().parents[3] / "roles" / "npu_driver" / "tasks" / "install.yml"
NAME = "Driver | the planned services that hold the NPUs and run"


def _expression() -> str:
    block = next(t for t in yaml.safe_load(TASKS.read_text()) if "block" in t)["block"]
    task = next(t for t in block if t["name"] == NAME)
    return str(task["ansible.builtin.set_fact"]["_npu_driver_holders_running"])


def _running(services: dict[str, dict[str, Any]], wanted: list[str]) -> list[str]:
    variables = {"npu_driver_holder_services": wanted, "ansible_facts": {"services": services}}
    templar = Templar(loader=DataLoader(), variables=variables)
    return list(templar.template(trust_as_template(_expression())))


def _svc(name: str, state: str, source: str) -> dict[str, Any]:
    return {"name": name, "state": state, "status": "enabled", "source": source}


@pytest.mark.parametrize("suffix", [".service", ""], ids=["systemd", "sysv"])
def test_the_running_exporter_is_stopped_whatever_the_service_manager_calls_it(suffix: str) -> None:
    source = "systemd" if suffix else "sysv"
    services = {
        f"npu-exporter{suffix}": _svc(f"npu-exporter{suffix}", "running", source),
        f"ssh{suffix}": _svc(f"ssh{suffix}", "running", source),
        f"irqbalance{suffix}": _svc(f"irqbalance{suffix}", "stopped", source),
    }
    assert _running(services, ["npu-exporter"]) == ["npu-exporter"]
    assert _running(services, ["irqbalance"]) == []  # stopped: nothing to stop, nothing to start after
    assert _running(services, []) == []  # ssh runs too, but the plan names it not
    assert _running({}, ["npu-exporter"]) == []  # not installed (the monitoring phase comes later)
