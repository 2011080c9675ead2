"""What the front half hands on: the document, the spec, the plan and every finding, each at its line."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from orchestrator.planning.model import SitePlan
from orchestrator.spec.findings import Finding, sort_findings
from orchestrator.spec.loader import Document
from orchestrator.spec.site import SiteSpec
from orchestrator.spec.version import read_version

__all__ = ["ValidationResult", "merge_replica_findings"]


@dataclass(frozen=True)
class ValidationResult:
    filename: str
    document: Document | None
    spec: SiteSpec | None
    plan: SitePlan | None
    findings: tuple[Finding, ...]

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.is_error]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if not f.is_error]

    @property
    def ok(self) -> bool:
        return not self.errors and self.plan is not None

    @property
    def spec_format(self) -> int | None:
        """The spec format the file says it is (0: no spec_version), or None when unread or not an integer."""
        return read_version(self.document.data) if self.document is not None else None

    def with_findings(self, more: list[Finding]) -> ValidationResult:
        """This result with more findings, each placed at its field's line."""
        if not more:
            return self
        doc = self.document
        placed = [f.at(doc.source_map.locate(f.path)) if doc is not None else f for f in more]
        return replace(self, findings=tuple(sort_findings([*self.findings, *placed])))


_REPLICA_PREFIX = re.compile(r"^replica '(?P<name>[^']+)': (?P<rest>.*)$", re.DOTALL)


def merge_replica_findings(findings: list[Finding]) -> list[Finding]:
    """Fold identical per-replica findings ("replica 'r1': X", "replica 'r2': X") into one."""
    groups: dict[tuple[object, ...], list[str]] = {}
    order: list[tuple[object, ...] | Finding] = []
    for f in findings:
        m = _REPLICA_PREFIX.match(f.message)
        if m is None:
            order.append(f)
            continue
        key = (f.severity, f.path, f.code, f.fix, m["rest"])
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(m["name"])
    out: list[Finding] = []
    for item in order:
        if isinstance(item, Finding):
            out.append(item)
            continue
        severity, path, code, fix, rest = item
        names = groups[item]
        who = f"replica '{names[0]}'" if len(names) == 1 else "replicas " + ", ".join(f"'{n}'" for n in names)
        out.append(Finding(severity, path, f"{who}: {rest}", fix, code))  # type: ignore[arg-type]
    return out
