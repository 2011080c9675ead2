"""`--worker`: the parts of a remote job that need no worker (the job itself through a worker inside a
simulated server: tests/integration/sim/test_remote_worker.py). The SSH command line, the option's parsing
with the spec's ssh settings, the secrets a remote job takes along (exactly the env: references of the
rendered inventory), the worker's environment, what is staged, and the resume command."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer

from orchestrator.cli.worker_opt import parse_worker
from orchestrator.runner.apply import ApplyRequest, PhaseChoice, resume_command
from orchestrator.runner.model import PhaseResult, PhaseStatus, Run
from orchestrator.runner.project import Content
from orchestrator.runner.remote import COLLECTION, Worker, referenced_env, remote_environment, stage
from orchestrator.spec.site import SiteSpec
from tests.helpers import ROOT, load_example, validate_data

SITE = ROOT / "inventories" / "a2-pair-r1-w8a8"


def spec_of(example: str = "a2-pair-r1-w8a8") -> SiteSpec:
    result = validate_data(load_example(example))
    assert result.spec is not None
    return result.spec


def test_the_option_takes_user_and_key_from_the_spec_and_refuses_what_is_not_an_address() -> None:
    spec = spec_of()
    w = parse_worker("10.1.0.5", spec)
    assert w is not None and (w.user, w.host, w.port) == ("root", "10.1.0.5", 22)
    assert w.key_file == "~/.ssh/id_ed25519"  # the example's ssh.key_file
    w = parse_worker("ops@runner-eu:2222", spec)
    assert w is not None and (w.user, w.host, w.port) == ("ops", "runner-eu", 2222)
    assert parse_worker(None, spec) is None
    for bad in ("root@", "a b", "host:0", "host:70000", "@host"):
        with pytest.raises(typer.BadParameter, match=r"Fix: e\.g\. --worker"):
            parse_worker(bad, spec)


def test_the_ssh_command_line() -> None:
    w = Worker("10.1.0.5", "ops", 2222, "~/.ssh/k", host_key_checking=False, known_hosts_file="/etc/kh")
    argv = w.argv()
    assert argv[:3] == ["ssh", "-p", "2222"] and argv[-2:] == [
        "ops@10.1.0.5",
        "ansible-runner worker --delete",
    ]
    assert (
        "BatchMode=yes" in argv
        and "StrictHostKeyChecking=no" in argv
        and "UserKnownHostsFile=/etc/kh" in argv
    )
    assert argv[argv.index("-i") + 1] == str(Path("~/.ssh/k").expanduser())
    assert "StrictHostKeyChecking=yes" in Worker("h").argv() and "-i" not in Worker("h").argv()


def test_a_remote_job_takes_the_referenced_env_secrets_and_only_those(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("VLLM_API_KEY", "k-123")
    monkeypatch.setenv("UNRELATED_SECRET", "never")
    monkeypatch.delenv("REGISTRY_PASSWORD", raising=False)
    # the rendered inventory names env:VLLM_API_KEY (vllm_serve_api_key_ref); the caller's others stay
    assert referenced_env(SITE) == {"VLLM_API_KEY": "k-123"}
    monkeypatch.delenv("VLLM_API_KEY")
    assert referenced_env(SITE) == {}  # unset: the serve role refuses it on the worker, as it does here


def test_the_workers_environment_has_its_own_paths_and_none_of_the_controllers() -> None:
    local = {"ANSIBLE_CONFIG": "/ctl/inventories/s/ansible.cfg", "ANSIBLE_ROLES_PATH": "/ctl/roles",
             "ANSIBLE_COLLECTIONS_PATH": "/ctl/collections", "ANSIBLE_CACHE_PLUGIN_CONNECTION": "/ctl/facts",
             "ANSIBLE_HOST_KEY_CHECKING": "True", "PATH": "/ctl/.venv/bin:/usr/bin"}  # fmt: skip
    env = remote_environment(local, "s", {"VLLM_API_KEY": "k"})
    assert env == {
        "ANSIBLE_CONFIG": "../inventory/ansible.cfg",
        "ANSIBLE_COLLECTIONS_PATH": "collections",
        "ANSIBLE_CACHE_PLUGIN_CONNECTION": "~/.cache/ascend-orchestrator/facts/s",
        "ANSIBLE_HOST_KEY_CHECKING": "True",
        "VLLM_API_KEY": "k",
    }


def test_the_staged_job_holds_the_collection_and_the_inventory(tmp_path: Path) -> None:
    stage(tmp_path, ROOT / "collections", SITE)
    staged = tmp_path / "project" / COLLECTION
    for rel in ("playbooks/serve.yml", "roles/vllm_serve/tasks/main.yml", "plugins/modules/vllm_gate.py"):
        assert (staged / rel).read_bytes() == (
            ROOT / "collections" / "ansible_collections/ascend/npu" / rel
        ).read_bytes()
    assert not list(staged.rglob("__pycache__"))
    for rel in ("hosts.yml", "play_vars.yml", "ansible.cfg", "group_vars/all.yml"):
        assert (tmp_path / "inventory" / rel).read_bytes() == (SITE / rel).read_bytes()


def test_the_resume_command_keeps_the_worker(tmp_path: Path) -> None:
    req = ApplyRequest(
        site="s", site_arg="lab", project_root=tmp_path, inventory_dir=SITE, content=Content(ROOT),
        phases=[PhaseChoice("preflight", ("a2-01",), True, True)], hosts=None, limit_arg=None,
        check=False, explicit_phases=False, worker=Worker("10.1.0.5", "ops", 2222),
    )  # fmt: skip
    run = Run("r1", "s", False)
    run.phases.append(PhaseResult("preflight", PhaseStatus.ERROR))
    assert (
        resume_command(req, run) == "orchestrator apply lab --from-phase preflight --worker ops@10.1.0.5:2222"
    )
