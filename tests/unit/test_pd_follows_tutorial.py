"""The prefill/decode example site renders, for every DP rank, the `vllm serve` argv and environment of
vllm-ascend's PD tutorial, except for the differences its site.yaml documents on `#   differs: NAME: why`
lines; every documented difference must be real, and every difference documented.

Upstream (vllm-project/vllm-ascend @v0.23.0, commit 5cb98caaadeff42b5b62b996e34bb2aaa29d20fd, copied as is):
tests/data/upstream/vllm-ascend/v0.23.0/docs/source/tutorials/features/pd_disaggregation_mooncake_multi_node.md
("Non-layerwise" tab: Prefiller node 1/2, Decoder node 1/2; "Start the service": one launch_online_dp.py line
per node) and examples/external_online_dp/launch_online_dp.py, which runs the node's script once per local DP
rank i with $1 = devices i*tp .. (i+1)*tp-1, $2 = vllm-start-port + i, $3 = dp-size, $4 = dp-rank-start + i,
$5 = dp-address, $6 = dp-rpc-port, $7 = tp-size.

A JSON-valued flag whose JSON differs is compared key by key (a difference is named `--flag.key`)."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from orchestrator.planning.build import build_plan
from orchestrator.planning.resolve import resolve_model
from orchestrator.spec.site import SiteSpec
from tests.helpers import EXAMPLES, cli_options, load_example

UPSTREAM = Path(__file__).resolve().parents[1] / "data/upstream/vllm-ascend/v0.23.0"
TUTORIAL = UPSTREAM / "docs/source/tutorials/features/pd_disaggregation_mooncake_multi_node.md"
LAUNCHER = UPSTREAM / "examples/external_online_dp/launch_online_dp.py"
SITE = "a3-pd-r1-w8a8"
NODES = {"192.0.0.1": "a3-p1", "192.0.0.2": "a3-p2", "192.0.0.3": "a3-d1", "192.0.0.4": "a3-d2"}
"""The tutorial's four nodes and the example's servers in their place."""
_DIFFERS = re.compile(r"^#\s+differs: (\S+?):", re.M)
ABSENT = "<absent>"


@dataclass(frozen=True)
class Command:
    model: str
    options: dict[str, str | None]
    env: dict[str, str]


@dataclass(frozen=True)
class Script:
    """One tab of the tutorial: the shell variables, the exports and the `vllm serve` line, unexpanded."""

    variables: dict[str, str]
    exports: dict[str, str]
    serve: list[str]


def _script(tab: str) -> Script:
    # the block ends at its fence, or (Decoder node 1 has no closing fence) where the tab ends
    body = tab.split("```shell", 1)[1].split("```", 1)[0].split("\n::::", 1)[0]
    variables = dict(re.findall(r'^(\w+)="([^"]*)"', body, re.M))
    exports = dict(re.findall(r"^export (\w+)=\"?([^\"\n]*)\"?$", body, re.M))
    serve = body.split("vllm serve ", 1)[1].replace("\\\n", " ")
    return Script(variables, exports, shlex.split(serve))


def tutorial_tabs() -> dict[str, Script]:
    """'Prefiller node 1' .. 'Decoder node 2' of the Non-layerwise tab set."""
    text = TUTORIAL.read_text(encoding="utf-8")
    section = text.split("#### Non-layerwise", 1)[1].split("### Start the service", 1)[0]
    tabs = section.split("::::{tab-item} ")[1:]
    return {tab.split("\n", 1)[0].strip(): _script(tab) for tab in tabs}


def launches() -> dict[str, dict[str, str]]:
    """node IP -> the launcher's options on it ('Start the service')."""
    text = TUTORIAL.read_text(encoding="utf-8").split("### Start the service", 1)[1].split("## ", 1)[0]
    found = re.findall(r"^# on (\S+)\npython launch_online_dp.py (.*)$", text, re.M)
    out = {}
    for ip, line in found:
        tokens = shlex.split(line)
        out[ip] = dict(zip(tokens[::2], tokens[1::2], strict=True))
    return out


def positional(launch: dict[str, str], i: int) -> dict[str, str]:
    """$1..$7 of the i-th script run by launch_online_dp.py with these options."""
    tp = int(launch["--tp-size"])
    return {
        "1": ",".join(str(x) for x in range(i * tp, (i + 1) * tp)),
        "2": str(int(launch["--vllm-start-port"]) + i),
        "3": launch["--dp-size"],
        "4": str(int(launch["--dp-rank-start"]) + i),
        "5": launch["--dp-address"],
        "6": launch["--dp-rpc-port"],
        "7": launch["--tp-size"],
    }


def expand(script: Script, args: dict[str, str]) -> Command:
    """The command one run executes: $1..$7 and the script's shell variables substituted; a value that comes
    from $nic_name stays '$nic_name' (the site's own NIC)."""
    values = {**args, **{k: v for k, v in script.variables.items() if k != "nic_name"}}

    def sub(text: str) -> str:
        return re.sub(r"\$(\w+)", lambda m: values.get(m.group(1), m.group(0)), text)

    tokens = [sub(t) for t in script.serve]
    return Command(tokens[0], cli_options(tokens[1:]), {k: sub(v) for k, v in script.exports.items()})


def rendered(server: str) -> dict[int, Command]:
    """dp rank -> the rendered command of each PD rank on the server."""
    data: dict[str, Any] = yaml.safe_load((EXAMPLES / SITE / "host_vars" / f"{server}.yml").read_text())
    out = {}
    for rank in data["vllm_serve_instances"]:
        args = [str(a) for a in rank["args"]]
        assert args[0] == "serve"
        env = {k: str(v) for k, v in rank["env"].items()}
        out[int(rank["dp_rank"])] = Command(args[1], cli_options(args[2:]), env)
    return out


def _json(text: str | None) -> Any:
    try:
        return json.loads(text) if text is not None else None
    except ValueError:
        return None


def _flag(flag: str, want: str | None, got: str | None) -> set[str]:
    if want == got:
        return set()
    a, b = _json(want), _json(got)
    if isinstance(a, dict) and isinstance(b, dict):
        return {f"{flag}.{k}" for k in dict.fromkeys([*a, *b]) if a.get(k, ABSENT) != b.get(k, ABSENT)}
    if a is not None and a == b:
        return set()
    return {flag}


def differences(tut: Command, ours: Command, ips: dict[str, str]) -> set[str]:
    """Names of the differences; ips maps the tutorial's node IPs to the site's addresses."""
    found: set[str] = set()
    if tut.model != ours.model:
        found.add("model")
    for flag in dict.fromkeys([*tut.options, *ours.options]):
        want, got = tut.options.get(flag, ABSENT), ours.options.get(flag, ABSENT)
        found |= _flag(flag, ips.get(want, want) if want is not None else None, got)
    for key in dict.fromkeys([*tut.env, *ours.env]):
        want, have = tut.env.get(key), ours.env.get(key)
        if want is None or have is None:
            found.add(key)
        elif want == "$nic_name":
            continue  # the site's NIC: set, whatever its name
        elif ips.get(want, want) != have:
            found.add(key)
    return found


def _addresses() -> dict[str, str]:
    site = yaml.safe_load((EXAMPLES / SITE / "site.yaml").read_text(encoding="utf-8"))
    address = {s["name"]: s["address"] for s in site["servers"]}
    return {ip: address[server] for ip, server in NODES.items()}


def test_the_launcher_passes_the_seven_arguments_in_this_order() -> None:
    """positional() above is launch_online_dp.py's run_command, read from the saved file."""
    text = re.sub(r"\s+", " ", LAUNCHER.read_text(encoding="utf-8"))
    assert (
        '"./run_dp_template.sh", visible_devices, str(vllm_engine_port), str(dp_size), str(dp_rank), '
        "dp_address, dp_rpc_port, str(tp_size), ]" in text
    )
    assert "dp_rank = dp_rank_start + i" in text and "vllm_engine_port = vllm_start_port + i" in text
    assert 'visible_devices = ",".join(str(x) for x in range(i * tp_size, (i + 1) * tp_size))' in text


def test_the_tutorial_has_four_nodes_and_their_launch_lines() -> None:
    tabs, starts = tutorial_tabs(), launches()
    assert sorted(tabs) == ["Decoder node 1", "Decoder node 2", "Prefiller node 1", "Prefiller node 2"]
    assert {tabs[t].variables["local_ip"] for t in tabs} == set(starts) == set(NODES)


def test_example_follows_the_tutorial_but_where_it_says() -> None:
    spec_text = (EXAMPLES / SITE / "site.yaml").read_text(encoding="utf-8")
    header = re.sub(r"\n#\s*", " ", spec_text)  # the header comment as one line
    assert "tutorials/features/pd_disaggregation_mooncake_multi_node.md @v0.23.0" in header
    documented = set(_DIFFERS.findall(spec_text))
    ips = _addresses()
    starts = launches()
    found: set[str] = set()
    compared = 0
    for tab, script in tutorial_tabs().items():
        ip = script.variables["local_ip"]
        launch, ours = starts[ip], rendered(NODES[ip])
        local = int(launch["--dp-size-local"])
        assert len(ours) == local, f"{NODES[ip]} runs {len(ours)} ranks, the tutorial {local}"
        for i in range(local):
            args = positional(launch, i)
            tut = expand(script, args)
            diff = differences(tut, ours[int(args["4"])], ips)
            unsaid = diff - documented
            where = f"{NODES[ip]} dp rank {args['4']}"
            assert not unsaid, f"{where} differs from {tab} without saying why: {unsaid}"
            found |= diff
            compared += 1
    assert compared == 36  # 2 + 2 prefill ranks, 16 + 16 decode ranks
    assert documented <= found, f"{SITE} documents differences it does not have: {documented - found}"


def test_the_comparison_sees_drift() -> None:
    """A rank as the tutorial has it, then changed in the ways a plan could go wrong: each is named."""
    script = tutorial_tabs()["Decoder node 2"]
    launch = launches()["192.0.0.4"]
    tut = expand(script, positional(launch, 3))
    assert tut.options["--data-parallel-rank"] == "19" and tut.options["--port"] == "7103"
    assert tut.env["ASCEND_RT_VISIBLE_DEVICES"] == "3"
    assert tut.options["--data-parallel-address"] == "192.0.0.3"
    ips = {"192.0.0.3": "10.0.0.3", "192.0.0.4": "10.0.0.4"}
    same = Command(
        tut.model,
        {**tut.options, "--data-parallel-address": "10.0.0.3"},
        {**tut.env, "HCCL_IF_IP": "10.0.0.4", "HCCL_SOCKET_IFNAME": "enp189s0f0"},
    )
    assert differences(tut, same, ips) == set()
    kv = json.loads(str(tut.options["--kv-transfer-config"]))
    kv["kv_connector_extra_config"]["decode"]["dp_size"] = 16
    drift = Command(
        tut.model,
        {
            **{k: v for k, v in same.options.items() if k != "--no-enable-prefix-caching"},
            "--data-parallel-rank": "3",
            "--kv-transfer-config": json.dumps(kv),
            "--enforce-eager": None,
        },
        {**{k: v for k, v in same.env.items() if k != "HCCL_OP_EXPANSION_MODE"}, "HCCL_BUFFSIZE": "256"},
    )
    assert differences(tut, drift, ips) == {
        "--no-enable-prefix-caching",
        "--data-parallel-rank",
        "--kv-transfer-config.kv_connector_extra_config",
        "--enforce-eager",
        "HCCL_OP_EXPANSION_MODE",
        "HCCL_BUFFSIZE",
    }


def test_the_layerwise_connector_differs_from_its_tab_in_the_same_places() -> None:
    """The tutorial's Layerwise tab is the Non-layerwise one with MooncakeLayerwiseConnector; the example with
    that connector (planned here, not rendered) differs from it exactly where the example says."""
    text = TUTORIAL.read_text(encoding="utf-8")
    section = text.split("#### Layerwise", 1)[1].split("#### Non-layerwise", 1)[0]
    tabs = {tab.split("\n", 1)[0].strip(): _script(tab) for tab in section.split("::::{tab-item} ")[1:]}
    data = load_example(SITE)
    data["serving"]["disaggregation"]["connector"] = "MooncakeLayerwiseConnector"
    spec = SiteSpec.model_validate(data)
    pd = build_plan(spec, resolve_model(spec.model)).pd
    assert pd is not None
    ours: dict[tuple[str, int], Command] = {}
    for inst in pd.instances:
        for r in inst.ranks:
            ours[(r.server, r.dp_rank)] = Command(r.args[1], cli_options(list(r.args[2:])), dict(r.env))
    documented = set(_DIFFERS.findall((EXAMPLES / SITE / "site.yaml").read_text(encoding="utf-8")))
    starts, ips, found = launches(), _addresses(), set()
    for script in tabs.values():
        ip = script.variables["local_ip"]
        assert '"kv_connector": "MooncakeLayerwiseConnector"' in " ".join(script.serve)
        for i in range(int(starts[ip]["--dp-size-local"])):
            args = positional(starts[ip], i)
            found |= differences(expand(script, args), ours[(NODES[ip], int(args["4"]))], ips)
    assert found == documented
