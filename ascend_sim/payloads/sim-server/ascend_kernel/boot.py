"""What a Debian 12 boot does to the kernel settings, the way systemd does it, on the emulated kernel:

1. udev coldplug: the modules of the server's own hardware (hardware.json "modules_at_boot");
2. systemd-modules-load: every module named in modules-load.d (and /etc/modules, which Debian's kmod links
   as /etc/modules-load.d/modules.conf), with its modprobe.d options;
3. systemd-sysctl: sysctl.d files, a name in an earlier directory hiding the same name in a later one,
   applied in the order of their names, later assignments winning; "-key" ignores a failure; key globs;
4. systemd-tmpfiles --create: `w`/`w+` lines (write the argument to an existing file; globs allowed) for
   the emulated paths; every other line type is left to the OS (no systemd-tmpfiles in the image).

Each step logs one line per action to /var/log/ascend-sim-boot.log (through the init). Nothing here reads the
controller's kernel values: every setting starts from the emulated defaults (state.reset()).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Iterator

from ascend_kernel import modtools
from ascend_kernel.kernel import Kernel
from ascend_kernel.state import KernelError, p

Log = Callable[[str], None]
SYSCTL_DIRS = ("/etc/sysctl.d", "/run/sysctl.d", "/usr/local/lib/sysctl.d", "/usr/lib/sysctl.d")
TMPFILES_DIRS = ("/etc/tmpfiles.d", "/run/tmpfiles.d", "/usr/local/lib/tmpfiles.d", "/usr/lib/tmpfiles.d")
MODULES_LOAD_DIRS = ("/etc/modules-load.d", "/run/modules-load.d", "/usr/local/lib/modules-load.d",
                     "/usr/lib/modules-load.d")  # fmt: skip


def conf_files(dirs: tuple[str, ...]) -> list[str]:
    """systemd's conf_files_list: *.conf by name, earlier directories hide later ones; /dev/null masks."""
    chosen: dict[str, str] = {}
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(p(d), "*.conf"))):
            chosen.setdefault(os.path.basename(path), path)
    return [chosen[n] for n in sorted(chosen) if os.path.realpath(chosen[n]) != "/dev/null"]


def _lines(path: str) -> Iterator[str]:
    try:
        with open(path, encoding="utf-8") as f:
            for raw in f:
                line = raw.strip()
                if line and not line.startswith(("#", ";")):
                    yield line
    except OSError:
        return


def load_modules(k: Kernel, log: Log) -> None:
    names = list(k.hw.modules_at_boot)
    for path in conf_files(MODULES_LOAD_DIRS):
        names += [line.split()[0] for line in _lines(path)]
    if not any(os.path.basename(f) == "modules.conf" for f in conf_files(MODULES_LOAD_DIRS)):
        names += [line.split()[0] for line in _lines(p("/etc/modules"))]  # Debian's /etc/modules
    for name in names:
        rc, out = modtools.modprobe_quiet(k.modules, name)
        log(f"modules-load: {name}: {'loaded' if rc == 0 else out.strip()}")


def sysctl_files() -> list[str]:
    """conf_files of sysctl.d, plus /etc/sysctl.conf as "99-sysctl.conf" (Debian's link)."""
    files = conf_files(SYSCTL_DIRS)
    if os.path.isfile(p("/etc/sysctl.conf")) and all(os.path.basename(f) != "99-sysctl.conf" for f in files):
        files.append(p("/etc/sysctl.conf"))
        files.sort(key=lambda f: "99-sysctl.conf" if f == p("/etc/sysctl.conf") else os.path.basename(f))
    return files


def apply_sysctl(k: Kernel, log: Log) -> None:
    settings: dict[str, tuple[str, bool]] = {}
    for path in sysctl_files():
        for line in _lines(path):
            key, sep, value = line.partition("=")
            if not sep:
                continue
            key, value = key.strip(), value.strip()
            ignore = key.startswith("-")
            key = key.lstrip("-").replace("/", ".")
            settings.pop(key, None)  # re-assignment moves to the end, like systemd's ordered hashmap
            settings[key] = (value, ignore)
    for key, (value, ignore) in settings.items():
        pattern = "/proc/sys/" + key.replace(".", "/")
        paths = list(k.glob(pattern)) if any(c in key for c in "*?[") else [pattern]
        for path in paths:
            _set(k, path, value, f"sysctl {key}", log, ignore)


def apply_tmpfiles(k: Kernel, log: Log) -> None:
    for conf in conf_files(TMPFILES_DIRS):
        for line in _lines(conf):
            fields = line.split(None, 6)
            if len(fields) < 2 or fields[0].rstrip("!-=~^") not in ("w", "w+"):
                continue
            arg = fields[6] if len(fields) == 7 else ""
            if not arg or arg == "-":
                continue
            for path in k.glob(fields[1]) if any(c in fields[1] for c in "*?[") else [fields[1]]:
                if not k.emulated(path):
                    log(f"tmpfiles: {path}: not an emulated kernel file, left to the OS")
                    continue
                _set(k, path, arg.encode().decode("unicode_escape"), f"tmpfiles {path}", log, False)


def _set(k: Kernel, path: str, value: str, what: str, log: Log, ignore: bool) -> None:
    if not k.emulated(path):
        log(f"{what}: {path} is not emulated (the controller's, read-only): skipped")
        return
    try:
        k.write(path, value + "\n")
    except KernelError as exc:
        log(f"{what}={value}: {exc.strerror}{' (ignored)' if ignore else ''}")
        return
    log(f"{what}={value}")


def boot(k: Kernel, log: Log) -> None:
    load_modules(k, log)
    apply_sysctl(k, log)
    apply_tmpfiles(k, log)
