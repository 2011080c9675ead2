"""docs/troubleshooting.md, generated from the doctor's rule set (`orchestrator docs --troubleshooting`)."""

from __future__ import annotations

from orchestrator.doctor.live_checks import CHECKS
from orchestrator.doctor.rule import Rule
from orchestrator.doctor.rules import RULES, log_rules

_INTRO = """\
# Troubleshooting: the failures `orchestrator doctor` recognises

Generated from the doctor's rule set (`orchestrator/doctor/rules_*.py`) by
`orchestrator docs --troubleshooting --write docs/troubleshooting.md`; a test fails when it is stale.
Every rule cites the public reports (vllm-ascend, torch_npu, CANN, HCCL issues) its log line and fix
were read from; parts no source confirmed are marked "not confirmed by a source".

## Diagnosing a saved log

    docker logs vllm-r1 > r1.log 2>&1        # or journalctl -u ..., or what the replica printed
    orchestrator doctor --log r1.log [--log r2.log ...] [--format table|json]

vLLM-Ascend wraps the real cause in generic layers: torch_npu's `ERR00100 PTA call acl api failed`,
CANN's `EZ9999: Inner Error!` header and its inner `TraceBack (most recent call last):`, the engine's
`RuntimeError: Engine core initialization failed. See root cause above.`, and an `ERR99999 UNKNOWN
applicaiton exception` from the API server after the engine died. The last traceback line often names
the wrong cause. So the doctor:

1. strips per-line prefixes (`(Worker_TP3 pid=..) ERROR 11-07 06:32:37 [file.py:671]`,
   `(EngineCore_DP0 pid=..)`, `[rank1]:`, `(RayWorkerWrapper pid=.., ip=..)`, `docker logs -t` times)
   and skips the generic wrapper lines;
2. reports the rule whose distinctive line comes **earliest** (ties on one line: the more specific rule);
   rules marked *generic* (a symptom several causes share) only when no specific rule matched. A line
   two causes share counts only with the line that tells them apart within 50 lines: HCCL's "listen on
   ip[..] and specific port[..] fail" is a port conflict only without an NPU NIC failure (EJ0002, "ra
   rdma init failed") beside it, and `207004` from aclrtGetDeviceCount is a Ray problem only with a Ray
   line, a device-order problem only with the EE1001 "ascending order" line, and otherwise no known cause;
3. always prints the first error code of the log (CANN `EZ1001`/`EI0006`/..., torch_npu `ERRxxxxx`,
   6-digit ACL/runtime results such as `507033`, dcmi `-8005`, `drvRetCode=14`, HCCL return values)
   with its line number; when no rule knows the cause it says so and prints the first lines that read
   as errors (traceback frames and generic wrappers left out) instead of a guess.

The rules are measured on a corpus of real failing logs from public threads, kept apart from the tests
(`benchmarks/doctor-corpus/`, `benchmarks/bench_doctor_corpus.py`): the rules are written from its train
part and scored on its held-out part (logs named with the confirmed cause, no known cause, wrong cause).

Multi-node failures: the rank that failed first is the one to read; diagnose every node's log.

Exit codes: 0 no known cause found (the first error code seen is printed), 3 a known cause was found, 66 a
FILE does not exist or cannot be read, 64 usage. `--format json` prints one object: `files` (per file:
`diagnosis` with rule, line, text, cause, fix, sources; `first_code`; `codes`; `key_lines`, the first
lines that read as errors), `known_causes`, `exit_code`.
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


_LIVE_INTRO = """\
## Live checks of a site's servers

    orchestrator doctor SITE [--host H ...] [--format table|json]

validates the spec (exit 2 when invalid), renders its inventory and runs the read-only
`playbooks/doctor.yml` on the NPU servers: one run gathers every fact (the NPU PCI functions from sysfs,
the version.info files, npu-smi, the NPU NICs through hccn_tool, the containers given NPU device nodes,
the last 200 lines of each serving container's log). Checks in `orchestrator/doctor/live_*.py` turn the
facts into findings `{host, check, status ok|warn|fail, seen, fix}`. Exit codes: 0 all ok, 3 a finding,
4 a server unreachable (and nothing else wrong), 2 invalid spec, 64 usage, 66 no such site, 75 another
run holds the site's lock.
"""


def _live() -> list[str]:
    lines = [_LIVE_INTRO.rstrip("\n"), "", "| check | what it looks at | the fix it names |", "|---|---|---|"]
    lines += [f"| `{c.name}` | {_cell(c.looks_at)} | {_cell(_sentence(c.fix))} |" for c in CHECKS]
    return [*lines, ""]


def _index() -> list[str]:
    lines = [
        "## Index",
        "",
        f"{len(RULES)} rules; {len(log_rules())} have a log line, the others are checked before launch only.",
        "",
        "| rule | area | what it means | check before launch |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| [`{r.id}`](#{r.id}) | {_cell(r.area)} | {_cell(r.title)} | {r.preflight.value} |" for r in RULES
    ]
    return [*lines, ""]


def _rule(r: Rule) -> list[str]:
    lines = [f'<a id="{r.id}"></a>', "", f"### `{r.id}`: {r.title}", ""]
    facts = [f"Area: {r.area}", f"check before launch: {r.preflight.value}"]
    if r.codes:
        facts.append("error codes: " + ", ".join(f"`{c}`" for c in r.codes))
    lines += ["; ".join(facts) + ".", ""]
    if r.generic:
        lines += ["*Generic*: reported only when no specific rule matched the log.", ""]
    if r.patterns:
        origin = (
            "the message a cited source file prints, with example values"
            if r.example_from_code
            else "verbatim from a public report"
        )
        lines += [f"The log line ({origin}):", "", "```text", r.example, "```", ""]
        lines += ["Matched by (regular expressions, on the line without its prefixes):", ""]
        for pat in r.patterns:
            near = f" (only within the block of a line matching `{pat.near}`)" if pat.near else ""
            lines.append(f"- `{pat.regex}`{near}")
        lines.append("")
    else:
        lines += ["No log line of its own: checked before launch only.", ""]
    lines += [f"**Cause.** {_sentence(r.cause)}", "", f"**Fix.** {_sentence(r.fix)}", ""]
    if r.inferred:
        lines += [f"Not confirmed by a source: {r.inferred}", ""]
    if r.related:
        lines += ["See also: " + ", ".join(f"[`{o}`](#{o})" for o in r.related) + ".", ""]
    lines += ["Sources:", ""] + [f"- <{s}>" for s in r.sources] + [""]
    return lines


def troubleshooting_reference() -> str:
    """The whole guide (Markdown), deterministic for a given rule set."""
    lines = [_INTRO.rstrip("\n"), "", *_live(), *_index(), "## Rules", ""]
    for r in RULES:
        lines += _rule(r)
    return "\n".join(lines).rstrip("\n") + "\n"
