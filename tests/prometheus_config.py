"""The prometheus role's prometheus.yml.j2 rendered the way its future task will render it, for the tests.

`render_template` renders as ansible-core's template action does (ansible/plugins/action/template.py: a
trusted template, the action's default trim_blocks, no backslash escaping), with Ansible's own Templar.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from tests.helpers import EXAMPLES, ROOT

ROLE = ROOT / "roles" / "prometheus"
RULES = ROLE / "files" / "rules"


def render_template(variables: dict[str, Any]) -> str:
    """What `ansible.builtin.template: src=prometheus.yml.j2` writes (ansible/plugins/action/template.py)."""
    source = ROLE / "templates" / "prometheus.yml.j2"
    templar = Templar(loader=DataLoader(), variables=variables).copy_with_new_env(
        searchpath=[str(source.parent)], available_variables=variables
    )
    overrides = {"trim_blocks": True, "lstrip_blocks": False, "newline_sequence": "\n"}
    text = trust_as_template(source.read_text(encoding="utf-8"))
    out = templar.template(text, escape_backslashes=False, overrides=overrides)
    assert isinstance(out, str)
    return out


def site_vars(site: str, **extra: Any) -> dict[str, Any]:
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text(encoding="utf-8"))
    rendered = yaml.safe_load((EXAMPLES / site / "group_vars" / "all.yml").read_text(encoding="utf-8"))
    return {**defaults, **rendered, **extra}


def write_config(tmp_path: Path, variables: dict[str, Any]) -> Path:
    rules = tmp_path / "rules"
    shutil.copytree(RULES, rules)
    config = tmp_path / "prometheus.yml"
    config.write_text(render_template({**variables, "prometheus_rules_dir": str(rules)}), encoding="utf-8")
    return config
