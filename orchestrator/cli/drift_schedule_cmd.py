"""`orchestrator drift schedule SITE --every 1h`: install (or, with --remove, remove) a systemd timer and
service on the controller that run `orchestrator drift SITE` and leave a Prometheus textfile and a JUnit
file behind; --cron prints a crontab line instead (orchestrator never edits a crontab).

When systemd runs (/run/systemd/system exists, as sd_booted(3) checks) and the units go to
/etc/systemd/system, it runs `systemctl daemon-reload` and `systemctl enable --now` (or `disable --now`);
otherwise it prints those commands.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from orchestrator.cli import exits
from orchestrator.cli.common import MaxFindings, MaxSpecSize, SiteArg, load, resolve
from orchestrator.cli.output import DEFAULT_MAX_FINDINGS, console
from orchestrator.cli.sites import project_root
from orchestrator.drift.env_file import EnvFileError, check_env_file, env_references
from orchestrator.drift.schedule import (
    DEFAULT_TEXTFILE_DIR,
    DEFAULT_UNIT_DIR,
    cron_line,
    service_unit,
    textfile_name,
    timer_unit,
    unit_name,
)
from orchestrator.pipeline import validate_file
from orchestrator.spec.drift_schedule import Every, ScheduleError, parse_every
from orchestrator.spec.limits import DEFAULT_MAX_BYTES


def systemd_running() -> bool:
    return Path("/run/systemd/system").is_dir()


def _systemctl(*args: str) -> None:
    err = console(stderr=True)
    done = subprocess.run(["systemctl", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        err.print(
            f"systemctl {' '.join(args)} failed (exit {done.returncode}): {done.stderr.strip()}. Fix: run "
            "the command again as root, or see `journalctl -xe`.",
            markup=False,
        )
        raise typer.Exit(exits.CANT_CREATE)


def _site_name(site: str) -> str:
    """The spec's site name; for --remove of a spec that no longer validates: its folder's name."""
    path = resolve(site)
    result = validate_file(path)
    return result.spec.site if result.spec is not None else path.resolve().parent.name


def _site_arg(root: Path, name: str, spec: Path) -> str:
    """What the unit passes as SITE: the site name when --root finds it by name, else the spec's path."""
    by_name = root / "inventories" / name / "site.yaml"
    return name if by_name.is_file() and by_name.resolve() == spec.resolve() else str(spec.resolve())


def _remove(name: str, cron: bool, unit_dir: Path) -> None:
    out = console()
    if cron:
        out.print(
            f"orchestrator never edits a crontab: remove the line that runs `orchestrator ... drift` for "
            f"{name} with `crontab -e`.",
            markup=False,
        )
        return
    unit = unit_name(name)
    paths = [unit_dir / f"{unit}.timer", unit_dir / f"{unit}.service"]
    live = systemd_running() and unit_dir == DEFAULT_UNIT_DIR
    if live and paths[0].exists():
        _systemctl("disable", "--now", f"{unit}.timer")
    removed = [p for p in paths if p.exists()]
    for p in removed:
        p.unlink()
    if live:
        _systemctl("daemon-reload")
    out.print(
        f"removed {', '.join(map(str, removed))}" if removed else f"no {unit} units in {unit_dir}",
        markup=False,
    )
    if not live and removed:
        out.print(
            f"systemd is not running here (or the units were not in {DEFAULT_UNIT_DIR}); where they were "
            f"installed, run: systemctl disable --now {unit}.timer && systemctl daemon-reload",
            markup=False,
        )


def _when(every: str | None, spec_schedule: str) -> Every:
    """--every, else the spec's drift.schedule (which validation parsed with the same words)."""
    if every is None:
        parsed = parse_every(spec_schedule)
        return replace(parsed, text=f"drift.schedule {spec_schedule}")
    try:
        return parse_every(every)
    except ScheduleError as exc:
        raise typer.BadParameter(str(exc), param_hint="--every") from None


def schedule_command(
    site: SiteArg,
    every: Annotated[
        str | None,
        typer.Option(
            "--every",
            metavar="WHEN",
            help="When, in drift.schedule's words: five cron fields, hourly, daily, weekly, monthly, "
            "a daily time (02:00) or a time span (30min, 1h, 1d); default: the spec's drift.schedule.",
        ),
    ] = None,
    cron: Annotated[
        bool, typer.Option("--cron", help="Print a crontab line instead of installing units.")
    ] = False,
    remove: Annotated[bool, typer.Option("--remove", help="Disable and delete the units (undo).")] = False,
    unit_dir: Annotated[
        Path, typer.Option("--unit-dir", metavar="DIR", help="Where the .service and .timer go.")
    ] = DEFAULT_UNIT_DIR,
    textfile_dir: Annotated[
        Path,
        typer.Option("--textfile-dir", metavar="DIR", help="node_exporter's --collector.textfile.directory."),
    ] = DEFAULT_TEXTFILE_DIR,
    user: Annotated[
        str | None,
        typer.Option(
            "--user",
            envvar="SUDO_USER",
            help="Run the check as this user (it needs the SSH key of the inventory); default: the user "
            "who ran sudo, else root.",
        ),
    ] = None,
    env_file: Annotated[
        Path | None,
        typer.Option(
            "--env-file",
            metavar="FILE",
            help="NAME=VALUE lines (mode 0600) with the env: secrets the spec references; the service "
            "reads it (EnvironmentFile=). Needed when the spec has env: references.",
        ),
    ] = None,
    heal: Annotated[
        bool,
        typer.Option(
            "--heal",
            help="Schedule `orchestrator drift SITE --heal`: the run also restarts replicas that are down "
            "and adds missing heads back to the gateway (the supervisor of multi-server replicas).",
        ),
    ] = False,
    max_spec_size: MaxSpecSize = DEFAULT_MAX_BYTES,
    max_findings: MaxFindings = DEFAULT_MAX_FINDINGS,
) -> None:
    """Install a systemd timer + service that run `orchestrator drift SITE` (or print a cron line).

    Exit codes: 0 installed (or printed, or removed), 2 invalid spec (or an env: secret the run would
    lack: --env-file), 64 usage (a bad --every, or
    drift.enabled false in the spec), 73 the units could not be written or enabled.
    """
    if remove:
        _remove(_site_name(site), cron, unit_dir)
        return
    result = load(site, max_spec_size, max_findings)
    if result.spec is None:
        raise typer.Exit(exits.INVALID_SPEC)
    if not result.spec.drift.enabled:
        console(stderr=True).print(
            f"drift.enabled is false in {result.filename}: nothing to schedule. Fix: set drift.enabled: "
            f"true, or remove an installed schedule with `orchestrator drift schedule {site} --remove`.",
            markup=False,
        )
        raise typer.Exit(exits.USAGE)
    when = _when(every, result.spec.drift.schedule)
    try:
        check_env_file(env_file, env_references(result.spec), cron=cron)
    except EnvFileError as exc:
        console(stderr=True).print(str(exc), markup=False)
        raise typer.Exit(exits.INVALID_SPEC) from None
    env_file = env_file.resolve() if env_file is not None else None
    name = result.spec.site
    root = project_root().resolve()
    state = root / ".orchestrator" / "drift" / name
    command = [
        sys.executable,
        "-m",
        "orchestrator",
        "--root",
        str(root),
        "drift",
        _site_arg(root, name, Path(result.filename)),
        "--textfile",
        str(textfile_dir / textfile_name(name)),
        "--junit",
        str(state / "junit.xml"),
        *(["--heal"] if heal else []),
    ]
    out = console()
    if cron:
        try:
            line = cron_line(name, when, command, state / "cron.log")
        except ScheduleError as exc:
            raise typer.BadParameter(str(exc), param_hint="--every") from None
        state.mkdir(parents=True, exist_ok=True)  # the log goes there
        print(line)
        console(stderr=True).print(
            "add this line with `crontab -e` as the user that runs orchestrator. Exit 3 (drift) and 4 "
            "(unreachable) are findings the textfile reports.",
            markup=False,
        )
        return
    unit = unit_name(name)
    try:
        unit_dir.mkdir(parents=True, exist_ok=True)
        state.mkdir(parents=True, exist_ok=True)
        (unit_dir / f"{unit}.service").write_text(service_unit(name, command, root, user, env_file), "utf-8")
        (unit_dir / f"{unit}.timer").write_text(timer_unit(name, when), "utf-8")
    except OSError as exc:
        console(stderr=True).print(
            f"cannot write the units into {unit_dir}: {exc.strerror or exc}. Fix: run as root (sudo), "
            "or pass --unit-dir DIR and install them from there.",
            markup=False,
        )
        raise typer.Exit(exits.CANT_CREATE) from None
    out.print(f"wrote {unit_dir / f'{unit}.service'} and {unit_dir / f'{unit}.timer'}", markup=False)
    if systemd_running() and unit_dir == DEFAULT_UNIT_DIR:
        _systemctl("daemon-reload")
        _systemctl("enable", "--now", f"{unit}.timer")
        out.print(f"enabled {unit}.timer; see it with: systemctl list-timers {unit}.timer", markup=False)
        return
    why = (
        "systemd is not running here" if not systemd_running() else f"the units are not in {DEFAULT_UNIT_DIR}"
    )
    out.print(
        f"{why}: to start the schedule where systemd runs, put both files into {DEFAULT_UNIT_DIR}, then run: "
        f"systemctl daemon-reload && systemctl enable --now {unit}.timer",
        markup=False,
    )
    if not textfile_dir.is_dir():
        out.print(
            f"note: {textfile_dir} does not exist yet (the first run creates it); point node_exporter's "
            "--collector.textfile.directory at it.",
            markup=False,
        )
