"""OS, HDK driver/firmware and the vllm-ascend stack against the compatibility matrix."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from pathlib import PurePosixPath

from orchestrator.catalog import (
    RELEASES,
    ChipFacts,
    Version,
    VllmAscendRelease,
    at_least,
    cann_requirement,
    driver_series,
    firmware_line,
    get_chip,
    get_release,
    pair_problem,
    paired_firmware,
)
from orchestrator.spec.findings import Finding, SpecPath, error, warning
from orchestrator.spec.site import SiteSpec
from orchestrator.spec.software import PackageSource

_PKG = re.compile(
    r"^(?P<prefix>.+?)-npu-(?P<kind>driver|firmware)_(?P<version>[^_]+?)(_linux-(?P<arch>[a-z0-9_]+))?\.run$"
)


def npu_chips(spec: SiteSpec) -> list[ChipFacts]:
    """Chips of the profiles used by NPU servers, in spec order, without repeats."""
    out: dict[str, ChipFacts] = {}
    for srv in spec.servers:
        if "npu" in srv.roles and srv.profile in spec.profiles:
            chip = get_chip(spec.profiles[srv.profile].chip)
            out.setdefault(chip.name, chip)
    return list(out.values())


def release_of(spec: SiteSpec) -> VllmAscendRelease | None:
    try:
        return get_release(spec.software.vllm_ascend.version)
    except KeyError:
        return None


def _contradiction(spec: SiteSpec, path: SpecPath, message: str, fix: str) -> Finding:
    if spec.software.allow_unsupported:
        return warning(path, message + " (allowed by software.allow_unsupported)", fix, "compat")
    return error(
        path, message, fix + ", or set software.allow_unsupported: true to accept the risk", "compat"
    )


def check(spec: SiteSpec) -> Iterator[Finding]:
    chips = npu_chips(spec)
    yield from _check_os(spec, chips)
    families = {c.family for c in chips}
    if len(families) > 1:
        yield error(
            ("profiles",),
            f"NPU servers mix chip families ({', '.join(sorted(families))}); one site "
            "installs one driver/firmware package and one image family",
            "split the site per chip family",
            "compat",
        )
    stack = spec.software.vllm_ascend
    release = release_of(spec)
    if release is None:
        known = [r.version for r in RELEASES]
        close = difflib.get_close_matches(stack.version, known, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        f = _contradiction(
            spec,
            ("software", "vllm_ascend", "version"),
            f"vllm-ascend {stack.version} is not in the compatibility matrix",
            f"{hint}use one of: {', '.join(known)}",
        )
        yield f
        if not f.is_error:
            for key in ("vllm", "cann", "torch_npu", "python"):
                if getattr(stack, key) is None:
                    yield error(
                        ("software", "vllm_ascend", key),
                        f"vllm-ascend {stack.version} is not in the matrix, so '{key}' cannot be derived",
                        f"set software.vllm_ascend.{key}",
                        "compat",
                    )
    else:
        yield from _check_stack(spec, release, chips)
    for chip in chips:
        yield from _check_package(spec, ("software", "driver"), spec.software.driver, chip, "driver")
        yield from _check_package(spec, ("software", "firmware"), spec.software.firmware, chip, "firmware")
    yield from _check_hdk(spec, release, chips)


def _check_os(spec: SiteSpec, chips: list[ChipFacts]) -> Iterator[Finding]:
    pair = (spec.os.distro, spec.os.version)
    for chip in chips:
        if pair in chip.simulation_os and not spec.os.simulation:
            ok = ", ".join(f"{d} {v}" for d, v in chip.supported_os)
            yield error(
                ("os",),
                f"{spec.os.distro} {spec.os.version} is the OS of simulated servers only; the {chip.product} "
                "HDK driver does not support it on real servers",
                f"install one of: {ok} (and set os.distro / os.version); a spec written by "
                "`orchestrator sim up` sets os.simulation: true",
                "os",
            )
        elif pair not in chip.supported_os and pair not in chip.simulation_os:
            ok = ", ".join(f"{d} {v}" for d, v in chip.supported_os)
            yield error(
                ("os",),
                f"{spec.os.distro} {spec.os.version} is not supported by the {chip.product} HDK driver",
                f"install one of: {ok}",
                "os",
            )


def _check_stack(spec: SiteSpec, release: VllmAscendRelease, chips: list[ChipFacts]) -> Iterator[Finding]:
    stack = spec.software.vllm_ascend
    base: SpecPath = ("software", "vllm_ascend")
    for key, derived in (
        ("vllm", release.vllm),
        ("cann", release.cann),
        ("torch_npu", release.torch_npu),
        ("python", release.image_python),
    ):
        given = getattr(stack, key)
        if given is not None and Version.parse(given) != Version.parse(derived):
            yield _contradiction(
                spec,
                (*base, key),
                f"vllm-ascend {release.version} is built and tested with {key} {derived}, not {given}",
                f"remove '{key}' to use the derived {derived}",
            )
    if stack.python is not None:
        py = Version.parse(stack.python)
        if not Version.parse(release.python_min) <= py < Version.parse(release.python_max_exclusive):
            yield _contradiction(
                spec,
                (*base, "python"),
                f"vllm-ascend {release.version} supports Python "
                f">={release.python_min},<{release.python_max_exclusive}, not {stack.python}",
                f"use Python {release.image_python}",
            )
    for chip in chips:
        if chip.family not in release.chips:
            yield _contradiction(
                spec,
                (*base, "version"),
                f"vllm-ascend {release.version} does not support {chip.product} ({chip.name})",
                "pick a release that supports this chip",
            )
        if stack.soc_version is not None and stack.soc_version != chip.soc_version:
            yield _contradiction(
                spec,
                (*base, "soc_version"),
                f"SOC_VERSION for {chip.name} is {chip.soc_version}, not {stack.soc_version}",
                "remove soc_version",
            )


def _check_hdk(
    spec: SiteSpec, release: VllmAscendRelease | None, chips: list[ChipFacts]
) -> Iterator[Finding]:
    sw = spec.software
    driver = sw.driver.version
    problem = pair_problem(None, driver, sw.firmware.version)
    if problem is not None:
        yield _contradiction(
            spec,
            ("software", "firmware", "version"),
            f"driver {driver} and firmware {sw.firmware.version} do not accept each other: {problem}",
            _firmware_fix(driver),
        )
    elif driver_series(driver) is None and firmware_line(sw.firmware.version) is None:
        yield warning(
            ("software", "driver", "version"),
            f"neither driver {driver} nor firmware {sw.firmware.version} is in the HDK matrix; "
            "their compatibility cannot be checked",
            "use a listed HDK release",
            "compat",
        )
    needs: list[tuple[str, str, SpecPath]] = []
    if release is not None:
        canns = {release.cann: "all chips"} if not chips else {}
        for chip in chips:
            if chip.family in release.chips:
                canns.setdefault(release.cann_for(chip), chip.product)
        for cann, who in canns.items():
            why = f"vllm-ascend {release.version} builds the {who} image on CANN {cann}"
            needs.append((cann, why, ("software", "driver", "version")))
    if sw.cann is not None:
        needs.append((sw.cann.version, f"host CANN {sw.cann.version}", ("software", "cann", "version")))
    too_old = False
    for cann, why, path in needs:
        req = cann_requirement(cann)
        if req is None or req.driver_supported(driver):
            continue
        older = req.driver_too_old(driver)
        too_old = too_old or older
        yield _contradiction(
            spec,
            path,
            f"{why}, which supports HDK drivers {req.describe_range()}; driver {driver} is "
            f"{'older' if older else 'newer'}",
            f"{'upgrade' if older else 'use'} the driver and firmware "
            f"{'to' if older else 'of'} an HDK release in {req.describe_range()} (CANN {req.version} ships "
            f"with {req.paired_driver})",
        )
    if release is not None and not too_old and not at_least(driver, release.min_driver):
        yield _contradiction(
            spec,
            ("software", "driver", "version"),
            f"vllm-ascend {release.version} needs HDK driver {release.min_driver} or newer; "
            f"driver is {driver}",
            f"upgrade the driver and firmware to HDK {release.min_driver} or newer",
        )


def _firmware_fix(driver: str) -> str:
    paired = paired_firmware(driver)
    if paired is not None:
        return (
            f"install firmware {paired}, released with driver {driver} in the same HDK release "
            f"(orchestrator/catalog/data/hdk.yaml), and set software.firmware.version: {paired} with that "
            "package's path or url and sha256"
        )
    series = driver_series(driver)
    accepts = f" (driver {driver} accepts {series.compatible_version_fw})" if series is not None else ""
    return (
        f"install the firmware of the HDK release that ships driver {driver}{accepts}: the same download "
        "page lists both packages"
    )


def _check_package(
    spec: SiteSpec, path: SpecPath, pkg: PackageSource, chip: ChipFacts, kind: str
) -> Iterator[Finding]:
    raw = pkg.path if pkg.path is not None else (pkg.url.path if pkg.url is not None else None)
    if not raw:
        return
    name = PurePosixPath(raw).name
    m = _PKG.match(name)
    if m is None:
        yield warning(
            (*path, "path" if pkg.path else "url"),
            f"'{name}' does not look like a Huawei HDK {kind} "
            f"package ({chip.driver_package_prefix}-npu-{kind}_<version>...run)",
            "check that this is the right file",
            "package",
        )
        return
    if m["kind"] != kind:
        yield error(
            (*path, "path" if pkg.path else "url"),
            f"'{name}' is a {m['kind']} package, not a {kind}",
            f"point software.{kind} at the {kind} .run file",
            "package",
        )
    if m["prefix"].lower() != chip.driver_package_prefix.lower():
        yield error(
            (*path, "path" if pkg.path else "url"),
            f"'{name}' is for {m['prefix']}, but the servers have "
            f"{chip.product} ({chip.name}), whose packages are {chip.driver_package_prefix}-npu-*",
            f"download the {chip.driver_package_prefix} package",
            "package",
        )
    try:  # the spec model checked pkg.version; the file name's version may be anything
        same = Version.parse(m["version"]) == Version.parse(pkg.version)
    except ValueError:
        same = False
    if not same:
        yield error(
            (*path, "version"),
            f"version {pkg.version} does not match the file name '{name}' ({m['version']})",
            "make the version match the package file",
            "package",
        )
    archs = {p.arch for p in spec.profiles.values()}
    if m["arch"] and m["arch"] not in archs:
        yield error(
            (*path, "path" if pkg.path else "url"),
            f"'{name}' is built for {m['arch']}, servers are {', '.join(sorted(archs))}",
            "use the package for the servers' architecture",
            "package",
        )
