"""The example sites that cite vllm-ascend's DeepSeek-R1 tutorial render its `vllm serve` argv and
environment, except for the differences each site.yaml documents on its `#   differs: NAME: why` lines;
every documented difference must be real (no stale excuse), and every difference must be documented.

Upstream: tests/data/upstream/vllm-ascend/v0.23.0/docs/source/tutorials/models/DeepSeek-R1.md (the release the
examples pin: software.vllm_ascend.version)."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers import EXAMPLES, cli_options

TUTORIAL = (
    Path(__file__).resolve().parents[1]
    / "data/upstream/vllm-ascend/v0.23.0/docs/source/tutorials/models/DeepSeek-R1.md"
)
_DIFFERS = re.compile(r"^#\s+differs: (\S+?):", re.M)
_PLACEHOLDER_IP = ("$local_ip", "$node0_ip")


@dataclass(frozen=True)
class Command:
    model: str
    options: dict[str, str | None]
    env: dict[str, str]


def _script(block: str) -> Command:
    env = dict(re.findall(r"^export (\w+)=\"?([^\"\n]*)\"?$", block, re.M))
    serve = block.split("vllm serve ", 1)[1].split("```", 1)[0].replace("\\\n", " ")
    tokens = shlex.split(serve)
    return Command(tokens[0], cli_options(tokens[1:]), env)


def _tutorial() -> dict[str, Command]:
    text = TUTORIAL.read_text(encoding="utf-8")
    single = text.split("### 5.1", 1)[1].split("### 5.2", 1)[0].split("```shell", 1)[1].split("```", 1)[0]
    multi = text.split("### 5.2", 1)[1].split("### 5.3", 1)[0]
    node0, node1 = multi.split("::::{tab-item} Node 1", 1)
    return {"5.1": _script(single), "5.2 node 0": _script(node0), "5.2 node 1": _script(node1)}


def _rendered(site: str, server: str) -> Command:
    data: dict[str, Any] = yaml.safe_load((EXAMPLES / site / "host_vars" / f"{server}.yml").read_text())
    (inst,) = data["vllm_serve_instances"]
    args = [str(a) for a in inst["args"]]
    assert args[0] == "serve"
    return Command(args[1], cli_options(args[2:]), {k: str(v) for k, v in inst["env"].items()})


def _same(want: str | None, got: str | None) -> bool:
    if want is None or got is None:
        return want == got
    try:
        return bool(json.loads(want) == json.loads(got))
    except ValueError:
        return want == got


def _differences(tut: Command, ours: Command, head_if_ip: str, headless: bool) -> set[str]:
    found: set[str] = set()
    if tut.model != ours.model:
        found.add("model")
    for flag in dict.fromkeys([*tut.options, *ours.options]):
        want, got = tut.options.get(flag, "<absent>"), ours.options.get(flag, "<absent>")
        if want in _PLACEHOLDER_IP:
            want = head_if_ip  # the tutorial: --data-parallel-address is node 0's local_ip (= its HCCL_IF_IP)
        if headless and flag in ("--host", "--port") and flag not in ours.options:
            found.add("--headless-api")
        elif not _same(want, got):
            found.add(flag)
    for key, want in tut.env.items():
        if want.startswith("$"):  # $local_ip, $nic_name: the site's own values; the variable must be set
            if key not in ours.env:
                found.add(key)
        elif ours.env.get(key) != want:
            found.add(key)
    return found


CASES = {
    "a2-pair-r1-w8a8": (("5.2 node 0", "a2-01", False), ("5.2 node 1", "a2-02", True)),
    "a3-single-r1-w8a8": (("5.1", "a3-01", False),),
}


@pytest.mark.parametrize("site", sorted(CASES))
def test_example_follows_the_tutorial_but_where_it_says(site: str) -> None:
    spec_text = (EXAMPLES / site / "site.yaml").read_text(encoding="utf-8")
    assert "tutorials/models/DeepSeek-R1.md" in spec_text  # the examples that cite the tutorial
    assert yaml.safe_load(spec_text)["software"]["vllm_ascend"]["version"] == "v0.23.0"
    documented = set(_DIFFERS.findall(spec_text))
    tutorial = _tutorial()
    nodes = CASES[site]
    head_env = _rendered(site, nodes[0][1]).env
    found: set[str] = set()
    for section, server, headless in nodes:
        diff = _differences(tutorial[section], _rendered(site, server), head_env["HCCL_IF_IP"], headless)
        unsaid = diff - documented
        assert not unsaid, f"{site} {server} differs from tutorial {section} without saying why: {unsaid}"
        found |= diff
    assert documented <= found, f"{site} documents differences it does not have: {documented - found}"


def test_the_comparison_sees_the_old_drift() -> None:
    """The examples as they were (max-num-seqs 8, HCCL_BUFFSIZE 256, no --seed, MTP, FULL_DECODE_ONLY or
    balance scheduling) differ in exactly those places."""
    tut = _tutorial()["5.2 node 0"]
    dropped = ("--seed", "--speculative-config", "--compilation-config")
    old_options = {k: v for k, v in tut.options.items() if k not in dropped}
    old_options.update({"--max-num-seqs": "8", "--data-parallel-address": "10.0.0.1"})
    old = Command(tut.model, old_options, {**tut.env, "HCCL_BUFFSIZE": "256"})
    del old.env["VLLM_ASCEND_BALANCE_SCHEDULING"]
    assert _differences(tut, old, "10.0.0.1", False) == {
        "--max-num-seqs",
        "--seed",
        "--speculative-config",
        "--compilation-config",
        "HCCL_BUFFSIZE",
        "VLLM_ASCEND_BALANCE_SCHEDULING",
    }
