"""The fake Ray/ZMQ wire: a reply and a push that arrive in one segment both reach the reader.

The GCS answers a raylet's ``register_node`` with ``registered`` and, when a placement group was waiting
for that node, pushes its ``bundles`` right behind it; read together, the push used to be dropped and the
worker node never listed its ``ray::RayWorkerWrapper`` NPU processes (a CI failure of test_sim_ray).
"""

from __future__ import annotations

import json
import socket

import pytest

from fake_vllm.wire import JsonConn


def _pair() -> tuple[JsonConn, socket.socket]:
    ours, theirs = socket.socketpair()
    return JsonConn(ours), theirs


def test_messages_behind_the_reply_reach_the_next_recv() -> None:
    conn, peer = _pair()
    lines = [{"type": "ping"}, {"type": "registered", "cluster_id": "c1"}, {"type": "bundles", "pg_id": "p"}]
    peer.sendall(b"".join(json.dumps(m).encode() + b"\n" for m in lines))
    reply = conn.request({"type": "register_node", "node": {}}, "registered", timeout=2)
    assert reply == {"type": "registered", "cluster_id": "c1"}
    assert json.loads(peer.recv(4096).decode().strip()) == {"type": "register_node", "node": {}}
    assert conn.recv(0.5) == [{"type": "ping"}, {"type": "bundles", "pg_id": "p"}]
    assert conn.recv(0.1) == []
    conn.close()
    peer.close()


def test_a_missing_reply_keeps_what_arrived_and_raises() -> None:
    conn, peer = _pair()
    peer.sendall(b'{"type": "node_dead", "node_id": "n1"}\n')
    with pytest.raises(ConnectionError, match="no 'pg' reply"):
        conn.request({"type": "pg_status", "pg_id": "p"}, "pg", timeout=1)
    assert conn.recv(0.1) == [{"type": "node_dead", "node_id": "n1"}]
    conn.close()
    peer.close()
