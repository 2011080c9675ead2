"""Host layer: tuning (sysctls, modules, hugepages) and whether the HCCN plan is present where needed."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator

from orchestrator.catalog import KNOWN_MODULE_OPTIONS, get_chip, known_module, unknown_options
from orchestrator.spec.findings import Finding, SpecPath, error, warning
from orchestrator.spec.site import SiteSpec

_SYSCTL = re.compile(r"^[a-z0-9_]+(\.[A-Za-z0-9_*-]+)+$")
_FALSE_CLAIMS = {
    ("rdma_ucm", "use_centric_mode"): "rdma_ucm has no 'use_centric_mode' parameter (a widely copied "
    "article claims it); NPU NICs are configured with hccn_tool (network.hccn), not with host module options"
}


def check_tuning(spec: SiteSpec) -> Iterator[Finding]:
    t = spec.tuning
    for key in t.sysctls:
        if not _SYSCTL.match(key):
            yield error(
                ("tuning", "sysctls", key),
                f"'{key}' is not a sysctl name",
                "use the dotted name shown by 'sysctl -a', e.g. vm.swappiness",
                "tuning",
            )
    for module, options in t.rdma_modules.items():
        path = ("tuning", "rdma_modules", module)
        for opt in options:
            if (module, opt) in _FALSE_CLAIMS:
                yield error((*path, opt), _FALSE_CLAIMS[(module, opt)], f"remove {opt}", "tuning")
        unknown = [o for o in unknown_options(module, options) if (module, o) not in _FALSE_CLAIMS]
        findings: list[tuple[SpecPath, str, str]]
        if not known_module(module) and unknown:
            findings = [(path, f"module '{module}' is not in the catalog of host RDMA NIC modules", "")]
        else:
            known = sorted(set(options) - set(unknown)) + sorted(KNOWN_MODULE_OPTIONS.get(module, ()))
            findings = []
            for opt in unknown:
                close = difflib.get_close_matches(opt, known, n=1, cutoff=0.6)
                hint = f"did you mean '{close[0]}'? " if close else ""
                findings.append(((*path, opt), f"'{opt}' is not a parameter of {module}", hint))
        for where, what, hint in findings:
            fix = f"{hint}check 'modinfo -p {module}' on the host"
            if t.allow_unknown_module_options:
                yield warning(
                    where, what + " (allowed by tuning.allow_unknown_module_options)", fix, "tuning"
                )
            else:
                yield error(where, what, fix + ", or set tuning.allow_unknown_module_options: true", "tuning")
    hp = t.hugepages
    for i, srv in enumerate(spec.servers):
        prof = spec.profiles.get(srv.profile or "")
        if prof is None or hp.count == 0 or "npu" not in srv.roles:  # hugepages are set on NPU servers
            continue
        reserved_gb = hp.count * hp.size_kb / 1024 / 1024
        if reserved_gb > prof.memory_gb / 2:
            yield error(
                ("tuning", "hugepages", "count"),
                f"{hp.count} pages of {hp.size_kb} kB reserve "
                f"{reserved_gb:.0f} GB, over half of the {prof.memory_gb} GB of server '{srv.name}' (servers"
                f"[{i}])",
                "reserve fewer hugepages",
                "tuning",
            )
            break


def check_network(spec: SiteSpec) -> Iterator[Finding]:
    roce = {name for name, p in spec.profiles.items() if get_chip(p.chip).has_roce}
    servers = {s.name: s for s in spec.servers}
    needs = [
        (i, r.name)
        for i, r in enumerate(spec.serving.replicas)
        if len(r.servers) > 1 and all(servers.get(s) and servers[s].profile in roce for s in r.servers)
    ]
    hccn = spec.network.hccn
    if needs and hccn is None:
        yield error(
            ("serving", "replicas", needs[0][0], "servers"),
            f"replica(s) {', '.join(n for _, n in needs)} span servers and talk over the NPU NICs, but "
            "there is no HCCN plan",
            "add network.hccn with the NPU-NIC subnet(s)",
            "hccn",
        )
    if hccn is not None and not any(s.profile in roce for s in spec.servers):
        yield warning(
            ("network", "hccn"),
            "no server has NPUs with RoCE NICs (300I cards have none); the HCCN plan is ignored",
            "remove network.hccn",
            "hccn",
        )
    for i, srv in enumerate(spec.servers):
        if srv.overrides.hccn_addresses is not None and srv.profile not in roce:
            yield error(
                ("servers", i, "overrides", "hccn_addresses"),
                f"server '{srv.name}' has no NPU NICs",
                "remove hccn_addresses",
                "hccn",
            )
        if srv.overrides.hccn_addresses is not None and hccn is None:
            yield error(
                ("servers", i, "overrides", "hccn_addresses"),
                "HCCN addresses without network.hccn",
                "add network.hccn with the subnet(s) these addresses belong to",
                "hccn",
            )
