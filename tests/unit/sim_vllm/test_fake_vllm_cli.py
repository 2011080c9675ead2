"""The fake vLLM command line: the catalog's flag table, argparse behaviour, the image build context."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from fake_vllm import cli, procs
from orchestrator.catalog import flags as catalog_flags
from orchestrator.sim.fake_vllm_flags import BOOLEAN_FLAGS, flag_table
from orchestrator.sim.fake_vllm_image import SERVER_MODULES, prepare_build_context

from .conftest import Sandbox

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "images" / "fake-vllm" / "fake_vllm"


def rendered_instances() -> list[tuple[str, list[str], dict[str, str]]]:
    out = []
    for path in sorted((ROOT / "inventories").glob("*/host_vars/*.yml")):
        data = YAML(typ="safe").load(path.read_text(encoding="utf-8")) or {}
        for inst in data.get("vllm_serve_instances") or []:
            out.append(
                (f"{path.parent.parent.name}/{path.stem}/{inst['replica']}", inst["args"], inst["env"])
            )
    return out


def test_flag_table_marks_booleans_and_values() -> None:
    table = flag_table()
    flags = table["flags"]
    assert set(flags) == set(catalog_flags.KNOWN_SERVE_FLAGS)
    assert "--swap-space" not in flags
    for flag in ("--headless", "--enable-expert-parallel", "--trust-remote-code", "--enforce-eager"):
        assert flags[flag] == {"action": "store_true", "dest": flag[2:].replace("-", "_")}
    assert flags["--no-enable-prefix-caching"] == {"action": "store_false", "dest": "enable_prefix_caching"}
    assert flags["--tensor-parallel-size"]["type"] == "int"
    assert flags["--max-model-len"]["type"] == "human_readable_int"
    assert flags["--gpu-memory-utilization"]["type"] == "float"
    assert flags["--served-model-name"]["nargs"] == "+"
    assert table["aliases"]["-tp"] == "--tensor-parallel-size"
    assert set(flags) >= BOOLEAN_FLAGS


@pytest.mark.parametrize(
    ("name", "args", "env"), rendered_instances(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_every_rendered_instance_parses(name: str, args: list[str], env: dict[str, str]) -> None:
    cfg = cli.parse(args, flag_table(), {})
    assert cfg.model == args[1]
    mask = env["ASCEND_RT_VISIBLE_DEVICES"].split(",")
    assert len(mask) == cfg.tp * cfg.pp * cfg.local_dp, name


def test_parse_follows_vllm_conventions() -> None:
    table = flag_table()
    cfg = cli.parse(
        [
            "serve",
            "--model",
            "/m",
            "--tensor_parallel_size",
            "2",
            "-dp",
            "4",
            "--max-model-len",
            "16k",
            "--served-model-name",
            "a",
            "b",
            "--no-enable-prefix-caching",
            "--headless",
        ],
        table,
        {},
    )
    assert (cfg.model, cfg.tp, cfg.dp, cfg.max_model_len) == ("/m", 2, 4, 16000)
    assert cfg.served_names == ("a", "b")
    assert cfg.enable_prefix_caching is False
    assert cfg.headless and cfg.local_dp == 4
    assert cli.parse(["serve", "/m"], table, {"VLLM_API_KEY": "k"}).api_key == "k"
    assert cli.human_readable_int("1K") == 1024
    dotted = [
        "serve",
        "/m",
        "--compilation-config.cudagraph_mode",
        "FULL",
        "--additional-config.x=1",
        "-tp",
        "2",
    ]
    assert cli.parse(dotted, table, {}).tp == 2


def test_state_files_follow_the_mounts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state, dcmi = tmp_path / "var-lib-ascend-sim", tmp_path / "usr-local-dcmi"
    state.mkdir()
    dcmi.mkdir()
    monkeypatch.setattr(procs, "STATE_DIR", state)
    monkeypatch.setattr(procs, "DCMI_DIR", dcmi)
    name = "processes.json"
    assert procs.state_path({"FAKE_VLLM_PROCESSES": "/x.json"}, "FAKE_VLLM_PROCESSES", name) == Path(
        "/x.json"
    )
    assert procs.state_path({}, "FAKE_VLLM_PROCESSES", name) == state / name  # nothing mounted
    (dcmi / "ascend-sim-hardware.json").write_text("{}")  # only the driver's /usr/local/dcmi is mounted
    assert procs.state_path({}, "FAKE_VLLM_PROCESSES", name) == dcmi / "ascend-sim-processes.json"
    (state / "hardware.json").write_text("{}")  # the server's state directory is mounted
    assert procs.state_path({}, "FAKE_VLLM_PROCESSES", name) == state / name


def test_unknown_flag_exits_2_with_argparse_message(sandbox: Sandbox, checkpoints: dict[str, Path]) -> None:
    proc = sandbox.run(["serve", str(checkpoints["a"]), "--swap-space", "4"])
    assert proc.popen.returncode == 2
    err = proc.stderr()
    assert "usage: vllm [-h] [-v] {chat,complete,serve,bench,collect-env,run-batch} ..." in err
    assert err.rstrip().endswith("vllm: error: unrecognized arguments: --swap-space 4")


def test_bad_value_and_abbreviation_are_rejected(sandbox: Sandbox, checkpoints: dict[str, Path]) -> None:
    proc = sandbox.run(["serve", str(checkpoints["a"]), "-tp", "four"])
    assert proc.popen.returncode == 2
    assert "usage: vllm serve [model_tag] [options]" in proc.stderr()
    assert (
        "vllm serve: error: argument --tensor-parallel-size/-tp: invalid int value: 'four'" in proc.stderr()
    )
    proc = sandbox.run(["serve", str(checkpoints["a"]), "--tensor-parallel", "1"])
    assert proc.popen.returncode == 2
    assert "unrecognized arguments: --tensor-parallel 1" in proc.stderr()


def test_version(sandbox: Sandbox) -> None:
    proc = sandbox.run(["--version"])
    assert proc.popen.returncode == 0
    assert proc.stdout().strip() == flag_table()["vllm_version"]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            assert f"{node.module}.py" in SERVER_MODULES, (
                f"{path.name} imports .{node.module}, not in the image"
            )
    return names


@pytest.mark.parametrize("module", [m for m in SERVER_MODULES if m.endswith(".py")])
def test_server_modules_use_the_standard_library_only(module: str) -> None:
    foreign = {
        n for n in _imports(PACKAGE / module) if n not in sys.stdlib_module_names and n != "__future__"
    }
    assert not foreign, f"{module} imports {foreign}: the image has no third-party packages"


def test_build_context(tmp_path: Path) -> None:
    ctx = prepare_build_context(tmp_path / "ctx")
    assert sorted(p.name for p in (ctx / "fake_vllm").iterdir()) == sorted(SERVER_MODULES)
    assert json.loads((ctx / "flags.json").read_text())["schema_version"] == 1
    assert (ctx / "vllm").stat().st_mode & 0o111
    lines = [ln for ln in (ctx / "Dockerfile").read_text().splitlines() if ln and not ln.startswith("#")]
    assert lines[:2] == ["ARG BASE_IMAGE", "FROM ${BASE_IMAGE}"]
    assert not any(ln.startswith("ENTRYPOINT") for ln in lines)
    assert "COPY vllm /usr/local/bin/vllm" in lines
    copies: list[Any] = [ln.split()[1] for ln in lines if ln.startswith("COPY ")]
    assert all((ctx / src.rstrip("/")).exists() for src in copies)
