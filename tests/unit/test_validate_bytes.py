"""validate_bytes passes its file name and its limits on to the loader (tests/unit/test_hostile_input.py
covers the decoding; it is left out of mutation runs for its time budgets)."""

from __future__ import annotations

from orchestrator.pipeline import validate_bytes
from orchestrator.spec.limits import LoadLimits
from tests.helpers import EXAMPLES

RAW = (EXAMPLES / "a2-single-distill" / "site.yaml").read_bytes()


def test_the_document_keeps_the_name_it_was_given() -> None:
    result = validate_bytes(RAW, "edge.yaml")
    assert result.errors == []
    assert result.document is not None
    assert result.document.filename == "edge.yaml"


def test_the_size_limit_given_is_the_one_applied() -> None:
    assert len(RAW) > 1000
    assert validate_bytes(RAW, "edge.yaml").errors == []  # the default limit (MiBs) lets it through
    (found,) = validate_bytes(RAW, "edge.yaml", LoadLimits(max_bytes=1000)).errors
    assert (found.code, found.path) == ("limit", ())
    assert found.message.startswith(f"the file is {len(RAW):,} bytes, more than the ")
