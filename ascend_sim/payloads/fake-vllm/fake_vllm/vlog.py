"""vLLM-style console output: ``(APIServer pid=7) INFO 08-22 10:11:12 [api_server.py:1895] message``.

Log lines go to stdout (vLLM's logger writes there), fatal errors end with a Python-style
``ExceptionType: message`` line on stderr, as an uncaught exception in the real server does.
"""

from __future__ import annotations

import os
import sys
import threading
import time

_lock = threading.Lock()
_process = ["APIServer"]


def set_process(name: str) -> None:
    """The process label in front of each line: 'APIServer', 'EngineCore_DP0', ..."""
    _process[0] = name


def log(level: str, source: str, message: str, *, process: str | None = None) -> None:
    stamp = time.strftime("%m-%d %H:%M:%S")
    line = f"({process or _process[0]} pid={os.getpid()}) {level} {stamp} [{source}] {message}"
    with _lock:
        print(line, flush=True)


def debug_enabled() -> bool:
    """vLLM logs DEBUG lines only with ``VLLM_LOGGING_LEVEL=DEBUG`` (vllm/envs.py; default INFO)."""
    return os.environ.get("VLLM_LOGGING_LEVEL", "INFO").upper() == "DEBUG"


def debug(source: str, message: str, *, process: str | None = None) -> None:
    if debug_enabled():
        log("DEBUG", source, message, process=process)


def info(source: str, message: str, *, process: str | None = None) -> None:
    log("INFO", source, message, process=process)


def warning(source: str, message: str, *, process: str | None = None) -> None:
    log("WARNING", source, message, process=process)


def error(source: str, message: str, *, process: str | None = None) -> None:
    log("ERROR", source, message, process=process)


def uvicorn(message: str) -> None:
    """uvicorn's own lines ('INFO:     Started server process [7]') go to stderr."""
    with _lock:
        print(f"INFO:     {message}", file=sys.stderr, flush=True)


def fatal(exc_type: str, message: str, where: str = "vllm/vllm/engine/arg_utils.py") -> int:
    """Print an uncaught-exception ending (traceback header + 'Type: message') and return exit status 1.

    ``where`` names the file under /vllm-workspace that raises it for real (no line number: this is a fake).
    """
    with _lock:
        sys.stdout.flush()
        print("Traceback (most recent call last):", file=sys.stderr)
        print('  File "/usr/local/bin/vllm", line 8, in <module>', file=sys.stderr)
        print("    sys.exit(main())", file=sys.stderr)
        print('  File "/vllm-workspace/vllm/vllm/entrypoints/cli/main.py", in main', file=sys.stderr)
        print("    args.dispatch_function(args)", file=sys.stderr)
        print(f'  File "/vllm-workspace/{where}"', file=sys.stderr)
        print(f"{exc_type}: {message}" if message else exc_type, file=sys.stderr, flush=True)
    return 1


def exception_tail(path: str, function: str, exc_type: str, message: str) -> None:
    """The traceback ``logger.exception`` appends after its line (innermost frame only: this is a fake)."""
    with _lock:
        print("Traceback (most recent call last):", flush=False)
        print(f'  File "{path}", in {function}', flush=False)
        print(f"{exc_type}: {message}" if message else exc_type, flush=True)
