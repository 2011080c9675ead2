"""PENDING READERS -- rendered variables whose role is not written yet; remove each entry when its role reads
(and declares) it.

Add an entry when a renderer lands before the role that reads its variable:
tests/unit/test_render_contract.py (every rendered variable is read) and tests/unit/test_role_contract.py (a
rendered vllm_serve_* variable is declared by roles/vllm_serve) let it through, and
test_render_contract.py::test_pending_readers_are_still_unread fails as soon as a role reads one: then delete
it here. None is pending now."""

from __future__ import annotations

PENDING_READERS: dict[str, str] = {}
