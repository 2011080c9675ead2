"""The doctor's rule set: every known cause, in the order the troubleshooting guide lists them.

The rules are data (orchestrator/doctor/rules_*.py, one module per area); each cites the public reports it
was built from. logscan.py applies them to a saved log, troubleshooting.py documents them.
"""

from __future__ import annotations

from orchestrator.doctor.rule import Rule
from orchestrator.doctor.rules_devices import BUSY, MOUNTS, VISIBLE
from orchestrator.doctor.rules_hccl import GRAPH_RULES, NETWORK_RULES
from orchestrator.doctor.rules_pd import PD_CONFIG_RULES
from orchestrator.doctor.rules_pd_transfer import PD_TRANSFER_RULES
from orchestrator.doctor.rules_serving import SERVING_RULES
from orchestrator.doctor.rules_versions import MEMORY_RULES, VERSION_RULES

RULES: tuple[Rule, ...] = (
    *MOUNTS,
    *BUSY,
    *VISIBLE,
    *VERSION_RULES,
    *MEMORY_RULES,
    *GRAPH_RULES,
    *NETWORK_RULES,
    *SERVING_RULES,
    *PD_CONFIG_RULES,
    *PD_TRANSFER_RULES,
)

BY_ID: dict[str, Rule] = {r.id: r for r in RULES}
if len(BY_ID) != len(RULES):  # pragma: no cover - a programming error in the rule modules
    raise RuntimeError("doctor rule ids must be unique")


def log_rules() -> tuple[Rule, ...]:
    """Rules the log scan can match (those with at least one pattern)."""
    return tuple(r for r in RULES if r.patterns)
