"""AWX / AAP as code (awx/controller.yml) with the real awx.awx modules against a stand-in controller API
(tests/awx_fake.py): every module accepts every argument the playbook gives it (the modules validate their
arguments against their own argument specs before any request), the objects reference each other as the
docs say, the credentials are only named, and a second run changes nothing. It has not run against a live
controller (none here)."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.awx_fake import Store, fake_controller
from tests.galaxy import ansible_cli
from tests.helpers import ROOT

SITE = "a2-pair-r1-w8a8"
PREFIX = f"ascend {SITE}"
TOKEN = "token-of-the-stand-in"  # a no_log value: short ones would mask letters all over the output
GIVEN = {
    "ascend_awx_site": SITE,
    "ascend_awx_scm_url": "https://git.example/ops/ascend.git",
    "ascend_awx_scm_credential": "ops git",
    "ascend_awx_machine_credential": "ascend ssh",
    "ascend_awx_api_key_credential": "ascend vllm api key",
    "ascend_awx_ee_credential": "ops registry",
    "ascend_awx_ee_image": "registry.example/ascend-orchestrator-ee:0.1.0",
}
TEMPLATES = {"plan", "host layer", "weights", "rollout", "rollback", "drift", "doctor"}
PLAYBOOKS = "collections/ansible_collections/ascend/npu/playbooks"
# how AWX finds a project's playbooks (awx/main/models/projects.py: os.walk without following links;
# awx/main/utils/ansible.py: skip_directory, could_be_playbook's valid_playbook_re)
AWX_PLAYBOOK_LINE = re.compile(r"^\s*?-?\s*?(?:hosts|include|import_playbook):\s*?.*?$")
AWX_SKIPPED = {"roles", "tasks", "group_vars", "host_vars"}


def awx_lists(relative: str) -> bool:
    """Would AWX offer this project file as a playbook?"""
    path = ROOT / relative
    parts = Path(relative).parent.parts
    if path.resolve() != path or AWX_SKIPPED & set(parts) or any(p.startswith(".") for p in parts):
        return False
    return any(AWX_PLAYBOOK_LINE.match(line) for line in path.read_text(encoding="utf-8").splitlines())


def test_awx_lists_the_phase_playbooks_and_not_through_the_root_links() -> None:
    assert awx_lists(f"{PLAYBOOKS}/site.yml") and awx_lists(f"{PLAYBOOKS}/serve.yml")
    assert not awx_lists("playbooks/site.yml")  # the link at the root: AWX does not follow it


def run(url: str, extra: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    env = {"CONTROLLER_HOST": url, "CONTROLLER_OAUTH_TOKEN": TOKEN, "CONTROLLER_VERIFY_SSL": "false"}
    return ansible_cli("ansible-playbook", ["awx/controller.yml", "-e", json.dumps(extra)], ROOT, **env)


def changed(proc: subprocess.CompletedProcess[str]) -> int:
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    recap = proc.stdout.split("PLAY RECAP", 1)[1]
    return int(recap.split("changed=", 1)[1].split()[0])


@pytest.fixture(scope="module")
def controller() -> Any:
    with fake_controller() as (url, store):
        # what exists before: the organization and the credentials, made by hand (they hold secrets)
        store.create("organizations", {"name": "Default"})
        for name in ("ascend ssh", "ascend vllm api key", "ops git", "ops registry"):
            store.create("credentials", {"name": name})
        first = run(url, GIVEN)
        second = run(url, GIVEN)
        yield store, first, second


def test_every_argument_is_accepted_and_a_second_run_changes_nothing(controller: Any) -> None:
    _store, first, second = controller
    assert changed(first) > 0
    assert "Unsupported parameters" not in first.stdout
    assert changed(second) == 0, second.stdout[-4000:]


def by_id(store: Store, resource: str, oid: int) -> dict[str, Any]:
    return store.objects[resource][oid]


def test_job_templates_slice_the_host_layer_only_and_check_for_plan_and_drift(controller: Any) -> None:
    store, _first, _second = controller
    jts = {o["name"].removeprefix(f"{PREFIX} "): o for o in store.all("job_templates")}
    assert set(jts) == TEMPLATES
    assert {k for k, jt in jts.items() if jt["job_slice_count"] > 1} == {"host layer"}
    assert jts["host layer"]["job_tags"] == "preflight,drivers,host,network"
    assert jts["rollout"]["job_tags"] == "serve,gateway,monitoring" and jts["rollout"]["job_slice_count"] == 1
    assert {k for k, jt in jts.items() if jt["job_type"] == "check"} == {"plan", "drift"}
    assert all(jt["diff_mode"] == (jt["job_type"] == "check") for jt in jts.values())
    playbooks = {k: jt["playbook"].removeprefix(f"{PLAYBOOKS}/") for k, jt in jts.items()}
    assert playbooks == {**dict.fromkeys(("plan", "host layer", "weights", "rollout", "drift"), "site.yml"),
                         "rollback": "serve.yml", "doctor": "doctor.yml"}  # fmt: skip
    for jt in jts.values():
        assert awx_lists(jt["playbook"]), jt["playbook"]
    project = store.named("projects", PREFIX)
    inventory = store.named("inventories", PREFIX)
    ee = store.named("execution_environments", "ascend-orchestrator")
    assert all((jt["project"], jt["inventory"], jt["execution_environment"]) ==
               (project["id"], inventory["id"], ee["id"]) for jt in jts.values())  # fmt: skip


def test_the_play_variables_are_the_rendered_ones_on_every_job_template(controller: Any) -> None:
    store, _first, _second = controller
    rendered = yaml.safe_load((ROOT / "inventories" / SITE / "play_vars.yml").read_text(encoding="utf-8"))
    extra = {"rollback": {"vllm_serve_rollback": True}, "drift": {"vllm_serve_drift_health": True}}
    for jt in store.all("job_templates"):
        key = jt["name"].removeprefix(f"{PREFIX} ")
        assert json.loads(jt["extra_vars"]) == {**rendered, **extra.get(key, {})}, key


def test_credentials_are_named_never_made(controller: Any) -> None:
    store, _first, _second = controller
    assert {c["name"] for c in store.all("credentials")} == {
        "ascend ssh", "ascend vllm api key", "ops git", "ops registry"
    }  # fmt: skip
    ids = {store.named("credentials", n)["id"] for n in ("ascend ssh", "ascend vllm api key")}
    for jt in store.all("job_templates"):
        assert set(store.links[("job_templates", jt["id"], "credentials")]) == ids, jt["name"]
    assert store.named("projects", PREFIX)["credential"] == store.named("credentials", "ops git")["id"]
    ee = store.named("execution_environments", "ascend-orchestrator")
    assert ee["credential"] == store.named("credentials", "ops registry")["id"]
    assert ee["image"] == GIVEN["ascend_awx_ee_image"]
    (kind,) = store.all("credential_types")  # the API key's type: an input, injected as the spec's env var
    assert kind["injectors"] == {"env": {"VLLM_API_KEY": "{{ api_key }}"}}
    assert [f["secret"] for f in kind["inputs"]["fields"]] == [True]


def test_the_inventory_is_sourced_from_the_spec_through_the_plugin(controller: Any, tmp_path: Path) -> None:
    store, _first, _second = controller
    (source,) = store.all("inventory_sources")
    assert (source["source"], source["source_project"]) == ("scm", store.named("projects", PREFIX)["id"])
    assert source["inventory"] == store.named("inventories", PREFIX)["id"] and source["update_on_launch"]
    proc = ansible_cli("ansible-inventory", ["-i", source["source_path"], "--list"], ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rendered = yaml.safe_load((ROOT / "inventories" / SITE / "hosts.yml").read_text(encoding="utf-8"))
    hosts = set(json.loads(proc.stdout)["_meta"]["hostvars"])

    def names(group: dict[str, Any]) -> set[str]:
        own = set((group or {}).get("hosts") or {})
        return own.union(*(names(g) for g in ((group or {}).get("children") or {}).values()))

    assert hosts == names(rendered["all"]) and hosts


def test_drift_is_scheduled_and_the_workflow_rolls_back_a_failed_rollout(controller: Any) -> None:
    store, _first, _second = controller
    (schedule,) = store.all("schedules")
    assert schedule["unified_job_template"] == store.named("job_templates", f"{PREFIX} drift")["id"]
    assert "RRULE:FREQ=HOURLY;INTERVAL=6" in schedule["rrule"] and schedule["enabled"]
    wf = store.named("workflow_job_templates", f"{PREFIX} apply")
    nodes = {n["identifier"]: n for n in store.all("workflow_job_template_nodes")}
    assert set(nodes) == {"plan", "host-layer", "weights", "rollout", "rollback"}
    assert all(n["workflow_job_template"] == wf["id"] for n in nodes.values())
    template = {k: by_id(store, "job_templates", n["unified_job_template"])["name"] for k, n in nodes.items()}
    assert template["host-layer"] == f"{PREFIX} host layer" and template["rollback"] == f"{PREFIX} rollback"

    def edges(kind: str) -> set[tuple[str, str]]:
        ident = {n["id"]: k for k, n in nodes.items()}
        return {(k, ident[t]) for k, n in nodes.items()
                for t in store.links.get(("workflow_job_template_nodes", n["id"], kind), [])}  # fmt: skip

    chain = ["plan", "host-layer", "weights", "rollout"]
    assert edges("success_nodes") == set(itertools.pairwise(chain))
    assert edges("failure_nodes") == {("rollout", "rollback")}


def test_a_missing_setting_stops_before_any_request() -> None:
    with fake_controller() as (url, store):
        proc = run(url, {k: v for k, v in GIVEN.items() if k != "ascend_awx_machine_credential"})
        assert proc.returncode != 0 and not store.requests
        assert "set ascend_awx_site" in proc.stdout and "ascend_awx_machine_credential" in proc.stdout
