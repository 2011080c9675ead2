"""Stand-in for the image and weights phases (issue 9) until they merge: the fake vLLM image built in a2-01's
Docker engine and shipped to the other servers (docker save | load), the tiny checkpoint staged under
/data/models, and the two local facts the vllm_serve role reads, written per the contract of the helper
brief:
  /etc/ansible/facts.d/vllm_image.fact    {"ref", "id", "chip", "built"}
  /etc/ansible/facts.d/model_weights.fact {"path", "manifest_sha256", "bytes", "files", "verified",
                                           "read_mib_s"}
The lead replaces this with `orchestrator apply --phases image,weights` at merge."""

from __future__ import annotations

import hashlib
import json
import shlex
from datetime import UTC, datetime
from pathlib import Path

import yaml

from orchestrator.sim.spec_writer import MODEL_NAME
from tests.integration.sim.serving_helpers import build_image, copy_image, sh, stage_model
from tests.integration.sim.sim_helpers import Sim

TAG = "vllm-ascend-site:sim-standin"
READ_MIB_S = 400.0  # what the weights phase would measure; the serve role derives its timeout from it


def _manifest(model_dir: Path) -> tuple[str, int, int]:
    files = sorted(p for p in model_dir.rglob("*") if p.is_file())
    lines = [
        f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.stat().st_size}  {p.relative_to(model_dir)}"
        for p in files
    ]
    digest = hashlib.sha256("\n".join(lines).encode()).hexdigest()
    return digest, sum(p.stat().st_size for p in files), len(files)


def stand_in_image_and_weights(sim: Sim, servers: list[str], scratch: Path) -> dict[str, str]:
    """Image + weights + facts on ``servers`` (the first builds); returns {server: image id}."""
    inv = sim.root / "inventories" / sim.name
    group = yaml.safe_load((inv / "group_vars" / "all.yml").read_text(encoding="utf-8"))
    build = group["vllm_image_builds"][0]
    build_image(sim, servers[0], build["base_image"], TAG, scratch, group["orchestrator_stack"]["vllm"])
    for server in servers[1:]:
        copy_image(sim, servers[0], server, TAG)
    manifest, size, count = _manifest(sim.state_dir / "model" / MODEL_NAME)
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    ids = {}
    for server in servers:
        stage_model(sim, server)
        rc, out = sh(sim, server, f"docker image inspect -f '{{{{.Id}}}}' {TAG}")
        assert rc == 0, out
        ids[server] = out.strip()
        image = {"ref": TAG, "id": ids[server], "chip": build["chip"], "built": now}
        weights = {
            "path": group["model_weights_path"], "manifest_sha256": manifest, "bytes": size, "files": count,
            "verified": now, "read_mib_s": READ_MIB_S,
        }  # fmt: skip
        script = (
            "mkdir -p /etc/ansible/facts.d"
            f" && printf '%s\\n' {shlex.quote(json.dumps(image))} > /etc/ansible/facts.d/vllm_image.fact"
            f" && printf '%s\\n' {shlex.quote(json.dumps(weights))} > /etc/ansible/facts.d/model_weights.fact"
        )
        rc, out = sh(sim, server, script)
        assert rc == 0, out
    return ids
