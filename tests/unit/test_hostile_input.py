"""Hostile and odd input: every case ends fast with exit 2, a located message and a fix, in bounded memory.

The command-line cases run the CLI's main() in a subprocess and measure its CPU time and peak RSS. The time
budget is 1 s of CPU on top of the CLI's start-up (importing the CLI, measured here on a one-line spec), so
a busy shared machine does not make the tests flaky; benchmarks/README.md has absolute wall times.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from orchestrator.spec.findings import Finding, Position, error, format_finding, sort_findings
from orchestrator.spec.limits import LoadLimits
from orchestrator.spec.loader import load_file, parse_text
from orchestrator.validation import ValidationResult, validate_bytes, validate_file, validate_text
from tests.helpers import ROOT, load_example, to_yaml

BUDGET_S = 1.0  # per hostile case, on top of the CLI's start-up time
MAX_RSS_MB = 200


@dataclass(frozen=True)
class Run:
    code: int
    stdout: str
    stderr: str
    seconds: float  # wall
    cpu: float  # user + system
    rss_mb: float


# Runs the CLI's main() and, at exit, reports the process's peak RSS (VmHWM: this process image only; the
# rusage of a child also counts the parent's memory it was forked from).
_MEASURED = """
import atexit, sys
def _peak():
    with open("/proc/self/status") as status:
        kb = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    sys.stderr.write(f"\\n@@peak-rss-kb {kb}\\n")
atexit.register(_peak)
sys.argv = ["orchestrator", *sys.argv[1:]]
from orchestrator.cli.app import main
main()
"""


def cli(*args: str) -> Run:
    """Run the CLI: wall time, CPU time (user + system, from wait4) and peak RSS of that process."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", _MEASURED, *args], cwd=ROOT, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        stderr, _, peak = err.read().rpartition("\n@@peak-rss-kb ")
        cpu = usage.ru_utime + usage.ru_stime
        code = os.waitstatus_to_exitcode(status)
        return Run(code, out.read(), stderr, seconds, cpu, int(peak) / 1024)


@pytest.fixture(scope="module")
def startup_s(tmp_path_factory: pytest.TempPathFactory) -> float:
    """The CLI's own CPU cost on this machine: validating a one-line invalid spec (best of two)."""
    spec = tmp_path_factory.mktemp("startup") / "site.yaml"
    spec.write_text("site: [\n", encoding="utf-8")
    return min(cli("validate", str(spec)).cpu for _ in range(2))


def assert_refused(run: Run, startup: float, where: str, *needles: str) -> str:
    """Exit 2, no traceback, one located error with a fix, in time and memory; returns the error line."""
    out = run.stdout + run.stderr
    assert run.code == 2, out
    assert "Traceback" not in out and "internal error" not in out, out
    assert "INVALID: " in run.stderr
    assert re.search(rf"^{re.escape(where)}: error: ", run.stderr, re.M), (
        f"no line starting {where!r}:\n{out}"
    )
    assert "\n    fix: " in run.stderr, out
    for needle in needles:
        assert needle in run.stderr, f"{needle!r} not in:\n{out}"
    # CPU time, not wall time: other processes on a shared machine stretch the wall clock, not our CPU time
    assert run.cpu - startup < BUDGET_S, (
        f"{run.cpu:.2f} s CPU, {run.seconds:.2f} s wall (start-up {startup:.2f})"
    )
    assert run.rss_mb < MAX_RSS_MB, f"{run.rss_mb:.0f} MB"
    return run.stderr


def only_error(result: ValidationResult) -> Finding:
    assert not result.ok and len(result.errors) == 1, [format_finding(f, "s") for f in result.findings]
    return result.errors[0]


# ------------------------------------------------------------------------------------ alias bombs


def billion_laughs(levels: int = 9, fanout: int = 9) -> str:
    lines = ["site: lab", "profiles:", f"  a0: &a0 [{','.join(['lol'] * fanout)}]"]
    for i in range(1, levels + 1):
        lines.append(f"  a{i}: &a{i} [{','.join([f'*a{i - 1}'] * fanout)}]")
    lines.append(f"servers: *a{levels}")
    return "\n".join(lines) + "\n"


def test_billion_laughs_is_refused_fast_at_the_alias(tmp_path: Path, startup_s: float) -> None:
    text = billion_laughs()
    assert len(text) < 600  # a few hundred bytes
    spec = tmp_path / "site.yaml"
    spec.write_text(text, encoding="utf-8")
    err = assert_refused(cli("validate", str(spec)), startup_s, f"{spec}:13:10", "YAML aliases expand")
    assert "billion laughs" in err
    # nodes of *a(i), expanded: a0 is a list of 9 scalars (10 nodes); a(i) is a list of 9 copies of a(i-1)
    size = 10
    for _ in range(9):
        size = 1 + 9 * size
    assert f"*a9 here alone adds {size:,}" in err


def test_one_large_anchor_used_many_times_is_refused(tmp_path: Path, startup_s: float) -> None:
    """Not exponential, only quadratic: 20,000 items, referenced 2,000 times (about 80 KB of text)."""
    items = ", ".join(["x"] * 20_000)
    uses = "\n".join("  - *big" for _ in range(2_000))
    spec = tmp_path / "site.yaml"
    spec.write_text(f"site: lab\nlabels: &big [{items}]\nservers:\n{uses}\n", encoding="utf-8")
    assert_refused(cli("validate", str(spec)), startup_s, f"{spec}:4:5", "YAML aliases expand")


def test_alias_expansion_limit_counts_nested_aliases_once_per_use() -> None:
    text = billion_laughs(levels=3, fanout=3)  # 1 + 3 + 9 + 27 lists + 27*9 lols: well under the limit
    doc, findings = parse_text(text, "s.yaml")
    assert findings == [] and doc is not None
    assert len(doc.data["servers"]) == 3 and doc.data["servers"][0][0][0][0] == "lol"
    doc, findings = parse_text(text, "s.yaml", LoadLimits(alias_nodes=100))
    assert doc is None and findings[0].code == "limit"


def test_recursive_and_undefined_aliases_are_located_errors() -> None:
    f = only_error(validate_text("site: lab\nservers: &s\n  - *s\n"))
    assert f.position == Position(3, 5) and "recursive" in f.message
    f = only_error(validate_text("site: lab\nservers: *nope\n"))
    assert f.position == Position(2, 10) and "*nope" in f.message and f.fix == "define &nope above this line"


def test_aliases_within_the_limit_work_and_locate_inside_the_anchor() -> None:
    text = to_yaml(load_example("a2-fleet-gateway"))
    profiles = "profiles:\n  atlas-800t-a2:\n    cards: 8\n    chip: 910B3\n"
    assert profiles in text
    text = text.replace(
        profiles, "profiles:\n  atlas-800t-a2: &a2\n    cards: 9\n    chip: 910B3\n  spare: *a2\n"
    )
    lines = text.splitlines()
    result = validate_text(text)
    cards = {f.path: f.position for f in result.errors if f.path[-1:] == ("cards",)}
    written = Position(lines.index("    cards: 9") + 1, 12)
    assert cards == {("profiles", "atlas-800t-a2", "cards"): written, ("profiles", "spare", "cards"): written}
    doc, _ = parse_text(text, "s.yaml")
    assert doc is not None and doc.source_map.locate(("profiles", "spare")) == Position(
        lines.index("  spare: *a2") + 1, 10
    )


# --------------------------------------------------------------------------------------- file size


def test_a_50_mb_file_is_refused_without_reading_it(tmp_path: Path, startup_s: float) -> None:
    spec = tmp_path / "site.yaml"
    line = b"  - {name: s1, address: 10.0.0.1}\n"
    with spec.open("wb") as fh:
        fh.write(b"site: lab\nservers:\n")
        fh.write(line * (50 * 2**20 // len(line)))
    err = assert_refused(cli("validate", str(spec)), startup_s, f"{spec}", "more than the 16 MiB")
    assert "--max-spec-size" in err and "ORCHESTRATOR_MAX_SPEC_SIZE" in err


@pytest.mark.parametrize("command", ["validate", "render", "phases"])
def test_max_spec_size_flag_and_environment(tmp_path: Path, command: str) -> None:
    spec = tmp_path / "site.yaml"
    spec.write_text(to_yaml(load_example("a2-single-distill")), encoding="utf-8")
    small = subprocess.run(
        [sys.executable, "-m", "orchestrator", command, str(spec), "--max-spec-size", "1KiB"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert small.returncode == 2 and "more than the 1 KiB" in small.stderr
    env = {**os.environ, "ORCHESTRATOR_MAX_SPEC_SIZE": "1k"}
    by_env = subprocess.run(
        [sys.executable, "-m", "orchestrator", command, str(spec)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert by_env.returncode == 2 and "more than the 1 KiB" in by_env.stderr
    raised = subprocess.run(
        [sys.executable, "-m", "orchestrator", command, str(spec), "--max-spec-size", "64MiB"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert raised.returncode == 0, raised.stderr


def test_an_endless_stream_is_read_only_up_to_the_limit() -> None:
    doc, findings = load_file(Path("/dev/zero"), LoadLimits(max_bytes=4096))
    assert doc is None and findings[0].code == "limit"
    assert "at least" in findings[0].message and "4 KiB" in findings[0].message


# ------------------------------------------------------------------------------------- merge keys


MERGE = """\
site: lab
profiles:
  base: &base
    chip: 910B3
    cards: 9
  big:
    <<: *base
    hbm_gb: 64
  small:
    <<: [{cards: 2}, *base]
  own:
    <<: *base
    cards: 4
"""


def test_merge_keys_merge_and_locate_inside_the_merged_content() -> None:
    doc, findings = parse_text(MERGE, "s.yaml")
    assert findings == [] and doc is not None
    profiles = doc.data["profiles"]
    assert profiles["big"] == {"hbm_gb": 64, "chip": "910B3", "cards": 9}
    assert profiles["small"] == {"cards": 2, "chip": "910B3"}  # earlier sources win
    assert profiles["own"] == {"cards": 4, "chip": "910B3"}  # explicit keys win
    smap = doc.source_map
    assert smap.locate(("profiles", "big", "cards")) == Position(5, 12)  # where 'cards: 9' is written
    assert smap.locate_key(("profiles", "big", "cards")) == Position(5, 5)
    assert smap.locate(("profiles", "big", "hbm_gb")) == Position(8, 13)
    assert smap.locate(("profiles", "small", "cards")) == Position(10, 18)
    assert smap.locate(("profiles", "own", "cards")) == Position(13, 12)


def test_merge_key_findings_point_at_the_line_the_user_wrote() -> None:
    result = validate_text(MERGE)
    cards = {f.path: f.position for f in result.errors if f.path[-1:] == ("cards",)}
    assert cards == {
        ("profiles", "base", "cards"): Position(5, 12),
        ("profiles", "big", "cards"): Position(5, 12),
    }


@pytest.mark.parametrize(
    ("text", "position"),
    [
        ("site: lab\nprofiles:\n  p:\n    <<: 3\n", Position(4, 9)),
        ("site: lab\nprofiles:\n  p:\n    <<: [{a: 1}, 2]\n", Position(4, 18)),
        ("site: lab\nprofiles:\n  p:\n    <<: {a: 1}\n    <<: {b: 1}\n", Position(5, 5)),
    ],
    ids=["scalar", "list-with-scalar", "two-merge-keys"],
)
def test_bad_merge_keys_are_located_errors(text: str, position: Position) -> None:
    f = only_error(validate_text(text))
    assert f.position == position and f.fix


def test_merge_key_crash_of_the_old_loader_is_gone(tmp_path: Path, startup_s: float) -> None:
    spec = tmp_path / "site.yaml"
    spec.write_text(MERGE, encoding="utf-8")
    run = cli("validate", str(spec))
    assert_refused(
        run, startup_s, f"{spec}:5:12", "profiles.base.cards: Input should be less than or equal to 8"
    )
    assert f"{spec}:5:12: error: profiles.big.cards" in run.stderr


# ---------------------------------------------------------------------------------------- numbers


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        (".inf", "finite number"),
        ("-.inf", "finite number"),
        (".nan", "finite number"),
        ("1e300", "less than or equal to 10000"),
        ("1e400", "finite number"),
        ("-5", "greater than 0"),
        ("9" * 5000, "a number with 5,000 digits"),
    ],
)
def test_huge_and_non_finite_params_b(tmp_path: Path, startup_s: float, value: str, needle: str) -> None:
    data = load_example("a2-single-distill")
    data["model"] = {
        "name": "my-model",
        "weights_path": "/data/models/my-model",
        "architecture": {"params_b": 7, "layers": 28, "hidden_size": 3584, "heads": 28, "kv_heads": 4},
    }
    text = to_yaml(data).replace("params_b: 7\n", f"params_b: {value}\n")
    spec = tmp_path / "site.yaml"
    spec.write_text(text, encoding="utf-8")
    line = text.splitlines().index(f"    params_b: {value}") + 1
    assert_refused(cli("validate", str(spec)), startup_s, f"{spec}:{line}:15", needle)


def _numeric_site() -> dict[str, object]:
    """An example with every optional section that holds a number written out."""
    data = load_example("a2-pair-r1-w8a8")
    data["profiles"]["atlas-800t-a2"] |= {"devices_per_card": 1, "hbm_gb": 64, "cpu_cores": 192}
    data["profiles"]["atlas-800t-a2"]["memory_gb"] = 1024
    data["servers"][0]["ssh_port"] = 22
    data["servers"][0]["overrides"] = {"sysctls": {"vm.swappiness": 0}}
    data["model"] = {
        "name": "my-model",
        "weights_path": "/data/models/my-model",
        "architecture": {
            "params_b": 7,
            "expert_params_b": 0,
            "layers": 28,
            "hidden_size": 3584,
            "heads": 28,
            "kv_heads": 4,
            "head_dim": 128,
            "kv_lora_rank": 0,
            "qk_rope_head_dim": 0,
            "max_position_embeddings": 32768,
        },
    }
    data["network"]["hccn"] |= {"first_host": 10, "mtu": 4200}
    data["tuning"] = {
        "sysctls": {"vm.swappiness": 0},
        "hugepages": {"count": 0},
        "rdma_modules": {"mlx5_core": {"num_vfs": 0}},
    }
    serving = data["serving"]
    serving |= {"port": 8000, "dp_rpc_port": 13389, "max_num_seqs": 8, "max_num_batched_tokens": 4096}
    serving |= {"max_model_len": 8192, "gpu_memory_utilization": 0.9}
    serving["parallelism"] |= {"pp": 1}
    serving["hccl"] = {"buffsize_mb": 200, "connect_timeout_s": 120, "exec_timeout_s": 1836}
    serving["replicas"][0] |= {"port": 8000, "devices": [0, 1, 2, 3, 4, 5, 6, 7]}
    serving["replicas"][0]["parallelism"] = {"tp": 4, "dp": 4}
    data["rollout"] = {
        "canary": 1,
        "batch_size": 1,
        "max_fail_percentage": 0,
        "min_available": 0,
        "gates": {
            "startup_timeout_s": 600,
            "health_interval_s": 10,
            "weights_read_mb_s": 1000,
            "smoke_prompts": 3,
            "accuracy_tolerance": 0.005,
            "max_error_rate": 0.0,
        },
    }
    data["gateway"] = {"enabled": False, "port": 8080}
    data["monitoring"] = {
        "prometheus_port": 9090,
        "node_exporter_port": 9100,
        "npu_exporter_port": 8082,
        "scrape_interval_s": 15,
        "retention_days": 15,
    }
    data["schema_version"] = 1
    return data


def _numeric_paths(node: object, path: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """Paths of every number in the data (bools are not numbers)."""
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in _numeric_paths(v, (*path, k))]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in _numeric_paths(v, (*path, i))]
    return [path] if isinstance(node, int | float) and not isinstance(node, bool) else []


def _numeric_fields() -> set[tuple[str, str]]:
    """(model, field) of every field of the spec models whose type admits a number."""
    import typing

    from orchestrator.spec.docs import _models
    from orchestrator.spec.site import SiteSpec

    def numeric(annotation: object) -> bool:
        if annotation in (int, float):
            return True
        return any(numeric(a) for a in typing.get_args(annotation))

    return {
        (m.__name__, name)
        for m in _models(SiteSpec)
        for name, field in m.model_fields.items()
        if numeric(field.annotation)
    }


def test_the_numeric_site_writes_every_numeric_field() -> None:
    """The test below covers every numeric field of the spec models only if the site writes them all."""
    from orchestrator.spec.structural import model_at

    data = _numeric_site()
    assert validate_data_ok(data)
    covered = set()
    for path in _numeric_paths(data):
        names = [i for i, p in enumerate(path) if isinstance(p, str)]
        for i in reversed(names):
            model = model_at(path[:i])
            if model is not None and path[i] in model.model_fields:
                covered.add((model.__name__, path[i]))
                break
    assert _numeric_fields() - covered == set()


def validate_data_ok(data: dict[str, object]) -> bool:
    result = validate_text(to_yaml(data))
    return not [f for f in result.errors if f.code in ("type", "value")]


@pytest.mark.parametrize("value", ["1e300", ".inf", ".nan", "-1e300", "9" * 60])
def test_every_numeric_field_refuses_huge_and_non_finite_values(value: str) -> None:
    data = _numeric_site()
    for path in _numeric_paths(data):
        node: object = data
        for part in path[:-1]:
            node = node[part]  # type: ignore[index]
        original = node[path[-1]]  # type: ignore[index]
        node[path[-1]] = "@@NUMBER@@"  # type: ignore[index]
        text = to_yaml(data).replace("'@@NUMBER@@'", value)
        node[path[-1]] = original  # type: ignore[index]
        result = validate_text(text)
        at = [f for f in result.errors if f.path == path]
        assert at, f"{path} = {value} was accepted: {[format_finding(f, 's') for f in result.findings]}"
        lines = text.splitlines()
        assert all(f.position is not None and value in lines[f.position.line - 1] for f in at)


# ----------------------------------------------------------------------------------------- nesting


@pytest.mark.parametrize(
    ("text", "where"),
    [
        # the 65th level: the '[' at column 7 + 63 of line 1; the key 'k63' at line 64, column 2 * 63 + 1
        ("site: " + "[" * 100_000 + "]" * 100_000 + "\n", "1:70"),
        ("".join("  " * i + f"k{i}:\n" for i in range(200)), "64:127"),
    ],
    ids=["flow", "block"],
)
def test_deep_nesting_is_refused_at_the_limit(
    tmp_path: Path, startup_s: float, text: str, where: str
) -> None:
    spec = tmp_path / "site.yaml"
    spec.write_text(text, encoding="utf-8")
    assert_refused(cli("validate", str(spec)), startup_s, f"{spec}:{where}", "nests deeper than 64 levels")


def test_nesting_through_aliases_counts_the_anchored_depth() -> None:
    anchored = "[" * 40 + "1" + "]" * 40  # 43 levels deep where it is written: fine
    used = "[" * 27 + "*d" + "]" * 27  # 2 + 27 levels, plus the 41 of *d: too deep
    f = only_error(validate_text(f"site: lab\nprofiles: {{a: &d {anchored}}}\nservers: {used}\n"))
    assert "nests deeper" in f.message and f.position == Position(3, 37)


# ------------------------------------------------------------------------------------ not text


def test_binary_file_is_reported_at_a_byte_offset(tmp_path: Path, startup_s: float) -> None:
    spec = tmp_path / "site.yaml"
    spec.write_bytes(b"\x7fELF\x02\x01\x01" + b"\x00" * 9 + bytes(range(256)) * 40)
    assert_refused(cli("validate", str(spec)), startup_s, f"{spec}", "binary", "NUL byte at byte offset 7")


@pytest.mark.parametrize(
    ("encoding", "needle"),
    [
        ("utf-16", "UTF-16 text (byte order mark FF FE at byte offset 0)"),
        ("utf-16-le", "UTF-16LE text without a byte order mark (NUL byte at byte offset 1)"),
        ("utf-16-be", "UTF-16BE text without a byte order mark (NUL byte at byte offset 0)"),
        ("utf-32", "UTF-32 text (byte order mark FF FE 00 00 at byte offset 0)"),
    ],
)
def test_utf16_and_utf32_files_are_reported_at_a_byte_offset(
    tmp_path: Path, startup_s: float, encoding: str, needle: str
) -> None:
    spec = tmp_path / "site.yaml"
    spec.write_bytes(to_yaml(load_example("a2-single-distill")).encode(encoding))
    err = assert_refused(cli("validate", str(spec)), startup_s, f"{spec}", needle)
    assert "iconv" in err


def test_invalid_utf8_and_control_characters() -> None:
    f = only_error(validate_bytes(b"site: lab\nos: {distro: \xff}\n"))
    assert f.position is None and "byte 0xFF at byte offset 23 (line 2)" in f.message
    f = only_error(validate_text("site: lab\nos: {distro: u\x07}\n"))
    assert f.position == Position(2, 15) and "U+0007" in f.message and "byte offset 24" in f.message
    doc, findings = parse_text("\ufeffsite: lab\n", "s.yaml")  # a UTF-8 byte order mark is fine
    assert findings == [] and doc is not None and doc.data == {"site": "lab"}
    assert validate_bytes(b"\xef\xbb\xbfsite: lab\n").errors[0].code == "missing"


# ------------------------------------------------------------------------------------- keys, tags


def test_null_key_is_reported_at_its_own_line(tmp_path: Path, startup_s: float) -> None:
    spec = tmp_path / "site.yaml"
    spec.write_text("# a comment\nsite: lab\nserving:\n  port: 8000\n  ~: 3\n", encoding="utf-8")
    assert_refused(cli("validate", str(spec)), startup_s, f"{spec}:5:3", "a key is null")


@pytest.mark.parametrize(
    ("text", "position", "needle"),
    [
        ("site: lab\nnull: 1\n", Position(2, 1), "a key is null"),
        ("site: lab\n: 1\n", Position(2, 1), "a key is null"),
        ("site: lab\n? [a, b]\n: 1\n", Position(2, 3), "a key must be a plain name"),
        ("site: lab\n{a: 1}: 2\n", Position(2, 1), "a key must be a plain name"),
        ("site: &s lab\n*s : 2\n", Position(2, 1), "not an alias"),
        ("site: lab\nsite: lab2\n", Position(2, 1), 'duplicate key "site"'),
    ],
)
def test_odd_keys_are_located_errors(text: str, position: Position, needle: str) -> None:
    f = only_error(validate_text(text))
    assert f.position == position and needle in f.message


def test_unknown_tag_is_an_error_naming_the_tag(tmp_path: Path, startup_s: float) -> None:
    text = to_yaml(load_example("a2-single-distill")).replace("cards: 8", "cards: !int8 8")
    spec = tmp_path / "site.yaml"
    spec.write_text(text, encoding="utf-8")
    line = text.splitlines().index("    cards: !int8 8") + 1
    assert_refused(
        cli("validate", str(spec)), startup_s, f"{spec}:{line}:12", "YAML tag '!int8' is not supported"
    )


@pytest.mark.parametrize(
    "tagged",
    [
        "!!binary aGVsbG8=",
        "!!timestamp 2025-01-01",
        "!<tag:example.com,2025:x> 1",
        "!!set {a: null}",
        "!!omap [a: 1]",
        "!!str {a: 1}",
        "!!map [1]",
    ],
)
def test_tags_outside_the_core_schema_are_refused(tagged: str) -> None:
    f = only_error(validate_text(f"site: lab\nlabels: {tagged}\n"))
    assert f.position == Position(2, 9) and "YAML tag '" in f.message and f.code == "tag"


def test_core_schema_tags_are_legal_yaml_and_apply() -> None:
    data = load_example("a3-single-r1-w8a8")
    text = to_yaml(data)
    assert "chip: '910_93'" in text  # quoted: unquoted, YAML reads the number 91093
    plain = text.replace("chip: '910_93'", "chip: !!str 910_93").replace("cards: 8", "cards: !!int '8'")
    assert "!!str 910_93" in plain and "!!int '8'" in plain
    result = validate_text(plain)
    assert result.ok, [format_finding(f, "s") for f in result.findings]
    doc, _ = parse_text("a: !!float 1\nb: !!bool 'true'\nc: !!null ''\nd: ! 8\ne: !!str\n", "s.yaml")
    assert doc is not None and doc.data == {"a": 1.0, "b": True, "c": None, "d": "8", "e": ""}
    f = only_error(validate_text("site: lab\nlabels: {a: !!int 'x1'}\n"))
    assert f.position == Position(2, 13) and "'x1' is not an integer" in f.message


# ------------------------------------------------------------------------------- many servers


MISSING_SECTIONS = 5  # profiles, os, software, model, serving


def _many_bad_servers(n: int) -> str:
    lines = ["site: lab", "servers:"]
    lines += [f"  - {{name: s{i}, address: 10.0.{i // 250}.{i % 250 + 1}, ssh_port: 0}}" for i in range(n)]
    return "\n".join(lines) + "\n"


def test_output_is_capped_with_a_count_of_the_rest(tmp_path: Path) -> None:
    spec = tmp_path / "site.yaml"
    spec.write_text(_many_bad_servers(2000), encoding="utf-8")
    total = 2000 + MISSING_SECTIONS
    run = cli("validate", str(spec))
    assert run.code == 2 and "Traceback" not in run.stderr
    errors = re.findall(rf"^{re.escape(str(spec))}:(\d+):\d+: error: (\S+):", run.stderr, re.M)
    assert len(errors) == 50
    assert [int(line) for line, _ in errors] == sorted(int(line) for line, _ in errors)
    assert [p for _, p in errors[MISSING_SECTIONS:]] == [f"servers[{i}].ssh_port" for i in range(45)]
    rest = total - 50
    assert (
        f"... and {rest} more ({rest} error(s), 0 warning(s)); --max-findings 0 prints them all" in run.stderr
    )
    assert f"INVALID: {total} error(s), 0 warning(s)" in run.stderr
    everything = cli("validate", str(spec), "--max-findings", "0")
    assert len(re.findall(r": error: ", everything.stderr)) == total
    assert "more (" not in everything.stderr


def test_findings_sort_numerically_by_path_where_positions_tie() -> None:
    unplaced = [error(("servers", i, "ssh_port"), "bad") for i in (10, 9, 2, 100)]
    assert [f.path[1] for f in sort_findings(unplaced)] == [2, 9, 10, 100]
    same_line = [error(("servers", i), "bad").at(Position(3, 1)) for i in (10, 9)]
    assert [f.path[1] for f in sort_findings(same_line)] == [9, 10]


def test_validate_and_render_grow_linearly() -> None:
    """768 servers cost about 8x 96 servers (quadratic code would cost 64x); best of two runs each."""
    from benchmarks.bench_scale import large_site_text
    from orchestrator.render import render_texts

    def cost(n: int) -> float:
        text = large_site_text(n)
        best = math.inf
        for _ in range(2):
            start = time.perf_counter()
            result = validate_text(text)
            assert result.ok, result.errors[:3]
            render_texts(result)
            best = min(best, time.perf_counter() - start)
        return best

    small, large = cost(96), cost(768)
    assert large / small < 20, f"96 servers {small:.2f} s, 768 servers {large:.2f} s"


def test_in_process_validation_of_each_hostile_file_is_fast(tmp_path: Path) -> None:
    cases = {
        "bomb": billion_laughs().encode(),
        "deep": ("site: " + "[" * 100_000 + "]" * 100_000 + "\n").encode(),
        "bigint": ("site: lab\nprofiles: {p: {cards: " + "9" * 5000 + "}}\n").encode(),
        "utf16": to_yaml(load_example("a2-single-distill")).encode("utf-16"),
        "tag": b"site: lab\nprofiles: {p: {cards: !int8 8}}\n",
    }
    for name, raw in cases.items():
        spec = tmp_path / f"{name}.yaml"
        spec.write_bytes(raw)
        start = time.perf_counter()
        result = validate_file(spec)
        elapsed = time.perf_counter() - start
        assert not result.ok and len(result.errors) == 1, name
        assert elapsed < 0.5, f"{name}: {elapsed:.2f} s"
