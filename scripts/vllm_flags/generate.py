"""Generate orchestrator/catalog/data/vllm_flags/v<X.Y.Z>.json from the released vLLM wheels on PyPI.

Run through ``scripts/gen-vllm-flags`` (which uses the project's .venv). For every vLLM release that a
vllm-ascend release in orchestrator/catalog/data/vllm_ascend.yaml pins (or the versions given with
``--vllm``):

1. ``pip download vllm==X --no-deps`` into the cache folder (``--cache``, default /tmp/gen-vllm-flags);
   the wheel's file name and sha256 go into the table;
2. its Python sources (no compiled kernels) are unpacked into a throwaway venv that shares one CPU build
   of torch (``pip install torch==2.13.0``, the wheel this machine keeps on disk) through a .pth file;
3. the few packages that the parser's import chain needs (:data:`IMPORT_CHAIN`) are installed with the
   version specifiers of that wheel's own ``Requires-Dist``, as they were on PyPI a week after the wheel
   was built (``pip --uploaded-prior-to``), so an old release meets the libraries of its day;
4. ``probe.py`` runs in that venv: vLLM's own parser for ``vllm serve``, walked action by action, plus the
   outcome of a fixed list of command lines (see probe.py);
5. the result is written with a header (vLLM version, wheel file + sha256, generation date, Python, torch
   and library versions) to ``orchestrator/catalog/data/vllm_flags/v<version>.json``, and the summary
   table in benchmarks/README.md (section "vLLM flag tables") is rewritten with ``--readme``.

Nothing here is needed at test time: the JSON files are committed as package data.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

from output import ReadmeError, dump, update_readme

ROOT = Path(__file__).resolve().parents[2]
OUT_DIR = ROOT / "orchestrator" / "catalog" / "data" / "vllm_flags"
README = ROOT / "benchmarks" / "README.md"  # section "vLLM flag tables"
PROBE = Path(__file__).resolve().parent / "probe.py"
TORCH = "torch==2.13.0"
SCHEMA_VERSION = 1
#: Distributions that ``vllm.entrypoints.cli.serve`` (and so the serve parser) imports, found by importing
#: it with nothing installed and adding what was missing. Installed with the wheel's own specifier when
#: the wheel lists the distribution; the transitive ones (urllib3, huggingface-hub) come with their parents.
IMPORT_CHAIN: tuple[str, ...] = (
    "numpy",
    "packaging",
    "pydantic",
    "regex",
    "cbor2",
    "psutil",
    "pyzmq",
    "requests",
    "transformers",
    "tokenizers",
    "gguf",
    "aiohttp",
    "openai-harmony",
    "openai",
    "msgspec",
    "cloudpickle",
    "pillow",
    "pybase64",
    "cachetools",
    "uvloop",
    "py-cpuinfo",
    "prometheus-client",
    "fastapi",
    "partial-json-parser",
    "llguidance",
    "xgrammar",
    "uvicorn",
    "watchfiles",
    "ijson",
    "mistral-common",
    "model-hosting-container-standards",
    "pyyaml",
    "tqdm",
    "blake3",
    "sentencepiece",
    "tiktoken",
    "lm-format-enforcer",
    "outlines-core",
    "diskcache",
    "lark",
    "prometheus-fastapi-instrumentator",
    "python-json-logger",
    "einops",
    "setproctitle",
)
#: Imported by vLLM but required only through another distribution; installed unversioned.
TRANSITIVE: tuple[str, ...] = ("packaging", "urllib3", "huggingface-hub")
#: import name -> distribution, for the import names that differ (used when an import is still missing).
MODULE_DISTS = {
    "PIL": "pillow",
    "zmq": "pyzmq",
    "cpuinfo": "py-cpuinfo",
    "yaml": "pyyaml",
    "google": "protobuf",
    "pythonjsonlogger": "python-json-logger",
    "prometheus_client": "prometheus-client",
}
#: vLLM's requirements that must not be installed: CUDA builds, kernels, and torch itself (shared CPU build).
NEVER = re.compile(
    r"^(torch|torchaudio|torchvision|triton|xformers|flashinfer.*|nvidia-.*|cupy.*|ray|numba)$"
)


class GenerateError(RuntimeError):
    """A step failed; the message says which and what to do."""


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, check=False, text=True, capture_output=True, **kwargs)


def pinned_versions() -> list[str]:
    """The `vllm` column of vllm_ascend.yaml, deduplicated, without the 'v', oldest first."""
    sys.path.insert(0, str(ROOT))
    from orchestrator.catalog import RELEASES, Version

    versions = {r.vllm for r in RELEASES}
    return [v.removeprefix("v") for v in sorted(versions, key=Version)]


def download(version: str, cache: Path) -> Path:
    wheels = cache / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    found = sorted(wheels.glob(f"vllm-{version}-*.whl"))
    if found:
        return found[0]
    proc = run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            f"vllm=={version}",
            "--no-deps",
            "--only-binary=:all:",
            "-d",
            str(wheels),
        ]
    )
    found = sorted(wheels.glob(f"vllm-{version}-*.whl"))
    if proc.returncode != 0 or not found:
        raise GenerateError(f"pip download vllm=={version} failed:\n{proc.stdout}\n{proc.stderr}")
    return found[0]


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def unpack_sources(wheel: Path, dest: Path) -> tuple[list[str], dt.datetime]:
    """Python sources and metadata of the wheel into ``dest``; returns Requires-Dist and the build time."""
    keep = (".py", ".json", ".jinja", ".txt", ".typed", "METADATA", "entry_points.txt")
    requires: list[str] = []
    built = dt.datetime(1980, 1, 1)
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            if info.filename.rsplit("/", 1)[-1].endswith(keep):
                zf.extract(info, dest)
            if info.filename.endswith(".dist-info/METADATA"):
                built = dt.datetime(*info.date_time)
                text = zf.read(info).decode("utf-8")
                requires = [
                    ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("Requires-Dist:")
                ]
    return requires, built


def specifiers(requires: list[str]) -> dict[str, str]:
    """distribution -> requirement string with vLLM's extras (``fastapi[standard]`` brings uvloop); markers
    dropped, requirements of vLLM's own extras skipped."""
    out: dict[str, str] = {}
    for req in requires:
        spec, _, marker = req.partition(";")
        if "extra ==" in marker:
            continue
        match = re.match(r"\s*([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*(.*)", spec)
        if match:
            name, extras, rest = match.groups()
            out[norm(name)] = f"{name}{extras or ''}{rest.strip().strip('()')}"
    return out


def base_venv(cache: Path) -> Path:
    """One venv with the CPU torch (and a pip that knows --uploaded-prior-to); shared by every release."""
    base = cache / "base"
    if not (base / ".ready").exists():
        run([sys.executable, "-m", "venv", "--clear", str(base)])
        for step in (
            ["-m", "pip", "install", "-q", "--upgrade", "pip>=26"],
            ["-m", "pip", "install", "-q", TORCH],
        ):
            proc = run([str(base / "bin" / "python"), *step])
            if proc.returncode != 0:
                raise GenerateError(f"base venv: {' '.join(step)} failed:\n{proc.stderr}")
        (base / ".ready").touch()
    return base


def site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages"))


def release_venv(version: str, cache: Path, base: Path, sources: Path) -> Path:
    venv = cache / f"venv-{version}"
    if not venv.exists():
        proc = run([str(base / "bin" / "python"), "-m", "venv", "--without-pip", str(venv)])
        if proc.returncode != 0:
            raise GenerateError(f"venv for {version}: {proc.stderr}")
    site = site_packages(venv)
    (site / "aa-vllm-sources.pth").write_text(f"{sources}\n", encoding="utf-8")
    (site / "zz-shared-torch.pth").write_text(f"{site_packages(base)}\n", encoding="utf-8")
    return venv


def pip_install(base: Path, venv: Path, reqs: list[str], cutoff: dt.datetime) -> None:
    # --isolated: PyPI only, no local indexes or find-links (their files carry no upload time to filter on)
    argv = [
        str(base / "bin" / "python"),
        "-m",
        "pip",
        "--isolated",
        "--python",
        str(venv / "bin" / "python"),
        "install",
        "-q",
        "--uploaded-prior-to",
        cutoff.strftime("%Y-%m-%dT%H:%M:%SZ"),
        *reqs,
    ]
    proc = run(argv)
    if proc.returncode != 0:
        raise GenerateError(f"pip install {' '.join(reqs)} failed:\n{proc.stderr[-3000:]}")


def probe(base: Path, venv: Path, specs: dict[str, str], cutoff: dt.datetime, out: Path) -> list[str]:
    """Run probe.py, installing missing imports until it succeeds; returns what had to be added."""
    added: list[str] = []
    for _ in range(30):
        proc = run([str(venv / "bin" / "python"), str(PROBE), str(out)], cwd=str(venv))
        if proc.returncode == 0:
            return added
        missing = re.findall(r"ModuleNotFoundError: No module named '([^']+)'", proc.stderr)
        if not missing:
            raise GenerateError(f"probe.py failed:\n{proc.stderr[-4000:]}")
        module = missing[-1].split(".")[0]
        dist = norm(MODULE_DISTS.get(module, module))
        if dist not in specs and dist not in TRANSITIVE:
            raise GenerateError(
                f"vLLM imports {module!r}, which is not among the wheel's requirements; check where it comes "
                "from and add its distribution to IMPORT_CHAIN or TRANSITIVE in generate.py"
            )
        if dist in added:
            raise GenerateError(f"installing {dist} did not provide module {module}:\n{proc.stderr[-2000:]}")
        pip_install(base, venv, [specs.get(dist, dist)], cutoff)
        added.append(dist)
    raise GenerateError("probe.py still fails after 30 installs")


def installed_versions(venv: Path, names: tuple[str, ...]) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json, sys\n"
        "out = {}\n"
        "for n in sys.argv[1:]:\n"
        "    try: out[n] = m.version(n)\n"
        "    except m.PackageNotFoundError: pass\n"
        "print(json.dumps(out))\n"
    )
    proc = run([str(venv / "bin" / "python"), "-c", code, *names])
    return dict(json.loads(proc.stdout)) if proc.returncode == 0 else {}


def generate(version: str, cache: Path, base: Path, today: str) -> dict[str, Any]:
    wheel = download(version, cache)
    sources = cache / f"src-{version}"
    requires, built = unpack_sources(wheel, sources)
    specs = specifiers(requires)
    venv = release_venv(version, cache, base, sources)
    cutoff = built + dt.timedelta(days=7)
    wanted = [specs[norm(d)] for d in IMPORT_CHAIN if norm(d) in specs and not NEVER.match(norm(d))]
    wanted += [d for d in TRANSITIVE if norm(d) not in specs]
    pip_install(base, venv, wanted, cutoff)
    raw_path = cache / f"probe-{version}.json"
    added = probe(base, venv, specs, cutoff, raw_path)
    raw = json.loads(raw_path.read_text(encoding="utf-8"))
    if raw["vllm_version"] != version:
        raise GenerateError(f"the venv imported vLLM {raw['vllm_version']}, not {version}")
    unknown = [o["flags"] for o in raw["options"] if o.get("type") == "unknown"]
    if unknown:
        raise GenerateError(f"vLLM {version}: options with a type kind probe.py does not know: {unknown}")
    return {
        "schema_version": SCHEMA_VERSION,
        "vllm_version": version,
        "generated": today,
        "generator": "scripts/gen-vllm-flags",
        "wheel": {"filename": wheel.name, "sha256": sha256(wheel), "built": built.isoformat()},
        "environment": {
            "python": raw.pop("python"),
            "torch": installed_versions(venv, ("torch",)).get("torch", ""),
            "libraries": installed_versions(venv, ("transformers", "pydantic", "fastapi")),
            "dependencies_installed_after_import_errors": added,
            "dependencies_uploaded_before": cutoff.date().isoformat(),
            "platform": "stand-in for vllm-ascend NPUPlatform: device npu; pre_register_and_update appends "
            "'ascend' to --quantization choices when it has choices (vllm_ascend/platform.py, every tag "
            "v0.9.1..v0.25.1rc1)",
        },
        **raw,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gen-vllm-flags", description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--vllm", action="append", help="a vLLM version (repeatable); default: every pinned one"
    )
    parser.add_argument("--cache", type=Path, default=Path("/tmp/gen-vllm-flags"), help="downloads and venvs")
    parser.add_argument("--readme", action="store_true", help="rewrite the table in benchmarks/README.md")
    parser.add_argument(
        "--keep-venvs", action="store_true", help="keep each release's venv (about 1.4 GB) for a faster rerun"
    )
    args = parser.parse_args(argv)
    versions = args.vllm or pinned_versions()
    args.cache.mkdir(parents=True, exist_ok=True)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    today = dt.date.today().isoformat()
    try:
        base = base_venv(args.cache)
        for version in versions:
            started = dt.datetime.now()
            table = generate(version, args.cache, base, today)
            (OUT_DIR / f"v{version}.json").write_text(dump(table), encoding="utf-8")
            if not args.keep_venvs:
                for folder in (args.cache / f"venv-{version}", args.cache / f"src-{version}"):
                    shutil.rmtree(folder, ignore_errors=True)
            took = (dt.datetime.now() - started).total_seconds()
            print(f"v{version}: {len(table['options'])} options in {took:.0f} s -> v{version}.json")
        if args.readme:
            tables = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(OUT_DIR.glob("v*.json"))]
            tables.sort(key=lambda t: [int(x) for x in re.findall(r"\d+", t["vllm_version"])])
            update_readme(README, tables)
    except (GenerateError, ReadmeError) as exc:
        print(f"gen-vllm-flags: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
