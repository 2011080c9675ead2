"""`orchestrator bench`: streamed load at fixed concurrency levels against the gateway (or a replica), with
TTFT, inter-token latency, latency and throughput percentiles compared with the spec's SLOs."""
