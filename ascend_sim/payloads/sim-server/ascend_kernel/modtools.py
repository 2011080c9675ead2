"""modprobe, lsmod, rmmod, insmod, modinfo and dmesg of a simulated server (kmod 30 / util-linux behaviour)
on the emulated module set. Installed as /usr/local/sbin/<tool> (first on root's PATH, over the real kmod
tools, which would look for modules of the controller's kernel).

modprobe [-n|--dry-run] [-q] [-v] [-r|--remove] [-a|--all] [--first-time] [-c|--showconfig]
         [-D|--show-depends] MODULE [PARAM=VALUE ...]
  loads the module's dependencies, then the module, each with its `options` lines from modprobe.d (then the
  command line's parameters); an already loaded module is left as it is (exit 0; --first-time: error).
  -r removes the module, then the dependencies it leaves unused; a module in use is refused.
"""

from __future__ import annotations

import errno
import os
import sys

from ascend_kernel.modules import MODULES, Modules, config_files, config_options, norm
from ascend_kernel.state import KernelError, State

RELEASE = os.uname().release


def _say(text: str) -> None:
    print(text, file=sys.stderr)


def not_found(name: str) -> str:
    return f"modprobe: FATAL: Module {name} not found in directory /lib/modules/{RELEASE}"


def load_order(name: str) -> list[str]:
    out: list[str] = []

    def visit(m: str) -> None:
        for dep in MODULES[m].depends:
            visit(dep)
        if m not in out:
            out.append(m)

    visit(name)
    return out


def modprobe_load(mods: Modules, name: str, args: list[str], *, dry: bool, first_time: bool,
                  verbose: bool) -> int:  # fmt: skip
    if name not in MODULES:
        _say(not_found(name))
        return 1
    if name in mods.loaded():
        if first_time:
            _say(f"modprobe: ERROR: could not insert '{name}': Module already in kernel")
            return 1
        return 0
    for m in load_order(name):
        if m in mods.loaded():
            continue
        opts = config_options(m) + (args if m == name else [])
        if verbose:
            print(f"insmod /lib/modules/{RELEASE}/{MODULES[m].path} {' '.join(opts)}".rstrip())
        if dry:
            continue
        try:
            mods.insert(m, opts)
        except KernelError as exc:
            _say(f"modprobe: ERROR: could not insert '{m}': {exc.strerror}")
            return 1
    return 0


def modprobe_remove(mods: Modules, name: str, *, dry: bool, first_time: bool, verbose: bool) -> int:
    if name not in MODULES:
        _say(f"modprobe: FATAL: Module {name} not found.")
        return 1
    if name not in mods.loaded():
        if first_time:
            _say(f"modprobe: ERROR: Module {name} is not in kernel.")
            return 1
        return 0
    if mods.holders(name):
        _say(f"modprobe: FATAL: Module {name} is in use.")
        return 1
    if dry:
        if verbose:
            print(f"rmmod {name}")
        return 0
    queue = [name]
    while queue:  # the module, then the dependencies nothing else uses any more
        m = queue.pop(0)
        if m not in mods.loaded() or mods.holders(m):
            continue
        if verbose:
            print(f"rmmod {m}")
        mods.remove(m)
        queue += list(MODULES[m].depends)
    return 0


def modprobe_quiet(mods: Modules, name: str) -> tuple[int, str]:
    """For the boot sequence: load one module, return (exit code, what modprobe said)."""
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = modprobe_load(mods, norm(name), [], dry=False, first_time=False, verbose=False)
    return rc, err.getvalue()


def modprobe(argv: list[str]) -> int:
    opts = {a for a in argv if a.startswith("-")}
    words = [a for a in argv if not a.startswith("-")]
    dry = bool(opts & {"-n", "--dry-run"})
    verbose = bool(opts & {"-v", "--verbose"})
    first_time = "--first-time" in opts
    mods = Modules(State())
    if opts & {"-c", "--showconfig"}:
        for path in config_files():
            print(f"# {path}")
        for m in MODULES:
            for word in config_options(m):
                print(f"options {m} {word}")
        return 0
    if not words:
        _say("modprobe: ERROR: missing parameters. See -h.")
        return 1
    if opts & {"-D", "--show-depends"}:
        name = norm(words[0])
        if name not in MODULES:
            _say(not_found(name))
            return 1
        for m in load_order(name):
            print(f"insmod /lib/modules/{RELEASE}/{MODULES[m].path} {' '.join(config_options(m))}".rstrip())
        return 0
    remove = bool(opts & {"-r", "--remove"})
    if remove or opts & {"-a", "--all"}:
        rc = 0
        for w in words:
            name = norm(w)
            if remove:
                rc |= modprobe_remove(mods, name, dry=dry, first_time=first_time, verbose=verbose)
            else:
                rc |= modprobe_load(mods, name, [], dry=dry, first_time=first_time, verbose=verbose)
        return rc
    return modprobe_load(mods, norm(words[0]), words[1:], dry=dry, first_time=first_time, verbose=verbose)


def lsmod(argv: list[str]) -> int:
    mods = Modules(State())
    print("Module                  Size  Used by")
    for name in reversed(mods.loaded()):
        users = mods.holders(name)
        print(f"{name:<19} {MODULES[name].size:8d}  {len(users)}{' ' + ','.join(users) if users else ''}")
    return 0


def rmmod(argv: list[str]) -> int:
    mods = Modules(State())
    rc = 0
    for w in (a for a in argv if not a.startswith("-")):
        name = norm(os.path.basename(w).removesuffix(".ko"))
        try:
            mods.remove(name)
        except KernelError as exc:
            _say(f"rmmod: ERROR: {exc.strerror}")
            rc = 1
    return rc


def insmod(argv: list[str]) -> int:
    words = [a for a in argv if not a.startswith("-")]
    if not words:
        _say("insmod: ERROR: missing filename.")
        return 1
    name = norm(os.path.basename(words[0]).removesuffix(".ko"))
    if name not in MODULES:
        _say(f"insmod: ERROR: could not load module {words[0]}: No such file or directory")
        return 1
    try:
        Modules(State()).insert(name, words[1:])
    except KernelError as exc:
        _say(f"insmod: ERROR: could not insert module {words[0]}: {exc.strerror}")
        return 1
    return 0


def modinfo(argv: list[str]) -> int:
    only_params = "-p" in argv or "--parameters" in argv
    rc = 0
    for w in (a for a in argv if not a.startswith("-")):
        mod = MODULES.get(norm(os.path.basename(w).removesuffix(".ko")))
        if mod is None:
            _say(f"modinfo: ERROR: Module {w} not found.")
            rc = 1
            continue
        if not only_params:
            print(f"{'filename:':<16}/lib/modules/{RELEASE}/{mod.path}")
            print(f"{'description:':<16}{mod.description}")
            print(f"{'license:':<16}Dual BSD/GPL")
            print(f"{'depends:':<16}{','.join(mod.depends)}")
            print(f"{'intree:':<16}Y")
            print(f"{'name:':<16}{mod.name}")
            print(f"{'vermagic:':<16}{RELEASE} SMP mod_unload modversions aarch64")
        for prm in mod.params:
            line = f"{prm.name}:{prm.desc} ({prm.kind})"
            print(line if only_params else f"{'parm:':<16}{line}")
    return rc


def dmesg(argv: list[str]) -> int:
    for line in State().load()["dmesg"]:
        print(line)
    return 0


TOOLS = {"modprobe": modprobe, "lsmod": lsmod, "rmmod": rmmod, "insmod": insmod, "modinfo": modinfo,
         "dmesg": dmesg}  # fmt: skip


def main(argv: list[str]) -> int:
    tool = os.path.basename(argv[0])
    if tool not in TOOLS:
        _say(f"ascend-sim kmod: unknown tool {tool}; one of {', '.join(TOOLS)}")
        return 2
    try:
        return TOOLS[tool](argv[1:])
    except KernelError as exc:
        _say(f"{tool}: ERROR: {exc.strerror}")
        return 1
    except OSError as exc:
        _say(f"{tool}: ERROR: {exc}")
        return errno.EIO
