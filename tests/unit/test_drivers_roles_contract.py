"""The preflight, npu_driver and npu_firmware roles against what render writes for the example sites: every
rendered key of theirs is declared (with a type) in a reading role's meta/argument_specs.yml, every option a
role declares required is rendered, and the declared types accept the rendered values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p.name for p in (REPO / "inventories").iterdir() if (p / "hosts.yml").is_file())
ROLES = ("preflight", "npu_driver", "npu_firmware")
PREFIXES = ("preflight_", "npu_driver_", "npu_firmware_")
TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "int": (int,),
    "float": (float, int),
    "bool": (bool,),
    "dict": (dict,),
    "list": (list,),
}


def options(role: str) -> dict[str, dict[str, Any]]:
    specs = yaml.safe_load((REPO / "roles" / role / "meta" / "argument_specs.yml").read_text())
    opts: dict[str, dict[str, Any]] = specs["argument_specs"]["main"]["options"]
    return opts


def rendered(site: str) -> dict[str, dict[str, Any]]:
    """{host: merged vars} of the site's rendered inventory (all < group < host, as Ansible merges them)."""
    inv = REPO / "inventories" / site
    hosts = yaml.safe_load((inv / "hosts.yml").read_text())["all"]["children"]
    groups: dict[str, set[str]] = {g: set((body or {}).get("hosts") or {}) for g, body in hosts.items()}
    base = yaml.safe_load((inv / "group_vars" / "all.yml").read_text())
    out = {}
    for host in sorted(set().union(*groups.values())):
        merged = dict(base)
        for group in ("npu",):
            if host in groups.get(group, set()) and (inv / "group_vars" / f"{group}.yml").is_file():
                merged.update(yaml.safe_load((inv / "group_vars" / f"{group}.yml").read_text()))
        merged.update(yaml.safe_load((inv / "host_vars" / f"{host}.yml").read_text()) or {})
        merged["_groups"] = {g for g, members in groups.items() if host in members}
        out[host] = merged
    return out


def check_type(name: str, value: Any, spec: dict[str, Any]) -> None:
    if value is None:
        assert not spec.get("required") or name == "preflight_npu", f"{name} is required but rendered null"
        return
    typed = isinstance(value, TYPES[spec["type"]]) and not (
        spec["type"] != "bool" and isinstance(value, bool)
    )
    assert typed, f"{name}={value!r} is not a {spec['type']}"
    if "choices" in spec:
        assert value in spec["choices"], f"{name}={value!r} not in {spec['choices']}"
    for key, sub in (spec.get("options") or {}).items():
        if spec["type"] == "dict":
            assert key in value or not sub.get("required"), f"{name}.{key} missing"
            if key in value:
                check_type(f"{name}.{key}", value[key], sub)
        else:
            for i, item in enumerate(value):
                assert key in item or not sub.get("required"), f"{name}[{i}].{key} missing"
                if key in item:
                    check_type(f"{name}[{i}].{key}", item[key], sub)


@pytest.mark.parametrize("site", EXAMPLES)
def test_rendered_keys_are_declared_and_typed(site: str) -> None:
    specs = {role: options(role) for role in ROLES}
    declared = set().union(*(s.keys() for s in specs.values()))
    for host, hostvars in rendered(site).items():
        ours = {k for k in hostvars if k.startswith(PREFIXES)}
        assert ours <= declared, f"{site}/{host}: rendered but declared by no role: {sorted(ours - declared)}"
        # preflight runs on every server, the driver roles on the npu group
        readers = ["preflight"] + (["npu_driver", "npu_firmware"] if "npu" in hostvars["_groups"] else [])
        for role in readers:
            for name, spec in specs[role].items():
                if spec.get("required"):
                    assert name in hostvars, f"{site}/{host}: {role} requires {name}, render did not write it"
                if name in hostvars:
                    check_type(name, hostvars[name], spec)


def test_role_defaults_are_declared() -> None:
    for role in ROLES:
        defaults = yaml.safe_load((REPO / "roles" / role / "defaults" / "main.yml").read_text())
        missing = set(defaults) - set(options(role))
        assert not missing, f"{role} defaults not in its argument_specs: {sorted(missing)}"
        for name in defaults:
            assert name.startswith(f"{role}_"), f"{role} default {name} is not prefixed with the role name"
