"""`orchestrator drift schedule`: the units it writes pass `systemd-analyze verify` (systemd's own checker),
run the drift command with the textfile and JUnit outputs, and treat drift/unreachable as success; --cron
prints a crontab line; --remove deletes the units; impossible schedules are usage errors."""

from __future__ import annotations

import configparser
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.cli import exits
from orchestrator.drift.schedule import timer_unit
from orchestrator.spec.drift_schedule import Every, ScheduleError, cron_schedule, parse_every, parse_span
from tests.helpers import copy_ready_site, run_cli

SITE = "a2-fleet-gateway"
UNIT = f"orchestrator-drift-{SITE}"


def copy_site(tmp_path: Path, webhook_env: bool = False) -> Path:
    """The example, ready on this controller; its webhook URL a file reference unless webhook_env (then
    env:DRIFT_WEBHOOK_URL, which a scheduled run can only get from --env-file)."""
    root = copy_ready_site(tmp_path, SITE)
    if not webhook_env:
        spec = root / "inventories" / SITE / "site.yaml"
        hook = spec.parent / "webhook-url"
        hook.write_text("http://127.0.0.1:9/hook\n")
        spec.write_text(spec.read_text().replace("env:DRIFT_WEBHOOK_URL", f"file:{hook}"))
    return root


def verify(*units: Path) -> subprocess.CompletedProcess[str]:
    """systemd-analyze verify prints its complaints on stderr (and exits 0 for many of them)."""
    tool = shutil.which("systemd-analyze")
    assert tool, "systemd-analyze is missing: install the systemd package (apt-get install systemd)"
    return subprocess.run([tool, "verify", *map(str, units)], capture_output=True, text=True, check=False)


def read_unit(path: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(path.read_text())
    return parser


def test_verify_catches_a_broken_unit(tmp_path: Path) -> None:
    """The check the next tests rely on can fail."""
    bad = tmp_path / "broken.timer"
    bad.write_text("[Timer]\nOnUnitActiveSec=1hx\n[Install]\nWantedBy=timers.target\n")
    (tmp_path / "broken.service").write_text("[Service]\nType=oneshot\nExecStart=/usr/bin/true\n")
    done = verify(tmp_path / "broken.service", bad)
    assert "Failed to parse timer value" in done.stderr


def test_units_verify_and_run_drift_with_its_outputs(tmp_path: Path) -> None:
    root = copy_site(tmp_path)
    units, tf = tmp_path / "units", tmp_path / "textfiles"
    out = run_cli(
        "--root", str(root), "drift", "schedule", SITE, "--every", "1h", "--unit-dir", str(units),
        "--textfile-dir", str(tf),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    service, timer = units / f"{UNIT}.service", units / f"{UNIT}.timer"
    done = verify(service, timer)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    svc = read_unit(service)["Service"]
    assert svc["Type"] == "oneshot"
    assert svc["SuccessExitStatus"] == "3 4"
    argv = shlex.split(svc["ExecStart"])
    assert argv[:3] == [sys.executable, "-m", "orchestrator"]
    assert argv[3:7] == ["--root", str(root.resolve()), "drift", SITE]
    assert argv[argv.index("--textfile") + 1] == str(tf / f"orchestrator_drift_{SITE}.prom")
    assert argv[argv.index("--junit") + 1] == str(
        root.resolve() / ".orchestrator" / "drift" / SITE / "junit.xml"
    )
    tm = read_unit(timer)
    assert tm["Timer"]["OnUnitActiveSec"] == "1h"
    assert tm["Timer"]["OnBootSec"] == "15min"
    assert tm["Timer"]["RandomizedDelaySec"] == "5min"
    assert tm["Install"]["WantedBy"] == "timers.target"
    # systemd does not run here (or the units are not in /etc/systemd/system): the commands are printed
    assert f"systemctl enable --now {UNIT}.timer" in out.stdout

    removed = run_cli("--root", str(root), "drift", "schedule", SITE, "--remove", "--unit-dir", str(units))
    assert removed.returncode == 0, removed.stderr
    assert not service.exists()
    assert not timer.exists()


def test_a_daily_time_makes_a_persistent_calendar_timer(tmp_path: Path) -> None:
    root = copy_site(tmp_path / "with space%")  # quoting and specifiers in ExecStart
    units = tmp_path / "units"
    out = run_cli(
        "--root", str(root), "drift", "schedule", SITE, "--every", "03:00", "--unit-dir", f"{units}"
    )
    assert out.returncode == 0, out.stderr
    done = verify(units / f"{UNIT}.service", units / f"{UNIT}.timer")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    tm = read_unit(units / f"{UNIT}.timer")["Timer"]
    assert tm["OnCalendar"] == "*-*-* 03:00:00"
    assert tm["Persistent"] == "true"
    exec_start = read_unit(units / f"{UNIT}.service")["Service"]["ExecStart"]
    assert f'"{root.resolve()}"'.replace("%", "%%") in exec_start


def test_bad_schedules_are_usage_errors(tmp_path: Path) -> None:
    root = copy_site(tmp_path)
    units = tmp_path / "units"
    cases = {
        ("--every", "1min"): "shorter than 5 minutes",
        ("--every", "every tuesday"): "'every tuesday' is not a drift schedule. Fix: use five cron fields",
        ("--every", "7h", "--cron"): "cron cannot run every 7h evenly",
        ("--every", "Mon *-*-* 03:00"): "is not a drift schedule",
    }
    for args, message in cases.items():
        out = run_cli("--root", str(root), "drift", "schedule", SITE, "--unit-dir", str(units), *args)
        assert out.returncode == exits.USAGE, (args, out.stderr)
        assert message in " ".join(out.stderr.split()), (args, out.stderr)
    assert not units.exists()


def test_cron_prints_one_line_that_runs_drift(tmp_path: Path) -> None:
    root = copy_site(tmp_path)
    out = run_cli("--root", str(root), "drift", "schedule", SITE, "--every", "15min", "--cron")
    assert out.returncode == 0, out.stderr
    (line,) = out.stdout.splitlines()
    fields = line.split(maxsplit=5)
    minute, rest = fields[0], fields[1:5]
    first, step = minute.split("/")
    assert step == "15" and first.endswith("-59") and 0 <= int(first.split("-")[0]) < 15
    assert rest == ["*", "*", "*", "*"]
    argv = shlex.split(fields[5])
    assert argv[:7] == [sys.executable, "-m", "orchestrator", "--root", str(root.resolve()), "drift", SITE]
    assert argv[-3:-1] == [">>", str(root.resolve() / ".orchestrator" / "drift" / SITE / "cron.log")]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1h", 3600), ("90min", 5400), ("1h 30min", 5400), ("1h30m", 5400), ("2d", 172800), ("hourly", None)],
)
def test_parse_span(text: str, seconds: int | None) -> None:
    assert parse_span(text) == seconds


def test_cron_schedules() -> None:
    site = "s"
    assert cron_schedule(site, parse_every("1h")).endswith(" * * * *")
    assert cron_schedule(site, parse_every("6h")).split()[1].endswith("-23/6")
    assert cron_schedule(site, parse_every("1d")).split()[2:] == ["*", "*", "*"]
    assert cron_schedule(site, parse_every("1d")) == cron_schedule(site, parse_every("daily"))
    assert cron_schedule(site, parse_every("1w")).split()[4] in {str(d) for d in range(7)}
    with pytest.raises(ScheduleError):
        cron_schedule(site, Every("45min", seconds=45 * 60))


def test_without_every_the_specs_drift_schedule_is_used(tmp_path: Path) -> None:
    """The example's drift.schedule is "30 */4 * * *": the timer fires at :30 every 4 hours, --cron prints
    the spec's own fields."""
    root = copy_site(tmp_path)
    units = tmp_path / "units"
    out = run_cli("--root", str(root), "drift", "schedule", SITE, "--unit-dir", str(units))
    assert out.returncode == 0, out.stderr
    done = verify(units / f"{UNIT}.service", units / f"{UNIT}.timer")
    assert (done.returncode, done.stderr) == (0, "")
    timer = read_unit(units / f"{UNIT}.timer")
    assert timer["Timer"]["OnCalendar"] == "*-*-* 00,04,08,12,16,20:30:00"
    assert timer["Timer"]["Persistent"] == "true"
    assert "30 */4 * * *" in timer["Unit"]["Description"]
    cron = run_cli("--root", str(root), "drift", "schedule", SITE, "--cron")
    assert cron.returncode == 0, cron.stderr
    assert cron.stdout.split(maxsplit=5)[:5] == ["30", "*/4", "*", "*", "*"]


def test_drift_disabled_in_the_spec_is_not_scheduled(tmp_path: Path) -> None:
    root = copy_site(tmp_path)
    spec = root / "inventories" / SITE / "site.yaml"
    spec.write_text(spec.read_text().replace("drift:\n", "drift:\n  enabled: false\n", 1))
    units = tmp_path / "units"
    out = run_cli("--root", str(root), "drift", "schedule", SITE, "--unit-dir", str(units))
    assert out.returncode == exits.USAGE, out.stderr
    assert "drift.enabled is false" in out.stderr and "--remove" in out.stderr
    assert not units.exists()


@pytest.mark.parametrize(
    ("text", "fields", "calendar"),
    [
        ("02:00", "0 2 * * *", "*-*-* 02:00:00"),
        ("7:05", "5 7 * * *", "*-*-* 07:05:00"),
        ("30 */4 * * *", "30 */4 * * *", "*-*-* 00,04,08,12,16,20:30:00"),
        # words: at the minute (hour, weekday) of sha256("s"), sha256("s/h"), sha256("s/d"), computed apart
        ("hourly", "1 * * * *", "*-*-* *:01:00"),
        ("daily", "1 14 * * *", "*-*-* 14:01:00"),
        ("@daily", "1 14 * * *", "*-*-* 14:01:00"),
        ("Weekly", "1 14 * * 3", "Wed *-*-* 14:01:00"),
        ("monthly", "1 14 1 * *", "*-*-01 14:01:00"),
    ],
)
def test_one_vocabulary_gives_cron_and_the_timer_the_same_times(
    text: str, fields: str, calendar: str
) -> None:
    """--cron prints the fields, and the timer fires on the OnCalendar line of the same fields (before,
    `--cron --every daily` printed @daily while the timer ran at midnight, and 02:00 was refused)."""
    every = parse_every(text)
    assert cron_schedule("s", every) == fields
    assert f"\nOnCalendar={calendar}\n" in timer_unit("s", every)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("25:00", "'25:00' is not a drift schedule"),
        ("Mon *-*-* 03:00", "'Mon *-*-* 03:00' is not a drift schedule"),
        ("60 * * * *", "cron field '60' (minute) is not valid"),
        ("2min", "'2min' is shorter than 5 minutes"),
    ],
)
def test_what_is_not_a_schedule(text: str, problem: str) -> None:
    with pytest.raises(ScheduleError) as caught:
        parse_every(text)
    assert str(caught.value).startswith(problem)
    assert "Fix: " in str(caught.value)


def test_env_secrets_reach_the_timer_only_through_a_private_env_file(tmp_path: Path) -> None:
    """A systemd service starts without the caller's environment: with env: references the schedule needs
    --env-file (mode 0600, every variable set), read by the unit with EnvironmentFile=; cron is refused."""
    root = copy_site(tmp_path, webhook_env=True)
    units, env = tmp_path / "units", tmp_path / "drift.env"
    base = ("--root", str(root), "drift", "schedule", SITE, "--every", "1h", "--unit-dir", str(units))

    def refused(*args: str) -> str:
        out = run_cli(*base, *args)
        assert out.returncode == exits.INVALID_SPEC, out.stderr
        assert not units.exists()
        return " ".join(out.stderr.split())

    assert "environment variables (DRIFT_WEBHOOK_URL (drift.outputs[1].url))" in refused()
    assert "Fix: drop --cron and pass --env-file" in refused("--cron")
    env.write_text("DRIFT_WEBHOOK_URL=http://127.0.0.1:9/hook\n")
    env.chmod(0o644)
    assert f"Fix: chmod 600 {env}" in refused("--env-file", str(env))
    env.chmod(0o600)
    env.write_text("# the webhook\nDRIFT_WEBHOOK_URL=\n")
    assert "does not set DRIFT_WEBHOOK_URL (drift.outputs[1].url) to a non-empty value" in refused(
        "--env-file", str(env)
    )
    env.write_text('# the webhook\nDRIFT_WEBHOOK_URL="http://127.0.0.1:9/hook"\n')
    out = run_cli(*base, "--env-file", str(env))
    assert out.returncode == 0, out.stderr
    service = units / f"{UNIT}.service"
    assert read_unit(service)["Service"]["EnvironmentFile"] == str(env.resolve())
    done = verify(service, units / f"{UNIT}.timer")
    assert (done.returncode, done.stderr) == (0, "")
