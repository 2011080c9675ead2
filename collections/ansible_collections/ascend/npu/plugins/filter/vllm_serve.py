# Copyright: ascend-orchestrator contributors
# Apache-2.0 (see the repository's pyproject.toml)
"""Filters of the vllm_serve role (run on the controller): the container of one rendered serving instance,
the interface carrying an address, the CPUs local to a set of NPUs.

- ``instance | ascend.npu.vllm_serve_container(opts)``: the community.docker.docker_container parameters of a
  rendered ``vllm_serve_instances`` entry plus ``release`` (a hash of everything that makes the container what
  it is), ``record`` (what the release record keeps: image ID, argv/env/weights hashes) and
  ``startup_timeout_s``, the readiness timeout the plan computed (orchestrator.planning.gates), passed through
  as rendered: nothing here recomputes it.
- ``ansible_facts | ascend.npu.interface_of(address)``.
- ``npus | ascend.npu.npu_cpuset(devices)`` (npus: the host_tuning topology fact's ``npus``).
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import shlex
from typing import Any

MANAGEMENT_DEVICES = ("/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc")
# The compile caches (vLLM's ~/.cache/vllm/torch_compile_cache, Triton's kernels) live in one host directory
# per image and serving configuration, mounted where vLLM-Ascend's docker run mounts the host's /root/.cache
# (https://docs.vllm.ai/projects/ascend/en/latest/installation.html); Triton's cache is put there too
# (TRITON_CACHE_DIR, default ~/.triton/cache). vLLM keys its own entries by a hash of its configs
# (https://docs.vllm.ai/en/latest/design/torch_compile.html), so replicas of one configuration share them.
CACHE_MOUNT = "/root/.cache"
CACHE_ENV = {"VLLM_CACHE_ROOT": f"{CACHE_MOUNT}/vllm", "TRITON_CACHE_DIR": f"{CACHE_MOUNT}/triton"}
# argv flags that differ between servers running the same ranks of one configuration (addresses, ports, KV
# endpoints, the API's model name, which a headless member does not take). The DP ranks stay in the key:
# vLLM keeps each rank's graphs in its own rank_<rank>_<dp rank> directory, so only a server that runs the
# same ranks (another replica of the configuration) has a cache worth copying.
_PER_INSTANCE_FLAGS = frozenset(
    {
        "--served-model-name",
        "--port",
        "--host",
        "--data-parallel-address",
        "--data-parallel-rpc-port",
        "--kv-transfer-config",
    }
)


def _sha256(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _startup_timeout_s(instance: dict[str, Any]) -> int:
    """The planned readiness timeout of a rendered instance; a clear error when render did not write one."""
    value = instance.get("startup_timeout_s")
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(
            f"vllm_serve_instances entry {instance.get('container_name')!r} has startup_timeout_s={value!r}, "
            "not the positive number of seconds the plan computes. Fix: render the inventory again "
            "(orchestrator render SITE) with this checkout's orchestrator."
        )
    return value


def interface_of(facts: dict[str, Any], address: str) -> str | None:
    """The network interface carrying ``address``: the one holding it (primary or secondary IPv4), else the
    one whose IPv4 network contains it (a loopback alias 127.0.0.N on lo's 127.0.0.0/8); None when none."""
    target = ipaddress.ip_address(address)
    containing: str | None = None
    for name in sorted(facts.get("interfaces") or []):
        info = facts.get(name.replace("-", "_").replace(".", "_")) or facts.get(name) or {}
        ipv4 = info.get("ipv4")
        entries = [e for e in ([ipv4] if isinstance(ipv4, dict) else list(ipv4 or [])) if isinstance(e, dict)]
        entries += [e for e in info.get("ipv4_secondaries") or [] if isinstance(e, dict)]
        device = str(info.get("device") or name)
        for entry in entries:
            if entry.get("address") == address:
                return device
            if containing is None and entry.get("address") and entry.get("netmask"):
                net = ipaddress.ip_network(f"{entry['address']}/{entry['netmask']}", strict=False)
                if target in net:
                    containing = device
    return containing


def _cpus(text: str) -> list[int]:
    out: list[int] = []
    for raw in str(text).split(","):
        part = raw.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def _cpulist(cpus: list[int]) -> str:
    ranges: list[str] = []
    for cpu in sorted(set(cpus)):
        if ranges and cpu == int(ranges[-1].split("-")[-1]) + 1:
            ranges[-1] = f"{ranges[-1].split('-')[0]}-{cpu}"
        else:
            ranges.append(str(cpu))
    return ",".join(ranges)


def npu_cpuset(npus: dict[str, Any] | None, devices: list[int], online: Any = None) -> str | None:
    """The CPUs local to ``devices`` (union of their npu-smi CPU affinity), as a cpuset list; None when the
    topology is unknown for one of them (no fact, A3 prints no affinity) or, given ``online`` (the host's
    online CPU list), when a CPU of it is not online (a cpuset naming absent CPUs fails `docker run`)."""
    if not npus:
        return None
    cpus: list[int] = []
    for dev in devices:
        affinity = (npus.get(str(dev)) or {}).get("cpu_affinity")
        if not affinity:
            return None
        cpus.extend(_cpus(affinity))
    if online is not None and not set(cpus) <= set(_cpus(str(online))):
        return None
    return _cpulist(cpus) or None


def _command(instance: dict[str, Any]) -> list[str]:
    """`vllm serve ...`; a Ray member (docs/ray.md, vllm-ascend tutorials/features/ray.md): the worker runs
    `ray start --address ... --block` as its only process, the head `ray start --head ...` and then, in the
    same container, `vllm serve ... --distributed-executor-backend ray`."""
    vllm = ["vllm", *[str(a) for a in instance["args"]]]
    ray = instance.get("ray")
    if not ray:
        return vllm
    start = ["ray", *[str(a) for a in ray["start_args"]]]
    if not instance["args"]:
        return start
    return ["sh", "-c", f"{shlex.join(start)} && exec {shlex.join(vllm)}"]


def cache_key(image_id: str, args: list[Any], weights_manifest: str | None) -> str:
    """The compile cache directory's name: the image, the serving configuration and the DP ranks (argv
    without the per-server flags and ``--headless``), and the weights; 16 hex digits."""
    conf: list[str] = []
    skip = False
    for arg in (str(a) for a in args):
        if skip:
            skip = False
            continue
        flag = arg.split("=", 1)[0]
        if flag in _PER_INSTANCE_FLAGS:
            skip = "=" not in arg
            continue
        if arg != "--headless":
            conf.append(arg)
    return _sha256({"image": image_id, "args": conf, "weights": weights_manifest})[:16]


def vllm_serve_container(instance: dict[str, Any], opts: dict[str, Any]) -> dict[str, Any]:
    """community.docker.docker_container parameters of one serving instance, its release hash and record.

    opts: image_id, weights_manifest, mounts (host paths mounted at the same place, read-only unless listed in
    mounts_rw), weights_host and weights_path (the weights directory on the host and in the command),
    shm_size, api_key_file (host path or None), api_key_mount, api_key_checksum, ifname (default
    HCCL/GLOO/TP_SOCKET_IFNAME of a multi-node member, or None), topology (the host_tuning fact's npus) and
    allowed_cpus (the CPUs the host lets processes use) for the CPU affinity, cache_dir (the host directory
    of the compile caches, None: none mounted).
    """
    timeout_s = _startup_timeout_s(instance)
    devices = [int(d) for d in instance["devices"]]
    env = {str(k): str(v) for k, v in (instance.get("env") or {}).items()}
    if instance.get("mode") in ("dp", "ray", "pd") and opts.get("ifname"):
        # vllm-ascend's multi-node recipes set all three to the NIC carrying the node's address
        for key in ("HCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME"):
            env.setdefault(key, str(opts["ifname"]))
    volumes = []
    rw = set(opts.get("mounts_rw") or [])
    for path in opts.get("mounts") or []:
        volumes.append(f"{path}:{path}" + ("" if path in rw else ":ro"))
    volumes.append(f"{opts['weights_host']}:{opts['weights_path']}:ro")
    if opts.get("api_key_file"):
        volumes.append(f"{opts['api_key_file']}:{opts['api_key_mount']}:ro")
        env["VLLM_API_KEY_FILE"] = str(opts["api_key_mount"])
    key = cache_key(opts["image_id"], instance["args"], opts.get("weights_manifest"))
    if opts.get("cache_dir"):
        volumes.append(f"{opts['cache_dir']}/{key}:{CACHE_MOUNT}")
        for name, value in CACHE_ENV.items():
            env.setdefault(name, value)
    command = _command(instance)
    params: dict[str, Any] = {
        "name": instance["container_name"],
        "image": opts["image_id"],
        "command": command,
        "devices": [f"/dev/davinci{d}" for d in devices] + list(MANAGEMENT_DEVICES),
        "volumes": volumes,
        "env": dict(sorted(env.items())),
        "shm_size": str(opts["shm_size"]),
        "cpuset_cpus": npu_cpuset(opts.get("topology"), devices, opts.get("allowed_cpus")),
    }
    record = {
        "container": instance["container_name"],
        "replica": instance["replica"],
        "role": instance["role"],
        "image_id": opts["image_id"],
        "argv_sha256": _sha256(command),
        "env_sha256": _sha256(params["env"]),
        "weights_manifest_sha256": opts.get("weights_manifest"),
        "devices": devices,
        "cache_key": key if opts.get("cache_dir") else None,
    }
    release = _sha256({"params": params, "record": record, "key": opts.get("api_key_checksum")})[:16]
    params["labels"] = {
        "io.ascend-orchestrator.release": release,
        "io.ascend-orchestrator.replica": str(instance["replica"]),
        "io.ascend-orchestrator.role": str(instance["role"]),
    }
    return {
        "params": params,
        "release": release,
        "record": {**record, "release": release},
        "replica": instance["replica"],
        "role": instance["role"],
        "devices": devices,
        "mask": env.get("ASCEND_RT_VISIBLE_DEVICES", ""),
        "port": instance.get("port"),
        "address": instance.get("head_address"),
        "startup_timeout_s": timeout_s,
    }


def stale(results: list[dict[str, Any]], heal: bool = False) -> list[str]:
    """Replicas (of docker_container_info loop results over the wanted containers) whose container here is
    missing, not running, or runs another release. heal (`orchestrator heal`): missing or not running only;
    a running container of another release is a change for an apply to roll, not a fault to heal."""
    out: list[str] = []
    for res in results:
        want = res["item"]
        ctr = res.get("container") or {}
        running = bool((ctr.get("State") or {}).get("Running"))
        labels = (ctr.get("Config") or {}).get("Labels") or {}
        other = labels.get("io.ascend-orchestrator.release") != want["release"]
        if not running or (other and not heal):
            out.append(str(want["replica"]))
    return sorted(set(out))


def _hostvar(hostvars: Any, host: str, name: str, default: Any) -> Any:
    try:
        value = hostvars[host].get(name)
    except (KeyError, AttributeError):
        return default
    return default if value is None else value


def restart(replicas: list[dict[str, Any]], hostvars: Any, play_hosts: list[str]) -> list[str]:
    """Replicas (rendered rollout_replicas) with a stale member (_vllm_serve_stale) on any host of this play:
    each restarts as a unit on all its members. A member outside the play (--limit) counts as current."""
    out = []
    for rep in replicas:
        for member in rep.get("members") or []:
            if member in play_hosts and rep["name"] in _hostvar(hostvars, member, "_vllm_serve_stale", []):
                out.append(str(rep["name"]))
                break
    return out


def members(replicas: list[dict[str, Any]], hostvars: Any) -> list[list[str]]:
    """[host, container] of every member of ``replicas`` (their wanted containers, _vllm_serve_wanted)."""
    out = []
    for rep in replicas:
        for member in rep.get("members") or []:
            for want in _hostvar(hostvars, member, "_vllm_serve_wanted", []):
                if want["replica"] == rep["name"]:
                    out.append([member, str(want["params"]["name"])])
    return out


def ready(replicas: list[dict[str, Any]], hostvars: Any) -> list[str]:
    """Names of ``replicas`` whose head reported them ready in this run (_vllm_serve_ready on the head)."""
    return [
        str(rep["name"])
        for rep in replicas
        if rep["name"] in _hostvar(hostvars, rep["head"], "_vllm_serve_ready", [])
    ]


def cache_items(
    entries: list[dict[str, Any]], which: str | None = None, host: str | None = None
) -> list[dict[str, str]]:
    """[{host, key}] of the compile caches ``entries`` start with: wanted containers (``host``: this server)
    or rollout members (their ``host``; ``which``: target or restore)."""
    out: list[dict[str, str]] = []
    for entry in entries:
        release = entry.get(which) if which else entry
        key = ((release or {}).get("record") or {}).get("cache_key")
        where = host or entry.get("host")
        item = {"host": str(where), "key": str(key)}
        if key and where and item not in out:
            out.append(item)
    return out


def cache_sources(results: list[dict[str, Any]]) -> list[dict[str, str]]:
    """[{host, key, peer}]: for each member whose compile cache is missing (stat loop results over
    [member item, peer] pairs, item.0 = {host, key}, item.1 = peer), the first peer that has it."""
    out: dict[tuple[str, str], dict[str, str]] = {}
    for res in results:
        member, peer = res["item"][0], res["item"][1]
        pair = (str(member["host"]), str(member["key"]))
        if pair not in out and (res.get("stat") or {}).get("isdir"):
            out[pair] = {"host": pair[0], "key": pair[1], "peer": str(peer)}
    return list(out.values())


def cache_keep(wanted: list[dict[str, Any]], records: dict[str, Any]) -> list[str]:
    """Compile cache keys a server keeps: its wanted containers' and both releases of every record."""
    keys = {w["record"].get("cache_key") for w in wanted}
    for rec in records.values():
        for which in ("current", "previous"):
            keys.add(((rec or {}).get(which) or {}).get("cache_key"))
    return sorted(k for k in keys if k)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "vllm_serve_container": vllm_serve_container,
            "interface_of": interface_of,
            "npu_cpuset": npu_cpuset,
            "vllm_serve_stale": stale,
            "vllm_serve_restart": restart,
            "vllm_serve_members": members,
            "vllm_serve_ready": ready,
            "vllm_cache_items": cache_items,
            "vllm_cache_sources": cache_sources,
            "vllm_cache_keep": cache_keep,
        }
