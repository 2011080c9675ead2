"""`vllm-router` without its Python-only extras: the console script (vllm_router.launch_router:main) also
imports setproctitle and the aiohttp/fastapi/uvicorn mini load balancer, which the Rust router does not use.
Same parser (RouterArgs.add_cli_args, no prefix), same validation, same Router.start()."""

import argparse
import sys

from vllm_router.router import Router
from vllm_router.router_args import RouterArgs


def main() -> None:
    parser = argparse.ArgumentParser(prog="vllm-router")
    RouterArgs.add_cli_args(parser, use_router_prefix=False)
    args = RouterArgs.from_cli_args(parser.parse_args(sys.argv[1:]), use_router_prefix=False)
    args._validate_router_args()
    Router.from_args(args).start()


if __name__ == "__main__":
    main()
