"""images/vllm-ascend/Dockerfile is the upstream artifact of the build args: the ARGs it declares are exactly
the build args the plan renders (vllm_image_builds[].build_args of a committed example inventory) plus the
optional ones a site may set (image.build_args), and it keeps the pinned release's build recipe."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from orchestrator.planning.image import DOCKERFILE_ARGS, OPTIONAL_ARGS

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "images" / "vllm-ascend" / "Dockerfile"
UPSTREAM_ARGS_V0_23_0 = REPO / "tests" / "fixtures" / "vllm_ascend" / "dockerfile_v0.23.0_args.txt"


def declared_args(text: str) -> set[str]:
    return set(re.findall(r"^ARG\s+([A-Za-z_][A-Za-z0-9_]*)", text, re.M))


def rendered_build_args(site: str) -> set[str]:
    group = yaml.safe_load(
        (REPO / "inventories" / site / "group_vars" / "all.yml").read_text(encoding="utf-8")
    )
    keys: set[str] = set()
    for build in group["vllm_image_builds"]:
        keys |= set(build["build_args"])
    return keys


@pytest.mark.parametrize("site", ["a2-pair-r1-w8a8", "a3-single-r1-w8a8", "duo-300i-distill"])
def test_dockerfile_args_are_the_rendered_build_args_plus_the_optional_ones(site: str) -> None:
    declared = declared_args(DOCKERFILE.read_text(encoding="utf-8"))
    rendered = rendered_build_args(site)
    assert rendered, f"{site} renders no build args"
    assert declared == rendered | OPTIONAL_ARGS, (
        f"declared but never rendered nor optional: {sorted(declared - rendered - OPTIONAL_ARGS)}; "
        f"rendered but not declared: {sorted(rendered - declared)}"
    )
    assert not rendered & OPTIONAL_ARGS  # the example sites set no optional arg: rendered = derived ones
    assert declared == set(DOCKERFILE_ARGS)


def test_dockerfile_args_shared_with_upstream_keep_upstreams_names() -> None:
    upstream = declared_args(UPSTREAM_ARGS_V0_23_0.read_text(encoding="utf-8"))
    ours = declared_args(DOCKERFILE.read_text(encoding="utf-8"))
    for name in ("PIP_INDEX_URL", "VLLM_REPO", "VLLM_TAG", "SOC_VERSION", "COMPILE_CUSTOM_KERNELS"):
        assert name in upstream and name in ours


def test_the_build_follows_the_release_recipe() -> None:
    text = DOCKERFILE.read_text(encoding="utf-8")
    assert re.search(r"^FROM \$\{BASE_IMAGE\}$", text, re.M)
    # vLLM without a device backend, as vllm-ascend's Dockerfile installs it (reference sheet)
    assert 'VLLM_TARGET_DEVICE="empty" python3 -m pip install' in text
    assert (
        "/usr/local/Ascend/ascend-toolkit/set_env.sh" in text
        and "/usr/local/Ascend/nnal/atb/set_env.sh" in text
    )
    assert "torch_npu==${TORCH_NPU_VERSION}" in text
    assert re.search(r'^ENTRYPOINT \["/usr/local/bin/vllm-entrypoint"\]$', text, re.M)
    labels = re.search(r"^LABEL (.*?)(?:\n\n)", text, re.M | re.S)
    assert labels is not None
    for arg in ("VLLM_TAG", "VLLM_ASCEND_TAG", "TORCH_NPU_VERSION", "SOC_VERSION", "BASE_IMAGE"):
        assert "${" + arg + "}" in labels.group(1), arg


def test_torch_npu_is_the_releases(tmp_path: Path) -> None:
    group = yaml.safe_load(
        (REPO / "inventories" / "a2-pair-r1-w8a8" / "group_vars" / "all.yml").read_text(encoding="utf-8")
    )
    (build,) = group["vllm_image_builds"]
    # versioning policy of vllm-ascend: v0.23.0 pairs with torch_npu 2.10.0.post4 (reference sheet)
    assert build["build_args"]["VLLM_ASCEND_TAG"] == "v0.23.0"
    assert build["build_args"]["TORCH_NPU_VERSION"] == "2.10.0.post4"


def test_entrypoint_reads_the_key_file_into_the_environment(tmp_path: Path) -> None:
    key = tmp_path / "key"
    key.write_text("s3cret", encoding="utf-8")
    entry = str(REPO / "images" / "vllm-ascend" / "vllm-entrypoint")
    env = {"PATH": "/usr/bin:/bin", "VLLM_API_KEY_FILE": str(key)}
    out = subprocess.run(
        [entry, "sh", "-c", 'echo "$VLLM_API_KEY"'], env=env, capture_output=True, text=True, check=False
    )
    assert out.returncode == 0 and out.stdout.strip() == "s3cret"
    missing = subprocess.run(
        [entry, "true"],
        env={**env, "VLLM_API_KEY_FILE": str(tmp_path / "nope")},
        capture_output=True,
        text=True,
        check=False,
    )
    assert missing.returncode != 0 and "VLLM_API_KEY_FILE" in missing.stderr
    plain = subprocess.run(
        [entry, "sh", "-c", 'echo "${VLLM_API_KEY:-none}"'],
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert plain.stdout.strip() == "none"


@pytest.mark.parametrize("image", ["vllm-ascend", "fake-vllm"])
@pytest.mark.parametrize("content", ["", "\n", "  \t\n"], ids=["empty", "newline", "blank"])
def test_entrypoint_refuses_to_serve_with_an_empty_key(tmp_path: Path, image: str, content: str) -> None:
    """An empty key would make vLLM serve without authentication: the container exits 78 (EX_CONFIG)."""
    key = tmp_path / "key"
    key.write_text(content, encoding="utf-8")
    entry = str(REPO / "images" / image / "vllm-entrypoint")
    env = {"PATH": "/usr/bin:/bin", "VLLM_API_KEY_FILE": str(key)}
    argv = ["sh", entry, "echo", "served"]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    assert out.returncode == 78 and out.stdout == ""
    assert f"{key} is empty; refusing to serve without an API key" in out.stderr


def test_hadolint_is_clean() -> None:
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    proc = subprocess.run([hadolint, str(DOCKERFILE)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _tasks(items: list[dict[str, object]]) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for task in items:
        out.append(task)
        for key in ("block", "rescue", "always"):
            nested = task.get(key)
            if isinstance(nested, list):
                out += _tasks(nested)
    return out


def test_the_registry_password_only_passes_through_no_log_tasks() -> None:
    seen = 0
    for path in sorted((REPO / "roles" / "vllm_image" / "tasks").glob("*.yml")):
        for task in _tasks(yaml.safe_load(path.read_text(encoding="utf-8")) or []):
            if "block" in task:
                continue
            if "_vllm_image_registry_password" in yaml.safe_dump(task):
                seen += 1
                check = task.get("ansible.builtin.assert")
                if isinstance(check, dict):  # fails closed on an empty value; prints no value
                    assert check.get("quiet") is True and "{{" not in str(check.get("fail_msg")), task
                    continue
                assert task.get("no_log") is True, (path.name, task.get("name"))
    assert seen >= 2  # the build host's login and each server's
