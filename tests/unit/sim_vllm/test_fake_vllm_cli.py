"""The fake vLLM command line: built from the generated flag table of the real vLLM wheel, it must accept and
refuse what the real parser did (the probes recorded by scripts/gen-vllm-flags), parse every rendered
`vllm serve` line of the examples, and ship in the image build context.

These tests read the generated JSON tables directly, not through the catalog code, so a wrong catalog or
validator cannot make them pass."""

from __future__ import annotations

import ast
import contextlib
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from ascend_sim.fake_vllm_image import SERVER_MODULES, prepare_build_context
from fake_vllm import cli, procs
from orchestrator.pipeline import validate_file

from .conftest import Sandbox

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "ascend_sim" / "payloads" / "fake-vllm" / "fake_vllm"
TABLES = ROOT / "orchestrator" / "catalog" / "data" / "vllm_flags"


def generated(vllm: str) -> dict[str, Any]:
    """The generated table of one vLLM release, read as the image reads flags.json."""
    return cli.load_flag_table(TABLES / f"v{vllm.removeprefix('v')}.json")


def rendered_instances() -> list[tuple[str, str, list[str], dict[str, str]]]:
    out = []
    for path in sorted((ROOT / "inventories").glob("*/host_vars/*.yml")):
        data = YAML(typ="safe").load(path.read_text(encoding="utf-8")) or {}
        plan = validate_file(path.parent.parent / "site.yaml").plan  # the release's vLLM: the plan's stack
        assert plan is not None
        for inst in data.get("vllm_serve_instances") or []:
            name = f"{path.parent.parent.name}/{path.stem}/{inst['replica']}"
            out.append((name, plan.stack.vllm, inst["args"], inst["env"]))
    return out


@pytest.mark.parametrize(
    ("name", "vllm", "args", "env"), rendered_instances(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_every_rendered_instance_parses_under_its_release(
    name: str, vllm: str, args: list[str], env: dict[str, str]
) -> None:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            cfg = cli.parse(args, generated(vllm), {})
        except SystemExit as exc:
            pytest.fail(
                f"{name}: vLLM {vllm}'s parser refuses the rendered line (exit {exc.code}): {err.getvalue()}"
            )
    assert cfg.model == args[1]
    mask = env["ASCEND_RT_VISIBLE_DEVICES"].split(",")
    assert len(mask) == cfg.tp * cfg.pp * cfg.local_dp, name


def _run(argv: list[str], table: dict[str, Any]) -> tuple[int | str | None, dict[str, Any], str]:
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            cfg = cli.parse(["serve", "/models/m", *argv], table, {})
    except SystemExit as exc:
        lines = [ln for ln in err.getvalue().splitlines() if ln.strip()]
        return exc.code, {}, lines[-1] if lines else ""
    return 0, cfg.raw, ""


@pytest.mark.parametrize("table_file", sorted(p.name for p in TABLES.glob("v*.json")))
def test_the_fake_parser_does_what_the_real_one_did(table_file: str) -> None:
    """Each command line gen-vllm-flags ran through the real parser of the release: the fake accepts it and
    sets the same destinations, or refuses it with the same argparse error line (exit 2). A --quantization
    the parser lets through but vLLM does not know ends at the model config check instead (exit 1)."""
    table = cli.load_flag_table(TABLES / table_file)
    for probe in table["probes"]:
        code, raw, last = _run(probe["argv"], table)
        if probe["exit"] != 0:
            assert (code, last) == (probe["exit"], probe["error"]), probe["argv"]
        elif "bogus" in probe["argv"]:
            assert code == 1 and last.startswith("ValueError: Unknown quantization method: bogus."), last
        else:
            assert code == 0, (probe["argv"], last)
            assert set(probe["set"]) <= set(raw), probe["argv"]


def test_parse_follows_vllm_conventions() -> None:
    table = generated("0.23.0")
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


def test_bad_values_and_ambiguous_abbreviations_are_rejected(
    sandbox: Sandbox, checkpoints: dict[str, Path]
) -> None:
    proc = sandbox.run(["serve", str(checkpoints["a"]), "-tp", "four"])
    assert proc.popen.returncode == 2
    assert "usage: vllm serve [model_tag] [options]" in proc.stderr()
    assert (
        "vllm serve: error: argument --tensor-parallel-size/-tp: invalid int value: 'four'" in proc.stderr()
    )
    proc = sandbox.run(["serve", str(checkpoints["a"]), "--dtype", "float64"])
    assert proc.popen.returncode == 2
    # vllm/config/model.py @ v0.23.0: ModelDType (auto, half, float16, bfloat16, float, float32)
    assert (
        proc.stderr()
        .rstrip()
        .endswith(
            "vllm serve: error: argument --dtype: invalid choice: 'float64' "
            "(choose from 'auto', 'bfloat16', 'float', 'float16', 'float32', 'half')"
        )
    )
    proc = sandbox.run(["serve", str(checkpoints["a"]), "--max-num", "4"])
    assert proc.popen.returncode == 2
    assert "ambiguous option: --max-num could match" in proc.stderr()


def test_unknown_quantization_fails_at_the_model_config(
    sandbox: Sandbox, checkpoints: dict[str, Path]
) -> None:
    proc = sandbox.run(["serve", str(checkpoints["a"]), "--quantization", "bogus"])
    assert proc.popen.returncode == 1
    assert "ValueError: Unknown quantization method: bogus. Must be one of [" in proc.stderr()


def test_version(sandbox: Sandbox) -> None:
    proc = sandbox.run(["--version"])
    assert proc.popen.returncode == 0
    assert proc.stdout().strip() == "0.23.0"  # the default vllm-ascend release v0.23.0 pins vLLM v0.23.0


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
    assert (ctx / "flags.json").read_bytes() == (TABLES / "v0.23.0.json").read_bytes()
    older = prepare_build_context(tmp_path / "old", "v0.13.0")
    assert json.loads((older / "flags.json").read_text())["vllm_version"] == "0.13.0"
    assert (ctx / "vllm").stat().st_mode & 0o111
    lines = [ln for ln in (ctx / "Dockerfile").read_text().splitlines() if ln and not ln.startswith("#")]
    assert lines[:2] == ["ARG BASE_IMAGE", "FROM ${BASE_IMAGE}"]
    assert 'ENTRYPOINT ["/usr/local/bin/vllm-entrypoint"]' in lines
    assert (ctx / "vllm-entrypoint").stat().st_mode & 0o111
    assert "COPY vllm /usr/local/bin/vllm" in lines
    copies: list[Any] = [ln.split()[1] for ln in lines if ln.startswith("COPY ")]
    assert all((ctx / src.rstrip("/")).exists() for src in copies)
