"""Fake vLLM OpenAI server: ``vllm serve MODEL [flags]`` as the simulated cluster's serving containers run it.

Standard library only (copied into the fake vLLM image as package ``fake_vllm``; the ``vllm`` shim runs
:func:`main`). What it does, in the order vLLM does it:

1. parses the command line with the catalog's flag table (``cli``; unknown flag -> exit 2, argparse message);
2. checks the model directory (``model``), the NPU mask against /dev/davinci* and the driver mounts
   (``devices``): on failure exit 1 with the error vLLM would end with;
3. a multi-node head (``--data-parallel-size`` > ``--data-parallel-size-local``, no ``--headless``) binds
   ``--data-parallel-address:--data-parallel-rpc-port`` for its headless ranks (``dp``);
4. records its NPU processes for the fake npu-smi (``procs``) and "loads" the weights: reads and hashes every
   shard, paced to ``FAKE_VLLM_LOAD_MB_S`` plus ``FAKE_VLLM_INIT_S``, with vLLM-like log lines. With
   ``--distributed-executor-backend ray`` it first joins the fake Ray cluster (``ray`` command, ``raycli``)
   and waits for a placement group of tp x pp NPUs across its nodes (``rayexec``); the nodes list the
   worker processes, and a worker node lost while serving ends the server (EngineDeadError);
5. head: with ``--kv-transfer-config`` starts the PD connector (``pd``: a prefill binds its KV handshake
   ports), binds the API port only now (as uvicorn starts after the engine) and serves (``api``); /health is
   503 until every remote DP rank has joined. ``--data-parallel-rank`` (external DP): one rank, no RPC head.
   Headless: joins the head, serves no HTTP, exits 1 when the head
   is gone for good;
6. SIGTERM / SIGINT: clean shutdown, exit 0; fault ``crash_after_s``: exit 1.

Environment:
  ASCEND_RT_VISIBLE_DEVICES       NPU mask (required; checked against /dev/davinci*)
  VLLM_API_KEY                    API key when --api-key is not given
  FAKE_VLLM_FLAGS                 flag table (default /opt/fake-vllm/flags.json)
  FAKE_VLLM_DEV_DIR               device directory (default /dev)
  FAKE_VLLM_DRIVER_DIR            driver mount to check (default /usr/local/Ascend/driver)
  FAKE_VLLM_SKIP_DRIVER_CHECK=1   skip the driver mount check
  FAKE_VLLM_PROCESSES             NPU process table (default: see procs.state_path; normally
                                  /var/lib/ascend-sim/processes.json)
  FAKE_VLLM_HARDWARE              hardware facts for the HBM size (default: /var/lib/ascend-sim/hardware.json,
                                  then /usr/local/dcmi/ascend-sim-hardware.json)
  FAKE_VLLM_FAULTS                fault file (default: see procs.state_path; normally
                                  /var/lib/ascend-sim/vllm-faults.json; keys in faults.py)
  FAKE_VLLM_FAULTS_POLL_S         fault file re-read period (default 1)
  FAKE_VLLM_NEVER_HEALTHY, FAKE_VLLM_CRASH_AFTER_S, FAKE_VLLM_SLOW_MS, FAKE_VLLM_WRONG_ANSWERS   faults
  FAKE_VLLM_LOAD_MB_S             weight loading speed in MiB/s (default 2000)
  FAKE_VLLM_FS_TYPE               the weights' filesystem as /proc/mounts would say (default ext4; loader.py)
  FAKE_VLLM_AVAILABLE_RAM_GIB     available RAM for the auto-prefetch rule (default /proc/meminfo)
  FAKE_VLLM_NETFS_MMAP_SLOWDOWN   mmap (lazy) from nfs/nfs4/lustre is this many times slower (default 4)
  FAKE_VLLM_INIT_S                fixed engine start-up time in seconds (default 2)
  FAKE_VLLM_COMPILE_S             graph compile time of a cold start (default 1; a start that finds its
                                  graphs in $VLLM_CACHE_ROOT takes 5 % of it: compile_cache.py)
  FAKE_VLLM_CAPTURE_S             ACL graph capture after the compile (default 0.2; capture.py)
  FAKE_VLLM_JIT_MS                first-request compile per shape (default 0: off; kept in $TRITON_CACHE_DIR)
  FAKE_VLLM_TOKEN_MS              time per generated token after the first (default 2)
  FAKE_VLLM_DP_HEARTBEAT_S, FAKE_VLLM_DP_CONNECT_TIMEOUT_S, FAKE_VLLM_DP_LOST_TIMEOUT_S   see dp.py
  FAKE_VLLM_RAY_PG_TIMEOUT_S      placement group wait with the Ray backend (default 1800); RAY_ADDRESS,
                                  RAY_TMPDIR, VLLM_HOST_IP as Ray and vLLM read them (rayexec.py)
  FAKE_VLLM_VERSION               version reported by --version and /version (default: the flag table's)
  VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT, VLLM_HOST_IP, FAKE_VLLM_KV_SOCKET_TIMEOUT_S, VLLM_LOGGING_LEVEL
                                  PD disaggregation (--kv-transfer-config): see pd.py
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from http.server import ThreadingHTTPServer
from pathlib import Path
from types import FrameType

from . import capture, cli, compile_cache, devices, dp, kvconfig, model, pd, procs, rayexec, vlog
from .api import Service, make_handler
from .engine import Generator
from .faults import FaultSource
from .jit import Jit
from .metrics import Metrics
from .raynode import RayError

ROUTES = ("/health", "/ping", "/version", "/metrics", "/v1/models", "/v1/completions", "/v1/chat/completions")


def _float(env: dict[str, str], name: str, default: float) -> float:
    try:
        return float(env.get(name) or default)
    except ValueError:
        return default


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True


class _HTTPServer6(_HTTPServer):
    address_family = socket.AF_INET6


class Server:
    def __init__(self, cfg: cli.ServeConfig, env: dict[str, str], version: str) -> None:
        self.cfg, self.env, self.version = cfg, env, version
        self.stop = threading.Event()
        self.table = procs.ProcessTable(procs.state_path(env, "FAKE_VLLM_PROCESSES", "processes.json"))
        self.faults = FaultSource(
            procs.state_path(env, "FAKE_VLLM_FAULTS", "vllm-faults.json"),
            env,
            None if cfg.headless else cfg.port,
        )
        self.head: dp.Head | None = None
        self.kv: kvconfig.KVConfig | None = None
        self.pd: pd.PD | None = None
        self.httpd: _HTTPServer | None = None
        self.ray: rayexec.Session | None = None
        self.ray_backend = cfg.raw.get("distributed_executor_backend") == "ray"

    # --- start-up checks ------------------------------------------------------------------------------
    def _check(self) -> tuple[model.ModelLayout, list[int], int]:
        cfg = self.cfg
        for name, value in (
            ("tensor_parallel_size", cfg.tp),
            ("pipeline_parallel_size", cfg.pp),
            ("data_parallel_size", cfg.dp),
            ("data_parallel_size_local", cfg.local_dp),
        ):
            if value < 1:
                raise model.ModelError("ValueError", f"{name} must be >= 1, got {value}")
        if cfg.headless and cfg.dp <= 1:
            raise model.ModelError(
                "ValueError",
                "data_parallel_size_local must be > 0 in headless mode "
                "(the simulator runs --headless only as data-parallel ranks of a head)",
            )
        problem = dp.external_lb_problem(cfg.dp, cfg.dp_rank, cfg.dp_local)
        if problem:
            raise model.ModelError(*problem)
        self.kv = kvconfig.parse(cfg.raw.get("kv_transfer_config"))  # KVTransferConfig; connector checks
        layout = model.inspect_model(cfg.model, cfg.quantization)
        if cfg.external_dp and cfg.dp > 1 and not model.is_moe(layout.config):
            raise model.ModelError("ValueError", dp.NON_MOE_EXTERNAL_DP)
        heads = layout.config.get("num_attention_heads")
        if isinstance(heads, int) and heads % cfg.tp:
            raise model.ModelError(
                "ValueError",
                f"Total number of attention heads ({heads}) must be divisible "
                f"by tensor parallel size ({cfg.tp}).",
            )
        derived = layout.max_position_embeddings or 8192
        if cfg.max_model_len is not None and cfg.max_model_len > derived:
            raise model.ModelError(
                "ValueError",
                f"User-specified max_model_len ({cfg.max_model_len}) is greater "
                f"than the derived max_model_len (max_position_embeddings={derived} in model's "
                "config.json). Make sure the value is correct and within the model context size.",
            )
        needed = None if self.ray_backend else cfg.tp * cfg.pp * cfg.local_dp
        why = (
            f"tensor_parallel_size {cfg.tp} x pipeline_parallel_size {cfg.pp} x "
            f"data_parallel_size_local {cfg.local_dp}"
        )
        npus = devices.check_devices(
            self.env.get("ASCEND_RT_VISIBLE_DEVICES"),
            Path(self.env.get("FAKE_VLLM_DEV_DIR") or "/dev"),
            needed,
            why,
        )
        if self.env.get("FAKE_VLLM_SKIP_DRIVER_CHECK") not in ("1", "true"):
            devices.check_driver(Path(self.env.get("FAKE_VLLM_DRIVER_DIR") or devices.DEFAULT_DRIVER_DIR))
        return layout, npus, cfg.max_model_len or derived

    # --- run ------------------------------------------------------------------------------------------
    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stop.set()

    def run(self) -> int:
        cfg = self.cfg
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        if cfg.headless:
            vlog.set_process(f"EngineCore_DP{cfg.start_rank}")
        vlog.info("api_server.py:1895", f"vLLM API server version {self.version}")
        vlog.info("utils.py:328", f"non-default args: {cfg.raw}")
        try:
            layout, npus, max_model_len = self._check()
        except (model.ModelError, devices.DeviceError, kvconfig.KVConfigError) as exc:
            return vlog.fatal(exc.exc_type, exc.message, exc.where)
        local = range(cfg.start_rank, cfg.start_rank + cfg.local_dp)
        heartbeat = _float(self.env, "FAKE_VLLM_DP_HEARTBEAT_S", 2.0)
        if not cfg.headless and cfg.multi_node:
            self.head = dp.Head(
                cfg.dp_address, cfg.dp_rpc_port, cfg.dp, local, cfg.tp, cfg.pp, heartbeat, self.stop
            )
            try:
                self.head.start()
            except OSError as exc:
                return vlog.fatal(
                    "OSError", f"{exc} (data parallel RPC address {cfg.dp_address}:{cfg.dp_rpc_port})"
                )
        hardware = self.env.get("FAKE_VLLM_HARDWARE")
        memory = procs.memory_mb(
            [Path(hardware)] if hardware else list(procs.HARDWARE_FILES),
            layout.tensor_bytes,
            cfg.tp * cfg.pp,
            cfg.gpu_memory_utilization,
        )
        gmu = cfg.gpu_memory_utilization
        try:
            if self.ray_backend:  # the Ray nodes list the worker processes of the placement group
                worker = {"weight_bytes": layout.tensor_bytes, "gpu_memory_utilization": gmu}
                self.ray = rayexec.start(self.env, cfg.tp, cfg.pp, worker, self.stop)
                if self.ray is None:
                    return self._shutdown(0)
            else:
                self.table.register(npus, procs.worker_name(cfg.tp), memory)
            digest = model.load_paced(layout, cfg.model, self.env, self.stop, cfg.raw)
            ranks = range(cfg.start_rank, cfg.start_rank + cfg.local_dp)
            compiled = digest is not None and compile_cache.compile_graphs(
                self.env, cfg.raw, digest, self.stop, ranks
            )
            # the API server's ranks capture after their compile (the first rank prints the progress bar)
            compiled = compiled and capture.capture_graphs(
                self.env, cfg.raw, self.stop, show=not cfg.headless and cfg.start_rank == 0
            )
            if digest is None or not compiled:
                return self._shutdown(0)
            if cfg.headless:
                return self._run_headless(digest, heartbeat)
            return self._run_head(digest, max_model_len, local)
        except RayError as exc:
            return vlog.fatal(exc.exc_type, exc.message, "vllm/vllm/v1/executor/ray_utils.py")
        finally:
            self.table.unregister()
            if self.head is not None:
                self.head.close()
            if self.ray is not None:
                self.ray.close()

    def _monitor(
        self, healthy_since: Callable[[], float | None], alive: Callable[[], int | None]
    ) -> int | None:
        poll = _float(self.env, "FAKE_VLLM_FAULTS_POLL_S", 1.0)
        last_poll = time.monotonic()
        while not self.stop.wait(0.1):
            if time.monotonic() - last_poll >= poll:
                self.faults.reload()
                last_poll = time.monotonic()
            line = self.faults.current.error_line
            if line is not None:  # fault error_line: the replica dies printing a known error (doctor)
                print(line, file=sys.stderr, flush=True)
                return 1
            deadline = self.faults.crash_deadline(healthy_since())
            if deadline is not None and time.monotonic() >= deadline:
                vlog.error("core.py:935", "EngineCore encountered a fatal error.")
                vlog.fatal(
                    "vllm.v1.engine.exceptions.EngineDeadError",
                    "EngineCore encountered an issue. See stack trace (above) for the root cause.",
                    "vllm/vllm/v1/engine/core_client.py",
                )
                return 1
            status = alive()
            if status is not None:
                return status
        return None

    def _run_headless(self, digest: str, heartbeat: float) -> int:
        cfg = self.cfg
        hello = {
            "type": "hello",
            "start_rank": cfg.start_rank,
            "local_size": cfg.local_dp,
            "dp_size": cfg.dp,
            "tp": cfg.tp,
            "pp": cfg.pp,
            "model_hash": digest,
            "host": socket.gethostname(),
            "pid": os.getpid(),
        }
        client = dp.Headless(
            cfg.dp_address,
            cfg.dp_rpc_port,
            hello,
            heartbeat,
            _float(self.env, "FAKE_VLLM_DP_CONNECT_TIMEOUT_S", 600.0),
            _float(self.env, "FAKE_VLLM_DP_LOST_TIMEOUT_S", 60.0),
            self.stop,
        )
        result: list[int] = []
        thread = threading.Thread(target=lambda: result.append(client.run()), name="dp-headless", daemon=True)
        thread.start()
        joined_at: list[float] = []

        def since() -> float | None:
            if client.joined.is_set() and not joined_at:
                joined_at.append(time.monotonic())
            return joined_at[0] if joined_at else None

        status = self._monitor(since, lambda: None if thread.is_alive() else (result[0] if result else 1))
        if status is None:
            thread.join(timeout=5)
            return self._shutdown(0)
        if status != 0 and client.error:
            return vlog.fatal("RuntimeError", client.error, "vllm/vllm/v1/engine/utils.py")
        return status

    def _run_head(self, digest: str, max_model_len: int, local: range) -> int:
        cfg = self.cfg
        if self.head is not None:
            self.head.set_model_hash(digest)
        engines = list(local) if cfg.external_dp or cfg.dp_start_rank is not None else list(range(cfg.dp))
        kv_tokens = max(max_model_len * 4, 65536)
        vlog.info("kv_cache_utils.py:1087", f"NPU KV cache size: {kv_tokens:,} tokens")
        cache_info = {
            "block_size": str(cfg.block_size),
            "cache_dtype": cfg.kv_cache_dtype,
            "calculate_kv_scales": "False",
            "cpu_offload_gb": "0",
            "enable_prefix_caching": str(cfg.enable_prefix_caching),
            "gpu_memory_utilization": str(cfg.gpu_memory_utilization),
            "num_gpu_blocks": str(kv_tokens // cfg.block_size),
            "prefix_caching_hash_algo": "sha256",
        }
        metrics = Metrics(cfg.served_names[0], engines, kv_tokens, cache_info)
        if self.kv is not None:
            self.pd = pd.build(
                self.kv, cfg, self.env, self.faults, metrics, engines, kv_tokens // cfg.block_size, self.stop
            )
            try:
                self.pd.start()
            except kvconfig.KVConfigError as exc:
                return vlog.fatal(exc.exc_type, exc.message, exc.where)
        head = self.head
        service = Service(
            cfg=cfg,
            generator=Generator(digest),
            metrics=metrics,
            faults=self.faults,
            version=self.version,
            max_model_len=max_model_len,
            ready=head.ready if head is not None else (lambda: True),
            token_s=_float(self.env, "FAKE_VLLM_TOKEN_MS", 2.0) / 1000,
            jit=Jit(_float(self.env, "FAKE_VLLM_JIT_MS", 0.0) / 1000, compile_cache.triton_dir(self.env)),
            access_log=not cfg.raw.get("disable_uvicorn_access_log", False),
            pd=self.pd,
        )
        host = cfg.host or "0.0.0.0"
        server_cls = _HTTPServer6 if ":" in host else _HTTPServer
        try:
            self.httpd = server_cls((host, cfg.port), make_handler(service))
        except OSError as exc:
            return vlog.fatal(
                "OSError",
                f"[Errno {exc.errno}] error while attempting to bind on address "
                f"('{host}', {cfg.port}): {exc.strerror}",
            )
        vlog.info("api_server.py:1971", f"Starting vLLM API server 0 on http://{host}:{cfg.port}")
        vlog.info("launcher.py:36", "Available routes are:")
        for route in ROUTES:
            methods = "POST" if route.startswith("/v1/c") else "GET"
            vlog.info("launcher.py:44", f"Route: {route}, Methods: {methods}")
        vlog.uvicorn(f"Started server process [{os.getpid()}]")
        vlog.uvicorn("Waiting for application startup.")
        vlog.uvicorn("Application startup complete.")
        # served only after uvicorn's start-up lines, as uvicorn does: a client that sees 200 on /health
        # finds "Application startup complete." in the log
        threading.Thread(target=self.httpd.serve_forever, name="http", daemon=True).start()
        healthy_at: list[float] = []

        def since() -> float | None:
            if not healthy_at and service.healthy():
                healthy_at.append(time.monotonic())
            return healthy_at[0] if healthy_at else None

        status = self._monitor(since, lambda: rayexec.lost_status(self.ray))
        return self._shutdown(0) if status is None else status

    def _shutdown(self, status: int) -> int:
        if self.head is not None:
            self.head.close()
        if self.pd is not None:
            self.pd.close()
        if self.httpd is not None:
            vlog.info("launcher.py:80", "Shutting down FastAPI HTTP server.")
            self.httpd.shutdown()
            self.httpd.server_close()
            vlog.uvicorn("Shutting down")
            vlog.uvicorn("Application shutdown complete.")
        return status


def main(argv: Sequence[str] | None = None) -> int:
    env = dict(os.environ)
    try:
        table = cli.load_flag_table(cli.flags_path(env))
    except cli.FlagFileError as exc:
        return vlog.fatal("RuntimeError", str(exc))
    version = env.get("FAKE_VLLM_VERSION") or str(table.get("vllm_version", "0.0.0"))
    cfg = cli.parse(list(sys.argv[1:] if argv is None else argv), table, env)
    return Server(cfg, env, version).run()


if __name__ == "__main__":
    sys.exit(main())
