"""Build context of the fake vLLM image: ``prepare_build_context(dest)``, then ``docker build dest``.

Layout (mirrors the image, where it lands under /opt/fake-vllm and /usr/local/bin)::

    dest/Dockerfile        images/fake-vllm/Dockerfile (ARG BASE_IMAGE: the simulator's base image)
    dest/vllm              images/fake-vllm/vllm, the console shim
    dest/flags.json        the catalog's `vllm serve` flags (flags.write_flags_json)
    dest/fake_vllm/*.py    the standalone server modules (SERVER_MODULES)

The same directory runs the server without Docker: ``FAKE_VLLM_HOME=dest python3 dest/vllm serve ...``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from orchestrator.sim.vllm.flags import write_flags_json

PACKAGE_DIR = Path(__file__).resolve().parent
IMAGE_DIR = PACKAGE_DIR.parents[2] / "images" / "fake-vllm"

#: Modules copied into the image (standard library only; checked by the tests).
SERVER_MODULES: tuple[str, ...] = (
    "__init__.py",
    "api.py",
    "cli.py",
    "devices.py",
    "dp.py",
    "engine.py",
    "faults.py",
    "metrics.py",
    "model.py",
    "procs.py",
    "server.py",
    "stream.py",
    "vlog.py",
)


def prepare_build_context(dest: Path) -> Path:
    """Assemble the build context in ``dest`` (created; an earlier ``fake_vllm/`` is replaced); return it."""
    for name in ("Dockerfile", "vllm"):
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
    shutil.copyfile(IMAGE_DIR / "vllm", dest / "vllm")
    (dest / "vllm").chmod(0o755)
    write_flags_json(dest / "flags.json")
    return dest
