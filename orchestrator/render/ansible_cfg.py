"""The rendered `inventories/<site>/ansible.cfg`: Ansible settings for a fleet, sized to the site.

Used by `orchestrator apply` (ANSIBLE_CONFIG) and by hand:

    ANSIBLE_CONFIG=inventories/<site>/ansible.cfg ansible-playbook -i inventories/<site>/hosts.yml \
        playbooks/site.yml

Ansible reads roles_path and collections_path relative to the file itself, so they assume the inventory
lives in `<checkout>/inventories/<site>/` (the project layout); the fact cache folder is a plugin option that
Ansible reads relative to the current folder (the project root). `orchestrator apply` sets all three as
absolute paths in the environment, which wins, so a site rendered elsewhere works too.
"""

from __future__ import annotations

MAX_FORKS = 50
"""Forks follow the number of hosts (every host in one batch), up to this many parallel workers."""

CONTROL_PERSIST_S = 300
"""How long an idle SSH master connection stays up: it outlives one phase, so the next phase (a new
ansible-playbook process) reuses it instead of paying the SSH handshake again."""

FACT_CACHE_TIMEOUT_S = 3600


def forks_for(hosts: int) -> int:
    return max(1, min(hosts, MAX_FORKS))


def ansible_cfg_text(site: str, hosts: int, header: str) -> str:
    """The file's text: header (the generated-by lines) + INI sections."""
    lines = [
        header.rstrip("\n"),
        f"# Fleet settings for site {site} ({hosts} host(s)); see docs/playbooks.md.",
        "[defaults]",
        "roles_path = ../../roles",
        "collections_path = ../../collections",
        f"forks = {forks_for(hosts)}",
        "# facts: gathered once per host (gather_subset min in the playbooks), reused by every later phase;",
        "# the cache folder is relative to the current folder (run from the project root)",
        "gathering = smart",
        "fact_caching = jsonfile",
        f"fact_caching_connection = .orchestrator/facts/{site}",
        f"fact_caching_timeout = {FACT_CACHE_TIMEOUT_S}",
        "interpreter_python = auto_silent",
        "retry_files_enabled = False",
        "callbacks_enabled = ansible.posix.profile_tasks",
        "callback_result_format = yaml",
        "",
        "[ssh_connection]",
        "pipelining = True",
        f"ssh_args = -o ControlMaster=auto -o ControlPersist={CONTROL_PERSIST_S}s -o ServerAliveInterval=15",
        "# %C: ssh's hash of host, port and user; the socket path stays far below the 108-byte limit",
        "control_path_dir = ~/.ansible/cp",
        "control_path = %(directory)s/%%C",
        "",
    ]
    return "\n".join(lines)
