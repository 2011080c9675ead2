"""`orchestrator doctor --log FILE`: exit codes, the report for people, the JSON object, usage errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import PATIENCE_S, ROOT, run_cli

DATA = ROOT / "tests/data/doctor"
F2 = str(DATA / "f2-hccl-buffsize.log")
F7 = str(DATA / "f7-hccl-port-bound.log")


def _clean(tmp_path: Path) -> str:
    log = tmp_path / "clean.log"
    parts = [(DATA / "generic" / f"{p}.log").read_text(encoding="utf-8") for p in ("head", "serving")]
    log.write_text("".join(parts), encoding="utf-8")
    return str(log)


def test_known_cause_exits_3_with_rule_line_code_cause_fix_and_sources() -> None:
    out = run_cli("doctor", "--log", F2)
    assert out.returncode == 3, out.stderr
    assert f"{F2}: known cause hccl-buffsize-too-small: " in out.stdout
    assert "  line:        5: (EngineCore_DP0 pid=17833) EZ9999[PID: 17833]" in out.stdout
    assert "  first code:  561002 (acl) on line 2" in out.stdout
    assert "HCCL_BUFFSIZE=609" in out.stdout  # read from the log line
    for key in ("cause:", "fix:", "check early:", "sources:"):
        assert f"  {key}" in out.stdout, key
    assert "https://github.com/vllm-project/vllm-ascend/pull/5287" in out.stdout
    assert out.stderr == ""


def test_no_known_cause_exits_0_and_says_so(tmp_path: Path) -> None:
    clean = _clean(tmp_path)
    out = run_cli("doctor", "--log", clean)
    assert out.returncode == 0, out.stderr
    assert f"{clean}: no known cause found" in out.stdout
    assert "first error code: none seen" in out.stdout


def test_no_known_cause_still_prints_the_first_error_code(tmp_path: Path) -> None:
    log = tmp_path / "unknown.log"
    log.write_text(
        "RuntimeError: zero_:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:26 NPU function error: "
        "call aclnnInplaceZero failed, error code is 561000\n",
        encoding="utf-8",
    )
    out = run_cli("doctor", "--log", str(log))
    assert out.returncode == 0
    assert "first error code: 561000 (acl) on line 1: RuntimeError: zero_:" in out.stdout


def test_json_is_one_object_per_run(tmp_path: Path) -> None:
    clean = _clean(tmp_path)
    out = run_cli("doctor", "--log", F7, "--log", clean, "--format", "json")
    assert out.returncode == 3, out.stderr
    doc = json.loads(out.stdout)
    assert set(doc) == {"files", "known_causes", "exit_code"}
    assert (doc["known_causes"], doc["exit_code"]) == (1, 3)
    port, ok = doc["files"]
    assert port["file"] == F7 and ok["file"] == clean
    d = port["diagnosis"]
    assert d["rule"] == "hccl-port-in-use" and d["line"] == 4
    assert d["text"].startswith("[rank0]: EJ0003: [PID: 159]")
    assert d["details"] == {"port": "60000"}
    assert {"area", "title", "cause", "fix", "preflight", "sources", "hint", "inferred", "related"} <= set(d)
    assert port["first_code"] == {
        "code": "11",
        "kind": "hccl",
        "line": 2,
        "text": (DATA / "f7-hccl-port-bound.log").read_text(encoding="utf-8").splitlines()[1],
    }
    assert [c["code"] for c in port["codes"]] == ["11", "EJ0003"]
    assert ok["diagnosis"] is None and ok["first_code"] is None and ok["codes"] == []


def test_missing_file_exits_66_with_a_fix(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.log"
    out = run_cli("doctor", "--log", F2, "--log", str(missing))
    assert out.returncode == 66
    assert f"cannot read {missing}: No such file or directory. Fix: " in out.stderr
    assert out.stdout == "" and "Traceback" not in out.stderr
    folder = run_cli("doctor", "--log", str(tmp_path))
    assert folder.returncode == 66 and f"cannot read {tmp_path}: Is a directory" in folder.stderr


def test_usage_errors_exit_64() -> None:
    none = run_cli("doctor")
    assert none.returncode == 64 and "--log FILE diagnoses a saved serving log" in none.stderr
    both = run_cli("doctor", "a2-single-distill", "--log", F2)
    assert both.returncode == 64 and "not both" in both.stderr
    host = run_cli("doctor", "--host", "a2-01", "--log", F2)
    assert host.returncode == 64 and "--host needs a SITE" in host.stderr
    unknown = run_cli("doctor", "a2-single-distill", "--host", "nosuch")
    assert unknown.returncode == 64 and "nosuch is not an NPU server of this site" in unknown.stderr
    assert "Traceback" not in unknown.stderr
    bad = run_cli("doctor", "--log", F2, "--format", "xml")
    assert bad.returncode == 64 and "Traceback" not in bad.stderr


def test_live_checks_of_an_invalid_spec_exit_2_before_any_host_is_touched() -> None:
    out = run_cli("doctor", str(ROOT / "tests/data/invalid/03-unknown-top-level-key.yaml"))
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr


def test_help_documents_the_exit_codes() -> None:
    out = run_cli("doctor", "--help")
    assert out.returncode == 0
    text = " ".join(out.stdout.split())
    assert (
        "Exit codes: 0 no known cause found / all checks ok, 3 a known cause or a failed check, 4 (SITE) a "
        "host unreachable and nothing else wrong, 2 (SITE) invalid spec, 66 a FILE cannot be read, 64 usage."
        in text
    )


def test_log_dash_reads_standard_input() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "orchestrator", "doctor", "--log", "-", "--format", "json"],
        input=(DATA / "f5-get-socket-timeout.log").read_bytes(),
        capture_output=True,
        cwd=ROOT,
        timeout=PATIENCE_S,
        check=False,
    )
    assert out.returncode == 3, out.stderr
    doc = json.loads(out.stdout)
    assert doc["files"][0]["file"] == "-"
    assert doc["files"][0]["diagnosis"]["rule"] == "hccl-get-socket-timeout"
    assert doc["files"][0]["diagnosis"]["related"] == ["npu-nic-tls-or-link"]


def test_no_known_cause_prints_the_code_and_the_lines_that_matter_not_a_guess(tmp_path: Path) -> None:
    # gpustack#2527 without its EE1001 line: a bare 207004 names no cause (not Ray, not device order)
    lines = (DATA / "f9-device-order-207004.log").read_text(encoding="utf-8").splitlines()
    log = tmp_path / "bare-207004.log"
    log.write_text("\n".join(line for line in lines if "EE1001" not in line) + "\n", encoding="utf-8")
    out = run_cli("doctor", "--log", str(log))
    assert out.returncode == 0, out.stderr
    assert f"{log}: no known cause found" in out.stdout
    assert "first error code: 207004 (acl) on line 4:" in out.stdout
    assert "  lines that matter (the first that read as errors):" in out.stdout
    assert "    4: (VllmWorker rank=3 pid=112081) ERROR 07-17 08:06:53" in out.stdout
    assert "ray-device-count" not in out.stdout and "cause:" not in out.stdout
    doc = json.loads(run_cli("doctor", "--log", str(log), "--format", "json").stdout)
    (f,) = doc["files"]
    assert f["diagnosis"] is None
    assert f["key_lines"][0]["line"] == 4 and "error code is 207004" in f["key_lines"][0]["text"]
