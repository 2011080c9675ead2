"""Small site specs written as YAML text, for tests that check exact lines and messages.

A test writes the part under test (site, profiles, servers, network, serving) as literal YAML; spec()
appends the model, the software of the a2-pair example and the OS of the a2-single example (Ubuntu: the
monitoring roles, on by default, need a Debian-family OS), so line numbers inside the literal part are
the ones the test reads off its own text, and a catalog change to the software rows does not break it.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from orchestrator.pipeline import ValidationResult, validate_text
from orchestrator.spec.findings import Finding, format_finding, format_path

ROOT = Path(__file__).resolve().parents[1]
_PAIR = ROOT / "inventories" / "a2-pair-r1-w8a8" / "site.yaml"
_SINGLE = ROOT / "inventories" / "a2-single-distill" / "site.yaml"

MODEL = """\
model:
  name: DeepSeek-R1-Distill-Qwen-32B
  weights_path: /data/models/DeepSeek-R1-Distill-Qwen-32B
"""

# serving for two single-server A2 replicas (a2-01, a2-02): the tail of most two-server test specs
TWO_A2_REPLICAS = """\
serving:
  parallelism: {tp: 8}
  max_num_seqs: 32
  replicas:
    - {name: r1, servers: [a2-01]}
    - {name: r2, servers: [a2-02]}
"""


def _sections(text: str, names: tuple[str, ...]) -> str:
    """The top-level sections `names` of a YAML text, verbatim."""
    out: list[str] = []
    keep = False
    for line in text.splitlines():
        if line and not line[0].isspace() and not line.startswith("#"):
            keep = line.split(":", 1)[0] in names
        if keep:
            out.append(line)
    return "\n".join(out) + "\n"


SPEC_VERSION_LINE = "spec_version: 1\n"
"""Last in these specs, not first as in a file people write: a test's line numbers stay its own text's."""


def spec(*parts: str, model: str = MODEL) -> str:
    """The parts (each dedented) + model + the a2-single example's os + the a2-pair example's software +
    spec_version."""
    tail = _sections(_SINGLE.read_text(encoding="utf-8"), ("os",))
    tail += _sections(_PAIR.read_text(encoding="utf-8"), ("software",))
    tail += SPEC_VERSION_LINE
    body = "".join(textwrap.dedent(p).strip("\n") + "\n" for p in parts)
    return body + model + tail


def check(*parts: str, model: str = MODEL) -> ValidationResult:
    return validate_text(spec(*parts, model=model), "site.yaml")


def errors_at(result: ValidationResult, path: str) -> list[Finding]:
    return [f for f in result.errors if format_path(f.path) == path]


def printed(result: ValidationResult) -> str:
    return "\n".join(format_finding(f, "site.yaml") for f in result.findings)


Described = tuple[str, str, str | None, str, list[tuple[str, str]]]


def described(f: Finding) -> Described:
    """A finding as (path, message, fix, code, [(note, related path)]), to compare with a written one."""
    return (format_path(f.path), f.message, f.fix, f.code, [(r.note, format_path(r.path)) for r in f.related])
