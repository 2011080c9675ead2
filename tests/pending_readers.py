"""PENDING READERS -- rendered variables whose role is not written yet; remove each entry when its role reads
(and declares) it.

The PD serve role (roles/vllm_serve for serving.disaggregation) is written after the renderer: until then
these variables, rendered for the a3-pd-r1-w8a8 example (render/vars/serve_pd.py), have no reader and no
argument spec. tests/unit/test_render_contract.py (every rendered variable is read) and
tests/unit/test_role_contract.py (a rendered vllm_serve_* variable is declared by roles/vllm_serve) let them
through, and test_render_contract.py::test_pending_readers_are_still_unread fails as soon as a role reads
one: then delete it here."""

from __future__ import annotations

PENDING_READERS = {
    "vllm_serve_pd": "PD pools (instances, ranks, worker URLs): render/vars/serve_pd.py",
    "vllm_serve_pd_ranks": "the PD DP ranks of a server: render/vars/serve_pd.py",
}
