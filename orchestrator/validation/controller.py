"""What the controller itself must hold before a run touches any host: every secret the spec references
resolves to a non-empty value, and every controller-side file the spec names exists (a package with the
spec's sha256, the weights folder, the SSH key).

These checks read the controller's environment and files, so they are not part of the spec's validation
(which is pure: the same spec gives the same findings anywhere). `orchestrator validate` reports them as
warnings (it may run on another machine than the controller); plan, apply, rollback and drift refuse with
exit 2 before the first host is contacted, naming each field, its YAML line and the fix.

Only what the selected phases use is required: serving.api_key for serve, the registry password for image,
the driver and firmware packages for drivers, and so on; the SSH key for every phase; a drift webhook URL
for drift."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.spec.common import secret_kind
from orchestrator.spec.findings import Finding, SpecPath, error, format_path, sort_findings
from orchestrator.spec.site import SiteSpec
from orchestrator.spec.software import PackageSource

if TYPE_CHECKING:
    from orchestrator.validation.result import ValidationResult

EVERY_PHASE = None
DRIFT = "drift"
"""Not a phase: what only `orchestrator drift` itself uses (the report's webhook)."""


class SecretMissing(LookupError):
    """A secret reference that does not resolve; the message says why and how to fix it."""


def _base_path(target: str, spec_dir: Path) -> Path:
    path = Path(target).expanduser()
    return path if path.is_absolute() else spec_dir / path


def resolve_secret(ref: str, spec_dir: Path, environ: Mapping[str, str] | None = None) -> str:
    """The value of 'env:NAME' (the controller's environment) or 'file:PATH' (absolute, ~, or relative to
    the spec's folder), stripped of surrounding blanks; SecretMissing when it is unset, unreadable or
    empty. An empty secret is never a value: vLLM started with an empty --api-key serves without one."""
    env = os.environ if environ is None else environ
    kind, target = secret_kind(ref)
    if kind == "env":
        if target not in env:
            raise SecretMissing(f"the environment variable {target} is not set on the controller")
        value = env[target].strip()
        if not value:
            raise SecretMissing(f"the environment variable {target} is set but empty")
        return value
    path = _base_path(target, spec_dir)
    try:
        value = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise SecretMissing(f"{path} cannot be read ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise SecretMissing(f"{path} is not UTF-8 text") from None
    if not value:
        raise SecretMissing(f"{path} is empty")
    return value


@dataclass(frozen=True)
class SecretUse:
    path: SpecPath
    ref: str
    phases: frozenset[str] | None  # None: every phase


def secret_uses(spec: SiteSpec) -> list[SecretUse]:
    """Every secret reference of the spec, with the phases (or drift) that read it."""
    uses: list[SecretUse] = []
    if spec.serving.api_key is not None:
        uses.append(SecretUse(("serving", "api_key"), spec.serving.api_key, frozenset({"serve"})))
    reg = spec.image.registry
    if reg is not None and reg.password is not None:
        uses.append(SecretUse(("image", "registry", "password"), reg.password, frozenset({"image"})))
    for i, out in enumerate(spec.drift.outputs):
        if out.type == "webhook" and out.url is not None:
            uses.append(SecretUse(("drift", "outputs", i, "url"), out.url, frozenset({DRIFT})))
    return uses


def _secret_fix(use: SecretUse, spec_dir: Path) -> str:
    kind, target = secret_kind(use.ref)
    if kind == "env":
        return (
            f"export {target} with the secret in the environment that runs orchestrator (a scheduled drift "
            f"run gets it from `drift schedule --env-file`), or reference a file instead "
            f"({format_path(use.path)}: file:/etc/orchestrator/{target.lower()}, mode 0600)"
        )
    return (
        f"write the secret into {_base_path(target, spec_dir)} (one line, mode 0600, readable by the user "
        "that runs orchestrator), or correct the reference"
    )


def _wanted(phases: frozenset[str] | None, selected: frozenset[str]) -> bool:
    return phases is EVERY_PHASE or bool(phases & selected)


def secret_findings(
    spec: SiteSpec, spec_dir: Path, selected: frozenset[str], environ: Mapping[str, str] | None = None
) -> Iterator[Finding]:
    for use in secret_uses(spec):
        if not _wanted(use.phases, selected):
            continue
        try:
            resolve_secret(use.ref, spec_dir, environ)
        except SecretMissing as exc:
            yield error(
                use.path,
                f"{use.ref} does not resolve: {exc}; the run needs it and would not start",
                _secret_fix(use, spec_dir),
                "secret",
            )


@dataclass(frozen=True)
class ControllerFile:
    path: SpecPath
    file: str
    phases: frozenset[str] | None
    sha256: str | None = None
    directory: bool = False


_PACKAGE_PHASES: dict[SpecPath, frozenset[str]] = {
    ("software", "driver"): frozenset({"drivers"}),
    ("software", "firmware"): frozenset({"drivers"}),
    ("software", "cann"): frozenset({"image"}),
    ("software", "ascend_docker_runtime"): frozenset({"host"}),
    ("monitoring", "npu_exporter"): frozenset({"monitoring"}),
}


def _packages(spec: SiteSpec) -> Iterator[tuple[SpecPath, PackageSource]]:
    for section in ("software", "monitoring"):
        for name, value in getattr(spec, section):
            if isinstance(value, PackageSource):
                yield (section, name), value


def controller_files(spec: SiteSpec) -> list[ControllerFile]:
    """The files the spec expects on the controller, with the phases that read them."""
    files: list[ControllerFile] = []
    if spec.ssh.key_file:
        files.append(ControllerFile(("ssh", "key_file"), spec.ssh.key_file, EVERY_PHASE))
    if spec.ssh.known_hosts_file:
        files.append(ControllerFile(("ssh", "known_hosts_file"), spec.ssh.known_hosts_file, EVERY_PHASE))
    for path, pkg in _packages(spec):
        if pkg.path is not None:
            phases = _PACKAGE_PHASES.get(path, EVERY_PHASE)
            files.append(ControllerFile((*path, "path"), pkg.path, phases, pkg.sha256))
    src = spec.model.source
    if src.type == "controller" and src.location:
        where: SpecPath = ("model", "source", "location")
        files.append(ControllerFile(where, src.location, frozenset({"weights"}), directory=True))
    if src.manifest and src.type != "staged":
        files.append(ControllerFile(("model", "source", "manifest"), src.manifest, frozenset({"weights"})))
    return files


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _file_problem(cf: ControllerFile) -> tuple[str, str] | None:
    """(what is wrong, fix) for one controller file, None when it is fine."""
    where = format_path(cf.path)
    path = Path(cf.file).expanduser()
    if not path.is_absolute():
        return (
            f"{cf.file} is a relative path; the playbooks would look for it from the directory Ansible runs "
            "in, not from the spec's folder",
            f"write the absolute path in {where}",
        )
    kind = "folder" if cf.directory else "file"
    if not path.exists():
        return (f"{path} does not exist on the controller", f"put the {kind} there or correct {where}")
    if cf.directory != path.is_dir():
        return (f"{path} is not a {kind}", f"point {where} at the {kind}")
    if not os.access(path, os.R_OK | (os.X_OK if cf.directory else 0)):
        return (f"{path} is not readable by this user", f"run orchestrator as a user who can read {path}")
    if cf.sha256 is not None:
        actual = _sha256(path)
        if actual != cf.sha256.lower():
            sha_path = format_path((*cf.path[:-1], "sha256"))
            return (
                f"{path} has sha256 {actual}, not the {sha_path} the spec pins ({cf.sha256}); the hosts "
                "would refuse it",
                f"download the package again from its vendor, or correct {sha_path} if the spec is wrong",
            )
    return None


def file_findings(spec: SiteSpec, selected: frozenset[str]) -> Iterator[Finding]:
    for cf in controller_files(spec):
        if not _wanted(cf.phases, selected):
            continue
        problem = _file_problem(cf)
        if problem is not None:
            yield error(cf.path, problem[0], problem[1], "controller-file")


def controller_findings(
    spec: SiteSpec,
    spec_dir: Path,
    selected: Iterable[str],
    environ: Mapping[str, str] | None = None,
) -> list[Finding]:
    """Errors for what the selected phases (and DRIFT) need from the controller and cannot find."""
    chosen = frozenset(selected)
    return [*secret_findings(spec, spec_dir, chosen, environ), *file_findings(spec, chosen)]


def as_warnings(findings: Iterable[Finding]) -> list[Finding]:
    return [replace(f, severity="warning") for f in findings]


def located(findings: Iterable[Finding], result: ValidationResult) -> list[Finding]:
    """The findings with the YAML position of their field in the result's document."""
    doc = result.document
    return sort_findings([f.at(doc.source_map.locate(f.path)) if doc is not None else f for f in findings])
