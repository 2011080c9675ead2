"""The fake Ray cluster: a GCS on the head that keeps the node table and the placement groups, and the raylet
side of each node. JSON lines (``wire``) on the head's ``--node-ip-address:--port`` (6379)::

    raylet -> GCS   {"type": "register_node", "node": {"node_id", "node_ip", "hostname", "resources":
                     {"CPU": 192.0, "NPU": 8.0}, "visible": ["0", ...] | null, "given": [0, ...]}}
    GCS -> raylet   {"type": "registered", "cluster_id": "..."}, then {"type": "ping"} both ways;
                    {"type": "bundles", "pg_id", "count", "worker": {...}} / {"type": "release", "pg_id"}
    client -> GCS   {"type": "client"}, then {"type": "nodes"} -> {"type": "nodes", "nodes", "pgs",
                    "failures"}; {"type": "create_pg", "bundles": [...], "worker": {...}} and
                    {"type": "pg_status", "pg_id"} -> {"type": "pg", "pg_id", "ready", "placement":
                    [node_id per bundle] | null}
    GCS -> client   {"type": "node_dead", "node_id", "node_ip"} when a node holding its bundles goes away

A node is dead when its connection ends or stays silent for 5 heartbeats (``FAKE_RAY_HEARTBEAT_S``, default
3 s: Ray's GCS health check, period 3000 ms, failure threshold 5; a shorter beat loses nodes on a busy
machine). A client's placement groups are removed when its connection ends (a driver's groups die with it). A
raylet that loses the GCS retries for ``FAKE_RAY_GCS_RECONNECT_S`` (default 60, Ray's
gcs_rpc_server_reconnect_timeout_s) and exits 1 when it is still gone or belongs to another cluster.
While a placement group is ready, each node holding bundles lists ``ray::RayWorkerWrapper`` processes on
that many of its visible NPUs in the simulator's NPU process table (``procs``), as Ray's worker actors do.
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import procs
from .raynode import RayError, log, place
from .wire import JsonConn

Notify = Callable[[dict[str, Any]], None]


class NodeProcesses:
    """The NPU processes of Ray worker actors on one node, per placement group."""

    def __init__(self, env: dict[str, str], visible: list[str] | None, given: list[int]) -> None:
        self.env = env
        ids = [int(v) for v in visible if v.isdigit()] if visible is not None else given
        self.devices = ids
        self.tables: dict[str, procs.ProcessTable] = {}

    def handle(self, msg: dict[str, Any]) -> None:
        pg = str(msg.get("pg_id"))
        if msg.get("type") == "bundles" and pg not in self.tables:
            worker = msg.get("worker") or {}
            hardware = self.env.get("FAKE_VLLM_HARDWARE")
            memory = procs.memory_mb(
                [Path(hardware)] if hardware else list(procs.HARDWARE_FILES),
                int(worker.get("weight_bytes", 0)),
                int(worker.get("world_size", 1)),
                float(worker.get("gpu_memory_utilization", 0.9)),
            )
            table = procs.ProcessTable(procs.state_path(self.env, "FAKE_VLLM_PROCESSES", "processes.json"))
            table.register(self.devices[: int(msg.get("count", 0))], "ray::RayWorkerWrapper", memory)
            self.tables[pg] = table
        elif msg.get("type") == "release" and pg in self.tables:
            self.tables.pop(pg).unregister()

    def release_all(self) -> None:
        for table in self.tables.values():
            table.unregister()
        self.tables.clear()


def heartbeat_loop(
    conn: JsonConn, heartbeat: float, stop: threading.Event, on_message: Callable[[dict[str, Any]], None]
) -> None:
    """Ping every ``heartbeat`` s and hand other messages over until EOF, 5 silent beats, or ``stop``."""
    last_heard = last_sent = time.monotonic()
    while not stop.is_set():
        if time.monotonic() - last_sent >= heartbeat:
            conn.send({"type": "ping"})
            last_sent = time.monotonic()
        try:
            msgs = conn.recv(min(heartbeat, 0.5))
        except (OSError, ConnectionError):
            return
        if msgs:
            last_heard = time.monotonic()
        for msg in msgs:
            if msg.get("type") != "ping":
                on_message(msg)
        if time.monotonic() - last_heard > 5 * heartbeat:
            return


class Gcs:
    """The head's GCS: node table, placement groups, pushes to raylets and drivers."""

    def __init__(self, host: str, port: int, heartbeat: float, stop: threading.Event) -> None:
        self.host, self.port, self.heartbeat, self.stop = host, port, heartbeat, stop
        self.cluster_id = uuid.uuid4().hex
        self.nodes: dict[str, dict[str, Any]] = {}
        self.failures: list[str] = []
        self.pgs: dict[str, dict[str, Any]] = {}
        self._raylets: dict[str, Notify] = {}
        self._clients: dict[int, JsonConn] = {}
        self._ids = itertools.count(1)
        self._lock = threading.RLock()
        self._sock: socket.socket | None = None

    def start(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self.port))
        except OSError:
            sock.close()
            raise
        sock.listen(64)
        sock.settimeout(0.5)
        self.port = sock.getsockname()[1]
        self._sock = sock
        threading.Thread(target=self._accept_loop, name="gcs-accept", daemon=True).start()

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()

    def add_node(self, node: dict[str, Any], notify: Notify) -> None:
        with self._lock:
            self.nodes[node["node_id"]] = dict(node)
            self._raylets[node["node_id"]] = notify
        for pg in list(self.pgs):
            self._try_place(pg)

    def _accept_loop(self) -> None:
        while not self.stop.is_set() and self._sock is not None:
            try:
                client, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(JsonConn(client),), daemon=True).start()

    def _serve(self, conn: JsonConn) -> None:
        try:
            msgs: list[dict[str, Any]] = []
            deadline = time.monotonic() + 10
            while not msgs and time.monotonic() < deadline:
                msgs = conn.recv(0.5)
            if not msgs:
                return
            first = msgs[0]
            if first.get("type") == "register_node" and isinstance(first.get("node"), dict):
                self._serve_raylet(conn, first["node"])
            elif first.get("type") == "client":
                self._serve_client(conn, msgs[1:])
        except (OSError, ConnectionError):
            pass
        finally:
            conn.close()

    def _serve_raylet(self, conn: JsonConn, node: dict[str, Any]) -> None:
        nid = str(node.get("node_id"))
        conn.send({"type": "registered", "cluster_id": self.cluster_id})
        self.add_node(node, conn.send)
        log("INFO", "gcs_node_manager.cc:91", f"Registering node {nid}, address = {node.get('node_ip')}")
        heartbeat_loop(conn, self.heartbeat, self.stop, lambda _msg: None)
        if not self.stop.is_set():
            self._node_dead(nid)

    def _serve_client(self, conn: JsonConn, early: list[dict[str, Any]]) -> None:
        cid = next(self._ids)
        with self._lock:
            self._clients[cid] = conn
        try:
            while not self.stop.is_set():
                for msg in [*early, *conn.recv(0.5)]:
                    reply = self._handle(cid, msg)
                    if reply is not None:
                        conn.send(reply)
                early = []
        finally:
            with self._lock:
                self._clients.pop(cid, None)
                owned = [pg for pg, data in self.pgs.items() if data["owner"] == cid]
            for pg in owned:
                self._remove_pg(pg)

    def _handle(self, cid: int, msg: dict[str, Any]) -> dict[str, Any] | None:
        kind = msg.get("type")
        if kind == "nodes":
            with self._lock:
                return {
                    "type": "nodes",
                    "nodes": list(self.nodes.values()),
                    "pgs": [
                        {"pg_id": k, "bundles": v["bundles"], "placement": v["placement"]}
                        for k, v in self.pgs.items()
                    ],
                    "failures": list(self.failures),
                }
        if kind == "create_pg" and isinstance(msg.get("bundles"), list):
            pg = uuid.uuid4().hex[:36]
            with self._lock:
                self.pgs[pg] = {
                    "bundles": msg["bundles"],
                    "placement": None,
                    "owner": cid,
                    "worker": msg.get("worker"),
                }
            return self._pg_reply(pg)
        if kind == "pg_status" and msg.get("pg_id") in self.pgs:
            return self._pg_reply(str(msg["pg_id"]))
        return None

    def _pg_reply(self, pg: str) -> dict[str, Any]:
        self._try_place(pg)
        placement = self.pgs[pg]["placement"]
        return {"type": "pg", "pg_id": pg, "ready": placement is not None, "placement": placement}

    def _free(self) -> list[dict[str, Any]]:
        used: dict[str, int] = {}
        for data in self.pgs.values():
            for nid in data["placement"] or []:
                used[nid] = used.get(nid, 0) + 1
        return [
            {
                "node_id": nid,
                "node_ip": n["node_ip"],
                "free": int(n["resources"].get("NPU", 0)) - used.get(nid, 0),
            }
            for nid, n in self.nodes.items()
        ]

    def _try_place(self, pg: str) -> None:
        with self._lock:
            data = self.pgs.get(pg)
            if data is None or data["placement"] is not None:
                return
            placement = place(data["bundles"], self._free())
            if placement is None:
                return
            data["placement"] = placement
            notes = [(nid, self._raylets.get(nid)) for nid in sorted(set(placement))]
        for nid, notify in notes:
            msg = {"type": "bundles", "pg_id": pg, "count": placement.count(nid), "worker": data["worker"]}
            if notify is not None:
                with contextlib.suppress(OSError):
                    notify(msg)

    def _remove_pg(self, pg: str) -> None:
        with self._lock:
            data = self.pgs.pop(pg, None)
            notes = [self._raylets.get(nid) for nid in set(data["placement"] or [])] if data else []
        for notify in notes:
            if notify is not None:
                with contextlib.suppress(OSError):
                    notify({"type": "release", "pg_id": pg})
        for other in list(self.pgs):
            self._try_place(other)

    def _node_dead(self, nid: str) -> None:
        with self._lock:
            node = self.nodes.pop(nid, None)
            self._raylets.pop(nid, None)
            if node is None:
                return
            self.failures.append(f"node_{nid} ({node['node_ip']})")
            owners = {d["owner"] for d in self.pgs.values() if nid in (d["placement"] or [])}
            conns = [self._clients[c] for c in owners if c in self._clients]
        log("WARNING", "gcs_node_manager.cc:412", f"Node {nid} ({node['node_ip']}) is dead: heartbeats lost.")
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.send({"type": "node_dead", "node_id": nid, "node_ip": node["node_ip"]})


class Raylet:
    """A worker node's link to the GCS: registers, beats, follows bundle pushes, gives up when it is lost."""

    def __init__(
        self,
        gcs: tuple[str, int],
        node: dict[str, Any],
        processes: NodeProcesses,
        timing: tuple[float, float, float],  # heartbeat, first connection timeout, reconnection timeout
        stop: threading.Event,
    ) -> None:
        self.gcs, self.node, self.processes, self.stop = gcs, node, processes, stop
        self.heartbeat, self.connect_timeout, self.reconnect_timeout = timing
        self.registered = threading.Event()
        self.cluster_id: str | None = None

    def _session(self, deadline: float) -> bool:
        """One connection until it ends; False when the GCS stayed unreachable until ``deadline``."""
        conn: JsonConn | None = None
        while conn is None and not self.stop.is_set():
            try:
                conn = JsonConn.connect(*self.gcs)
            except OSError:
                if time.monotonic() >= deadline:
                    return False
                self.stop.wait(0.3)
        if conn is None:
            return True
        try:
            reply = conn.request({"type": "register_node", "node": self.node}, "registered", timeout=10)
            if self.cluster_id not in (None, reply.get("cluster_id")):
                where = f"{self.gcs[0]}:{self.gcs[1]}"
                raise RayError("RuntimeError", f"The GCS at {where} now belongs to another Ray cluster.")
            self.cluster_id = reply.get("cluster_id")
            self.registered.set()
            heartbeat_loop(conn, self.heartbeat, self.stop, self.processes.handle)
        except (OSError, ConnectionError):
            pass
        finally:
            conn.close()
            self.processes.release_all()
        return True

    def run(self) -> None:
        """Until ``stop``; RayError when the GCS cannot be reached (at start) or is lost for good."""
        host, port = self.gcs
        if not self._session(time.monotonic() + self.connect_timeout) or not self.registered.is_set():
            if self.stop.is_set():
                return
            raise RayError(
                "ConnectionError",
                f"Unable to connect to GCS at {host}:{port}. Check that (1) Ray GCS with matching version "
                "started successfully at the specified address, and (2) there is no firewall setting "
                "preventing access.",
            )
        while not self.stop.is_set():
            log("WARNING", "gcs_rpc_client.h:151", f"Failed to connect to GCS at address {host}:{port}.")
            if not self._session(time.monotonic() + self.reconnect_timeout):
                raise RayError(
                    "RuntimeError",
                    f"Failed to connect to GCS within {self.reconnect_timeout:g} seconds. GCS may have been "
                    "killed. It's either GCS is terminated by `ray stop` or is killed unexpectedly. The "
                    "program will terminate.",
                )
