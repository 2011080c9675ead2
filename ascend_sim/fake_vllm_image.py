"""Build context of the fake vLLM image: ``prepare_build_context(dest)``, then ``docker build dest``.

The server itself is payload, not controller code: it lives in payloads/fake-vllm/fake_vllm/ and runs only
inside simulated servers' containers. Layout (mirrors the image, under /opt/fake-vllm and /usr/local/bin)::

    dest/Dockerfile        payloads/fake-vllm/Dockerfile (ARG BASE_IMAGE: the simulator's base image)
    dest/vllm, dest/ray    payloads/fake-vllm/vllm and ray, the console shims (`vllm serve`, `ray start`)
    dest/vllm-entrypoint   the ENTRYPOINT: VLLM_API_KEY_FILE -> VLLM_API_KEY, then exec the command
    dest/flags.json        the generated `vllm serve` flag table of the site's vLLM release
                           (fake_vllm_flags.write_flags_json)
    dest/fake_vllm/*.py    the standalone server modules (SERVER_MODULES)

The same directory runs the server without Docker: ``FAKE_VLLM_HOME=dest python3 dest/vllm serve ...``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ascend_sim.fake_vllm_flags import write_flags_json

IMAGE_DIR = Path(__file__).resolve().parent / "payloads" / "fake-vllm"
PACKAGE_DIR = IMAGE_DIR / "fake_vllm"

#: Files copied into the image (modules use the standard library only; checked by the tests).
SERVER_MODULES: tuple[str, ...] = (
    "__init__.py",
    "api.py",
    "capture.py",
    "cli.py",
    "compile_cache.py",
    "devices.py",
    "dp.py",
    "engine.py",
    "faults.py",
    "flagparse.py",
    "jit.py",
    "loader.py",
    "kvconfig.py",
    "metrics.py",
    "model.py",
    "pd.py",
    "pd_decode.py",
    "pd_prefill.py",
    "procs.py",
    "raycli.py",
    "rayexec.py",
    "raygcs.py",
    "raynode.py",
    "server.py",
    "stream.py",
    "vlog.py",
    "vllm_types.py",  # a link to orchestrator/catalog/vllm_types.py: the catalog's converter table
    "vocab.txt",
    "wire.py",
)
SHIMS: tuple[str, ...] = ("vllm", "ray", "vllm-entrypoint")


def prepare_build_context(dest: Path, vllm_version: str | None = None) -> Path:
    """Assemble the build context in ``dest`` (created; an earlier ``fake_vllm/`` is replaced); return it.

    ``vllm_version`` ('v0.23.0') picks the flag table: the site's pinned vLLM (its inventory's
    ``orchestrator_stack.vllm``); default: the vLLM of the catalog's default vllm-ascend release."""
    for name in ("Dockerfile", *SHIMS):
        if not (IMAGE_DIR / name).is_file():
            raise FileNotFoundError(
                f"{IMAGE_DIR / name} is missing: the fake vLLM image sources are not here"
            )
    dest.mkdir(parents=True, exist_ok=True)
    package = dest / "fake_vllm"
    if package.exists():
        shutil.rmtree(package)
    package.mkdir()
    for module in SERVER_MODULES:
        shutil.copyfile(PACKAGE_DIR / module, package / module)
    shutil.copyfile(IMAGE_DIR / "Dockerfile", dest / "Dockerfile")
    for shim in SHIMS:
        shutil.copyfile(IMAGE_DIR / shim, dest / shim)
        (dest / shim).chmod(0o755)
    write_flags_json(dest / "flags.json", vllm_version)
    return dest
