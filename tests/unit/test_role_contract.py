"""The variable contract between render and the roles (docs/playbooks.md).

Roles read rendered values; they never recompute the plan. Parsed from the roles' own files (Jinja AST of
every templated string in tasks/handlers/defaults/vars and of every template) and from the committed example
inventories (which another test keeps equal to what render writes):

1. every variable a role reads is in its defaults/vars, registered or set in the role, an Ansible magic
   variable or fact, or rendered;
2. every rendered variable a role reads is declared in that role's meta/argument_specs.yml;
3. the declared type matches the rendered value in every example (Ansible checks it again at run time);
4. every declared option is provided: by the role's defaults (same value as argument_specs' default) or by
   render in at least one example;
5. a rendered `<role>_*` variable of an existing role is declared by that role (no stale render keys).

A role that other roles call (roles/ascend_package, through include_role / import_role with `vars`) gets
its options from its callers: what a caller passes counts as provided, and must be declared by the callee.

The checker itself is tested on a small role written here with every kind of mistake.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import jinja2.meta
import pytest
import yaml

from tests.helpers import ROOT
from tests.pending_readers import PENDING_READERS  # PENDING: variables whose role is written next

RAW_EXPRESSION_KEYS = {"when", "changed_when", "failed_when", "until", "that"}
MAGIC = {
    "inventory_hostname", "inventory_hostname_short", "hostvars", "groups", "group_names", "play_hosts",
    "omit", "item", "role_path", "role_name", "playbook_dir", "inventory_dir", "inventory_file",
    "environment", "vars",
    # Jinja / Ansible globals
    "lookup", "query", "q", "now", "undef", "range", "dict", "lipsum", "cycler", "joiner", "namespace",
    "true", "false", "none", "True", "False", "None",
}  # fmt: skip
TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "path": (str,),
    "int": (int,),
    "float": (int, float),
    "bool": (bool,),
    "list": (list,),
    "dict": (dict,),
    "raw": (object,),
}


class _AnyName(dict[str, Any]):
    """Ansible's filters and tests are not Jinja's: the analysis accepts any name (it reads variables)."""

    def __contains__(self, key: object) -> bool:
        return True

    def __missing__(self, key: str) -> Any:
        return _anything

    def get(self, key: str, default: Any = None) -> Any:
        return super().get(key) or _anything


def _anything(*args: Any, **kwargs: Any) -> None:
    return None


_ENV = jinja2.Environment()
_ENV.filters = _AnyName(_ENV.filters)
_ENV.tests = _AnyName(_ENV.tests)


def names_in(text: str, raw: bool = False) -> set[str]:
    source = "{{ " + text + " }}" if raw else text
    if not raw and "{{" not in text and "{%" not in text:
        return set()
    return set(jinja2.meta.find_undeclared_variables(_ENV.parse(source)))


@dataclass
class RoleVars:
    name: str
    reads: dict[str, str] = field(default_factory=dict)  # var -> first file that reads it
    defined: set[str] = field(default_factory=set)
    defaults: dict[str, Any] = field(default_factory=dict)
    specs: dict[str, dict[str, Any]] = field(default_factory=dict)
    passes: dict[str, set[str]] = field(default_factory=dict)  # called role -> vars this role passes it


_INCLUDES = ("ansible.builtin.include_role", "ansible.builtin.import_role", "include_role", "import_role")


def _walk(node: Any, key: str | None, where: str, role: RoleVars) -> None:
    if isinstance(node, dict):
        called = next((node[k].get("name") for k in _INCLUDES if isinstance(node.get(k), dict)), None)
        if isinstance(called, str) and isinstance(node.get("vars"), dict):
            role.passes.setdefault(called, set()).update(node["vars"])
        for k, v in node.items():
            if k == "register" and isinstance(v, str):
                role.defined.add(v)
            elif k == "vars" and isinstance(v, dict):
                role.defined.update(v)
            elif k in ("loop_var", "index_var") and isinstance(v, str):
                role.defined.add(v)
            elif k in ("ansible.builtin.set_fact", "set_fact") and isinstance(v, dict):
                role.defined.update(n for n in v if n != "cacheable")
            _walk(v, str(k), where, role)
    elif isinstance(node, list):
        for v in node:
            _walk(v, key, where, role)
    elif isinstance(node, str):
        for name in names_in(node, raw=key in RAW_EXPRESSION_KEYS):
            role.reads.setdefault(name, where)


def load_role(path: Path) -> RoleVars:
    role = RoleVars(path.name)
    for sub in ("defaults", "vars"):
        for f in sorted((path / sub).glob("*.yml")):
            data = yaml.safe_load(f.read_text()) or {}
            role.defined.update(data)
            if sub == "defaults":
                role.defaults.update(data)
            _walk(data, None, str(f.relative_to(path)), role)
    for sub in ("tasks", "handlers"):
        for f in sorted((path / sub).glob("*.yml")):
            _walk(yaml.safe_load(f.read_text()), None, str(f.relative_to(path)), role)
    for f in sorted((path / "templates").rglob("*.j2")):
        for name in jinja2.meta.find_undeclared_variables(_ENV.parse(f.read_text())):
            role.reads.setdefault(name, str(f.relative_to(path)))
    spec_file = path / "meta" / "argument_specs.yml"
    if spec_file.is_file():
        specs = yaml.safe_load(spec_file.read_text())["argument_specs"]
        for entry in specs.values():
            role.specs.update(entry.get("options") or {})
    return role


def rendered(inventories: Path) -> dict[str, list[tuple[str, Any]]]:
    """Rendered variable -> [(example file, value)] over every committed example inventory."""
    out: dict[str, list[tuple[str, Any]]] = {}
    for site in sorted(p.parent for p in inventories.glob("*/site.yaml")):
        files = [*site.glob("group_vars/*.yml"), *site.glob("host_vars/*.yml"), site / "play_vars.yml"]
        for f in files:
            if f.is_file():
                for k, v in (yaml.safe_load(f.read_text()) or {}).items():
                    out.setdefault(k, []).append((str(f.relative_to(inventories)), v))
    return out


def _type_errors(name: str, spec: dict[str, Any], value: Any, where: str) -> Iterator[str]:
    if value is None:
        return
    want = spec.get("type", "str")
    ok = TYPES.get(want, (object,))
    if (want in ("int", "float") and isinstance(value, bool)) or not isinstance(value, ok):
        yield f"{name}: declared {want}, rendered {type(value).__name__} in {where}"
        return
    if want == "list" and "elements" in spec:
        for item in value:
            yield from _type_errors(f"{name}[]", {"type": spec["elements"]}, item, where)


def contract_errors(roles_dir: Path, inventories: Path) -> list[str]:
    roles = [load_role(p) for p in sorted(roles_dir.iterdir()) if (p / "tasks").is_dir()]
    values = rendered(inventories)
    errors: list[str] = []
    passed: dict[str, set[str]] = {}
    for role in roles:
        for called, names in role.passes.items():
            passed.setdefault(called, set()).update(names)
    by_name = {role.name: role for role in roles}
    for called, names in sorted(passed.items()):
        for name in sorted(names - set(by_name[called].specs) if called in by_name else ()):
            errors.append(
                f"{called}: a caller passes '{name}', which meta/argument_specs.yml does not declare"
            )
    for role in roles:
        given = passed.get(role.name, set())
        for name, where in sorted(role.reads.items()):
            if name in role.defined or name in MAGIC or name.startswith("ansible_") or name in values:
                continue
            if name in given:
                continue
            errors.append(
                f"{role.name}: {where} reads '{name}', which is neither defaulted, set, magic nor rendered"
            )
        for name in sorted(set(role.reads) & set(values)):
            if name not in role.specs:
                errors.append(
                    f"{role.name}: reads rendered '{name}' but meta/argument_specs.yml does not declare it"
                )
        for name, spec in sorted(role.specs.items()):
            for where, value in values.get(name, []):
                errors += [f"{role.name}: {e}" for e in _type_errors(name, spec, value, where)]
            if name in role.defaults:
                if "default" in spec and spec["default"] != role.defaults[name]:
                    errors.append(f"{role.name}: {name} default {spec['default']!r} != defaults/main.yml")
            elif name not in values and name not in given:
                errors.append(
                    f"{role.name}: declares '{name}', which neither its defaults nor render provide"
                )
    for name in sorted(values):
        for role in roles:
            pending = name in PENDING_READERS  # tests/pending_readers.py
            if name.startswith(role.name + "_") and name not in role.specs and not pending:
                errors.append(f"rendered '{name}' looks like role {role.name}'s, which does not declare it")
    return errors


def test_roles_and_render_keep_the_variable_contract() -> None:
    assert (ROOT / "roles" / "container_runtime" / "tasks").is_dir()  # at least one role is checked
    assert contract_errors(ROOT / "roles", ROOT / "inventories") == []


def test_the_checker_finds_every_kind_of_breach(tmp_path: Path) -> None:
    role = tmp_path / "roles" / "demo"
    for sub in ("tasks", "defaults", "meta", "templates"):
        (role / sub).mkdir(parents=True)
    (role / "defaults" / "main.yml").write_text("demo_port: 80\n")
    (role / "tasks" / "main.yml").write_text(
        "- name: One\n"
        "  ansible.builtin.command: echo {{ demo_port }} {{ demo_sizes | join(',') }}"
        " {{ inventory_hostname }}\n"
        "  register: _demo_out\n"
        "  when: demo_enabled and _demo_out is defined and ansible_facts['os_family'] == 'Debian'\n"
        "- name: Two\n"
        "  ansible.builtin.debug:\n"
        "    msg: '{{ demo_typo }}'\n"
        "- name: Three\n"
        "  ansible.builtin.include_role: {name: callee, tasks_from: go}\n"
        "  vars: {callee_size: 1, callee_sizze: 2}\n"
    )
    callee = tmp_path / "roles" / "callee"
    for sub in ("tasks", "meta"):
        (callee / sub).mkdir(parents=True)
    (callee / "tasks" / "go.yml").write_text(
        "- name: Go\n  ansible.builtin.debug: {msg: '{{ callee_size }}'}\n"
    )
    (callee / "meta" / "argument_specs.yml").write_text(
        "argument_specs:\n  go:\n    options:\n      callee_size: {type: int, required: true}\n"
    )
    (role / "templates" / "x.j2").write_text("{% for s in demo_sizes %}{{ s }}{% endfor %}{{ demo_name }}\n")
    (role / "meta" / "argument_specs.yml").write_text(
        "argument_specs:\n  main:\n    options:\n"
        "      demo_port: {type: int, default: 8080}\n"
        "      demo_sizes: {type: list, elements: int}\n"
        "      demo_name: {type: str}\n"
        "      demo_ghost: {type: str}\n"
    )
    inv = tmp_path / "inventories" / "s"
    (inv / "group_vars").mkdir(parents=True)
    (inv / "site.yaml").write_text("site: s\n")
    (inv / "group_vars" / "all.yml").write_text(
        "demo_enabled: true\ndemo_sizes: [1, two]\ndemo_name: x\ndemo_stale: 1\n"
    )
    assert contract_errors(tmp_path / "roles", tmp_path / "inventories") == [
        "callee: a caller passes 'callee_sizze', which meta/argument_specs.yml does not declare",
        "demo: tasks/main.yml reads 'demo_typo', which is neither defaulted, set, magic nor rendered",
        "demo: reads rendered 'demo_enabled' but meta/argument_specs.yml does not declare it",
        "demo: declares 'demo_ghost', which neither its defaults nor render provide",
        "demo: demo_port default 8080 != defaults/main.yml",
        "demo: demo_sizes[]: declared int, rendered str in s/group_vars/all.yml",
        "rendered 'demo_enabled' looks like role demo's, which does not declare it",
        "rendered 'demo_stale' looks like role demo's, which does not declare it",
    ]


@pytest.mark.parametrize(
    "text,raw,names", [("a and b is defined", True, {"a", "b"}), ("plain", False, set())]
)
def test_names_in(text: str, raw: bool, names: set[str]) -> None:
    assert names_in(text, raw) == names
