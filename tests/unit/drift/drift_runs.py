"""Check-mode runs built by hand (what apply() returns after `--check --diff`), for the drift tests."""

from __future__ import annotations

from orchestrator.runner.changes import Change, ChangeKind
from orchestrator.runner.model import Failure, HostStats, PhaseResult, PhaseStatus, Run

SYSCTL = Change(
    "host",
    "a2-02",
    "Set the kernel parameters",
    "ansible.posix.sysctl",
    ChangeKind.SYSCTL,
    item="vm.swappiness",
    detail="vm.swappiness 60 -> 10",
)
FILE = Change(
    "host",
    "a2-02",
    "Write the Docker daemon configuration",
    "ansible.builtin.template",
    ChangeKind.FILE,
    detail="/etc/docker/daemon.json",
    diff='--- before\n+++ after\n@@ -1 +1 @@\n-{"log-driver": "local"}\n+{"log-driver": "json-file"}\n',
)
DRIVER = Change(
    "drivers",
    "a2-01",
    "Install the NPU driver",
    "ascend.npu.hdk_package",
    ChangeKind.DRIVER,
    detail="driver 24.1.0 -> 25.0.rc1",
    reboot=True,
)


def ok(seconds: float = 1.25, changed: int = 0) -> HostStats:
    return HostStats(ok=10, changed=changed, seconds=seconds)


def clean_run() -> Run:
    return Run(
        "20261204T210000Z-abc123",
        "a2-fleet",
        check=True,
        phases=[
            PhaseResult("preflight", PhaseStatus.OK, hosts={"a2-01": ok(), "a2-02": ok()}),
            PhaseResult("host", PhaseStatus.OK, hosts={"a2-01": ok(0.1), "a2-02": ok(0.2)}),
        ],
    )


def drift_run() -> Run:
    """a2-02 drifted in host (two change records), a2-01 in drivers; a2-03 unreachable in preflight."""
    gone = Failure("preflight", "a2-03", "Gathering Facts", "ssh: connect to host a2-03 port 22", True)
    return Run(
        "20261204T210500Z-def456",
        "a2-fleet",
        check=True,
        phases=[
            PhaseResult(
                "preflight",
                PhaseStatus.FAILED,
                hosts={"a2-01": ok(), "a2-02": ok(), "a2-03": HostStats(unreachable=1)},
                failures=[gone],
            ),
            PhaseResult(
                "drivers",
                PhaseStatus.OK,
                hosts={"a2-01": ok(changed=1), "a2-02": ok()},
                excluded={"a2-03": "unreachable in preflight"},
                changes=[DRIVER],
            ),
            PhaseResult(
                "host",
                PhaseStatus.OK,
                hosts={"a2-01": ok(), "a2-02": ok(changed=2)},
                excluded={"a2-03": "unreachable in preflight"},
                changes=[SYSCTL, FILE],
            ),
            PhaseResult("network", PhaseStatus.NOT_RUN, note="phase host stopped early"),
        ],
    )


def unreachable_run() -> Run:
    gone = Failure("preflight", "a2-02", "Gathering Facts", "ssh: connect to host a2-02 port 22", True)
    return Run(
        "20261204T211000Z-0a0b0c",
        "a2-fleet",
        check=True,
        phases=[
            PhaseResult(
                "preflight",
                PhaseStatus.FAILED,
                hosts={"a2-01": ok(), "a2-02": HostStats(unreachable=1)},
                failures=[gone],
            ),
            PhaseResult(
                "host",
                PhaseStatus.OK,
                hosts={"a2-01": ok()},
                excluded={"a2-02": "unreachable in preflight"},
            ),
        ],
    )
