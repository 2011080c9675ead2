"""Simulated Ascend Docker Runtime (MindCluster) `.run` package (controller side), built like the simulated
HDK packages (ascend_sim.packages): a POSIX sh header, the line `__ARCHIVE__`, then a gzip tar
payload whose SHA256 the header checks before it extracts anything.

`--install --install-scene=docker` puts /usr/local/Ascend/Ascend-Docker-Runtime/{ascend-docker-runtime,
ascend-docker-hook} and /etc/ascend-docker-runtime.d/base.list under ${ASCEND_SIM_ROOT:-/}, and logs every
run to /var/log/ascend-docker-runtime/installer.log (so tests can prove whether it ran). The fake runtime
hands every call to runc, so a Docker engine can start with it registered. It does not edit daemon.json
(the real installer does; the container_runtime role writes daemon.json itself afterwards).

Like MindCluster v26.1.0 and later (github.com/Ascend/mind-cluster
component/ascend-docker-runtime/build/scripts/run_main.sh at v26.1.0, check_eula), --install first asks
"Do you accept the EULA to install Ascend-docker-runtime?[Y/N]" and reads stdin until it gets Y or N (at
the end of the input it keeps asking, as `read -r yn` in that loop does); N exits 0 with nothing installed.
Success ends with that script's line "[INFO] ascend-docker-runtime install success"."""

from __future__ import annotations

import gzip
import hashlib
import io
import re
import tarfile
from pathlib import Path

from ascend_sim.packages import MARKER

INSTALL_DIR = "/usr/local/Ascend/Ascend-Docker-Runtime"
BASE_LIST = "/etc/ascend-docker-runtime.d/base.list"
LOG = "/var/log/ascend-docker-runtime/installer.log"

_RUNTIME = b'#!/bin/sh\n# simulated ascend-docker-runtime: hands every call to runc\nexec runc "$@"\n'
_HOOK = (
    b"#!/bin/sh\n# simulated ascend-docker-hook (prestart hook): mounts nothing in the simulator\nexit 0\n"
)
_BASE_LIST = "".join(
    f"{p}\n" for p in ("/usr/local/Ascend/driver/lib64", "/usr/local/dcmi", "/usr/local/bin/npu-smi")
).encode()

_HEADER = r"""#!/bin/sh
# Simulated Ascend Docker Runtime package ({name}), built by ascend_sim.docker_runtime_package.
skip={skip}
sha256="{sha256}"
root="${{ASCEND_SIM_ROOT:-}}"
mkdir -p "$root/var/log/ascend-docker-runtime"
echo "run $*" >> "$root{log}"
payload() {{ tail -n +"$skip" "$0"; }}
actual=$(payload | sha256sum | cut -d' ' -f1)
if [ "$actual" != "$sha256" ]; then
  echo "Verifying archive integrity...Error in SHA256 checksums: $actual is different from $sha256" >&2
  exit 2
fi
install=n; scene=""
for a in "$@"; do
  case "$a" in
    --install) install=y ;;
    --install-scene=*) scene="${{a#--install-scene=}}" ;;
    *) echo "[ERROR]: unsupported option $a" >&2; exit 1 ;;
  esac
done
if [ "$install" != y ]; then echo "[ERROR]: nothing to do: give --install" >&2; exit 1; fi
case "$scene" in
  docker) ;;
  "") echo "[ERROR]: give --install-scene=docker|containerd|crio|isula" >&2; exit 1 ;;
  *) echo "[ERROR]: the simulated package installs the docker scene only, not $scene" >&2; exit 1 ;;
esac
echo "Do you accept the EULA to install Ascend-docker-runtime?[Y/N]"
while true; do
  read -r yn
  case "$yn" in
    [Yy]) echo "[INFO] user accepted EULA"; break ;;
    [Nn]) echo "[INFO] install cancelled, user declined EULA"; exit 0 ;;
    *) echo "Do you accept the EULA to install Ascend-docker-runtime?[Y/N]" ;;
  esac
done
echo "[INFO] installing ascend-docker-runtime"
dir=$(mktemp -d "${{TMPDIR:-/tmp}}/adr.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
payload | tar xzf - -C "$dir" || {{ echo "Extraction failed." >&2; exit 1; }}
mkdir -p "$root{install_dir}" "$root$(dirname {base_list})" || exit 1
install -m 0755 "$dir/ascend-docker-runtime" "$dir/ascend-docker-hook" "$root{install_dir}/" || exit 1
install -m 0644 "$dir/base.list" "$root{base_list}" || exit 1
echo "install ok {version}" >> "$root{log}"
echo "[INFO] ascend-docker-runtime install success"
exit 0
"""


def package_name(version: str, arch: str = "aarch64") -> str:
    return f"Ascend-docker-runtime_{version}_linux-{arch}.run"


def build_docker_runtime_package(version: str, out_dir: Path, *, arch: str = "aarch64") -> Path:
    """Write the simulated package into out_dir and return its path (same arguments, same bytes)."""
    if not re.fullmatch(r"[0-9][0-9A-Za-z.]*", version) or not re.fullmatch(r"[A-Za-z0-9_]+", arch):
        raise ValueError(f"invalid version {version!r} or arch {arch!r}, e.g. 7.0.RC1 and aarch64")
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, data, mode in (
            ("ascend-docker-runtime", _RUNTIME, 0o755),
            ("ascend-docker-hook", _HOOK, 0o755),
            ("base.list", _BASE_LIST, 0o644),
        ):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime, info.uid, info.gid = len(data), mode, 0, 0, 0
            tar.addfile(info, io.BytesIO(data))
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, compresslevel=9) as gz:
        gz.write(raw.getvalue())
    payload = buf.getvalue()
    name = package_name(version, arch)
    fields = {
        "name": name,
        "sha256": hashlib.sha256(payload).hexdigest(),
        "log": LOG,
        "install_dir": INSTALL_DIR,
        "base_list": BASE_LIST,
        "version": version,
    }
    skip = _HEADER.format(skip=0, **fields).count("\n") + 2  # the payload starts after the marker line
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / name
    path.write_bytes(_HEADER.format(skip=skip, **fields).encode() + f"{MARKER}\n".encode() + payload)
    path.chmod(0o755)
    return path
