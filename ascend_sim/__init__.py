"""The simulated Ascend cluster: engine, images, servers, faults, fake tools and the fake vLLM server."""
