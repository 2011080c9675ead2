"""roles/vllm_image/files/vllm-ascend/Dockerfile is the upstream artifact of the build args: the ARGs it
declares are exactly the build args the plan renders (vllm_image_builds[].build_args of a committed example
inventory) plus the optional ones a site may set (image.build_args), and it keeps the pinned release's build
recipe."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from packaging.specifiers import SpecifierSet

from orchestrator.catalog import CHIP_NAMES, DEFAULT_RELEASE, RELEASES, get_chip
from orchestrator.planning.image import DOCKERFILE_ARGS, OPTIONAL_ARGS

REPO = Path(__file__).resolve().parents[2]
CONTEXT = REPO / "roles" / "vllm_image" / "files" / "vllm-ascend"
DOCKERFILE = CONTEXT / "Dockerfile"
UPSTREAM_ARGS_V0_23_0 = REPO / "tests" / "fixtures" / "vllm_ascend" / "dockerfile_v0.23.0_args.txt"
# vllm-ascend's files at each catalog release (their commits: README.md there)
UPSTREAM = REPO / "tests" / "data" / "upstream" / "vllm-ascend"


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
    entry = str(CONTEXT / "vllm-entrypoint")
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


@pytest.mark.parametrize(
    "image",
    ["roles/vllm_image/files/vllm-ascend", "ascend_sim/payloads/fake-vllm"],
    ids=["vllm-ascend", "fake-vllm"],
)
@pytest.mark.parametrize("content", ["", "\n", "  \t\n"], ids=["empty", "newline", "blank"])
def test_entrypoint_refuses_to_serve_with_an_empty_key(tmp_path: Path, image: str, content: str) -> None:
    """An empty key would make vLLM serve without authentication: the container exits 78 (EX_CONFIG)."""
    key = tmp_path / "key"
    key.write_text(content, encoding="utf-8")
    entry = str(REPO / image / "vllm-entrypoint")
    env = {"PATH": "/usr/bin:/bin", "VLLM_API_KEY_FILE": str(key)}
    shebang = Path(entry).read_text(encoding="utf-8").splitlines()[0]
    argv = [shebang.removeprefix("#!").split()[0], entry, "echo", "served"]  # vllm-ascend's is bash
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    assert out.returncode == 78 and out.stdout == ""
    assert f"{key} is empty; refusing to serve without an API key" in out.stderr


def ray_spec(text: str) -> str:
    match = re.search(r"pip install modelscope '(ray[^']*)'", text)
    assert match, "no `pip install modelscope 'ray...'` line"
    return match.group(1)


def test_ray_is_installed_in_upstreams_range() -> None:
    """vllm-ascend's Dockerfile pins Ray to 'ray>=2.47.1,<=2.48.0' (v0.11.0 and later); ours is the default
    release's range, and every catalog release's own range admits each Ray version ours admits."""
    ours = ray_spec(DOCKERFILE.read_text(encoding="utf-8"))
    assert ours == ray_spec((UPSTREAM / DEFAULT_RELEASE / "Dockerfile").read_text(encoding="utf-8"))
    mine = SpecifierSet(ours.removeprefix("ray"))
    assert not mine.contains("2.49.0") and mine.contains("2.48.0")
    for release in RELEASES:
        theirs = SpecifierSet(ray_spec((UPSTREAM / release.version / "Dockerfile").read_text("utf-8"))[3:])
        for version in ("2.47.1", "2.48.0", "2.49.0", "3.0.0"):
            assert not mine.contains(version) or theirs.contains(version), (release.version, version)


def soc_snippet(marker: str) -> str:
    """The `case "${SOC_VERSION,,}" ...; esac` of the Dockerfile line that contains marker."""
    for line in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        if "SOC_VERSION,," in line and marker in line:
            match = re.search(r"(case \"\$\{SOC_VERSION,,\}\" in .*?esac)", line)
            assert match, line
            return match.group(1)
    raise AssertionError(f"no SOC_VERSION case with {marker!r} in the Dockerfile")


def run_snippet(snippet: str, soc: str, tmp_path: Path) -> tuple[str, str]:
    """Runs snippet under bash with SOC_VERSION=soc and a python3 that logs its argv; (log, stdout)."""
    log = tmp_path / f"python3-{soc}.log"
    fake = tmp_path / "bin" / "python3"
    fake.parent.mkdir(exist_ok=True)
    fake.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\n', encoding="utf-8")
    fake.chmod(0o755)
    env = {"PATH": f"{fake.parent}:/usr/bin:/bin", "SOC_VERSION": soc}
    out = subprocess.run(
        ["bash", "-c", snippet + '; echo "${clang-}"'], env=env, capture_output=True, text=True, check=True
    )
    return (log.read_text(encoding="utf-8") if log.exists() else ""), out.stdout.strip()


def test_300i_duo_images_drop_triton_ascend_as_dockerfile_310p_does(tmp_path: Path) -> None:
    """Dockerfile.310p (v0.21.0rc1 and later, pull request 9249) uninstalls triton-ascend and triton after
    vllm-ascend; the A2/A3 Dockerfiles keep triton-ascend. Our one Dockerfile does it for SOC_VERSION 310P."""
    upstream = (UPSTREAM / DEFAULT_RELEASE / "Dockerfile.310p").read_text(encoding="utf-8")
    after_install = r"pip install -e /vllm-workspace/vllm-ascend/.*\n\s*python3 -m pip uninstall -y ([^&]+)&&"
    match = re.search(after_install, upstream)
    assert match, "Dockerfile.310p no longer uninstalls after installing vllm-ascend"
    removed = match.group(1).split()
    assert "triton-ascend" in removed
    snippet = soc_snippet("pip uninstall")
    for chip in CHIP_NAMES:
        soc = get_chip(chip).soc_version
        log, _ = run_snippet(snippet, soc, tmp_path)
        if get_chip(chip).family == "310p":
            assert log.split() == ["-m", "pip", "uninstall", "-y", *removed], (soc, log)
        else:
            assert log == "", (soc, log)


def test_clang_for_triton_ascend_as_upstream_installs_it(tmp_path: Path) -> None:
    """Dockerfile (A2), Dockerfile.a3: apt clang-15 + update-alternatives to /usr/bin/clang;
    Dockerfile.openEuler: yum clang; Dockerfile.310p (no triton-ascend): none."""
    ours = DOCKERFILE.read_text(encoding="utf-8")
    a2 = (UPSTREAM / DEFAULT_RELEASE / "Dockerfile").read_text(encoding="utf-8")
    for alternative in re.findall(r"update-alternatives --install \S+ \S+ \S+ \d+", a2):
        assert alternative in ours, alternative
    assert re.search(r"apt-get install -y [^&]*\bclang-15\b", a2)
    assert re.search(r"apt-get install -y [^&]*\$\{clang:\+clang-15\}", ours)
    openeuler = (UPSTREAM / DEFAULT_RELEASE / "Dockerfile.openEuler").read_text(encoding="utf-8")
    assert re.search(r"yum install -y [^&]*\bclang\b", openeuler)
    assert re.search(r"yum install -y [^&]*\$\{clang\}", ours)
    assert "clang" not in (UPSTREAM / DEFAULT_RELEASE / "Dockerfile.310p").read_text(encoding="utf-8")
    snippet = soc_snippet('clang=""')
    for chip in CHIP_NAMES:
        _, clang = run_snippet(snippet, get_chip(chip).soc_version, tmp_path)
        assert clang == ("" if get_chip(chip).family == "310p" else "clang"), chip


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
