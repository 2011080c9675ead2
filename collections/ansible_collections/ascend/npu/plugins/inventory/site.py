# Copyright: ascend-orchestrator contributors
# Apache-2.0 (see the repository's pyproject.toml)
"""ascend.npu.site: the hosts, groups and variables of a site spec, as `orchestrator render` writes them."""

from __future__ import annotations

DOCUMENTATION = r"""
name: site
short_description: Hosts, groups and variables from an ascend-orchestrator site spec
description:
  - Reads a site spec (site.yaml), validates it the way C(orchestrator validate) does, and yields the hosts,
    groups, group variables and host variables that C(orchestrator render) writes (hosts.yml, group_vars/,
    host_vars/), so an AWX or Ansible Automation Platform inventory source can point at the spec in the
    project's repository instead of a rendered inventory.
  - An invalid spec fails the source with every error (file, line, field path and fix), as the CLI prints
    them; nothing is yielded.
  - The play variables of a rendered inventory (play_vars.yml, the rolling update's serial) are not inventory
    variables; give them to the serve job as extra variables.
  - The source file's name ends in C(ascend_site.yml) or C(ascend_site.yaml). It needs the orchestrator
    Python package where the inventory is parsed (the execution environment or the controller's venv).
options:
  plugin:
    description: Marks the file as a source of this plugin.
    required: true
    choices:
      - ascend.npu.site
  spec:
    description: Path of the site spec, relative to the source file's folder unless absolute (C(~) expands).
    type: str
    required: true
author: ascend-orchestrator
"""

EXAMPLES = r"""
# inventories/prod/inventory.ascend_site.yml, beside the spec
plugin: ascend.npu.site
spec: site.yaml
"""

from pathlib import Path
from typing import Any

from ansible.errors import AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin

SUFFIXES = ("ascend_site.yml", "ascend_site.yaml")


class InventoryModule(BaseInventoryPlugin):  # type: ignore[misc]
    NAME = "ascend.npu.site"

    def verify_file(self, path: str) -> bool:
        return bool(super().verify_file(path)) and path.endswith(SUFFIXES)

    def parse(self, inventory: Any, loader: Any, path: str, cache: bool = True) -> None:
        super().parse(inventory, loader, path, cache)
        self._read_config_data(path)
        spec = Path(self.get_option("spec")).expanduser()
        if not spec.is_absolute():
            spec = Path(path).parent / spec
        files = _rendered(spec)
        self._group("all", files["hosts.yml"]["all"])
        for rel, content in files.items():
            kind, _, name = rel.partition("/")
            if kind in ("group_vars", "host_vars"):
                target = name.removesuffix(".yml")
                if kind == "host_vars":
                    self.inventory.add_host(target)
                for key, value in (content or {}).items():
                    self.inventory.set_variable(target, key, value)

    def _group(self, name: str, body: dict[str, Any] | None) -> None:
        body = body or {}
        self.inventory.add_group(name)
        for host, hvars in (body.get("hosts") or {}).items():
            self.inventory.add_host(host, group=name)
            for key, value in (hvars or {}).items():
                self.inventory.set_variable(host, key, value)
        for key, value in (body.get("vars") or {}).items():
            self.inventory.set_variable(name, key, value)
        for child, child_body in (body.get("children") or {}).items():
            self._group(child, child_body)
            self.inventory.add_child(name, child)


def _rendered(spec: Path) -> dict[str, Any]:
    """Relative path -> content of the inventory `orchestrator render` writes for the spec."""
    try:
        from orchestrator.pipeline import validate_file
        from orchestrator.render.inventory import inventory_files
        from orchestrator.spec.findings import format_finding
    except ImportError as exc:
        raise AnsibleParserError(
            f"ascend.npu.site needs the orchestrator Python package ({exc}). Fix: install "
            "ascend-orchestrator into the Python environment Ansible runs in (the execution environment)."
        ) from exc
    if not spec.is_file():
        raise AnsibleParserError(f"{spec}: no such site spec. Fix: point the source's `spec` at a site.yaml.")
    res = validate_file(spec)
    if not res.ok or res.spec is None or res.plan is None or res.document is None:
        errors = "\n".join(format_finding(f, str(spec)) for f in res.errors)
        raise AnsibleParserError(f"{spec} is not a valid site spec:\n{errors}")
    return inventory_files(res.spec, res.plan, res.document.sha256)
