"""A stand-in for the AWX / automation controller REST API (/api/v2/), enough for the awx.awx modules to run
against it: it stores what it is sent, lists with AWX's filters and pagination envelope, and keeps the
associations (credentials of a job template, success and failure nodes of a workflow node) as AWX's related
endpoints do. It is not AWX: it checks no permission or field, and runs no job. What it proves is that the
real modules accept every argument awx/controller.yml gives them (their own argument specs validate them
before any request) and that the objects they make reference each other as intended.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

API = "/api/v2/"
# the related lists that hold associations (POST {"id": N} adds, {"id": N, "disassociate": true} removes),
# and the resource their members are
ASSOCIATIONS = {
    "credentials": "credentials",
    "labels": "labels",
    "instance_groups": "instance_groups",
    "success_nodes": "workflow_job_template_nodes",
    "failure_nodes": "workflow_job_template_nodes",
    "always_nodes": "workflow_job_template_nodes",
    "notification_templates_error": "notification_templates",
    "notification_templates_started": "notification_templates",
    "notification_templates_success": "notification_templates",
    "notification_templates_approvals": "notification_templates",
}
# the related lists that hold children (resource, the child's field naming the parent)
CHILDREN = {
    "workflow_nodes": ("workflow_job_template_nodes", "workflow_job_template"),
    "schedules": ("schedules", "unified_job_template"),
    "inventory_sources": ("inventory_sources", "inventory"),
}
UNIFIED = ("job_templates", "workflow_job_templates", "projects", "inventory_sources")
TYPES = {"job_templates": "job_template", "workflow_job_templates": "workflow_job_template",
         "projects": "project", "inventory_sources": "inventory_source"}  # fmt: skip


@dataclass
class Store:
    objects: dict[str, dict[int, dict[str, Any]]] = field(default_factory=dict)
    links: dict[tuple[str, int, str], list[int]] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)
    next_id: int = 1
    lock: threading.Lock = field(default_factory=threading.Lock)

    def all(self, resource: str) -> list[dict[str, Any]]:
        if resource == "unified_job_templates":
            return [o for r in UNIFIED for o in self.objects.get(r, {}).values()]
        return list(self.objects.get(resource, {}).values())

    def named(self, resource: str, name: str) -> dict[str, Any]:
        (found,) = [o for o in self.all(resource) if o.get("name") == name]
        return found

    def linked(self, resource: str, oid: int, rel: str) -> list[dict[str, Any]]:
        target = self.objects.get(ASSOCIATIONS[rel], {})
        return [target[i] for i in self.links.get((resource, oid, rel), []) if i in target]

    def create(self, resource: str, data: dict[str, Any]) -> dict[str, Any]:
        oid, self.next_id = self.next_id, self.next_id + 1
        url = f"{API}{resource}/{oid}/"
        rels = [*ASSOCIATIONS, *CHILDREN, "survey_spec", "copy", "launch", "update"]
        obj = {**data, "id": oid, "url": url, "type": TYPES.get(resource, resource.rstrip("s")),
               "related": {r: f"{url}{r}/" for r in rels}, "summary_fields": {}}  # fmt: skip
        self.objects.setdefault(resource, {})[oid] = obj
        return obj


def _matches(obj: dict[str, Any], query: dict[str, str]) -> bool:
    either = {k[4:]: v for k, v in query.items() if k.startswith("or__")}
    if either and not any(str(obj.get(k)) == v for k, v in either.items()):
        return False
    skip = {"page", "page_size", "order_by"}
    return all(str(obj.get(k)) == v for k, v in query.items() if not k.startswith("or__") and k not in skip)


def _page(results: list[dict[str, Any]]) -> dict[str, Any]:
    return {"count": len(results), "next": None, "previous": None, "results": results}


class Handler(BaseHTTPRequestHandler):
    store: Store

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _send(self, code: int, body: Any = None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-API-Product-Name", "AWX")
        self.send_header("X-API-Product-Version", "24.6.1")  # the awx.awx collection's version: no warning
        self.end_headers()
        self.wfile.write(data)

    def _route(self) -> tuple[list[str], dict[str, str]]:
        parts = urlsplit(self.path)
        assert parts.path.startswith(API), parts.path
        return [p for p in parts.path[len(API) :].split("/") if p], dict(parse_qsl(parts.query))

    def _body(self) -> dict[str, Any]:
        n = int(self.headers.get("Content-Length") or 0)
        body: dict[str, Any] = json.loads(self.rfile.read(n) or b"{}")
        return body

    def do_GET(self) -> None:
        path, query = self._route()
        s = self.store
        with s.lock:
            s.requests.append(("GET", self.path))
            if not path or path[0] in ("ping", "config", "me"):
                return self._send(200, {"version": "24.6.1"} if path else {})
            resource = path[0]
            if len(path) == 1:
                return self._send(200, _page([o for o in s.all(resource) if _matches(o, query)]))
            obj = s.objects.get(resource, {}).get(int(path[1]))
            if obj is None:
                return self._send(404, {"detail": "Not found."})
            if len(path) == 2:
                return self._send(200, obj)
            rel = path[2]
            if rel in ASSOCIATIONS:
                return self._send(200, _page(s.linked(resource, obj["id"], rel)))
            if rel in CHILDREN:
                child, parent = CHILDREN[rel]
                return self._send(200, _page([o for o in s.all(child) if o.get(parent) == obj["id"]]))
            return self._send(200, {})  # survey_spec and the like: empty

    def do_POST(self) -> None:
        path, _query = self._route()
        s = self.store
        body = self._body()
        with s.lock:
            s.requests.append(("POST", self.path))
            resource = path[0]
            if len(path) == 1:
                return self._send(201, s.create(resource, body))
            oid, rel = int(path[1]), path[2]
            if rel in ASSOCIATIONS:
                ids = s.links.setdefault((resource, oid, rel), [])
                if body.get("disassociate"):
                    ids.remove(body["id"])
                elif body["id"] not in ids:
                    ids.append(body["id"])
                return self._send(204)
            if rel in CHILDREN:
                child, parent = CHILDREN[rel]
                return self._send(201, s.create(child, {**body, parent: oid}))
            return self._send(405, {"detail": f"{rel} is not served by the stand-in"})

    def do_PATCH(self) -> None:
        path, _query = self._route()
        s = self.store
        body = self._body()
        with s.lock:
            s.requests.append(("PATCH", self.path))
            obj = s.objects[path[0]][int(path[1])]
            obj.update(body)
            return self._send(200, obj)

    def do_DELETE(self) -> None:
        path, _query = self._route()
        with self.store.lock:
            self.store.requests.append(("DELETE", self.path))
            self.store.objects[path[0]].pop(int(path[1]), None)
        return self._send(204)


@contextmanager
def fake_controller() -> Iterator[tuple[str, Store]]:
    """A stand-in controller on 127.0.0.1: its URL and its store."""
    store = Store()
    handler = type("BoundHandler", (Handler,), {"store": store})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", store
    finally:
        server.shutdown()
        server.server_close()
