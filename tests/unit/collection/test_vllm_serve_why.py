"""Why a serving container would (re)start (ascend.npu vllm_serve_why, what `orchestrator plan` prints): the
wanted container from the role's own filter, what runs as `docker inspect` shows it (Image = the image ID,
Config.Cmd / Env / Labels, State), and the release record as release.yml writes it."""

from __future__ import annotations

import copy
from typing import Any

from ansible_collections.ascend.npu.plugins.filter import vllm_serve as f
from ansible_collections.ascend.npu.plugins.filter.vllm_serve_why import why

from tests.unit.collection.test_vllm_serve_filters import OPTS, _instance


def inspect_of(want: dict[str, Any]) -> dict[str, Any]:
    """docker inspect of the container docker_container started from ``want``'s parameters."""
    p = want["params"]
    env = [*(f"{k}={v}" for k, v in p["env"].items()), "PATH=/usr/local/bin:/usr/bin"]  # + the image's
    return {
        "Image": p["image"],
        "Config": {"Cmd": list(p["command"]), "Env": env, "Labels": dict(p["labels"])},
        "State": {"Running": True, "Status": "running"},
    }


def result(want: dict[str, Any], ctr: dict[str, Any] | None) -> dict[str, Any]:
    return {"item": want, "exists": ctr is not None, "container": ctr}


def records(want: dict[str, Any]) -> dict[str, Any]:
    current = {**want["record"], "params": want["params"]}
    return {want["params"]["name"]: {"current": current, "previous": None}}


def test_a_container_running_the_wanted_release_has_no_reason() -> None:
    want = f.vllm_serve_container(_instance(), OPTS)
    assert why([result(want, inspect_of(want))], records(want)) == []


def test_missing_and_stopped_containers() -> None:
    want = f.vllm_serve_container(_instance(), OPTS)
    stopped = inspect_of(want)
    stopped["State"] = {"Running": False, "Status": "exited"}
    assert [r["reason"] for r in why([result(want, None), result(want, stopped)], {})] == [
        "container missing",
        "container exited",
    ]


def test_image_arguments_and_weights_are_told_apart() -> None:
    old = f.vllm_serve_container(_instance(), OPTS)
    running, recorded = inspect_of(old), records(old)
    cases = {
        "image differs": f.vllm_serve_container(_instance(), {**OPTS, "image_id": "sha256:cd"}),
        "arguments differ": f.vllm_serve_container(_instance(args=["serve", "/m", "--port", "9"]), OPTS),
        "weights differ": f.vllm_serve_container(_instance(), {**OPTS, "weights_manifest": "m2"}),
        "environment differs": f.vllm_serve_container(_instance(env={"X": "1"}), OPTS),
        "settings differ (NPUs, mounts, CPU set, shm or API key)": f.vllm_serve_container(
            _instance(), {**OPTS, "shm_size": "2g"}
        ),
    }
    for reason, new in cases.items():
        (got,) = why([result(new, copy.deepcopy(running))], recorded)
        assert got == {"replica": "mn", "container": "vllm-mn", "role": "head", "reason": reason}
    both = f.vllm_serve_container(_instance(), {**OPTS, "image_id": "sha256:cd", "weights_manifest": "m2"})
    assert why([result(both, running)], recorded)[0]["reason"] == "image differs, weights differ"
