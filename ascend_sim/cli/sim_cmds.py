"""`orchestrator sim ...`: the simulated Ascend cluster (up / down / status / fault).

The simulator (and the Docker SDK) is imported when a sim command runs, never at start-up: `orchestrator
validate` on an operator's controller loads neither.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from orchestrator.cli.common import Format, FormatOption
from orchestrator.cli.groups import App
from orchestrator.cli.output import console, say
from orchestrator.cli.sites import project_root

if TYPE_CHECKING:
    from ascend_sim.faults import Server

sim_app = App(
    no_args_is_help=True,
    help="A simulated Ascend cluster in containers (servers reached over SSH on 127.0.0.N).",
)
fault_app = App(no_args_is_help=True, help="Inject or clear faults in a running simulated server.")
sim_app.add_typer(fault_app, name="fault")

T = TypeVar("T")


class ProfileName(StrEnum):
    a2 = "atlas-800t-a2"
    a3 = "atlas-800-a3"
    duo = "atlas-300i-duo"


class Layout(StrEnum):
    default = "default"
    mixed = "mixed"
    pd = "pd"


class Mode(StrEnum):
    stop = "stop"
    pause = "pause"


class Level(StrEnum):
    warning = "Warning"
    alarm = "Alarm"
    critical = "Critical"


NameOpt = Annotated[str, typer.Option("--name", metavar="NAME", help="Cluster name (also the site name).")]
ServerArg = Annotated[str, typer.Argument(metavar="SERVER", help="Server name, e.g. a2-01.")]
IdsArg = Annotated[
    list[int], typer.Argument(metavar="ID", help="Logical device ids (the N of /dev/davinciN).")
]
ClearOpt = Annotated[bool, typer.Option("--clear", help="Remove the fault instead.")]
DEFAULT_NAME = "sim"


def _root() -> Path:
    return project_root()


def _say(msg: str) -> None:
    console(stderr=True).print(msg, markup=False)


def _run(fn: Callable[[], T]) -> T:
    """Run one sim operation; failures become one readable message and exit code 1, never a traceback."""
    from docker.errors import DockerException

    from ascend_sim.engine import DOCKERD_LOG, SimError

    try:
        return fn()
    except SimError as exc:
        console(stderr=True).print(str(exc), markup=False, style="red")
    except DockerException as exc:
        console(stderr=True).print(
            f"Docker engine error: {exc}. Fix: check {DOCKERD_LOG}, then run the command again.",
            markup=False,
            style="red",
        )
    raise typer.Exit(1)


@sim_app.command()
def up(
    nodes: Annotated[int, typer.Option(metavar="N", help="NPU servers.")] = 2,
    profile: Annotated[ProfileName, typer.Option(help="Hardware profile.")] = ProfileName.a2,
    gateway: Annotated[bool, typer.Option("--gateway", help="Add a gateway host (no NPUs).")] = False,
    monitoring: Annotated[
        bool, typer.Option("--monitoring", help="Add a monitoring host (no NPUs).")
    ] = False,
    span: Annotated[
        int,
        typer.Option(
            metavar="N", help="NPU servers of the first replica (2+: one multi-node replica, data parallel)."
        ),
    ] = 1,
    layout: Annotated[
        Layout,
        typer.Option(
            help="Replicas of the spec. default: one per server (--span: the first over several); mixed (3+ "
            "servers): a multi-node DP replica on 2 servers, a server holding two replicas on disjoint NPUs, "
            "and an API key in a secret file; pd (3 servers, --gateway): prefill/decode disaggregated, "
            "a prefill instance on the first server and a decode instance over the other two."
        ),
    ] = Layout.default,
    image_base: Annotated[
        bool,
        typer.Option(
            "--image-base/--no-image-base",
            help="Load the base image the image and gateway phases build FROM into the build and gateway "
            "hosts' Docker (no registry). --no-image-base: the cluster builds no image (saves seconds).",
        ),
    ] = True,
    current_firmware: Annotated[
        int,
        typer.Option(
            metavar="N",
            help="The last N NPU servers ship with the spec's firmware already flashed at the factory (no "
            "firmware version.info); the others with an older one.",
        ),
    ] = 0,
    name: NameOpt = DEFAULT_NAME,
) -> None:
    """Bring the cluster up and write inventories/<name>/site.yaml; running it again changes nothing."""
    from ascend_sim import cluster
    from ascend_sim.state import ClusterState

    started = time.monotonic()
    wanted = ClusterState(name, profile.value, nodes, gateway, monitoring, span, layout.value)
    wanted.current_firmware = current_firmware
    changes = _run(lambda: cluster.up(_root(), wanted, _say, image_base=image_base))
    out = console()
    for change in changes:
        out.print(f"  {change}", markup=False)
    verdict = f"{len(changes)} change(s)" if changes else "nothing changed, already up"
    out.print(
        f"sim cluster '{name}' ({wanted.describe()}): {verdict} in {time.monotonic() - started:.1f} s. "
        f"Spec: inventories/{name}/site.yaml and its rendered inventory",
        markup=False,
    )


@sim_app.command()
def down(
    name: NameOpt = DEFAULT_NAME,
    purge: Annotated[
        bool, typer.Option("--purge", help="Also remove the cached base and shared server images.")
    ] = False,
) -> None:
    """Remove every container, volume, image tag and file the cluster made."""
    from ascend_sim import cluster

    removed = _run(lambda: cluster.down(_root(), name, purge=purge, say=_say))
    out = console()
    for item in removed:
        out.print(f"  removed {item}", markup=False)
    out.print(f"sim cluster '{name}': " + ("removed" if removed else "nothing to remove"), markup=False)


@sim_app.command()
def status(
    name: Annotated[
        str | None, typer.Option("--name", metavar="NAME", help="One cluster (default: all).")
    ] = None,
    fmt: FormatOption = Format.table,
) -> None:
    """List the hosts of each cluster: address, roles, container state, SSH, driver, active faults."""
    import json
    from dataclasses import asdict

    from rich.padding import Padding
    from rich.table import Table

    from ascend_sim import faults

    names = [name] if name else _run(lambda: faults.known_clusters(_root()))
    clusters = [(n, *_run(lambda n=n: faults.status(_root(), n))) for n in names]  # type: ignore[misc]
    if fmt is Format.json:
        doc = [
            {"name": n, "shape": state.describe() if state else None, "servers": [asdict(r) for r in rows]}
            for n, state, rows in clusters
        ]
        print(json.dumps({"clusters": doc}))
        return
    out = console()
    if not clusters:
        out.print("no simulated cluster (start one with `orchestrator sim up`)", markup=False)
        return
    for n, state, rows in clusters:
        shape = state.describe() if state else "its files are not under this directory"
        say(out, f"cluster {n} ({shape}): inventories/{n}/site.yaml")
        if not rows:
            out.print("  no servers", markup=False)
            continue
        table = Table(box=None, pad_edge=False, header_style="bold")
        for col in ("SERVER", "ADDRESS", "ROLES", "CONTAINER", "SSH", "DRIVER", "FAULTS"):
            table.add_column(col, no_wrap=col in ("SERVER", "ADDRESS"), overflow="fold")
        for r in rows:
            table.add_row(r.name, r.address, r.roles, r.container, r.ssh, r.driver, r.faults)
        out.print(Padding(table, (0, 0, 0, 2), expand=False))


def _fault(name: str, server: str, fn: Callable[[Server], str]) -> None:
    from ascend_sim.faults import Server

    msg = _run(lambda: fn(Server(_root(), name, server)))
    console().print(msg, markup=False)


@sim_app.command()
def reboot(server: ServerArg, name: NameOpt = DEFAULT_NAME) -> None:
    """Reboot a simulated server: services stop, kernel settings reset to their defaults, the boot re-applies
    /etc/sysctl.d, /etc/modules-load.d + /etc/modprobe.d, /etc/tmpfiles.d and starts the enabled services."""
    from ascend_sim import faults

    _fault(name, server, faults.reboot)


@fault_app.command("unreachable")
def f_unreachable(
    server: ServerArg,
    mode: Annotated[Mode, typer.Option(help="stop: SSH refused; pause: the host hangs.")] = Mode.stop,
    name: NameOpt = DEFAULT_NAME,
) -> None:
    """Make a server unreachable over SSH (undo with `fault back`)."""
    from ascend_sim import faults

    _fault(name, server, lambda s: faults.unreachable(s, mode.value))


@fault_app.command("back")
def f_back(server: ServerArg, name: NameOpt = DEFAULT_NAME) -> None:
    """Make an unreachable server reachable again."""
    from ascend_sim import faults

    _fault(name, server, faults.back)


@fault_app.command("npu-unhealthy")
def f_npu_unhealthy(
    server: ServerArg,
    ids: IdsArg,
    level: Annotated[Level, typer.Option(help="Health npu-smi shows.")] = Level.alarm,
    clear: ClearOpt = False,
    name: NameOpt = DEFAULT_NAME,
) -> None:
    """Mark NPUs unhealthy in npu-smi."""
    from ascend_sim import faults

    _fault(name, server, lambda s: faults.npu_unhealthy(s, ids, level.value, clear))


@fault_app.command("link-down")
def f_link_down(
    server: ServerArg, ids: IdsArg, clear: ClearOpt = False, name: NameOpt = DEFAULT_NAME
) -> None:
    """Take NPU-NIC links down (hccn_tool -link, -ping across the fabric)."""
    from ascend_sim import faults

    _fault(name, server, lambda s: faults.link_down(s, ids, clear))


@fault_app.command("driver-fails")
def f_driver_fails(server: ServerArg, clear: ClearOpt = False, name: NameOpt = DEFAULT_NAME) -> None:
    """Make the next driver package install on the server fail."""
    from ascend_sim import faults

    _fault(name, server, lambda s: faults.driver_fails(s, clear))


@fault_app.command("no-cpufreq")
def f_no_cpufreq(server: ServerArg, clear: ClearOpt = False, name: NameOpt = DEFAULT_NAME) -> None:
    """Take the cpufreq driver away (no scaling_governor files: firmware P-states, CPPC off, a VM)."""
    from ascend_sim import faults

    _fault(name, server, lambda s: faults.no_cpufreq(s, clear))


@fault_app.command("vllm")
def f_vllm(
    server: ServerArg,
    never_healthy: Annotated[bool, typer.Option("--never-healthy", help="/health stays 503.")] = False,
    crash_after: Annotated[
        float | None, typer.Option(metavar="SECONDS", help="Exit this many seconds after healthy.")
    ] = None,
    slow_ms: Annotated[
        int | None, typer.Option(metavar="MS", help="Extra latency before the first token (milliseconds).")
    ] = None,
    wrong_answers: Annotated[bool, typer.Option("--wrong-answers", help="Perturb answers.")] = False,
    error_line: Annotated[
        str | None,
        typer.Option("--error-line", metavar="LINE", help="Print this log line (a known error) and exit 1."),
    ] = None,
    port: Annotated[
        int | None, typer.Option(metavar="PORT", help="Only the vLLM server on this API port.")
    ] = None,
    clear: ClearOpt = False,
    name: NameOpt = DEFAULT_NAME,
) -> None:
    """Make the fake vLLM server misbehave (never healthy, crash, slow, wrong, dying with a line)."""
    settings: dict[str, Any] = {}
    if never_healthy:
        settings["never_healthy"] = True
    if crash_after is not None:
        settings["crash_after_s"] = crash_after
    if slow_ms is not None:
        settings["slow_ms"] = slow_ms
    if wrong_answers:
        settings["wrong_answers"] = True
    if error_line:
        settings["error_line"] = error_line
    from ascend_sim import faults

    _fault(name, server, lambda s: faults.vllm(s, settings, port, clear))


@fault_app.command("disk-full")
def f_disk_full(server: ServerArg, clear: ClearOpt = False, name: NameOpt = DEFAULT_NAME) -> None:
    """Make /data nearly full (df, Ansible facts and writes see it)."""
    from ascend_sim import faults

    _fault(name, server, lambda s: faults.disk_full(s, clear))


@fault_app.command("driver-unloaded")
def f_driver_unloaded(server: ServerArg, clear: ClearOpt = False, name: NameOpt = DEFAULT_NAME) -> None:
    """NPU driver not loaded: the NPUs stay on the PCI bus, npu-smi fails (dcmi init)."""
    from ascend_sim import faults_doctor

    _fault(name, server, lambda s: faults_doctor.driver_unloaded(s, clear))


@fault_app.command("version-info")
def f_version_info(server: ServerArg, clear: ClearOpt = False, name: NameOpt = DEFAULT_NAME) -> None:
    """The driver's version.info goes missing."""
    from ascend_sim import faults_doctor

    _fault(name, server, lambda s: faults_doctor.version_info(s, clear))


@fault_app.command("firmware-version")
def f_firmware_version(
    server: ServerArg,
    version: Annotated[str | None, typer.Option("--version", metavar="V", help="Version to report.")] = None,
    clear: ClearOpt = False,
    name: NameOpt = DEFAULT_NAME,
) -> None:
    """The installed firmware reports another version than the spec's."""
    from ascend_sim import faults_doctor

    _fault(name, server, lambda s: faults_doctor.firmware_version(s, version, clear))


@fault_app.command("npu-held")
def f_npu_held(
    server: ServerArg,
    device: Annotated[int, typer.Option("--device", metavar="N", help="/dev/davinciN to hold.")] = 0,
    clear: ClearOpt = False,
    name: NameOpt = DEFAULT_NAME,
) -> None:
    """A container that is not a replica is given /dev/davinciN (replicas then fail with dcmi -8005)."""
    from ascend_sim import faults_doctor

    _fault(name, server, lambda s: faults_doctor.npu_held(s, device, clear))


@fault_app.command("clear")
def f_clear(server: ServerArg, name: NameOpt = DEFAULT_NAME) -> None:
    """Clear every fault of a server (reachable, healthy, links up, room on /data, driver and files back)."""
    from ascend_sim import faults_doctor

    _fault(name, server, faults_doctor.clear_everything)


@sim_app.command()
def worker(server: ServerArg, name: NameOpt = DEFAULT_NAME) -> None:
    """Make a simulated server an ansible-runner worker for `orchestrator apply --worker`."""
    from ascend_sim import worker as sim_worker

    console().print(_run(lambda: sim_worker.install(_root(), name, server)), markup=False)


def _register_snapshot() -> None:
    from ascend_sim.cli.sim_snapshot_cmds import snapshot_app

    sim_app.add_typer(snapshot_app, name="snapshot")


_register_snapshot()
