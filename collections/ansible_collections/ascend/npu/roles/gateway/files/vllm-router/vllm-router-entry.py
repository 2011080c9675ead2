"""`vllm-router` without its Python-only extras: the console script (vllm_router.launch_router:main) also
imports setproctitle and the aiohttp/fastapi/uvicorn mini load balancer, which the Rust router does not use.
Same parser (RouterArgs.add_cli_args, no prefix), same validation, same Router.start().

OPENAI_API_KEY_FILE: in PD mode the router sends `Authorization: Bearer $OPENAI_API_KEY` to the prefill and
decode ranks (not the client's header; measured with 0.1.17, tests/unit/gateway_pd). The gateway role mounts
the serving key as a 0600 file and names it here, so that the key is not in the container's configuration."""

import argparse
import os
import sys

from vllm_router.router import Router
from vllm_router.router_args import RouterArgs


def main() -> None:
    key_file = os.environ.pop("OPENAI_API_KEY_FILE", "")
    if key_file:
        with open(key_file, encoding="utf-8") as f:
            key = f.read().strip()
        if not key:
            sys.exit(f"vllm-router: {key_file} (OPENAI_API_KEY_FILE) is empty")
        os.environ["OPENAI_API_KEY"] = key
    parser = argparse.ArgumentParser(prog="vllm-router")
    RouterArgs.add_cli_args(parser, use_router_prefix=False)
    args = RouterArgs.from_cli_args(parser.parse_args(sys.argv[1:]), use_router_prefix=False)
    args._validate_router_args()
    Router.from_args(args).start()


if __name__ == "__main__":
    main()
