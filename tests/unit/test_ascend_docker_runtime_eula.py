"""The Ascend Docker Runtime installer's EULA question (MindCluster v26.1.0 and later), held to the upstream
script saved under tests/data/upstream/mind-cluster (its README gives repository, tag and commit):
role container_runtime answers it on stdin, bounds the run with a timeout and looks for the installer's
own success line; the simulator's fake package asks the same question and behaves the same way."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from ascend_sim.docker_runtime_package import build_docker_runtime_package

REPO = Path(__file__).resolve().parents[2]
RUN_MAIN = (
    REPO
    / "tests/data/upstream/mind-cluster/v26.1.0/component/ascend-docker-runtime/build/scripts/run_main.sh"
)
ROLE = REPO / "roles" / "container_runtime"
RT_LOWER_CASE, RT_FIRST_CASE = "ascend-docker-runtime", "Ascend-docker-runtime"  # run_main.sh's names


def _upstream() -> str:
    return RUN_MAIN.read_text()


def _function(name: str) -> str:
    """The text of one shell function of run_main.sh (from `function name()` to its closing brace)."""
    m = re.search(rf"^function {name}\(\)\n\{{\n.*?^\}}\n", _upstream(), re.M | re.S)
    assert m, f"run_main.sh has no function {name}"
    return m.group(0)


def _install_task() -> dict[str, Any]:
    tasks = yaml.safe_load((ROLE / "tasks" / "ascend_runtime.yml").read_text())
    block = next(t for t in tasks if t["name"] == "Container runtime | install the Ascend Docker Runtime")
    task: dict[str, Any] = block["block"][0]
    return task


def _role_input() -> str:
    """What the command module writes to the installer's stdin (stdin_add_newline defaults to true)."""
    cmd = _install_task()["ansible.builtin.command"]
    assert "stdin" in cmd, "the installer gets no answer on stdin"
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    answer = re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: str(defaults[m.group(1)]), cmd["stdin"])
    return answer + ("\n" if cmd.get("stdin_add_newline", True) else "")


def _success_pattern() -> re.Pattern[str]:
    pattern = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())["_container_runtime_install_success"]
    return re.compile(pattern)


def _check_eula(stdin: Any, timeout: float) -> subprocess.CompletedProcess[str]:
    """Upstream check_eula as install() calls it, with run_main.sh's log() (echo + a log file)."""
    script = "\n".join(
        [
            f"RT_LOWER_CASE={RT_LOWER_CASE}; RT_FIRST_CASE={RT_FIRST_CASE}; INSTALL_LOG_PATH=/dev/null",
            _function_log(),
            _function("check_eula"),
            "check_eula",
            'echo "[INFO] installing ${RT_LOWER_CASE}"',
        ]
    )
    kwargs: dict[str, Any] = {"input": stdin} if isinstance(stdin, str) else {"stdin": stdin}
    return subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, timeout=timeout, check=False, **kwargs
    )


def _function_log() -> str:
    m = re.search(r"^function log \{\n.*?^\}\n", _upstream(), re.M | re.S)
    assert m, "run_main.sh has no function log"
    return m.group(0)


def test_the_role_answers_the_eula_question_upstream_asks() -> None:
    done = _check_eula(_role_input(), timeout=20)
    assert done.returncode == 0, done.stderr
    assert "user accepted EULA" in done.stdout and f"[INFO] installing {RT_LOWER_CASE}" in done.stdout


def test_without_an_answer_upstream_waits_forever() -> None:
    """Why the role bounds the run: at the end of its input, upstream's loop keeps asking."""
    with pytest.raises(subprocess.TimeoutExpired):
        _check_eula(subprocess.DEVNULL, timeout=1.5)


def test_the_role_runs_the_installer_under_a_timeout_and_reads_its_success_line() -> None:
    task = _install_task()
    argv = task["ansible.builtin.command"]["argv"]
    assert argv[0] == "timeout" and argv[1] == "{{ container_runtime_ascend_install_timeout_s }}"
    assert argv[2:] == ["bash", "{{ _container_runtime_pkg_file }}", "--install", "--install-scene=docker"]
    assert "_container_runtime_install_success" in task["failed_when"] and ".rc != 0" in task["failed_when"]
    # install()'s last line, as upstream's log() prints it; the declined path's last line is not success
    line = re.search(r'log "\[INFO\]" "\$\{RT_LOWER_CASE\} install success"', _function("install"))
    assert line, "upstream install() no longer ends with its success line"
    assert _success_pattern().search(f"[INFO] {RT_LOWER_CASE} install success")
    declined = _check_eula("N\n", timeout=20)
    assert declined.returncode == 0 and "declined EULA" in declined.stdout  # exit 0: the rc alone lies
    assert not _success_pattern().search(declined.stdout)


def _fake(tmp_path: Path, stdin: Any, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    pkg = build_docker_runtime_package("26.1.0", tmp_path / "pkgs")
    env = {**os.environ, "ASCEND_SIM_ROOT": str(tmp_path / "root")}
    kwargs: dict[str, Any] = {"input": stdin} if isinstance(stdin, str) else {"stdin": stdin}
    return subprocess.run(
        ["bash", str(pkg), "--install", "--install-scene=docker"],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        **kwargs,
    )


def test_the_fake_package_asks_as_upstream_does(tmp_path: Path) -> None:
    question = re.search(r'echo "(Do you accept the EULA[^"]*)"', _function("check_eula"))
    assert question
    done = _fake(tmp_path, _role_input())
    assert done.returncode == 0, done.stderr
    assert question.group(1).replace("${RT_FIRST_CASE}", RT_FIRST_CASE) in done.stdout.splitlines()
    assert _success_pattern().search(done.stdout)
    assert (tmp_path / "root/usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime").is_file()


def test_the_fake_package_declined_exits_0_with_nothing_installed(tmp_path: Path) -> None:
    done = _fake(tmp_path, "N\n")
    assert done.returncode == 0 and not _success_pattern().search(done.stdout)
    assert not (tmp_path / "root/usr/local/Ascend").exists()


def test_the_fake_package_without_an_answer_keeps_asking(tmp_path: Path) -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        _fake(tmp_path, subprocess.DEVNULL, timeout=1.5)
