"""`ray` command of the simulated vllm-ascend image: ``ray start``, ``ray status``, ``ray stop``.

What the vllm-ascend Ray recipe (docs/source/tutorials/features/ray.md) runs, on a tiny cluster registry
(``raygcs``): ``ray start --head [--port 6379] [--node-ip-address IP]`` starts the GCS on ``IP:port`` (the
node IP, not 0.0.0.0: simulated servers share the host's network) with the head's own node in it; ``ray
start --address HEAD:6379 --node-ip-address IP`` registers a worker node and its NPUs (``raynode``); both
return once the node is up and leave a daemon behind, or stay in the foreground with ``--block`` (exit 0 on
SIGTERM, 1 when the node fails). ``ray status`` prints the autoscaler summary (nodes, CPU and NPU totals,
pending placement groups); ``ray stop`` ends this machine's node. Messages copy Ray's: "Ray runtime
started.", "Unable to connect to GCS at ...", "Could not find any running Ray instance ...", "Stopped all N
Ray processes.". Unknown options end like click's ``Error: No such option: --x`` (exit 2).

Environment: ``RAY_TMPDIR`` (Ray's: session files under ``$RAY_TMPDIR/ray``, default /tmp/ray),
``RAY_ADDRESS`` (``ray status``), ``ASCEND_RT_VISIBLE_DEVICES`` and ``FAKE_VLLM_DEV_DIR`` (NPU count),
``FAKE_RAY_HEARTBEAT_S`` (default 3: Ray's GCS health check period),
``FAKE_RAY_CONNECT_TIMEOUT_S`` (a worker's wait for the GCS at start,
default 30), ``FAKE_RAY_GCS_RECONNECT_S`` (default 60).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from . import raynode
from .raygcs import Gcs, NodeProcesses, Raylet
from .raynode import RayError, log
from .wire import JsonConn

NO_INSTANCE = (
    "Could not find any running Ray instance. Please specify the one to connect to by setting `--address` "
    "flag or `RAY_ADDRESS` environment variable."
)


class _ClickParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        option = message.split(": ", 1)[-1].split(maxsplit=1)[0] if "unrecognized" in message else None
        self.exit(
            2,
            f"Usage: {self.prog} [OPTIONS]\nTry '{self.prog} --help' for help.\n\n"
            f"Error: {f'No such option: {option}' if option else message}\n",
        )


def _parser() -> argparse.ArgumentParser:
    top = _ClickParser(prog="ray")
    sub = top.add_subparsers(dest="command", required=True, parser_class=_ClickParser)
    start = sub.add_parser("start", prog="ray start")
    start.add_argument("--head", action="store_true")
    start.add_argument("--address")
    start.add_argument("--port", type=int)
    start.add_argument("--node-ip-address")
    start.add_argument("--resources")
    start.add_argument("--num-cpus", type=int)
    start.add_argument("--num-gpus", type=int)
    start.add_argument("--block", action="store_true")
    start.add_argument("--disable-usage-stats", action="store_true")
    start.add_argument("--dashboard-host")
    start.add_argument("--dashboard-port", type=int)
    start.add_argument("--include-dashboard")
    start.add_argument("--object-store-memory", type=int)
    status = sub.add_parser("status", prog="ray status")
    status.add_argument("--address")
    stop = sub.add_parser("stop", prog="ray stop")
    stop.add_argument("-f", "--force", action="store_true")
    stop.add_argument("-g", "--grace-period", type=int, default=16)
    daemon = sub.add_parser("_fake_daemon")
    daemon.add_argument("config")
    return top


def _float(env: dict[str, str], name: str, default: float) -> float:
    try:
        return float(env.get(name) or default)
    except ValueError:
        return default


def _alive(pid: int) -> bool:
    """A running process (a zombie is not: a daemon adopted by a container's PID 1 may never be reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


# --- ray start --------------------------------------------------------------------------------------------
def _start_config(args: argparse.Namespace, env: dict[str, str]) -> dict[str, Any]:
    if args.head == bool(args.address):
        raise RayError("ValueError", "Specify either `--head` or `--address`.")
    try:
        resources = json.loads(args.resources) if args.resources else {}
    except ValueError as exc:
        raise RayError("ValueError", f"`--resources` is not a valid JSON string: {exc}") from None
    if not isinstance(resources, dict):
        raise RayError("ValueError", "`--resources` must be a JSON object such as '{\"NPU\": 8}'.")
    npus = raynode.detect_npus(env, resources)
    node_ip = args.node_ip_address or socket.gethostbyname(socket.gethostname())
    port = args.port or raynode.DEFAULT_PORT
    gcs = f"{node_ip}:{port}" if args.head else args.address
    raynode.split_address(gcs)
    known = raynode.read_json(raynode.node_file(env))
    if known and isinstance(known.get("pid"), int) and _alive(known["pid"]):
        raise RayError(
            "ConnectionError",
            f"Ray is trying to start at {gcs}, but is already running at {known.get('gcs_address')}. "
            "Please specify a different port using the `--port` flag of `ray start` command.",
        )
    resources = {"CPU": float(args.num_cpus or os.cpu_count() or 1)}
    if npus.count:
        resources["NPU"] = float(npus.count)
    node = {
        "node_id": raynode.new_node_id(),
        "node_ip": node_ip,
        "hostname": socket.gethostname(),
        "head": bool(args.head),
        "resources": resources,
        "visible": npus.visible,
        "given": npus.given,
    }
    return {"node": node, "gcs_address": gcs}


def run_node(
    cfg: dict[str, Any], env: dict[str, str], stop: threading.Event, ready: Callable[[str], None]
) -> int:
    """The node's life: ``ready("ok")`` once it is in the cluster (``ready("<Type>: <message>")`` if it cannot
    join), then until ``stop`` (0) or until the node fails (1)."""
    node, gcs_address = cfg["node"], cfg["gcs_address"]
    host, port = raynode.split_address(gcs_address)
    heartbeat = _float(env, "FAKE_RAY_HEARTBEAT_S", 3.0)
    processes = NodeProcesses(env, node["visible"], node["given"])
    info = {"pid": os.getpid(), "node_id": node["node_id"], "node_ip": node["node_ip"], "head": node["head"]}
    try:
        if node["head"]:
            gcs = Gcs(host, port, heartbeat, stop)
            try:
                gcs.start()
            except OSError as exc:
                ready(
                    f"ConnectionError: Ray is trying to start at {gcs_address}, but the port is taken: {exc}"
                )
                return 1
            gcs.add_node({**node, "pid": os.getpid()}, processes.handle)
            _joined(env, {**info, "gcs_address": gcs_address}, ready)
            stop.wait()
            gcs.close()
            return 0
        timing = (
            heartbeat,
            _float(env, "FAKE_RAY_CONNECT_TIMEOUT_S", 30.0),
            _float(env, "FAKE_RAY_GCS_RECONNECT_S", 60.0),
        )
        raylet = Raylet((host, port), node, processes, timing, stop)
        failure: list[RayError] = []
        thread = threading.Thread(target=lambda: _catch(raylet.run, failure), name="raylet", daemon=True)
        thread.start()
        while thread.is_alive() and not raylet.registered.wait(0.1):
            pass
        if not raylet.registered.is_set():
            thread.join()
            ready(f"{failure[0].exc_type}: {failure[0].message}" if failure else "RuntimeError: stopped")
            return 1
        _joined(env, {**info, "gcs_address": gcs_address}, ready)
        thread.join()
        if failure:
            log("ERROR", "raylet main.cc:1021", f"{failure[0].exc_type}: {failure[0].message}")
            return 1
        return 0
    finally:
        processes.release_all()
        mine = raynode.read_json(raynode.node_file(env))
        if mine and mine.get("pid") == os.getpid():
            raynode.node_file(env).unlink(missing_ok=True)


def _catch(fn: Callable[[], None], failure: list[RayError]) -> None:
    try:
        fn()
    except RayError as exc:
        failure.append(exc)


def _joined(env: dict[str, str], info: dict[str, Any], ready: Callable[[str], None]) -> None:
    raynode.write_json(raynode.node_file(env), info)
    cluster = raynode.current_cluster_file(env)
    cluster.parent.mkdir(parents=True, exist_ok=True)
    cluster.write_text(str(info["gcs_address"]), encoding="utf-8")
    ready("ok")


def _banner(cfg: dict[str, Any]) -> None:
    node = cfg["node"]
    log("INFO", "scripts.py:744", f"Local node IP: {node['node_ip']}")
    for line in ("--------------------", "Ray runtime started.", "--------------------"):
        log("SUCC", "scripts.py:781", line)
    if node["head"]:
        steps = [
            "Next steps",
            "  To add another node to this Ray cluster, run",
            f"    ray start --address='{cfg['gcs_address']}'",
            "  To connect to this Ray cluster:",
            "    import ray",
            "    ray.init()",
        ]
        for line in steps:
            log("INFO", "scripts.py:788", line)
    for line in ("To terminate the Ray runtime, run", "  ray stop", "To view the status of the cluster, use",
                 "  ray status"):  # fmt: skip
        log("INFO", "scripts.py:834", line)


def _start(args: argparse.Namespace, env: dict[str, str]) -> int:
    cfg = _start_config(args, env)
    if args.block:
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        result: list[str] = []

        def ready(status: str) -> None:
            result.append(status)
            if status == "ok":
                _banner(cfg)
                log("INFO", "scripts.py:919", "--block")
                log(
                    "INFO",
                    "scripts.py:920",
                    "This command will now block forever until terminated by a signal.",
                )

        code = run_node(cfg, env, stop, ready)
        if result and result[0] != "ok":
            print(result[0], file=sys.stderr, flush=True)
        elif code:
            log("ERROR", "scripts.py:1102", "Some Ray subprocesses exited unexpectedly:")
            log("ERROR", "scripts.py:1106", "  raylet [exit code=1]")
            log("ERROR", "scripts.py:1114", "Remaining processes will be killed.")
        return code
    return _spawn(cfg, env)


def _spawn(cfg: dict[str, Any], env: dict[str, str]) -> int:
    """Start the node as a daemon (new session, output in session_latest/logs/) and wait until it joined."""
    logs = raynode.temp_dir(env) / "session_latest" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    read_fd, write_fd = os.pipe()
    with open(logs / ("gcs_server.out" if cfg["node"]["head"] else "raylet.out"), "ab") as out:
        argv = [
            sys.executable,
            os.path.abspath(sys.argv[0]),
            "_fake_daemon",
            json.dumps({**cfg, "fd": write_fd}),
        ]
        subprocess.Popen(
            argv, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, pass_fds=(write_fd,),
        )  # fmt: skip
    os.close(write_fd)
    with os.fdopen(read_fd, "r") as pipe:
        status = pipe.readline().strip() or "RuntimeError: the Ray node process exited during start-up"
    if status != "ok":
        print(status, file=sys.stderr, flush=True)
        return 1
    _banner(cfg)
    return 0


def _daemon(config: str, env: dict[str, str]) -> int:
    cfg = json.loads(config)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    pipe = os.fdopen(int(cfg["fd"]), "w")

    def ready(status: str) -> None:
        pipe.write(status + "\n")
        pipe.close()

    return run_node(cfg, env, stop, ready)


# --- ray status / ray stop --------------------------------------------------------------------------------
def cluster_address(env: dict[str, str], explicit: str | None = None) -> str | None:
    """--address, else RAY_ADDRESS (not "auto"), else this machine's ray_current_cluster."""
    if explicit:
        return explicit
    if env.get("RAY_ADDRESS") and env["RAY_ADDRESS"] != "auto":
        return env["RAY_ADDRESS"]
    try:
        return raynode.current_cluster_file(env).read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def _status(args: argparse.Namespace, env: dict[str, str]) -> int:
    address = cluster_address(env, args.address)
    if address is None:
        raise RayError("ConnectionError", NO_INSTANCE)
    host, port = raynode.split_address(address)
    try:
        conn = JsonConn.connect(host, port)
        conn.send({"type": "client"})
        view = conn.request({"type": "nodes"}, "nodes")
        conn.close()
    except (OSError, ConnectionError):
        raise RayError(
            "ConnectionError",
            f"Unable to connect to GCS at {address}. Check that (1) Ray GCS with matching version started "
            "successfully at the specified address, and (2) there is no firewall setting preventing access.",
        ) from None
    print("\n".join(status_lines(view)), flush=True)
    return 0


def status_lines(view: dict[str, Any]) -> list[str]:
    """`ray status` as Ray prints it (autoscaler summary; memory rows left out)."""
    rule = "-" * 63
    nodes, pgs = view.get("nodes", []), view.get("pgs", [])
    used = sum(len(pg["placement"]) for pg in pgs if pg.get("placement"))
    lines = [
        f"======== Autoscaler status: {time.strftime('%Y-%m-%d %H:%M:%S')}.000000 ========",
        "Node status",
    ]
    lines += [rule, "Active:", *[f" 1 node_{n['node_id']}" for n in nodes], "Pending:", " (no pending nodes)"]
    lines += ["Recent failures:", *([f" {f}" for f in view.get("failures", [])] or [" (no failures)"])]
    cpus = sum(n["resources"].get("CPU", 0) for n in nodes)
    npus = sum(n["resources"].get("NPU", 0) for n in nodes)
    lines += ["", "Resources", rule, "Usage:", f" 0.0/{cpus:.1f} CPU"]
    if npus:
        lines.append(f" {float(used):.1f}/{npus:.1f} NPU")
    pending = [pg for pg in pgs if not pg.get("placement")]
    lines += ["", "Demands:"]
    demand = " {} * 1, {{'NPU': 1.0}} * {} (PACK): 1+ pending placement groups"
    lines += [demand.format(pg["bundles"][0], len(pg["bundles"]) - 1) for pg in pending]
    if not pending:
        lines.append(" (no resource demands)")
    return lines


def _stop(args: argparse.Namespace, env: dict[str, str]) -> int:
    info = raynode.read_json(raynode.node_file(env))
    pid = info.get("pid") if info else None
    if not isinstance(pid, int) or not _alive(pid):
        log("INFO", "scripts.py:1260", "Did not find any active Ray processes.")
        return 0
    os.kill(pid, signal.SIGKILL if args.force else signal.SIGTERM)
    deadline = time.monotonic() + max(args.grace_period, 0)
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)
    raynode.node_file(env).unlink(missing_ok=True)
    raynode.current_cluster_file(env).unlink(missing_ok=True)
    log("SUCC", "scripts.py:1292", "Stopped all 1 Ray processes.")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    env = dict(os.environ)
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    commands = {"start": _start, "status": _status, "stop": _stop}
    try:
        if args.command == "_fake_daemon":
            return _daemon(args.config, env)
        return commands[args.command](args, env)
    except RayError as exc:
        print(f"{exc.exc_type}: {exc.message}", file=sys.stderr, flush=True)
        return 1
