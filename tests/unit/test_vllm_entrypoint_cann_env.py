"""roles/vllm_image/files/vllm-ascend/vllm-entrypoint replaces the CANN base image's ENTRYPOINT, so it must
source what that one sources. The base ENTRYPOINTs are read from Ascend/cann-container-image's Dockerfiles
(copied under tests/data/upstream/cann-container-image/<commit>/cann/<image tag>/Dockerfile); each test builds
a fake base layout under a temporary root from one of them (a set_env.sh at every path the ENTRYPOINT sources,
each recording its call and exporting what the real one exports: ASCEND_TOOLKIT_HOME, bishengir-compile on
PATH, ATB_HOME_PATH) and runs the real entrypoint script against it (VLLM_ENTRYPOINT_ROOT). The jemalloc
preload is read from vllm-ascend's Dockerfile / Dockerfile.openEuler at v0.23.0
(tests/data/upstream/vllm-ascend)."""

from __future__ import annotations

import json
import platform
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ENTRY = REPO / "roles" / "vllm_image" / "files" / "vllm-ascend" / "vllm-entrypoint"
CANN = next((REPO / "tests" / "data" / "upstream" / "cann-container-image").glob("*/cann"))
BASES = sorted(p.name for p in CANN.iterdir())
VLLM_ASCEND = REPO / "tests" / "data" / "upstream" / "vllm-ascend" / "v0.23.0"


def base_entrypoint(tag: str) -> tuple[str, dict[str, str]]:
    """The base image's ENTRYPOINT script (the `bash -c` argument) and its ENV."""
    text = (CANN / tag / "Dockerfile").read_text(encoding="utf-8")
    joined = text.replace("\\\n", "")
    match = re.search(r"^ENTRYPOINT (\[.*\])\s*$", joined, re.M)
    assert match, tag
    argv = json.loads(match.group(1))
    assert argv[:2] == ["/bin/bash", "-c"] and argv[-1] == "--", argv
    env = dict(re.findall(r"^ENV (ASCEND_TOOLKIT_HOME|ATB_CXX_ABI)=(\S*)\s*$", text, re.M))
    return argv[2], env


def sourced(script: str, env: dict[str, str]) -> list[str]:
    """`source PATH [ARGS]` of the base's script, with ${ATB_CXX_ABI:-1} expanded from the image's ENV."""
    out = []
    for path, raw in re.findall(r"source\s+(/\S+?\.sh)((?:\s+--[^\s&]+)*)", script):
        args = raw.replace("${ATB_CXX_ABI:-1}", env.get("ATB_CXX_ABI") or "1")
        out.append(" ".join([path, *args.split()]))
    return out


def jemalloc_path(dockerfile: str) -> str:
    line = re.search(r"export LD_PRELOAD=([^:\"]+\.so\.2):", (VLLM_ASCEND / dockerfile).read_text("utf-8"))
    assert line, dockerfile
    return line.group(1).replace("$(uname -m)", platform.machine())


def upstream_dockerfile(tag: str) -> str:
    """vllm-ascend's Dockerfile for the base's OS (the A3 and 310P ones preload the same path)."""
    return "Dockerfile.openEuler" if "openeuler" in tag else "Dockerfile"


def fake_layout(root: Path, tag: str, calls: Path) -> dict[str, str]:
    script, env = base_entrypoint(tag)
    home = env["ASCEND_TOOLKIT_HOME"]
    for entry in sourced(script, env):
        path = entry.split()[0]
        body = [f'echo "{path} $*" >> "{calls}"']
        if path.endswith("/ascend-toolkit/set_env.sh"):  # exports what the base image's ENV copies from it
            body += [
                f'export ASCEND_TOOLKIT_HOME="{root}{home}"',
                'export PATH="$ASCEND_TOOLKIT_HOME/bin:$PATH"',
                'export LD_LIBRARY_PATH="$ASCEND_TOOLKIT_HOME/lib64:$LD_LIBRARY_PATH"',
            ]
        elif "/ascendnpu-ir/" in path:  # puts bishengir-compile on PATH
            bindir = Path(root.as_posix() + path).parent
            (bindir / "bishengir-compile").parent.mkdir(parents=True, exist_ok=True)
            (bindir / "bishengir-compile").write_text("#!/bin/sh\n", encoding="utf-8")
            (bindir / "bishengir-compile").chmod(0o755)
            body.append(f'export PATH="{bindir}:$PATH"')
        elif path.endswith("/nnal/atb/set_env.sh"):
            body.append(f'export ATB_HOME_PATH="{root}/usr/local/Ascend/nnal/atb/latest/atb/cxx_abi_1"')
        target = Path(root.as_posix() + path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(body) + "\n", encoding="utf-8")
    lib = Path(root.as_posix() + jemalloc_path(upstream_dockerfile(tag)))
    lib.parent.mkdir(parents=True, exist_ok=True)
    lib.write_bytes(b"")
    run_env = {"PATH": "/usr/bin:/bin", "VLLM_ENTRYPOINT_ROOT": str(root)}
    if "ATB_CXX_ABI" in env:
        run_env["ATB_CXX_ABI"] = env["ATB_CXX_ABI"]
    return run_env


SHOW = (
    'printf "%s\\n" "${ASCEND_TOOLKIT_HOME:-}" "${ATB_HOME_PATH:-}" "$(command -v bishengir-compile)" '
    '"$LD_PRELOAD"'
)


@pytest.mark.parametrize("tag", BASES)
def test_entrypoint_sources_what_the_cann_base_entrypoint_sources(tmp_path: Path, tag: str) -> None:
    root, calls = tmp_path / "root", tmp_path / "calls"
    env = fake_layout(root, tag, calls)
    script, base_env = base_entrypoint(tag)
    out = subprocess.run(
        [str(ENTRY), "bash", "-c", SHOW], env=env, capture_output=True, text=True, check=False, timeout=30
    )
    assert out.returncode == 0, out.stderr
    # same scripts, same order, same arguments as the base image's ENTRYPOINT (each fake logs its path in
    # the image, without the test's root)
    want = sourced(script, base_env)
    assert [c.strip() for c in calls.read_text(encoding="utf-8").splitlines()] == want
    toolkit_home, atb_home, bisheng, preload = out.stdout.split("\n")[:4]
    assert toolkit_home == f"{root}{base_env['ASCEND_TOOLKIT_HOME']}" and atb_home.startswith(str(root))
    if any("/ascendnpu-ir/" in line for line in want):  # CANN 8.5 and later: triton-ascend's compiler
        assert bisheng.startswith(str(root)) and bisheng.endswith("/ascendnpu-ir/bin/bishengir-compile")
    else:
        assert bisheng == ""
    lib = jemalloc_path(upstream_dockerfile(tag))
    assert preload.split(":")[0] == f"{root}{lib}"


def test_the_bases_cover_each_cann_layout() -> None:
    """8.2/8.3 (no AscendNPU IR), 8.5+ (cann-<ver>/share/info/ascendnpu-ir), NNAL --cxx_abi, openEuler."""
    scripts = {tag: sourced(*base_entrypoint(tag)) for tag in BASES}
    assert any(len(s) == 2 for s in scripts.values()) and any(len(s) == 3 for s in scripts.values())
    assert any(any("--cxx_abi=" in line for line in s) for s in scripts.values())
    assert any("openeuler" in tag for tag in BASES)


def test_a_failing_set_env_stops_the_container(tmp_path: Path) -> None:
    root, calls = tmp_path / "root", tmp_path / "calls"
    env = fake_layout(root, "9.0.1-910b-ubuntu22.04-py3.12", calls)
    (root / "usr/local/Ascend/nnal/atb/set_env.sh").write_text("return 3\n", encoding="utf-8")
    out = subprocess.run(
        [str(ENTRY), "echo", "served"], env=env, capture_output=True, text=True, check=False, timeout=30
    )
    assert out.returncode != 0 and "served" not in out.stdout
    assert "nnal/atb/set_env.sh failed (exit 3)" in out.stderr


def test_without_a_cann_tree_the_entrypoint_only_runs_the_command(tmp_path: Path) -> None:
    out = subprocess.run(
        [str(ENTRY), "sh", "-c", 'echo "${ASCEND_TOOLKIT_HOME:-none} ${LD_PRELOAD:-none}"'],
        env={"PATH": "/usr/bin:/bin", "VLLM_ENTRYPOINT_ROOT": str(tmp_path)},
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    assert out.returncode == 0 and out.stdout.strip() == "none none", out.stderr
