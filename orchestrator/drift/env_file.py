"""How a scheduled drift run gets the `env:` secrets its spec references: systemd starts the service with
an almost empty environment, so `orchestrator drift schedule --env-file PATH` writes EnvironmentFile=PATH
into the unit (systemd.exec(5): KEY=VALUE lines, read by the service manager as root before it drops to
User=). The file must exist, be readable by its owner only (it holds secrets), and set every referenced
variable to a non-empty value: otherwise the run would refuse every night (exit 2), or worse, the secret
would resolve to nothing. cron has no such mechanism: with `env:` references, `--cron` is refused and the
fix says to use the timer or `file:` references."""

from __future__ import annotations

import stat
from pathlib import Path

from orchestrator.spec.common import secret_kind
from orchestrator.spec.findings import format_path
from orchestrator.spec.site import SiteSpec
from orchestrator.validation.controller import secret_uses


class EnvFileError(ValueError):
    """The schedule would run without a secret; the message says which and how to fix it."""


def env_references(spec: SiteSpec) -> dict[str, str]:
    """NAME -> the field that references env:NAME, for every secret a drift run reads."""
    out: dict[str, str] = {}
    for use in secret_uses(spec):
        kind, name = secret_kind(use.ref)
        if kind == "env":
            out.setdefault(name, format_path(use.path))
    return out


def parse_env_file(text: str) -> dict[str, str]:
    """KEY=VALUE lines as systemd reads an EnvironmentFile: blank lines and # or ; comments skipped,
    blanks around the key and the value dropped, one pair of matching quotes removed."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;" or "=" not in line:
            continue
        key, _, value = line.partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out[key.strip()] = value
    return out


def check_env_file(path: Path | None, needed: dict[str, str], *, cron: bool) -> None:
    """Raise EnvFileError when the scheduled run would lack one of the needed variables."""
    names = ", ".join(f"{n} ({field})" for n, field in sorted(needed.items()))
    if needed and cron:
        raise EnvFileError(
            f"the spec references secrets in environment variables ({names}), and cron starts the run "
            "without them. Fix: drop --cron and pass --env-file (a systemd timer), or reference the "
            "secrets as files (file:/etc/orchestrator/NAME, mode 0600)."
        )
    if path is None:
        if needed:
            raise EnvFileError(
                f"the spec references secrets in environment variables ({names}), and a systemd service "
                "starts without them, so every scheduled run would refuse. Fix: put them as NAME=VALUE "
                "lines into a file only root can read (e.g. /etc/orchestrator/SITE.env, mode 0600) and "
                "pass --env-file with it, or reference the secrets as files (file:PATH)."
            )
        return
    try:
        info = path.stat()
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise EnvFileError(
            f"--env-file {path} cannot be read ({exc.strerror or exc}). Fix: create it with NAME=VALUE "
            "lines, mode 0600."
        ) from None
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise EnvFileError(
            f"--env-file {path} is readable by others (mode {stat.S_IMODE(info.st_mode):04o}) and holds "
            f"secrets. Fix: chmod 600 {path}."
        )
    values = parse_env_file(text)
    missing = [f"{n} ({field})" for n, field in sorted(needed.items()) if not values.get(n)]
    if missing:
        raise EnvFileError(
            f"--env-file {path} does not set {', '.join(missing)} to a non-empty value. Fix: add a "
            "NAME=VALUE line for each."
        )
