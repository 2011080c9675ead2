"""``vllm serve --distributed-executor-backend ray``: the driver's side of the fake Ray cluster.

What vLLM does (vllm/v1/executor/ray_utils.py ``initialize_ray_cluster``), and the fake with it:

1. ``ray.init()``: connect to ``RAY_ADDRESS`` or the cluster this machine started or joined
   (``$RAY_TMPDIR/ray/ray_current_cluster``); with neither, start a new local instance holding only this
   machine's NPUs ("Started a local Ray instance.").
2. "No current placement group found. Creating a new placement group." A warning when the cluster has fewer
   NPUs than the world size (tp x pp). The driver's node must have an NPU ("Current node has no NPU
   available..."). Bundles: ``[{"NPU": 1.0, "node:<VLLM_HOST_IP>": 0.001}] + [{"NPU": 1.0}] * (world - 1)``,
   PACK; VLLM_HOST_IP defaults to the local node's IP.
3. Wait for the group, logging "Waiting for creating a placement group of specs for N seconds..." after 10,
   30, 70, ... s; after ``FAKE_VLLM_RAY_PG_TIMEOUT_S`` (default 1800, vLLM's PG_WAIT_TIMEOUT) fail with
   ``ValueError: Cannot provide a placement group of placement_group_specs=[...] within N seconds. See `ray
   status` and `ray list nodes` to make sure the cluster has enough resources.``
4. Check the placement (``_verify_bundles``): the driver's node holds bundles, a warning for nodes holding
   fewer than tp; each worker's NPUs (its node's ASCEND_RT_VISIBLE_DEVICES) must exist there, as the worker
   actor's aclrtSetDevice would otherwise fail.
5. While serving: a node holding bundles that dies kills its worker actors (``ActorDiedError``), and with
   them the engine; losing the GCS does too.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from . import raynode, vlog
from .raycli import cluster_address
from .raygcs import Gcs, NodeProcesses
from .raynode import RayError, log
from .wire import JsonConn

PG_WAIT_TIMEOUT = 1800
_SRC = "ray_utils.py"


@dataclass
class Session:
    conn: JsonConn
    local_node_id: str | None
    local_gcs: Gcs | None = None
    placement: list[str] = field(default_factory=list)
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    lost: str | None = None

    def close(self) -> None:
        self.conn.close()
        if self.local_gcs is not None:
            self.local_gcs.close()


def connect(env: dict[str, str], stop: threading.Event) -> Session:
    address = cluster_address(env)
    local = raynode.read_json(raynode.node_file(env))
    local_gcs: Gcs | None = None
    if address is None:
        npus = raynode.detect_npus(env, {})
        local_gcs = Gcs("127.0.0.1", 0, 1.0, stop)
        local_gcs.start()
        node = {
            "node_id": raynode.new_node_id(),
            "node_ip": env.get("VLLM_HOST_IP") or "127.0.0.1",
            "hostname": "localhost",
            "head": True,
            "resources": {"CPU": 1.0, "NPU": float(npus.count)},
            "visible": npus.visible,
            "given": npus.given,
        }
        local_gcs.add_node(node, NodeProcesses(env, npus.visible, npus.given).handle)
        address, local = f"127.0.0.1:{local_gcs.port}", {"node_id": node["node_id"]}
        log("INFO", "worker.py:1852", "Started a local Ray instance.")
    else:
        log("INFO", "worker.py:1660", f"Connecting to existing Ray cluster at address: {address}...")
    host, port = raynode.split_address(address)
    deadline = time.monotonic() + 5
    while True:
        try:
            conn = JsonConn.connect(host, port)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise RayError(
                    "ConnectionError",
                    f"Unable to connect to GCS at {address}. Check that (1) Ray GCS with matching version "
                    "started successfully at the specified address, and (2) there is no firewall setting "
                    "preventing access.",
                ) from None
            time.sleep(0.3)
    conn.send({"type": "client"})
    if local_gcs is None:
        log("INFO", "worker.py:1843", "Connected to Ray cluster.")
    return Session(conn, str(local["node_id"]) if local else None, local_gcs)


def _free_npus(view: dict[str, Any], node_id: str) -> float:
    node = next((n for n in view["nodes"] if n["node_id"] == node_id), None)
    if node is None:
        return 0.0
    used = sum((pg.get("placement") or []).count(node_id) for pg in view["pgs"])
    return float(node["resources"].get("NPU", 0)) - used


def place(
    session: Session, env: dict[str, str], world: int, tp: int, worker: dict[str, Any], stop: threading.Event
) -> bool:
    """Steps 2-4; False when stopped while waiting, RayError when vLLM would fail."""
    view = session.conn.request({"type": "nodes"}, "nodes")
    nodes = {n["node_id"]: n for n in view["nodes"]}
    me = nodes.get(session.local_node_id or "")
    driver_ip = env.get("VLLM_HOST_IP") or (me["node_ip"] if me else "127.0.0.1")
    vlog.info(f"{_SRC}:383", "No current placement group found. Creating a new placement group.")
    if world > sum(n["resources"].get("NPU", 0) for n in nodes.values()):
        vlog.warning(
            f"{_SRC}:386",
            "The number of required NPUs exceeds the total number of available NPUs in the placement group.",
        )
    if me is None:
        raise RayError(
            "RuntimeError",
            f"This node has an IP address of {driver_ip}, while we can not find the matched Raylet address. "
            "This maybe come from when you connect the Ray cluster with a different IP address or connect "
            "a container.",
        )
    if _free_npus(view, me["node_id"]) < 1:
        raise RayError(
            "ValueError",
            f"Current node has no NPU available. current_node_resource={me['resources']}. vLLM engine cannot "
            f"start without NPU. Make sure you have at least 1 NPU available in a node "
            f"current_node_id='{me['node_id']}' current_ip='{driver_ip}'.",
        )
    bundles: list[dict[str, float]] = [{"NPU": 1.0, f"node:{driver_ip}": 0.001}]
    bundles += [{"NPU": 1.0} for _ in range(world - 1)]
    reply = session.conn.request({"type": "create_pg", "bundles": bundles, "worker": worker}, "pg")
    timeout = float(env.get("FAKE_VLLM_RAY_PG_TIMEOUT_S") or PG_WAIT_TIMEOUT)
    start, report = time.monotonic(), 10.0
    while not reply["ready"]:
        if stop.wait(0.25):
            return False
        elapsed = time.monotonic() - start
        if elapsed >= timeout:
            raise RayError(
                "ValueError",
                f"Cannot provide a placement group of placement_group_specs={bundles} within {timeout:g} "
                "seconds. See `ray status` and `ray list nodes` to make sure the cluster has enough "
                "resources.",
            )
        if elapsed >= report:
            report = report * 2 + 10
            vlog.info(
                f"{_SRC}:330",
                f"Waiting for creating a placement group of specs for {int(elapsed)} seconds. "
                f"specs={bundles}. Check `ray status` and `ray list nodes` to see if you have enough "
                "resources, and make sure the IP addresses used by ray cluster are the same as VLLM_HOST_IP "
                "environment variable specified in each node if you are running on a multi-node.",
            )
        reply = session.conn.request({"type": "pg_status", "pg_id": reply["pg_id"]}, "pg")
    view = session.conn.request({"type": "nodes"}, "nodes")
    session.nodes = {n["node_id"]: n for n in view["nodes"]}
    session.placement = list(reply["placement"])
    _verify(session, tp)
    return True


def _verify(session: Session, tp: int) -> None:
    counts = {nid: session.placement.count(nid) for nid in dict.fromkeys(session.placement)}
    if session.local_node_id not in counts:
        raise RayError(
            "RuntimeError",
            f"driver node id {session.local_node_id} is not included in a placement group. Node id -> "
            f"bundles {counts}. You don't have enough GPUs available in a current node.",
        )
    for nid, count in counts.items():
        node = session.nodes.get(nid, {})
        if count < tp:
            vlog.warning(
                f"{_SRC}:264",
                f"tensor_parallel_size={tp} is bigger than a reserved number of NPUs ({count} NPUs) in a "
                f"node {nid}. Tensor parallel workers can be spread out to 2+ nodes which can degrade the "
                "performance unless you have fast interconnect across nodes, like Infiniband. To resolve "
                f"this issue, make sure you have more than {tp} GPUs available at each node.",
            )
        visible = node.get("visible")
        ids = [int(v) for v in visible if v.isdigit()] if visible is not None else list(node.get("given", []))
        missing = [d for d in ids[:count] if d not in node.get("given", [])]
        if len(ids) < count or missing:
            given = ", ".join(f"davinci{g}" for g in node.get("given", [])) or "none"
            raise RayError(
                "RuntimeError",
                f"(RayWorkerWrapper ip={node.get('node_ip')}) ASCEND_RT_VISIBLE_DEVICES="
                f"{','.join(visible or [])} on node {nid} names NPU(s) {missing or ids} the node was not "
                f"given (present: {given}). aclrtSetDevice failed, error code is 107001: invalid device id.",
            )
        vlog.info("ray_executor.py:257", f"{count} worker(s) on node {nid} ({node.get('node_ip')}).")


def watch(session: Session, stop: threading.Event) -> None:
    """Follow the cluster while serving: sets ``session.lost`` when a node with workers or the GCS is gone."""

    def loop() -> None:
        while not stop.is_set():
            try:
                msgs = session.conn.recv(0.5)
            except (OSError, ConnectionError):
                session.lost = "The Ray GCS is gone: the connection to the cluster was lost."
                return
            for msg in msgs:
                if msg.get("type") == "node_dead" and msg.get("node_id") in session.placement:
                    session.lost = (
                        "The actor died unexpectedly before finishing this task. class_name: "
                        "RayWorkerWrapper. The actor is dead because its node has died. "
                        f"Node Id: {msg['node_id']} (ip {msg.get('node_ip')})"
                    )
                    return

    threading.Thread(target=loop, name="ray-watch", daemon=True).start()


def start(
    env: dict[str, str], tp: int, pp: int, worker: dict[str, Any], stop: threading.Event
) -> Session | None:
    """Steps 1-4 and the watch of step 5; None when stopped meanwhile. ``worker``: what the nodes' worker
    processes hold (``weight_bytes``, ``gpu_memory_utilization``) for the NPU process table."""
    try:
        session = connect(env, stop)
    except OSError as exc:
        raise RayError("ConnectionError", f"Ray could not start: {exc}") from None
    try:
        if not place(session, env, tp * pp, tp, {**worker, "world_size": tp * pp}, stop):
            session.close()
            return None
    except (OSError, ConnectionError) as exc:
        session.close()
        raise RayError(
            "ConnectionError", f"Lost the Ray GCS while creating the placement group: {exc}"
        ) from None
    except RayError:
        session.close()
        raise
    watch(session, stop)
    return session


def lost_status(session: Session | None) -> int | None:
    """1 (after vLLM's last words) once the cluster lost a worker node or the GCS, else None."""
    if session is None or session.lost is None:
        return None
    vlog.error("ray_distributed_executor.py:497", f"ray.exceptions.ActorDiedError: {session.lost}")
    vlog.error("core.py:935", "EngineCore encountered a fatal error.")
    return vlog.fatal(
        "vllm.v1.engine.exceptions.EngineDeadError",
        "EngineCore encountered an issue. See stack trace (above) for the root cause.",
        "vllm/vllm/v1/engine/core_client.py",
    )
